#include <algorithm>
#include <array>
#include <string>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/topology/cluster.hpp"

namespace stepsim::topology {

namespace {

constexpr std::array<const char*, 4> kDimNames = {"tp", "cp", "dp", "pp"};  // rank_order_dims ids

std::int64_t& coord_at(Coord& c, int dim) {
  switch (dim) {
    case 0: return c.tp;
    case 1: return c.cp;
    case 2: return c.dp;
    default: return c.pp;
  }
}

std::int64_t coord_at(const Coord& c, int dim) {
  switch (dim) {
    case 0: return c.tp;
    case 1: return c.cp;
    case 2: return c.dp;
    default: return c.pp;
  }
}

std::int64_t size_of(const scenarios::ParallelSpec& p, int dim) {
  switch (dim) {
    case 0: return p.tp;
    case 1: return p.cp;
    case 2: return p.dp;
    default: return p.pp;
  }
}

}  // namespace

Placement::Placement(const scenarios::ParallelSpec& parallel, const std::string& order)
    : par_(parallel), order_(scenarios::rank_order_dims(order)) {
  for (int d = 0; d < 4; ++d)
    if (size_of(par_, d) < 1)
      throw ScenarioError(std::string("parallel.") + kDimNames[static_cast<std::size_t>(d)],
                          "must be at least 1, got " + std::to_string(size_of(par_, d)));
  const std::int64_t n = par_.distributed_optimizer_instances;
  if (n < 1 || (par_.dp * par_.cp) % n != 0)
    throw ScenarioError("parallel.distributed_optimizer_instances", "distributed_optimizer_instances=" + std::to_string(n) +
                                                                        " does not divide DP x CP (" + std::to_string(par_.dp * par_.cp) + ")");
}

std::int64_t Placement::world_size() const { return par_.tp * par_.cp * par_.dp * par_.pp; }

// rank = c[o0] + s[o0] * (c[o1] + s[o1] * (c[o2] + s[o2] * c[o3])) with o the order, fastest first.
std::int64_t Placement::rank(const Coord& c) const {
  std::int64_t r = 0;
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    const std::int64_t v = coord_at(c, *it);
    const std::int64_t n = size_of(par_, *it);
    if (v < 0 || v >= n)
      throw InternalError(std::string("placement: ") + kDimNames[static_cast<std::size_t>(*it)] + " coordinate " +
                          std::to_string(v) + " outside 0.." + std::to_string(n - 1));
    r = r * n + v;
  }
  return r;
}

Coord Placement::coord(std::int64_t rank) const {
  if (rank < 0 || rank >= world_size())
    throw InternalError("placement: rank " + std::to_string(rank) + " outside 0.." + std::to_string(world_size() - 1));
  Coord c;
  for (int dim : order_) {
    const std::int64_t n = size_of(par_, dim);
    coord_at(c, dim) = rank % n;
    rank /= n;
  }
  return c;
}

std::vector<std::int64_t> Placement::group_along(std::int64_t r, int dim) const {
  Coord c = coord(r);
  const std::int64_t n = size_of(par_, dim);
  std::vector<std::int64_t> members;
  members.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    coord_at(c, dim) = i;
    members.push_back(rank(c));
  }
  return members;
}

std::vector<std::int64_t> Placement::tp_group(std::int64_t r) const { return group_along(r, 0); }
std::vector<std::int64_t> Placement::cp_group(std::int64_t r) const { return group_along(r, 1); }
std::vector<std::int64_t> Placement::dp_group(std::int64_t r) const { return group_along(r, 2); }
std::vector<std::int64_t> Placement::pp_group(std::int64_t r) const { return group_along(r, 3); }

std::vector<std::int64_t> Placement::dp_cp_group(std::int64_t r) const {
  Coord c = coord(r);
  std::vector<std::int64_t> members;
  members.reserve(static_cast<std::size_t>(par_.dp * par_.cp));
  for (std::int64_t d = 0; d < par_.dp; ++d)
    for (std::int64_t k = 0; k < par_.cp; ++k) {
      c.dp = d;
      c.cp = k;
      members.push_back(rank(c));
    }
  std::sort(members.begin(), members.end());
  return members;
}

std::vector<std::int64_t> Placement::dp_cp_instance_group(std::int64_t r) const {
  const auto all = dp_cp_group(r);
  const auto size = static_cast<std::ptrdiff_t>(all.size()) / static_cast<std::ptrdiff_t>(par_.distributed_optimizer_instances);
  const auto at = std::find(all.begin(), all.end(), r) - all.begin();
  const auto first = all.begin() + at / size * size;
  return {first, first + size};
}

std::vector<std::int64_t> Placement::dp_cp_replica_group(std::int64_t r) const {
  const auto all = dp_cp_group(r);
  const auto size = static_cast<std::size_t>(all.size()) / static_cast<std::size_t>(par_.distributed_optimizer_instances);
  const auto at = static_cast<std::size_t>(std::find(all.begin(), all.end(), r) - all.begin());
  std::vector<std::int64_t> members;
  for (std::size_t i = at % size; i < all.size(); i += size) members.push_back(all[i]);
  return members;
}

}  // namespace stepsim::topology
