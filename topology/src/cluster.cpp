#include <algorithm>
#include <limits>
#include <string>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/topology/cluster.hpp"

namespace stepsim::topology {

namespace {

using scenarios::FabricTopology;

std::string node_prefix(std::int64_t node) { return "n" + std::to_string(node) + "."; }

void require(bool ok, const char* path, const std::string& reason) {
  if (!ok) throw ScenarioError(path, reason);
}

}  // namespace

Cluster::Cluster(const scenarios::ClusterSpec& spec) : spec_(spec) {
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

  // Leaves: which leaf every NIC is cabled to.
  const std::int64_t total_nics = nodes * nics;
  nic_leaf_.assign(static_cast<std::size_t>(total_nics), 0);
  std::int64_t leaves = 0;
  if (nics > 0) {
    switch (spec.inter_node.topology) {
      case FabricTopology::SingleSwitch:
        leaves = 1;
        break;
      case FabricTopology::FatTree: {
        const std::int64_t nodes_per_leaf = std::max<std::int64_t>(1, kLeafDownPorts / nics);
        leaves = (nodes + nodes_per_leaf - 1) / nodes_per_leaf;
        for (std::int64_t n = 0; n < nodes; ++n)
          for (std::int64_t i = 0; i < nics; ++i)
            nic_leaf_[static_cast<std::size_t>(n * nics + i)] = static_cast<std::int32_t>(n / nodes_per_leaf);
        break;
      }
      case FabricTopology::RailFatTree: {
        const std::int64_t groups = (nodes + kLeafDownPorts - 1) / kLeafDownPorts;
        leaves = groups * nics;
        for (std::int64_t n = 0; n < nodes; ++n)
          for (std::int64_t i = 0; i < nics; ++i)
            nic_leaf_[static_cast<std::size_t>(n * nics + i)] =
                static_cast<std::int32_t>((n / kLeafDownPorts) * nics + i);
        break;
      }
    }
  }
  num_leaves_ = static_cast<std::int32_t>(leaves);
  const bool spine = leaves > 1;

  // Vertices: node blocks [NvSwitch, GPUs, NICs], then leaves, then the spine.
  const std::int64_t block = 1 + gpus + nics;
  const std::int64_t first_leaf = nodes * block;
  const std::int64_t num_vertices = first_leaf + leaves + (spine ? 1 : 0);
  graph_ = Graph(static_cast<std::size_t>(num_vertices));
  auto vid = [](std::int64_t v) { return static_cast<VertexId>(v); };
  for (std::int64_t n = 0; n < nodes; ++n) {
    const std::string prefix = node_prefix(n);
    const auto node32 = static_cast<std::int32_t>(n);
    graph_[vid(n * block)] = Vertex{VertexKind::NvSwitch, node32, 0, prefix + "nvswitch"};
    for (std::int64_t g = 0; g < gpus; ++g)
      graph_[vid(n * block + 1 + g)] =
          Vertex{VertexKind::Gpu, node32, static_cast<std::int32_t>(g), prefix + "gpu" + std::to_string(g)};
    for (std::int64_t i = 0; i < nics; ++i)
      graph_[vid(n * block + 1 + gpus + i)] =
          Vertex{VertexKind::Nic, node32, static_cast<std::int32_t>(i), prefix + "nic" + std::to_string(i)};
  }
  for (std::int64_t l = 0; l < leaves; ++l)
    graph_[vid(first_leaf + l)] = Vertex{VertexKind::Leaf, -1, static_cast<std::int32_t>(l), "leaf" + std::to_string(l)};
  if (spine) graph_[vid(first_leaf + leaves)] = Vertex{VertexKind::Spine, -1, 0, "spine0"};

  // Links, two per cable (up, then down).
  const std::int64_t num_gpus_total = nodes * gpus;
  const std::size_t expected_links = static_cast<std::size_t>(
      2 * num_gpus_total + (nics > 0 ? 2 * num_gpus_total : 0) + 2 * total_nics + (spine ? 2 * leaves : 0));
  links_.reserve(expected_links);
  link_ends_.reserve(expected_links);
  gpu_vertices_.resize(static_cast<std::size_t>(num_gpus_total));
  gpu_nvlink_up_.assign(static_cast<std::size_t>(num_gpus_total), -1);
  gpu_pcie_up_.assign(static_cast<std::size_t>(num_gpus_total), -1);
  nic_up_.assign(static_cast<std::size_t>(total_nics), -1);
  leaf_up_.assign(static_cast<std::size_t>(leaves), -1);

  const double nic_Bps = spec.inter_node.nic_Bps;
  for (std::int64_t n = 0; n < nodes; ++n) {
    const VertexId nvswitch = vid(n * block);
    for (std::int64_t g = 0; g < gpus; ++g) {
      const std::int64_t gpu = n * gpus + g;
      const VertexId v = vid(n * block + 1 + g);
      gpu_vertices_[static_cast<std::size_t>(gpu)] = v;
      gpu_nvlink_up_[static_cast<std::size_t>(gpu)] =
          add_link_pair(v, nvswitch, LinkKind::NvLink, spec.intra_node.bw_Bps, spec.intra_node.latency_s, 0.0);
      if (nics > 0) {
        const VertexId nic = vid(n * block + 1 + gpus + nic_of(gpu));
        gpu_pcie_up_[static_cast<std::size_t>(gpu)] = add_link_pair(v, nic, LinkKind::PcieToNic, nic_Bps, 0.0, 0.0);
      }
    }
    for (std::int64_t i = 0; i < nics; ++i) {
      const auto k = static_cast<std::size_t>(n * nics + i);
      nic_up_[k] = add_link_pair(vid(n * block + 1 + gpus + i), vid(first_leaf + nic_leaf_[k]), LinkKind::NicToLeaf,
                                 nic_Bps, spec.inter_node.latency_s, 0.0);
    }
  }
  if (spine) {
    std::vector<std::int64_t> down_ports(static_cast<std::size_t>(leaves), 0);
    for (std::int32_t leaf : nic_leaf_) ++down_ports[static_cast<std::size_t>(leaf)];
    for (std::int64_t l = 0; l < leaves; ++l) {
      const double up_Bps =
          static_cast<double>(down_ports[static_cast<std::size_t>(l)]) * nic_Bps / spec.inter_node.oversubscription;
      leaf_up_[static_cast<std::size_t>(l)] =
          add_link_pair(vid(first_leaf + l), vid(first_leaf + leaves), LinkKind::LeafToSpine, up_Bps, 0.0, 0.0);
    }
  }
}

std::int32_t Cluster::add_link_pair(VertexId a, VertexId b, LinkKind kind, double bw_Bps, double up_latency_s,
                                    double down_latency_s) {
  const auto up = static_cast<std::int32_t>(links_.size());
  const Link l_up{kind, bw_Bps, up_latency_s, up};
  const Link l_down{kind, bw_Bps, down_latency_s, up + 1};
  boost::add_edge(a, b, l_up, graph_);
  boost::add_edge(b, a, l_down, graph_);
  links_.push_back(l_up);
  links_.push_back(l_down);
  link_ends_.emplace_back(a, b);
  link_ends_.emplace_back(b, a);
  return up;
}

std::int64_t Cluster::num_gpus() const { return spec_.world_size(); }

std::int64_t Cluster::num_links() const { return static_cast<std::int64_t>(links_.size()); }

const Link& Cluster::link(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= links_.size())
    throw InternalError("topology: no link with id " + std::to_string(id));
  return links_[static_cast<std::size_t>(id)];
}

