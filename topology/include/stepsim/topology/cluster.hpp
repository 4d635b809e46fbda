#pragma once
// The cluster as a graph: GPUs, each node's NVLink/NVSwitch domain, NICs, leaf and spine switches.
// Every link is directed (one edge per direction) and carries bandwidth and latency. This is the one
// description of the cluster: the SimGrid platform of sim/ and the collective cost model of
// costmodel/ are both derived from it.
//
// Structure built by Cluster(spec):
//   - per node: one NvSwitch vertex, gpus_per_node Gpu vertices, nics_per_node Nic vertices;
//   - GPU <-> NvSwitch (NvLink): intra_node.bw_Bps per direction;
//   - GPU <-> its NIC (PcieToNic): GPU i of a node uses NIC floor(i * nics / gpus) (nic_of), at the
//     NIC's bandwidth (the PCIe switch is not the bottleneck of a DGX-class node);
//   - NIC <-> leaf (NicToLeaf): inter_node.nic_Bps per direction;
//   - leaf <-> spine (LeafToSpine): one aggregated edge pair per leaf to a single Spine vertex,
//     capacity = (sum of the leaf's downlink capacity) / oversubscription, latency 0. A real
//     fabric has many spines and one cable per port; aggregating them keeps the graph small
//     and keeps what matters for time: the leaf's total uplink capacity (oversubscription).
//
// Fabrics (inter_node.topology):
//   - SingleSwitch: one Leaf vertex for every NIC, no spine (oversubscription has no effect).
//   - FatTree: leaves of kLeafDownPorts NIC ports; whole nodes fill leaves in order
//     (floor(kLeafDownPorts / nics_per_node) nodes per leaf, at least one).
//   - RailFatTree: NIC i of every node goes to rail leaf i of its node group; a group is
//     kLeafDownPorts consecutive nodes (one port per node per rail leaf, as in a DGX SuperPOD
//     scalable unit). Leaf id = group * nics_per_node + rail.
//   A Spine vertex exists when there are two or more leaves.
//
// Latency convention (so that a route's latency is the spec's figure, whatever its length):
//   - intra-node: the whole intra_node.latency_s sits on the GPU -> NvSwitch hop, 0 on the way
//     down, so GPU -> NvSwitch -> GPU totals intra_node.latency_s;
//   - inter-node: the whole inter_node.latency_s sits on the NIC -> leaf hop; GPU <-> NIC,
//     leaf -> NIC and leaf <-> spine have 0, so every inter-node route totals inter_node.latency_s
//     whether or not it crosses the spine.
//
// Vertices are numbered node by node (NvSwitch, GPUs, NICs), then leaves, then the spine; links
// are numbered in creation order, and Link::id equals the index into link(id).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::topology {

enum class VertexKind { Gpu, NvSwitch, Nic, Leaf, Spine };

struct Vertex {
  VertexKind kind = VertexKind::Gpu;
  std::int32_t node = -1;     // node index for Gpu/NvSwitch/Nic, -1 for switches of the fabric
  std::int32_t index = -1;    // local index (GPU i of the node, NIC i, leaf i, spine i)
  std::string name;           // "n3.gpu5", "n3.nic1", "n3.nvswitch", "leaf2", "spine0"
};

// What a link is, so that engines can give it a SimGrid sharing policy and reports can name it.
enum class LinkKind { NvLink, PcieToNic, NicToLeaf, LeafToSpine };

struct Link {
  LinkKind kind = LinkKind::NvLink;
  double bw_Bps = 0;          // this direction
  double latency_s = 0;
  std::int32_t id = -1;       // dense index of the directed link, 0..num_links-1
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Vertex, Link>;
using VertexId = Graph::vertex_descriptor;

// A route between two GPUs: the directed links it crosses, in order.
struct Route {
  std::vector<std::int32_t> links;   // Link::id of each hop (empty from route_cost)
  double latency_s = 0;              // sum of hop latencies
  double bottleneck_Bps = 0;         // minimum hop bandwidth (+infinity for an empty route)
};

// NIC ports per leaf switch facing the nodes (a 64-port switch with half its ports up).
inline constexpr std::int64_t kLeafDownPorts = 32;

class Cluster {
 public:
  // Throws ScenarioError for a spec that cannot be built (no GPUs, no nodes, several nodes
  // without NICs, non-positive bandwidth or oversubscription).
  explicit Cluster(const scenarios::ClusterSpec& spec);

