#pragma once
// The scale-out fabric: the switches and cables between the NICs of the nodes
// (cluster.inter_node.topology). A Fabric builds its links into the cluster's Network and visits
// the route between two NICs; Cluster (cluster.hpp) adds the GPU -> NIC and NIC -> GPU hops, and
// the NVLink domains, around it. A new fabric (three-tier, dragonfly, ...) is one more class.
//
// The three fabrics of today are leaf-spine networks (LeafSpine) that differ in how NICs are
// cabled to leaves; each leaf has kLeafDownPorts NIC ports:
//   - SingleSwitch: every NIC on one leaf, no spine (oversubscription has no effect).
//   - FatTree: whole nodes fill leaves in order (floor(kLeafDownPorts / nics_per_node) nodes per
//     leaf, at least one).
//   - RailFatTree: NIC i of every node goes to rail leaf i of its node group; a group is
//     kLeafDownPorts consecutive nodes (one port per node per rail leaf, as in a DGX SuperPOD
//     scalable unit). Leaf id = group * nics_per_node + rail.
// With two or more leaves, every leaf has one aggregated cable to a single spine vertex, of
// capacity (sum of the leaf's NIC ports' bandwidth) / oversubscription and latency 0. A real fabric
// has many spines and one cable per port; aggregating them keeps the network small and keeps what
// matters for time: the leaf's total uplink capacity.
//
// Latency convention: the whole inter_node.latency_s sits on the NIC -> leaf link; leaf -> NIC and
// leaf <-> spine have 0, so every NIC-to-NIC route totals inter_node.latency_s whether or not it
// crosses the spine.

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/topology/network.hpp"

namespace stepsim::topology {

class Fabric {
 public:
  virtual ~Fabric() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Adds the fabric's switches to `net` and cables every NIC to them. NIC k (k = node *
  // nics_per_node + local index) is vertex nic_vertices[k]. Called once.
  virtual void build(Network& net, const std::vector<VertexId>& nic_vertices) = 0;
  // Calls hop(link id) for every directed link from NIC src_nic to NIC dst_nic (two different
  // NICs), in order. Does not allocate; routes may have any length.
  virtual void visit_route(std::int64_t src_nic, std::int64_t dst_nic, HopVisitor hop) const = 0;

 protected:
  Fabric() = default;
  Fabric(const Fabric&) = default;
  Fabric& operator=(const Fabric&) = default;
};

// NIC ports per leaf switch facing the nodes (a 64-port switch with half its ports up).
inline constexpr std::int64_t kLeafDownPorts = 32;

// A two-level fabric: NICs on leaves, leaves on one aggregated spine when there are several.
class LeafSpine : public Fabric {
 public:
  void build(Network& net, const std::vector<VertexId>& nic_vertices) override;
  void visit_route(std::int64_t src_nic, std::int64_t dst_nic, HopVisitor hop) const override;

  [[nodiscard]] std::int32_t num_leaves() const { return num_leaves_; }
  [[nodiscard]] bool has_spine() const { return num_leaves_ > 1; }
  // Leaf NIC k is cabled to; InternalError for a NIC outside the cluster.
  [[nodiscard]] std::int32_t leaf_of(std::int64_t nic) const;

 protected:
  // nic_leaf[k]: leaf of NIC k, leaves numbered 0..num_leaves-1.
  LeafSpine(const scenarios::InterNodeSpec& spec, std::vector<std::int32_t> nic_leaf, std::int32_t num_leaves);

 private:
  scenarios::InterNodeSpec spec_;
  std::vector<std::int32_t> nic_leaf_;
  std::int32_t num_leaves_ = 0;
  std::vector<std::int32_t> nic_up_;    // per NIC: NIC -> leaf (leaf -> NIC is + 1)
  std::vector<std::int32_t> leaf_up_;   // per leaf: leaf -> spine (spine -> leaf is + 1), -1 without spine
};

class SingleSwitch final : public LeafSpine {
 public:
  SingleSwitch(const scenarios::InterNodeSpec& spec, std::int64_t nodes);
  [[nodiscard]] std::string_view name() const override { return "single-switch"; }
};

class FatTree final : public LeafSpine {
 public:
  FatTree(const scenarios::InterNodeSpec& spec, std::int64_t nodes);
  [[nodiscard]] std::string_view name() const override { return "fat-tree"; }
};

class RailFatTree final : public LeafSpine {
 public:
  RailFatTree(const scenarios::InterNodeSpec& spec, std::int64_t nodes);
  [[nodiscard]] std::string_view name() const override { return "rail-fat-tree"; }
};

// The fabric named by spec.inter_node.topology for spec.nodes nodes.
[[nodiscard]] std::unique_ptr<Fabric> make_fabric(const scenarios::ClusterSpec& spec);

}  // namespace stepsim::topology
