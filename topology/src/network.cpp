#include "stepsim/topology/network.hpp"

#include <string>

#include "stepsim/scenarios/error.hpp"

namespace stepsim::topology {

VertexId Network::add_vertex(Vertex v) {
  vertices_.push_back(std::move(v));
  return static_cast<VertexId>(vertices_.size() - 1);
}

std::int32_t Network::add_cable(VertexId a, VertexId b, LinkKind kind, double bw_Bps, double up_latency_s,
                                double down_latency_s) {
  const auto up = static_cast<std::int32_t>(links_.size());
  links_.push_back(Link{kind, bw_Bps, up_latency_s, up});
  links_.push_back(Link{kind, bw_Bps, down_latency_s, up + 1});
  ends_.emplace_back(a, b);
  ends_.emplace_back(b, a);
  return up;
}

void Network::reserve(std::size_t vertices, std::size_t cables) {
  vertices_.reserve(vertices);
  links_.reserve(2 * cables);
  ends_.reserve(2 * cables);
}

const Vertex& Network::vertex(VertexId v) const {
  if (v < 0 || static_cast<std::size_t>(v) >= vertices_.size())
    throw InternalError("topology: no vertex with id " + std::to_string(v));
  return vertices_[static_cast<std::size_t>(v)];
}

const Link& Network::link(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= links_.size())
    throw InternalError("topology: no link with id " + std::to_string(id));
  return links_[static_cast<std::size_t>(id)];
}

std::pair<VertexId, VertexId> Network::link_ends(std::int32_t id) const {
  (void)link(id);
  return ends_[static_cast<std::size_t>(id)];
}

}  // namespace stepsim::topology
