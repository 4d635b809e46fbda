#pragma once
// The cluster: GPUs grouped into NVLink domains, NICs, and the scale-out fabric between the NICs
// (fabric.hpp). Every link is directed and carries bandwidth and latency. This is the one
// description of the cluster: the SimGrid platform of sim/ and the collective cost model of
// costmodel/ are both derived from it.
//
// Structure built by Cluster(spec):
//   - GPU g sits on node g / gpus_per_node and in NVLink domain g / nvlink_domain_gpus (a domain
//     is whole consecutive nodes: one node by default, 18 trays of 4 GPUs in an NVL72 rack; or
//     consecutive GPUs of one node joined by NVLink bridges: 4 of the 8 GPUs of an H200 NVL server);
//   - per NVLink domain one NvSwitch vertex; GPU <-> NvSwitch (NvLink): intra_node.bw_Bps per
//     direction;
//   - per node nics_per_node NICs; GPU i of a node uses NIC floor(i * nics / gpus) (nic_of), at
//     the NIC's bandwidth (the PCIe switch is not the bottleneck of a DGX-class node);
//   - the fabric (inter_node.topology) cables the NICs together;
//   - only when NVLink domains are smaller than a node: per node one Host vertex (the PCIe root
//     complex and switches, taken as non-blocking); GPU <-> Host (PcieToHost): intra_node.pcie_Bps
//     per direction.
//
// Routes. Two GPUs of one NVLink domain: GPU -> NvSwitch -> GPU. Of two domains of one node:
// GPU -> Host -> GPU (PCIe). Of two domains on different nodes: GPU -> its NIC,
// the fabric's route between the two NICs, NIC -> GPU (leaving through the source GPU's NIC and
// entering through the destination GPU's NIC). Same GPU: no link. Routes are computed on demand
// (no table, no graph search) and may have any length.
//
// Latency convention (so that a route's latency is the spec's figure, whatever its length): the
// whole intra_node.latency_s sits on the GPU -> NvSwitch (and GPU -> Host) link, 0 on the way
// down; GPU <-> NIC has
// 0; the fabric puts inter_node.latency_s on its NIC-to-NIC routes (fabric.hpp).
//
// Vertices: per node its GPUs then its NICs, then the NvSwitch of every domain, then the Host of
// every node (split nodes only), then the fabric's switches. Links: per GPU its NVLink cable, its
// PCIe cable to the NIC and (split nodes only) its PCIe cable to the host, then the fabric's cables.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/topology/fabric.hpp"
#include "stepsim/topology/network.hpp"

namespace stepsim::topology {

// A route between two GPUs: the directed links it crosses, in order.
struct Route {
  std::vector<std::int32_t> links;   // Link::id of each hop (empty from route_cost)
  double latency_s = 0;              // sum of hop latencies
  double bottleneck_Bps = 0;         // minimum hop bandwidth (+infinity for an empty route)
};

class Cluster {
 public:
  // Throws ScenarioError for a spec that cannot be built (no GPUs, no nodes, several nodes
  // without NICs, non-positive bandwidth or oversubscription, an NVLink domain that is not whole
  // nodes or does not divide the cluster).
  explicit Cluster(const scenarios::ClusterSpec& spec);

  [[nodiscard]] const scenarios::ClusterSpec& spec() const { return spec_; }
  // Distinct for every Cluster constructed in the process (a cache key that outlives no cluster).
  [[nodiscard]] std::uint64_t instance_id() const { return instance_id_; }
  [[nodiscard]] const Network& network() const { return net_; }
  [[nodiscard]] const Fabric& fabric() const { return *fabric_; }
  [[nodiscard]] std::int64_t num_gpus() const { return spec_.world_size(); }
  [[nodiscard]] std::int64_t num_links() const { return net_.num_links(); }
  [[nodiscard]] const Link& link(std::int32_t id) const { return net_.link(id); }
  [[nodiscard]] std::pair<VertexId, VertexId> link_ends(std::int32_t id) const { return net_.link_ends(id); }
  [[nodiscard]] const Vertex& vertex(VertexId v) const { return net_.vertex(v); }
  [[nodiscard]] VertexId gpu_vertex(std::int64_t gpu) const;

  [[nodiscard]] std::int32_t node_of(std::int64_t gpu) const;
  // GPUs per NVLink domain (spec.nvlink_domain_gpus, or gpus_per_node when that is 0).
  [[nodiscard]] std::int64_t nvlink_domain_gpus() const { return domain_gpus_; }
  [[nodiscard]] std::int64_t num_nvlink_domains() const { return num_gpus() / domain_gpus_; }
  [[nodiscard]] std::int32_t nvlink_domain_of(std::int64_t gpu) const;
  // What NCCL treats as one node (its tuner's node count, trees, NIC exits): the NVLink domain when
  // it spans nodes, else the node (spec.comm_node_size() GPUs).
  [[nodiscard]] std::int64_t comm_node_gpus() const { return comm_node_gpus_; }
  [[nodiscard]] std::int32_t comm_node_of(std::int64_t gpu) const;
  // Local index (within its node) of the NIC the GPU uses to leave its NVLink domain.
  [[nodiscard]] std::int32_t nic_of(std::int64_t gpu) const;
  // Global index of that NIC: node * nics_per_node + nic_of(gpu).
  [[nodiscard]] std::int64_t global_nic_of(std::int64_t gpu) const;