std::pair<VertexId, VertexId> Cluster::link_ends(std::int32_t id) const {
  link(id);
  return link_ends_[static_cast<std::size_t>(id)];
}

void Cluster::check_gpu(std::int64_t gpu) const {
  if (gpu < 0 || gpu >= num_gpus())
    throw InternalError("topology: GPU " + std::to_string(gpu) + " outside the cluster of " +
                        std::to_string(num_gpus()) + " GPUs");
}

VertexId Cluster::gpu_vertex(std::int64_t gpu) const {
  check_gpu(gpu);
  return gpu_vertices_[static_cast<std::size_t>(gpu)];
}

std::int32_t Cluster::node_of(std::int64_t gpu) const {
  check_gpu(gpu);
  return static_cast<std::int32_t>(gpu / spec_.gpus_per_node);
}

// GPU i of a node with g GPUs and k NICs uses NIC floor(i * k / g): consecutive GPUs share a NIC
// (ABCI A: 8 GPUs, 4 NICs -> GPUs 0-1 on NIC 0, ..., 6-7 on NIC 3).
std::int32_t Cluster::nic_of(std::int64_t gpu) const {
  check_gpu(gpu);
  const std::int64_t local = gpu % spec_.gpus_per_node;
  return static_cast<std::int32_t>(local * spec_.inter_node.nics_per_node / spec_.gpus_per_node);
}

