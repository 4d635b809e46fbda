#include <algorithm>
#include <atomic>
#include <limits>
#include <string>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/topology/cluster.hpp"

namespace stepsim::topology {

namespace {

void require(bool ok, const char* path, const std::string& reason) {
  if (!ok) throw ScenarioError(path, reason);
}

std::uint64_t next_instance_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

Cluster::Cluster(const scenarios::ClusterSpec& spec) : spec_(spec), instance_id_(next_instance_id()) {
  const std::int64_t gpus = spec.gpus_per_node;
  const std::int64_t nodes = spec.nodes;
  const std::int64_t nics = spec.inter_node.nics_per_node;
  require(gpus >= 1, "cluster.gpus_per_node", "must be at least 1, got " + std::to_string(gpus));
  require(nodes >= 1, "cluster.nodes", "must be at least 1, got " + std::to_string(nodes));
  require(nics >= 0, "cluster.inter_node.nics_per_node", "must not be negative");
  require(nodes == 1 || nics >= 1, "cluster.inter_node.nics_per_node",
          "a cluster of several nodes needs at least one NIC per node");
  require(gpus == 1 || spec.intra_node.bw_Bps > 0, "cluster.intra_node.bw_GBps", "must be positive");
  require(nodes == 1 || spec.inter_node.nic_Bps > 0, "cluster.inter_node.nic_Gbps", "must be positive");
  require(spec.inter_node.oversubscription > 0, "cluster.inter_node.oversubscription", "must be positive");
  require(nodes * gpus <= std::numeric_limits<std::int32_t>::max() / 8, "cluster.nodes", "cluster too large");
  domain_gpus_ = spec.nvlink_domain_size();
  comm_node_gpus_ = spec.comm_node_size();
  require(domain_gpus_ >= 1 && (domain_gpus_ % gpus == 0 || gpus % domain_gpus_ == 0), "cluster.nvlink_domain_gpus",
          "must divide gpus_per_node (" + std::to_string(gpus) + ") or be a positive multiple of it, got " +
              std::to_string(domain_gpus_));
  const bool split_nodes = domain_gpus_ < gpus;
  require(!split_nodes || spec.intra_node.pcie_Bps > 0, "cluster.intra_node.pcie_GBps",
          "must be positive when NVLink domains are smaller than a node");
  require((nodes * gpus) % domain_gpus_ == 0, "cluster.nvlink_domain_gpus",
          std::to_string(domain_gpus_) + " does not divide the " + std::to_string(nodes * gpus) + " GPUs");

  const std::int64_t num_gpus_total = nodes * gpus;
  const std::int64_t total_nics = nodes * nics;
  const std::int64_t domains = num_gpus_total / domain_gpus_;
  fabric_ = make_fabric(spec);
  const std::int64_t hosts = split_nodes ? nodes : 0;
  net_.reserve(static_cast<std::size_t>(num_gpus_total + total_nics + domains + hosts + 2 * total_nics),
               static_cast<std::size_t>((split_nodes ? 3 : 2) * num_gpus_total + 2 * total_nics));

  gpu_vertices_.resize(static_cast<std::size_t>(num_gpus_total));
  std::vector<VertexId> nic_vertices(static_cast<std::size_t>(total_nics));
  for (std::int64_t n = 0; n < nodes; ++n) {
    const std::string prefix = "n" + std::to_string(n) + ".";
    const auto node32 = static_cast<std::int32_t>(n);
    for (std::int64_t g = 0; g < gpus; ++g)
      gpu_vertices_[static_cast<std::size_t>(n * gpus + g)] = net_.add_vertex(
          Vertex{VertexKind::Gpu, node32, static_cast<std::int32_t>(g), prefix + "gpu" + std::to_string(g)});
    for (std::int64_t i = 0; i < nics; ++i)
      nic_vertices[static_cast<std::size_t>(n * nics + i)] = net_.add_vertex(
          Vertex{VertexKind::Nic, node32, static_cast<std::int32_t>(i), prefix + "nic" + std::to_string(i)});
  }
  std::vector<VertexId> nvswitch(static_cast<std::size_t>(domains));
  for (std::int64_t d = 0; d < domains; ++d)
    nvswitch[static_cast<std::size_t>(d)] = net_.add_vertex(
        Vertex{VertexKind::NvSwitch, -1, static_cast<std::int32_t>(d), "nvl" + std::to_string(d) + ".nvswitch"});

  std::vector<VertexId> host(static_cast<std::size_t>(hosts));
  for (std::int64_t n = 0; n < hosts; ++n)
    host[static_cast<std::size_t>(n)] = net_.add_vertex(
        Vertex{VertexKind::Host, static_cast<std::int32_t>(n), 0, "n" + std::to_string(n) + ".host"});

  // Per GPU: its NIC and NCCL node, looked up on every flow of a plan.
  gpu_global_nic_.resize(static_cast<std::size_t>(num_gpus_total));
  gpu_comm_node_.resize(static_cast<std::size_t>(num_gpus_total));
  for (std::int64_t gpu = 0; gpu < num_gpus_total; ++gpu) {
    const std::int64_t local = gpu % gpus;
    gpu_global_nic_[static_cast<std::size_t>(gpu)] = (gpu / gpus) * nics + local * nics / gpus;
    gpu_comm_node_[static_cast<std::size_t>(gpu)] = static_cast<std::int32_t>(gpu / comm_node_gpus_);
  }
  gpu_nvlink_up_.assign(static_cast<std::size_t>(num_gpus_total), -1);
  gpu_host_up_.assign(static_cast<std::size_t>(num_gpus_total), -1);
  gpu_pcie_up_.assign(static_cast<std::size_t>(num_gpus_total), -1);
  for (std::int64_t gpu = 0; gpu < num_gpus_total; ++gpu) {
    const auto i = static_cast<std::size_t>(gpu);
    gpu_nvlink_up_[i] = net_.add_cable(gpu_vertices_[i], nvswitch[static_cast<std::size_t>(gpu / domain_gpus_)],
                                       LinkKind::NvLink, spec.intra_node.bw_Bps, spec.intra_node.latency_s, 0.0);
    if (nics > 0)
      gpu_pcie_up_[i] = net_.add_cable(gpu_vertices_[i], nic_vertices[static_cast<std::size_t>(global_nic_of(gpu))],
                                       LinkKind::PcieToNic, spec.inter_node.nic_Bps, 0.0, 0.0);
    if (split_nodes)
      gpu_host_up_[i] = net_.add_cable(gpu_vertices_[i], host[static_cast<std::size_t>(gpu / gpus)], LinkKind::PcieToHost,
                                       spec.intra_node.pcie_Bps, spec.intra_node.latency_s, 0.0);
  }
  fabric_->build(net_, nic_vertices);
}

void Cluster::gpu_error(std::int64_t gpu) const {
  throw InternalError("topology: GPU " + std::to_string(gpu) + " outside the cluster of " + std::to_string(num_gpus()) + " GPUs");
}

VertexId Cluster::gpu_vertex(std::int64_t gpu) const {
  check_gpu(gpu);
  return gpu_vertices_[static_cast<std::size_t>(gpu)];
}

std::int32_t Cluster::node_of(std::int64_t gpu) const {
  check_gpu(gpu);
  return static_cast<std::int32_t>(gpu / spec_.gpus_per_node);
}

std::int32_t Cluster::comm_node_of(std::int64_t gpu) const {
  check_gpu(gpu);
  return gpu_comm_node_[static_cast<std::size_t>(gpu)];
}

std::int32_t Cluster::nvlink_domain_of(std::int64_t gpu) const {
  check_gpu(gpu);
  return static_cast<std::int32_t>(gpu / domain_gpus_);
}

// GPU i of a node with g GPUs and k NICs uses NIC floor(i * k / g): consecutive GPUs share a NIC
// (ABCI A: 8 GPUs, 4 NICs -> GPUs 0-1 on NIC 0, ..., 6-7 on NIC 3).
std::int32_t Cluster::nic_of(std::int64_t gpu) const {
  check_gpu(gpu);
  const std::int64_t local = gpu % spec_.gpus_per_node;
  return static_cast<std::int32_t>(local * spec_.inter_node.nics_per_node / spec_.gpus_per_node);
}

std::int64_t Cluster::global_nic_of(std::int64_t gpu) const {
  check_gpu(gpu);
  return gpu_global_nic_[static_cast<std::size_t>(gpu)];
}

Route Cluster::route(std::int64_t src_gpu, std::int64_t dst_gpu) const {
  Route r = route_cost(src_gpu, dst_gpu);
  visit_route(src_gpu, dst_gpu, [&](std::int32_t id) { r.links.push_back(id); });
  return r;
}

Route Cluster::route_cost(std::int64_t src_gpu, std::int64_t dst_gpu) const {
  Route r;
  r.bottleneck_Bps = std::numeric_limits<double>::infinity();
  visit_route(src_gpu, dst_gpu, [&](std::int32_t id) {
    const Link& l = net_.link_unchecked(id);
    r.latency_s += l.latency_s;
    r.bottleneck_Bps = std::min(r.bottleneck_Bps, l.bw_Bps);
  });
  return r;
}

bool within_nvlink_domain(const Cluster& cluster, const std::vector<std::int64_t>& gpus) {
  if (gpus.empty()) return true;
  const std::int32_t domain = cluster.nvlink_domain_of(gpus.front());
  return std::all_of(gpus.begin(), gpus.end(), [&](std::int64_t g) { return cluster.nvlink_domain_of(g) == domain; });
}

}  // namespace stepsim::topology
