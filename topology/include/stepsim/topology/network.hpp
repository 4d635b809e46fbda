#pragma once
// The directed links of a cluster and the vertices they join, stored as plain vectors. Every cable
// is two directed links with consecutive ids (up = a -> b, then down = b -> a); Link::id is the
// index into link(id). Cluster and the fabrics (fabric.hpp) fill a Network; routes are lists of
// its link ids.

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace stepsim::topology {

enum class VertexKind { Gpu, NvSwitch, Nic, Leaf, Spine, Host };

using VertexId = std::int32_t;

struct Vertex {
  VertexKind kind = VertexKind::Gpu;
  std::int32_t node = -1;     // node of a Gpu, Nic or Host; -1 for switches
  std::int32_t index = -1;    // GPU i of its node, NIC i of its node, NVLink domain, leaf or spine index
  std::string name;           // "n3.gpu5", "n3.nic1", "nvl3.nvswitch", "n3.host", "leaf2", "spine0"
};

// What a link is, so that engines can give it a sharing policy and reports can name it.
enum class LinkKind { NvLink, PcieToNic, NicToLeaf, LeafToSpine, PcieToHost };

struct Link {
  LinkKind kind = LinkKind::NvLink;
  double bw_Bps = 0;          // this direction
  double latency_s = 0;
  std::int32_t id = -1;       // dense index of the directed link, 0..num_links-1
};

class Network {
 public:
  VertexId add_vertex(Vertex v);
  // Adds the two directed links of a cable a <-> b (same bandwidth, a latency per direction);
  // returns the id of a -> b, b -> a being that id + 1.
  std::int32_t add_cable(VertexId a, VertexId b, LinkKind kind, double bw_Bps, double up_latency_s,
                         double down_latency_s);
  void reserve(std::size_t vertices, std::size_t cables);

  [[nodiscard]] std::int64_t num_vertices() const { return static_cast<std::int64_t>(vertices_.size()); }
  [[nodiscard]] std::int64_t num_links() const { return static_cast<std::int64_t>(links_.size()); }
  // InternalError for an id outside the network.
  [[nodiscard]] const Vertex& vertex(VertexId v) const;
  [[nodiscard]] const Link& link(std::int32_t id) const;
  // Source and target vertex of a directed link.
  [[nodiscard]] std::pair<VertexId, VertexId> link_ends(std::int32_t id) const;
  // Unchecked access for the route visitors (ids they produce are valid by construction).
  [[nodiscard]] const Link& link_unchecked(std::int32_t id) const { return links_[static_cast<std::size_t>(id)]; }

 private:
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<std::pair<VertexId, VertexId>> ends_;
};

// A non-owning callable taking a link id: what route visitors call for every hop. It refers to the
// caller's callable, so it must not outlive it (pass it down the call, never store it). Never
// allocates, unlike std::function.
class HopVisitor {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, HopVisitor>>>
  HopVisitor(F&& f)  // NOLINT(google-explicit-constructor): built at the call site from a lambda
      : target_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* t, std::int32_t id) { (*static_cast<std::remove_reference_t<F>*>(t))(id); }) {}
  void operator()(std::int32_t link_id) const { call_(target_, link_id); }

 private:
  void* target_;
  void (*call_)(void*, std::int32_t);
};

}  // namespace stepsim::topology