std::int32_t Cluster::leaf_of(std::int32_t node, std::int32_t nic) const {
  const std::int64_t nics = spec_.inter_node.nics_per_node;
  if (node < 0 || node >= spec_.nodes || nic < 0 || nic >= nics)
    throw InternalError("topology: no NIC " + std::to_string(nic) + " on node " + std::to_string(node));
  return nic_leaf_[static_cast<std::size_t>(node * nics + nic)];
}

template <typename Hop>
void Cluster::visit_route(std::int64_t src_gpu, std::int64_t dst_gpu, Hop&& hop) const {
  check_gpu(src_gpu);
  check_gpu(dst_gpu);
  if (src_gpu == dst_gpu) return;
  const auto s = static_cast<std::size_t>(src_gpu);
  const auto d = static_cast<std::size_t>(dst_gpu);
  const std::int32_t src_node = node_of(src_gpu);
  const std::int32_t dst_node = node_of(dst_gpu);
  if (src_node == dst_node) {
    hop(gpu_nvlink_up_[s]);
    hop(gpu_nvlink_up_[d] + 1);
    return;
  }
  const std::int64_t nics = spec_.inter_node.nics_per_node;
  const auto src_nic = static_cast<std::size_t>(src_node * nics + nic_of(src_gpu));
  const auto dst_nic = static_cast<std::size_t>(dst_node * nics + nic_of(dst_gpu));
  const std::int32_t src_leaf = nic_leaf_[src_nic];
  const std::int32_t dst_leaf = nic_leaf_[dst_nic];
  hop(gpu_pcie_up_[s]);
  hop(nic_up_[src_nic]);
  if (src_leaf != dst_leaf) {
    hop(leaf_up_[static_cast<std::size_t>(src_leaf)]);
    hop(leaf_up_[static_cast<std::size_t>(dst_leaf)] + 1);
  }
  hop(nic_up_[dst_nic] + 1);
  hop(gpu_pcie_up_[d] + 1);
}

Route Cluster::route(std::int64_t src_gpu, std::int64_t dst_gpu) const {
  Route r;
  r.bottleneck_Bps = std::numeric_limits<double>::infinity();
  r.links.reserve(6);
  visit_route(src_gpu, dst_gpu, [&](std::int32_t id) {
    const Link& l = links_[static_cast<std::size_t>(id)];
    r.links.push_back(id);
    r.latency_s += l.latency_s;
    r.bottleneck_Bps = std::min(r.bottleneck_Bps, l.bw_Bps);
  });
  return r;
}

Route Cluster::route_cost(std::int64_t src_gpu, std::int64_t dst_gpu) const {
  Route r;
  r.bottleneck_Bps = std::numeric_limits<double>::infinity();
  visit_route(src_gpu, dst_gpu, [&](std::int32_t id) {
    const Link& l = links_[static_cast<std::size_t>(id)];
    r.latency_s += l.latency_s;
    r.bottleneck_Bps = std::min(r.bottleneck_Bps, l.bw_Bps);
  });
  return r;
}

int Cluster::route_links(std::int64_t src_gpu, std::int64_t dst_gpu, std::int32_t (&out)[kMaxHops]) const {
  int n = 0;
  visit_route(src_gpu, dst_gpu, [&](std::int32_t id) { out[n++] = id; });
  return n;
}

bool within_node(const Cluster& cluster, const std::vector<std::int64_t>& gpus) {
  if (gpus.empty()) return true;
  const std::int32_t node = cluster.node_of(gpus.front());
  return std::all_of(gpus.begin(), gpus.end(), [&](std::int64_t g) { return cluster.node_of(g) == node; });
}

}  // namespace stepsim::topology