  const scenarios::ClusterSpec& spec() const { return spec_; }
  const Graph& graph() const { return graph_; }
  std::int64_t num_gpus() const;
  std::int64_t num_links() const;
  const Link& link(std::int32_t id) const;
  // Source and target vertex of a directed link.
  std::pair<VertexId, VertexId> link_ends(std::int32_t id) const;
  VertexId gpu_vertex(std::int64_t gpu) const;
  std::int32_t node_of(std::int64_t gpu) const;
  std::int32_t nic_of(std::int64_t gpu) const;   // local NIC index the GPU uses to leave its node
  std::int32_t num_leaves() const { return num_leaves_; }
  bool has_spine() const { return num_leaves_ > 1; }
  // Leaf a NIC (node, local index) is cabled to.
  std::int32_t leaf_of(std::int32_t node, std::int32_t nic) const;

  // Intra-node: GPU -> NvSwitch -> GPU. Inter-node: GPU -> NIC -> leaf [-> spine -> leaf] -> NIC
  // -> GPU, leaving through the source GPU's NIC and entering through the destination GPU's NIC.
  // Same GPU: empty route, latency 0, infinite bandwidth. O(hops), no graph search.
  Route route(std::int64_t src_gpu, std::int64_t dst_gpu) const;
  // Latency and bottleneck of route(src, dst) without listing its links (no allocation).
  Route route_cost(std::int64_t src_gpu, std::int64_t dst_gpu) const;
  // The link ids of route(src, dst) written to `out` (no allocation); returns how many.
  static constexpr int kMaxHops = 6;
  int route_links(std::int64_t src_gpu, std::int64_t dst_gpu, std::int32_t (&out)[kMaxHops]) const;

 private:
  void check_gpu(std::int64_t gpu) const;
  // Calls hop(link id) for each directed link from src to dst, in order.
  template <typename Hop>
  void visit_route(std::int64_t src_gpu, std::int64_t dst_gpu, Hop&& hop) const;
  std::int32_t add_link_pair(VertexId a, VertexId b, LinkKind kind, double bw_Bps,
                             double up_latency_s, double down_latency_s);

  scenarios::ClusterSpec spec_;
  Graph graph_;
  std::vector<VertexId> gpu_vertices_;
  std::vector<std::pair<VertexId, VertexId>> link_ends_;
  std::vector<Link> links_;                 // by id (a copy of the edge properties)
  // Link ids of the up direction; the down direction is always up + 1.
  std::vector<std::int32_t> gpu_nvlink_up_;  // per GPU: GPU -> NvSwitch
  std::vector<std::int32_t> gpu_pcie_up_;    // per GPU: GPU -> NIC
  std::vector<std::int32_t> nic_up_;         // per NIC (node * nics + i): NIC -> leaf
  std::vector<std::int32_t> nic_leaf_;       // per NIC: its leaf
  std::vector<std::int32_t> leaf_up_;        // per leaf: leaf -> spine (-1 without spine)
  std::int32_t num_leaves_ = 0;
};

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
  std::int64_t world_size() const;
  std::int64_t rank(const Coord& c) const;   // global rank == GPU index (rank r runs on GPU r)
  Coord coord(std::int64_t rank) const;
  // Members of the group of `rank` along one dimension, ordered by that dimension's index.
  std::vector<std::int64_t> tp_group(std::int64_t rank) const;
  std::vector<std::int64_t> cp_group(std::int64_t rank) const;
  std::vector<std::int64_t> dp_group(std::int64_t rank) const;
  std::vector<std::int64_t> dp_cp_group(std::int64_t rank) const;   // gradient reduction group, ascending rank
  std::vector<std::int64_t> pp_group(std::int64_t rank) const;

 private:
  std::vector<std::int64_t> group_along(std::int64_t rank, int dim) const;

  scenarios::ParallelSpec par_;
  std::vector<int> order_;   // dimension ids fastest first: 0 tp, 1 cp, 2 dp, 3 pp
};

// True when every member of the group sits on the same node (an empty group counts as true).
bool within_node(const Cluster& cluster, const std::vector<std::int64_t>& gpus);

}  // namespace stepsim::topology
