#include "stepsim/topology/fabric.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "stepsim/scenarios/error.hpp"

namespace stepsim::topology {

namespace {

using scenarios::FabricTopology;

// Leaf of every NIC when each leaf takes `nodes_per_leaf` whole nodes in order.
std::vector<std::int32_t> whole_nodes_per_leaf(std::int64_t nodes, std::int64_t nics, std::int64_t nodes_per_leaf) {
  std::vector<std::int32_t> leaf(static_cast<std::size_t>(nodes * nics));
  for (std::int64_t n = 0; n < nodes; ++n)
    for (std::int64_t i = 0; i < nics; ++i)
      leaf[static_cast<std::size_t>(n * nics + i)] = static_cast<std::int32_t>(n / nodes_per_leaf);
  return leaf;
}

std::int32_t leaves_for(std::int64_t nodes, std::int64_t nodes_per_leaf) {
  return static_cast<std::int32_t>((nodes + nodes_per_leaf - 1) / nodes_per_leaf);
}

std::int64_t fat_tree_nodes_per_leaf(const scenarios::InterNodeSpec& spec) {
  return std::max<std::int64_t>(1, kLeafDownPorts / std::max<std::int64_t>(1, spec.nics_per_node));
}

std::vector<std::int32_t> rail_leaves(std::int64_t nodes, std::int64_t nics) {
  std::vector<std::int32_t> leaf(static_cast<std::size_t>(nodes * nics));
  for (std::int64_t n = 0; n < nodes; ++n)
    for (std::int64_t i = 0; i < nics; ++i)
      leaf[static_cast<std::size_t>(n * nics + i)] = static_cast<std::int32_t>((n / kLeafDownPorts) * nics + i);
  return leaf;
}

}  // namespace

LeafSpine::LeafSpine(const scenarios::InterNodeSpec& spec, std::vector<std::int32_t> nic_leaf, std::int32_t num_leaves)
    : spec_(spec), nic_leaf_(std::move(nic_leaf)), num_leaves_(nic_leaf_.empty() ? 0 : num_leaves) {}

void LeafSpine::build(Network& net, const std::vector<VertexId>& nic_vertices) {
  if (nic_vertices.size() != nic_leaf_.size())
    throw InternalError("topology: fabric built for " + std::to_string(nic_leaf_.size()) + " NICs, given " +
                        std::to_string(nic_vertices.size()));
  std::vector<VertexId> leaf_vertex(static_cast<std::size_t>(num_leaves_));
  for (std::int32_t l = 0; l < num_leaves_; ++l)
    leaf_vertex[static_cast<std::size_t>(l)] = net.add_vertex(Vertex{VertexKind::Leaf, -1, l, "leaf" + std::to_string(l)});
  nic_up_.assign(nic_leaf_.size(), -1);
  for (std::size_t k = 0; k < nic_leaf_.size(); ++k)
    nic_up_[k] = net.add_cable(nic_vertices[k], leaf_vertex[static_cast<std::size_t>(nic_leaf_[k])], LinkKind::NicToLeaf,
                               spec_.nic_Bps, spec_.latency_s, 0.0);
  leaf_up_.assign(static_cast<std::size_t>(num_leaves_), -1);
  if (!has_spine()) return;
  const VertexId spine = net.add_vertex(Vertex{VertexKind::Spine, -1, 0, "spine0"});
  std::vector<std::int64_t> down_ports(static_cast<std::size_t>(num_leaves_), 0);
  for (const std::int32_t leaf : nic_leaf_) ++down_ports[static_cast<std::size_t>(leaf)];
  for (std::int32_t l = 0; l < num_leaves_; ++l) {
    const auto li = static_cast<std::size_t>(l);
    const double up_Bps = static_cast<double>(down_ports[li]) * spec_.nic_Bps / spec_.oversubscription;
    leaf_up_[li] = net.add_cable(leaf_vertex[li], spine, LinkKind::LeafToSpine, up_Bps, 0.0, 0.0);
  }
}

void LeafSpine::visit_route(std::int64_t src_nic, std::int64_t dst_nic, HopVisitor hop) const {
  const auto s = static_cast<std::size_t>(src_nic);
  const auto d = static_cast<std::size_t>(dst_nic);
  const std::int32_t src_leaf = nic_leaf_[s];
  const std::int32_t dst_leaf = nic_leaf_[d];
  hop(nic_up_[s]);
  if (src_leaf != dst_leaf) {
    hop(leaf_up_[static_cast<std::size_t>(src_leaf)]);
    hop(leaf_up_[static_cast<std::size_t>(dst_leaf)] + 1);
  }
  hop(nic_up_[d] + 1);
}

std::int32_t LeafSpine::leaf_of(std::int64_t nic) const {
  if (nic < 0 || static_cast<std::size_t>(nic) >= nic_leaf_.size())
    throw InternalError("topology: no NIC " + std::to_string(nic) + " in a fabric of " +
                        std::to_string(nic_leaf_.size()) + " NICs");
  return nic_leaf_[static_cast<std::size_t>(nic)];
}

SingleSwitch::SingleSwitch(const scenarios::InterNodeSpec& spec, std::int64_t nodes)
    : LeafSpine(spec, whole_nodes_per_leaf(nodes, spec.nics_per_node, std::max<std::int64_t>(1, nodes)), 1) {}

FatTree::FatTree(const scenarios::InterNodeSpec& spec, std::int64_t nodes)
    : LeafSpine(spec, whole_nodes_per_leaf(nodes, spec.nics_per_node, fat_tree_nodes_per_leaf(spec)),
                leaves_for(nodes, fat_tree_nodes_per_leaf(spec))) {}

RailFatTree::RailFatTree(const scenarios::InterNodeSpec& spec, std::int64_t nodes)
    : LeafSpine(spec, rail_leaves(nodes, spec.nics_per_node),
                static_cast<std::int32_t>(leaves_for(nodes, kLeafDownPorts) * spec.nics_per_node)) {}

std::unique_ptr<Fabric> make_fabric(const scenarios::ClusterSpec& spec) {
  switch (spec.inter_node.topology) {
    case FabricTopology::SingleSwitch: return std::make_unique<SingleSwitch>(spec.inter_node, spec.nodes);
    case FabricTopology::FatTree: return std::make_unique<FatTree>(spec.inter_node, spec.nodes);
    case FabricTopology::RailFatTree: return std::make_unique<RailFatTree>(spec.inter_node, spec.nodes);
  }
  throw InternalError("topology: unknown fabric " + std::to_string(static_cast<int>(spec.inter_node.topology)));
}

}  // namespace stepsim::topology