  // Calls hop(link id) for every directed link from src_gpu to dst_gpu, in order (see Routes
  // above). Does not allocate. InternalError for a GPU outside the cluster.
  template <typename Hop>
  void visit_route(std::int64_t src_gpu, std::int64_t dst_gpu, Hop&& hop) const;
  // The links of the route with its latency and bottleneck.
  [[nodiscard]] Route route(std::int64_t src_gpu, std::int64_t dst_gpu) const;
  // Latency and bottleneck of route(src, dst) without listing its links (no allocation).
  [[nodiscard]] Route route_cost(std::int64_t src_gpu, std::int64_t dst_gpu) const;

 private:
  // InternalError for a GPU outside the cluster (the error built out of line).
  void check_gpu(std::int64_t gpu) const {
    if (gpu < 0 || gpu >= num_gpus()) gpu_error(gpu);
  }
  [[noreturn]] void gpu_error(std::int64_t gpu) const;

  scenarios::ClusterSpec spec_;
  std::uint64_t instance_id_ = 0;
  std::int64_t domain_gpus_ = 0;
  std::int64_t comm_node_gpus_ = 0;
  Network net_;
  std::unique_ptr<Fabric> fabric_;
  std::vector<VertexId> gpu_vertices_;
  // Link ids of the up direction; the down direction is always up + 1.
  std::vector<std::int32_t> gpu_nvlink_up_;  // per GPU: GPU -> NvSwitch
  std::vector<std::int32_t> gpu_pcie_up_;    // per GPU: GPU -> NIC (-1 without NICs)
  std::vector<std::int32_t> gpu_host_up_;    // per GPU: GPU -> Host (-1 unless domains split nodes)
  std::vector<std::int64_t> gpu_global_nic_;  // per GPU: global_nic_of (node * nics_per_node + nic_of)
  std::vector<std::int32_t> gpu_comm_node_;   // per GPU: comm_node_of
};

template <typename Hop>
void Cluster::visit_route(std::int64_t src_gpu, std::int64_t dst_gpu, Hop&& hop) const {
  check_gpu(src_gpu);
  check_gpu(dst_gpu);
  if (src_gpu == dst_gpu) return;
  const auto s = static_cast<std::size_t>(src_gpu);
  const auto d = static_cast<std::size_t>(dst_gpu);
  if (src_gpu / domain_gpus_ == dst_gpu / domain_gpus_) {
    hop(gpu_nvlink_up_[s]);
    hop(gpu_nvlink_up_[d] + 1);
    return;
  }
  if (src_gpu / comm_node_gpus_ == dst_gpu / comm_node_gpus_) {
    hop(gpu_host_up_[s]);
    hop(gpu_host_up_[d] + 1);
    return;
  }
  hop(gpu_pcie_up_[s]);
  fabric_->visit_route(global_nic_of(src_gpu), global_nic_of(dst_gpu), HopVisitor(hop));
  hop(gpu_pcie_up_[d] + 1);
}

// Megatron's rank order: rank = tp + t*(cp + c*(dp + d*pp)) for "tp-cp-dp-pp"; other orders permute.
struct Coord {
  std::int64_t tp = 0, cp = 0, dp = 0, pp = 0;
};

class Placement {
 public:
  // order: "tp-cp-dp-pp" (default) or "tp-cp-pp-dp" and the other permutations; first varies
  // fastest. An "ep" token (Megatron's "tp-cp-ep-dp-pp") is accepted and ignored: expert
  // parallelism is 1 for a dense decoder. Throws ScenarioError("parallel.rank_order", ...) for
  // unknown, missing or repeated tokens, and ScenarioError("parallel.<dim>", ...) for sizes < 1.
  Placement(const scenarios::ParallelSpec& parallel, const std::string& order);
  [[nodiscard]] std::int64_t world_size() const;
  [[nodiscard]] std::int64_t rank(const Coord& c) const;   // global rank == GPU index (rank r runs on GPU r)
  [[nodiscard]] Coord coord(std::int64_t rank) const;
  // Members of the group of `rank` along one dimension, ordered by that dimension's index.
  [[nodiscard]] std::vector<std::int64_t> tp_group(std::int64_t rank) const;
  [[nodiscard]] std::vector<std::int64_t> cp_group(std::int64_t rank) const;
  [[nodiscard]] std::vector<std::int64_t> dp_group(std::int64_t rank) const;
  [[nodiscard]] std::vector<std::int64_t> dp_cp_group(std::int64_t rank) const;   // gradient reduction group, ascending rank
  // With several distributed-optimizer instances (parallel.distributed_optimizer_instances = N),
  // Megatron's split of the DP x CP group (ascending ranks) into N consecutive blocks of
  // DP x CP / N ranks: the instance group of `rank` (its block: reduce-scatter, all-gather) and its
  // replica group (the ranks at its position in every block: the all-reduce across instances).
  // With N = 1 the instance group is dp_cp_group and the replica group is {rank}.
  [[nodiscard]] std::vector<std::int64_t> dp_cp_instance_group(std::int64_t rank) const;
  [[nodiscard]] std::vector<std::int64_t> dp_cp_replica_group(std::int64_t rank) const;
  [[nodiscard]] std::vector<std::int64_t> pp_group(std::int64_t rank) const;

 private:
  [[nodiscard]] std::vector<std::int64_t> group_along(std::int64_t rank, int dim) const;

  scenarios::ParallelSpec par_;
  std::vector<int> order_;   // dimension ids fastest first: 0 tp, 1 cp, 2 dp, 3 pp
};

// True when every member of the group sits in the same NVLink domain (an empty group counts as
// true): its collectives then run over NVLink only.
[[nodiscard]] bool within_nvlink_domain(const Cluster& cluster, const std::vector<std::int64_t>& gpus);

}  // namespace stepsim::topology
