#include "stepsim/sim/cost.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "stepsim/costmodel/latency.hpp"
#include "stepsim/costmodel/nccl_tuner.hpp"
#include "stepsim/scenarios/error.hpp"

namespace stepsim::sim {

namespace {

// Equal bit for bit (so that equal values give equal results wherever they are used).
bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

// Whether two ops have every field the costing reads in common (so the same duration and plan).
bool same_price(const Op& a, const Op& b) {
  return a.kind == b.kind && a.collective == b.collective && a.work == b.work && a.group == b.group &&
         same_bits(a.message_bytes, b.message_bytes) && same_bits(a.count, b.count);
}

// Everything a priced plan depends on besides the cluster: the inputs of plan_collective.
struct PlanInputs {
  workload::Collective kind{};
  const SharedRanks* instances = nullptr;
  double bytes = 0;
  const costmodel::CommSettings* settings = nullptr;
};

// One collective of the plan's kind, group and size: its flows, its isolated time and its time
// with its own flows sharing links; per round, the distinct (route latency, bytes, route
// bottleneck) of its flows, from which the isolated time of count x the bytes follows exactly
// as from the flows themselves. The count does not enter.
struct OnePlan {
  struct Term {
    double latency_s;
    double bytes;
    double bottleneck_Bps;
    bool operator==(const Term&) const = default;
  };
  std::shared_ptr<const CompactPlan> plan;
  std::vector<std::int64_t> repeats;  // per round of the plan
  double setup_s = 0;                 // the plan's
  FlowRange range{};  // flow_range of the plan, what validation checks of its flows
  std::vector<std::vector<Term>> round_terms;
  double time_s = 0;
  double contended_s = 0;

  // `start_s` plus isolated_time_s of the plan with count x the bytes per flow and no setup: per
  // round, the slowest flow times the repeat (equal flows give equal times, so the distinct ones
  // suffice), summed in the same order.
  [[nodiscard]] double bandwidth_time_s(double start_s, double count) const {
    double total_s = start_s;
    for (std::size_t r = 0; r < round_terms.size(); ++r) {
      double slowest_s = 0.0;
      for (const Term& t : round_terms[r]) slowest_s = std::max(slowest_s, t.latency_s + t.bytes * count / t.bottleneck_Bps);
      total_s += static_cast<double>(repeats[r]) * slowest_s;
    }
    return total_s;
  }
};

// A collective's flows priced with `routes` (their routes, round by round, in the same order) and
// kept compact with the ends of `routes`: `bytes` are the flows' sizes round after round,
// `repeats` the rounds' repeats.
OnePlan price_flows(std::vector<double> bytes, std::vector<std::int64_t> repeats, double setup_s, costmodel::NcclAlgorithm algorithm,
                    costmodel::NcclProtocol protocol, const std::shared_ptr<const costmodel::PlanRoutes>& shared_routes) {
  const costmodel::PlanRoutes& routes = *shared_routes;
  OnePlan one;
  // What the analytic engine charges: the flows of the symmetric instances share links (a NIC of
  // two GPUs, an oversubscribed uplink) for the whole collective.
  one.contended_s = costmodel::contended_time_s(setup_s, repeats, bytes, routes);
  std::size_t k = 0;
  for (std::size_t r = 0; r < routes.rounds.size(); ++r) {
    auto& terms = one.round_terms.emplace_back();
    // Flows mostly repeat the route cost and size of the flow before them: such a flow adds no term.
    const costmodel::RouteCost* previous_cost = nullptr;
    double previous_bytes = 0;
    for (const costmodel::FlowRoute& route : routes.rounds[r]) {
      const double b = bytes[k++];
      if (route.src_gpu == route.dst_gpu) continue;  // as isolated_time_s
      const costmodel::RouteCost& c = routes.cost(route);
      if (&c == previous_cost && same_bits(b, previous_bytes)) continue;
      previous_cost = &c;
      previous_bytes = b;
      const OnePlan::Term t{c.latency_s, b, c.bottleneck_Bps};
      if (std::find(terms.begin(), terms.end(), t) == terms.end()) terms.push_back(t);
    }
  }
  one.range = flow_range(repeats, bytes);
  one.setup_s = setup_s;
  one.repeats = repeats;
  one.plan = std::make_shared<const CompactPlan>(bytes, std::move(repeats), setup_s, algorithm, protocol, shared_routes);
  // isolated_time_s(cluster, plan), from the distinct flows (x / bw == x * 1.0 / bw).
  one.time_s = one.bandwidth_time_s(one.setup_s, 1.0);
  return one;
}

// `plan` priced with `routes` (plan_routes of the same flows: routes->matches(plan)).
OnePlan price_one(const costmodel::CommPlan& plan, const std::shared_ptr<const costmodel::PlanRoutes>& shared_routes) {
  if (!shared_routes->matches(plan)) throw InternalError("plan cache: the flows do not go between the given routes");
  costmodel::FlowSizes sizes = costmodel::flow_sizes(plan);
  return price_flows(std::move(sizes.bytes), std::move(sizes.repeats), plan.setup_s, plan.algorithm, plan.protocol, shared_routes);
}

// A ring shape (costmodel::RingShape) as the plan cache keeps it: its flows' size recipes as runs
// of equal ones, in flow order (their ends are those of the routes it is priced with).
struct StoredRing {
  costmodel::TunerInput tuner;
  double graph_Bps = 0;
  std::int64_t ranks = 0;
  std::int64_t repeat = 0;
  double route_latency_s = 0;
  double slowest_route_latency_s = 0;
  std::size_t flows = 0;
  std::vector<std::pair<costmodel::RingFlow, std::size_t>> runs;  // (recipe, flows), the recipe's ends unset

  // `collective`'s fields that depend on the collective (costmodel::set_ring_collective) and the
  // flows of `other`, a shape of another collective over the same instances and settings.
  StoredRing(const costmodel::RingShape& collective, const StoredRing& other)
      : tuner(collective.tuner), graph_Bps(collective.graph_Bps), ranks(collective.ranks), repeat(collective.repeat),
        route_latency_s(collective.route_latency_s), slowest_route_latency_s(other.slowest_route_latency_s), flows(other.flows),
        runs(other.runs) {}

  explicit StoredRing(const costmodel::RingShape& shape)
      : tuner(shape.tuner), graph_Bps(shape.graph_Bps), ranks(shape.ranks), repeat(shape.repeat),
        route_latency_s(shape.route_latency_s), slowest_route_latency_s(shape.slowest_route_latency_s), flows(shape.flows.size()) {
    for (const auto& f : shape.flows) {
      if (!runs.empty() && same_bits(runs.back().first.parts, f.parts) && same_bits(runs.back().first.efficiency, f.efficiency)) {
        ++runs.back().second;
        continue;
      }
      costmodel::RingFlow recipe;
      recipe.parts = f.parts;
      recipe.efficiency = f.efficiency;
      runs.emplace_back(recipe, 1);
    }
  }
};

// The distinct (route cost, size recipe, from a GPU to itself or not) of a ring's flows with its
// routes, in the order they first come: a flow's time and its term (OnePlan::Term) are those of
// its pair, so that the ring is priced from these at any size as from every flow.
struct RingPair {
  std::int32_t cost = 0;  // PlanRoutes::costs
  std::int32_t run = 0;   // StoredRing::runs
  bool self = false;
  bool operator==(const RingPair&) const = default;
};

std::vector<RingPair> ring_pairs(const StoredRing& ring, const costmodel::PlanRoutes& routes) {
  std::size_t flows = 0;
  for (const auto& [recipe, n] : ring.runs) flows += n;
  if (routes.rounds.size() != 1 || routes.rounds.front().size() != flows)
    throw InternalError("plan cache: a ring's routes are not one round of its flows");
  std::vector<RingPair> pairs;
  std::size_t f = 0;
  for (std::size_t run = 0; run < ring.runs.size(); ++run)
    for (std::size_t k = 0; k < ring.runs[run].second; ++k, ++f) {
      const costmodel::FlowRoute& route = routes.rounds.front()[f];
      const RingPair p{route.cost, static_cast<std::int32_t>(run), route.src_gpu == route.dst_gpu};
      if (!pairs.empty() && pairs.back() == p) continue;
      if (std::find(pairs.begin(), pairs.end(), p) == pairs.end()) pairs.push_back(p);
    }
  return pairs;
}

// The ring collective of `ring` in `bytes` under the tuner's `choice` (the ring), priced with
// the routes of its flows and their distinct pairs (ring_pairs): plan_collective's plan and
// price_one's pricing of it, without making the flows anew (costmodel::RingShape) or reading each
// one. The slowest flow and the set of terms are those of the pairs; the flows' sizes are the
// recipes' runs.
OnePlan price_ring(const StoredRing& ring, const std::vector<RingPair>& pairs, const std::shared_ptr<const costmodel::PlanRoutes>& routes,
                   const costmodel::TunerChoice& choice, double bytes, const costmodel::CommSettings& settings) {
  const double chunk = costmodel::ring_chunk_bytes(bytes, ring.ranks, choice, ring.graph_Bps);
  std::vector<std::pair<double, std::int64_t>> runs;
  std::vector<double> run_bytes;
  runs.reserve(ring.runs.size());
  run_bytes.reserve(ring.runs.size());
  for (const auto& [recipe, n] : ring.runs) {
    runs.emplace_back(recipe.bytes(chunk), static_cast<std::int64_t>(n));
    run_bytes.push_back(runs.back().first);
  }
  double setup_s = settings.collective_setup_s;
  setup_s += std::max(0.0, choice.latency_s - ring.route_latency_s);
  OnePlan one;
  // As contended_time_s and price_flows over the flows: the slowest flow with a link (a flow
  // from a GPU to itself moves nothing), the distinct terms of the flows between two GPUs.
  double slowest_s = 0.0;
  auto& terms = one.round_terms.emplace_back();
  for (const RingPair& p : pairs) {
    const costmodel::RouteCost& c = routes->costs[static_cast<std::size_t>(p.cost)];
    const double b = run_bytes[static_cast<std::size_t>(p.run)];
    if (c.share_Bps != std::numeric_limits<double>::infinity()) slowest_s = std::max(slowest_s, c.latency_s + b / c.share_Bps);
    if (p.self) continue;
    const OnePlan::Term t{c.latency_s, b, c.bottleneck_Bps};
    if (std::find(terms.begin(), terms.end(), t) == terms.end()) terms.push_back(t);
  }
  double contended_s = setup_s;
  contended_s += static_cast<double>(ring.repeat) * slowest_s;
  one.contended_s = contended_s;
  one.repeats = {ring.repeat};
  one.range = flow_range(one.repeats, run_bytes);
  one.setup_s = setup_s;
  one.plan = std::make_shared<const CompactPlan>(runs, one.repeats, setup_s, choice.algorithm, choice.protocol, routes);
  one.time_s = one.bandwidth_time_s(one.setup_s, 1.0);
  return one;
}

// `count` back-to-back identical collectives as one plan: the rounds carry count x the bytes,
// and the setup absorbs the start-up and per-round latencies of the other count - 1, so that
// the isolated time is exactly count x that of one collective. The folded plan's setup and the
// time the analytic engine charges.
struct Folded {
  double setup_s = 0;
  double time_s = 0;
};

Folded with_count(const OnePlan& one, double count) {
  Folded out;
  // The plan replayed by SimGrid: count x the bytes per flow, the start-up and per-round latencies
  // of the other count - 1 collectives in the setup.
  const double bw_time = count == 1.0 ? one.time_s - one.setup_s : one.bandwidth_time_s(0.0, count);
  // count >= 1 makes count x one_time >= bw_time, so the setup is never negative.
  out.setup_s = std::max(0.0, count * one.time_s - bw_time);
  out.time_s = count * one.contended_s;
  return out;
}

std::int64_t flow_count(const costmodel::CommPlan& plan) {
  std::int64_t n = 0;
  for (const auto& round : plan.rounds) n += static_cast<std::int64_t>(round.flows.size());
  return n;
}

// The priced collectives of the process, shared by every costing pass: the candidates of a sweep
// worker repeat the same collectives (groups, kinds, sizes) on the same cluster, and so do the
// micro-batches of one step. An entry is found only when every input is equal: the cluster (the
// same Cluster object, by its instance id), the settings, the kind, the instances rank by rank and
// the bytes; it holds the collective priced once (OnePlan), from which every count folds exactly
// what pricing anew would compute. The instances of a group are stored once for all the entries
// of that group, and so are the routes of its flows for each algorithm (what pricing reads from
// the topology), which serve every size of the collective. Bounded: the cache is emptied when the
// flows and ranks it holds pass kMaxItems.
class PlanCache {
 public:
  static PlanCache& instance() {
    static PlanCache cache;
    return cache;
  }

  std::shared_ptr<const OnePlan> get(const topology::Cluster& cluster, const PlanInputs& in) {
    const std::uint64_t group_hash = mix(mix(cluster.instance_id(), static_cast<std::uint64_t>(in.kind)), in.instances->hash());
    const std::uint64_t h = mix(group_hash, std::bit_cast<std::uint64_t>(in.bytes));
    std::lock_guard<std::mutex> lock(mutex_);
    if (!enabled_) {
      ++stats_.misses;
      const auto plan = make_plan(cluster, in);
      const auto routes = std::make_shared<const costmodel::PlanRoutes>(costmodel::plan_routes(cluster, plan));
      return std::make_shared<const OnePlan>(price_one(plan, routes));
    }
    auto [lo, hi] = entries_.equal_range(h);
    for (auto it = lo; it != hi; ++it)
      if (matches(it->second, cluster.instance_id(), in)) {
        ++stats_.hits;
        return it->second.one;
      }
    ++stats_.misses;
    const RingEntry* ring = ring_of(cluster, group_hash, in);
    const bool noted_now = ring == nullptr && (ring = new_ring(cluster, group_hash, in)) != nullptr;
    if (ring != nullptr) {
      // A ring collective: its shape (noted for an earlier size or just now) gives the plan, if the
      // tuner picks the ring for this size.
      const costmodel::TunerChoice choice = costmodel::choose(ring->shape->tuner, in.bytes, in.settings->algorithm);
      if (choice.algorithm == costmodel::NcclAlgorithm::Ring) {
        ++stats_.ring_shapes_used;
        auto one = std::make_shared<const OnePlan>(price_ring(*ring->shape, ring->pairs, ring->routes, choice, in.bytes, *in.settings));
        // Counted as a plan in full is (its flows; new_ring left room for them): a later size keeps
        // only its sizes' runs beside the shared routes, and is not counted.
        if (noted_now) items_ += static_cast<std::int64_t>(ring->shape->flows);
        entries_.emplace(h, Entry{cluster.instance_id(), in.kind, ring->instances, in.bytes, *in.settings, one});
        stats_.entries = static_cast<std::int64_t>(entries_.size());
        return one;
      }
    }
    const auto plan = make_plan(cluster, in);
    const std::int64_t flows = flow_count(plan);
    if (items_ + 2 * flows > kMaxItems) clear();
    const SharedRanks& instances = intern(group_hash, *in.instances);
    const auto plan_routes = routes(cluster, in.kind, instances, plan);
    auto one = std::make_shared<const OnePlan>(price_one(plan, plan_routes));
    items_ += flows;
    entries_.emplace(h, Entry{cluster.instance_id(), in.kind, instances, in.bytes, *in.settings, one});
    stats_.entries = static_cast<std::int64_t>(entries_.size());
    return one;
  }

  void set_enabled(bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    enabled_ = on;
    clear();
    stats_ = {};
  }

  PlanCacheStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  static constexpr std::int64_t kMaxItems = std::int64_t{1} << 22;  // flows and ranks held (~100 MB)

  struct Entry {
    std::uint64_t cluster_id;
    workload::Collective kind;
    SharedRanks instances;
    double bytes;
    costmodel::CommSettings settings;
    std::shared_ptr<const OnePlan> one;
  };

  static costmodel::CommPlan make_plan(const topology::Cluster& cluster, const PlanInputs& in) {
    if (cluster.spec().ideal_network) return {};
    return costmodel::plan_collective(cluster, in.kind, in.instances->get(), in.bytes, *in.settings);
  }

  // The routes of `plan`'s flows: those of an earlier plan of the same cluster, group and algorithm
  // (another size, or another collective over the group) when its flows go between the same ends,
  // else found and stored (in place of the group's entry for the same collective, if any). The
  // routes depend on the flows' ends alone, and the check of every flow's ends makes the sharing an
  // assertion, not an assumption.
  std::shared_ptr<const costmodel::PlanRoutes> routes(const topology::Cluster& cluster, workload::Collective kind,
                                                      const SharedRanks& instances, const costmodel::CommPlan& plan) {
    const std::uint64_t h = mix(mix(cluster.instance_id(), instances.hash()), static_cast<std::uint64_t>(plan.algorithm));
    auto [lo, hi] = routes_.equal_range(h);
    RouteEntry* same_kind = nullptr;
    for (auto it = lo; it != hi; ++it) {
      RouteEntry& e = it->second;
      if (e.cluster_id != cluster.instance_id() || e.algorithm != plan.algorithm || !(e.instances == instances)) continue;
      if (e.routes->matches(plan)) {
        ++stats_.routes_reused;
        return e.routes;
      }
      if (e.kind == kind) same_kind = &e;
    }
    auto found = std::make_shared<const costmodel::PlanRoutes>(costmodel::plan_routes(cluster, plan));
    if (same_kind != nullptr) return same_kind->routes = std::move(found);
    items_ += flow_count(plan);
    return routes_.emplace(h, RouteEntry{cluster.instance_id(), kind, instances, plan.algorithm, std::move(found)})->second.routes;
  }

  static std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
  }

  // The stored `instances` (shared ranks), one for every entry of the group.
  const SharedRanks& intern(std::uint64_t group_hash, const SharedRanks& instances) {
    auto [lo, hi] = instances_.equal_range(group_hash);
    for (auto it = lo; it != hi; ++it)
      if (it->second == instances) return it->second;
    for (const auto& g : instances) items_ += static_cast<std::int64_t>(g.size());
    return instances_.emplace(group_hash, instances)->second;
  }

  void clear() {
    entries_.clear();
    routes_.clear();
    instances_.clear();
    ring_groups_.clear();
    rings_.clear();
    items_ = 0;
  }

  // The ring shape of a collective (cluster, kind, group, settings), when one was noted.
  struct RingEntry {
    std::uint64_t cluster_id;
    workload::Collective kind;
    SharedRanks instances;
    costmodel::CommSettings settings;
    std::shared_ptr<const StoredRing> shape;
    std::shared_ptr<const costmodel::PlanRoutes> routes;
    std::vector<RingPair> pairs;  // ring_pairs(*shape, *routes)
  };
  const RingEntry* ring_of(const topology::Cluster& cluster, std::uint64_t group_hash, const PlanInputs& in) const {
    // A size the plan would reject (negative, NaN) or cannot be a ring is planned in full.
    if (!(in.bytes >= 0.0) || in.bytes == std::numeric_limits<double>::infinity()) return nullptr;
    auto [lo, hi] = rings_.equal_range(group_hash);
    for (auto it = lo; it != hi; ++it) {
      const RingEntry& e = it->second;
      if (e.cluster_id == cluster.instance_id() && e.kind == in.kind && same_settings(e.settings, *in.settings) && e.instances == *in.instances)
        return &e;
    }
    return nullptr;
  }

  // The ring shape of `in`'s collective, noted with the routes of its flows, when the tuner picks
  // the ring for its size: what plan_collective's ring plan is made of (costmodel::RingShape), so
  // that this size and later ones are priced from it. nullptr for a collective that is not a ring
  // at this size (planned in full) or cannot be one.
  const RingEntry* new_ring(const topology::Cluster& cluster, std::uint64_t group_hash, const PlanInputs& in) {
    using workload::Collective;
    if (cluster.spec().ideal_network || !(in.bytes >= 0.0) || in.bytes == std::numeric_limits<double>::infinity()) return nullptr;
    if (in.kind != Collective::AllReduce && in.kind != Collective::ReduceScatter && in.kind != Collective::AllGather) return nullptr;
    const auto& groups = in.instances->get();
    if (groups.empty() || groups.front().size() < 2) return nullptr;
    // Instances of different sizes: plan_collective says so.
    for (const auto& g : groups)
      if (g.size() != groups.front().size()) return nullptr;
    costmodel::check_settings(*in.settings);
    const costmodel::TunerInput tuner = costmodel::tuner_input(cluster, in.kind, groups.front(), *in.settings);
    const costmodel::TunerChoice choice = costmodel::choose(tuner, in.bytes, in.settings->algorithm);
    if (choice.algorithm != costmodel::NcclAlgorithm::Ring) return nullptr;
    // A ring of another collective over the same instances and settings has the same flows: its
    // shape is this one's but for the fields that depend on the collective, its routes and pairs
    // are this one's.
    if (const RingEntry* other = ring_of_group(cluster, in)) {
      costmodel::RingShape collective;
      collective.slowest_route_latency_s = other->shape->slowest_route_latency_s;
      costmodel::set_ring_collective(cluster, in.kind, groups.front(), *in.settings, collective);
      ++stats_.rings_noted;
      return &rings_.emplace(group_hash, RingEntry{cluster.instance_id(), in.kind, other->instances, *in.settings,
                                                    std::make_shared<const StoredRing>(collective, *other->shape), other->routes,
                                                    other->pairs})->second;
    }
    const costmodel::RingShape shape = costmodel::ring_shape(cluster, in.kind, groups, *in.settings);
    const auto flows = static_cast<std::int64_t>(shape.flows.size());
    if (items_ + 2 * flows > kMaxItems) clear();
    const SharedRanks& instances = intern(group_hash, *in.instances);
    // The routes of the shape's flows (their ends, whatever their size).
    costmodel::CommPlan ends;
    ends.algorithm = choice.algorithm;
    ends.protocol = choice.protocol;
    auto& round = ends.rounds.emplace_back();
    round.repeat = shape.repeat;
    round.flows.reserve(shape.flows.size());
    for (const auto& f : shape.flows) round.flows.push_back(costmodel::Flow{f.src_gpu, f.dst_gpu, 0.0});
    const auto ring_routes = routes(cluster, in.kind, instances, ends);
    items_ += flows;
    ++stats_.rings_noted;
    auto stored = std::make_shared<const StoredRing>(shape);
    auto pairs = ring_pairs(*stored, *ring_routes);
    const RingEntry* noted = &rings_.emplace(group_hash, RingEntry{cluster.instance_id(), in.kind, instances, *in.settings, std::move(stored),
                                                                   ring_routes, std::move(pairs)})->second;
    ring_groups_.emplace(ring_group_hash(cluster, *in.instances), noted);
    return noted;
  }

  static std::uint64_t ring_group_hash(const topology::Cluster& cluster, const SharedRanks& instances) {
    return mix(cluster.instance_id(), instances.hash());
  }

  // A ring noted for another collective over the same instances and settings, or nullptr.
  const RingEntry* ring_of_group(const topology::Cluster& cluster, const PlanInputs& in) const {
    auto [lo, hi] = ring_groups_.equal_range(ring_group_hash(cluster, *in.instances));
    for (auto it = lo; it != hi; ++it) {
      const RingEntry& e = *it->second;
      if (e.cluster_id == cluster.instance_id() && same_settings(e.settings, *in.settings) && e.instances == *in.instances) return &e;
    }
    return nullptr;
  }

  // Every field of the settings: a field added to CommSettings changes its size and stops the
  // build here until it is compared too.
  static bool same_settings(const costmodel::CommSettings& a, const costmodel::CommSettings& b) {
    static_assert(sizeof(costmodel::CommSettings) == sizeof(double) * 6, "compare every field of CommSettings");
    return a.algorithm == b.algorithm && a.nvlink_efficiency == b.nvlink_efficiency && a.network_efficiency == b.network_efficiency &&
           a.nvls_efficiency == b.nvls_efficiency &&
           a.collective_setup_s == b.collective_setup_s && a.p2p_setup_s == b.p2p_setup_s;
  }

  static bool matches(const Entry& e, std::uint64_t cluster_id, const PlanInputs& in) {
    return e.cluster_id == cluster_id && e.kind == in.kind && e.bytes == in.bytes && same_settings(e.settings, *in.settings) &&
           e.instances == *in.instances;
  }

  std::mutex mutex_;
  bool enabled_ = true;
  std::unordered_multimap<std::uint64_t, Entry> entries_;
  std::unordered_multimap<std::uint64_t, SharedRanks> instances_;
  struct RouteEntry {
    std::uint64_t cluster_id;
    workload::Collective kind;
    SharedRanks instances;
    costmodel::NcclAlgorithm algorithm;
    std::shared_ptr<const costmodel::PlanRoutes> routes;
  };
  std::unordered_multimap<std::uint64_t, RouteEntry> routes_;
  std::unordered_multimap<std::uint64_t, RingEntry> rings_;  // by group hash
  // The rings whose shape was made (not taken from another collective's), by cluster and instances.
  std::unordered_multimap<std::uint64_t, const RingEntry*> ring_groups_;
  std::int64_t items_ = 0;
  PlanCacheStats stats_;
};

struct PlanRef {
  std::int32_t index = -1;
  double time_s = 0;
};

class Coster {
 public:
  Coster(StepGraph& g, const topology::Cluster& cluster, const costmodel::ComputeModel& compute,
         const costmodel::CommSettings& comm)
      : g_(g), cl_(cluster), cm_(compute), comm_(comm) {}

  void run() {
    g_.plans.clear();
    std::vector<double> list_s;
    std::vector<double> list_attention_s;  // the attention kernels of the list
    std::vector<bool> list_host;  // host time only (the GPU waits): not slowed by communication beside it
    list_s.reserve(g_.kernel_lists.size());
    list_attention_s.reserve(g_.kernel_lists.size());
    list_host.reserve(g_.kernel_lists.size());
    for (const auto& ks : g_.kernel_lists) {
      list_s.push_back(cm_.time_s(ks));
      double attention = 0;
      for (const auto& k : ks)
        if (k.kind == workload::KernelKind::Attention) attention += cm_.time_s(k);
      list_attention_s.push_back(attention);
      list_host.push_back(!ks.empty() && std::all_of(ks.begin(), ks.end(), [](const workload::Kernel& k) {
                            return k.kind == workload::KernelKind::Host;
                          }));
    }
    std::vector<double> work_s, work_attention_s;
    work_s.reserve(g_.works.size());
    work_attention_s.reserve(g_.works.size());
    for (const auto& w : g_.works) {
      double t = 0, host = 0, attention = 0;
      for (const auto& [list, count] : w.terms) {
        const auto li = static_cast<std::size_t>(list);
        (list_host[li] ? host : t) += count * list_s[li];
        attention += count * list_attention_s[li];
      }
      work_s.push_back((w.shares_sms ? cm_.comm_slowed_time_s(t) : t) + host);
      work_attention_s.push_back(w.shares_sms ? cm_.comm_slowed_time_s(attention) : attention);
    }
    const bool network = !cl_.spec().ideal_network;
    // Op i priced: a copy of an op of a repeated pass as that op, priced before it; the others from
    // their work or their collective.
    // Op i, stored at ops[at].
    const auto price = [&](std::size_t i, std::size_t at) {
      Op& op = g_.ops[at];
      if (op.cost_of >= 0) {
        const auto src = static_cast<std::size_t>(op.cost_of);
        const std::int64_t src_at = src < i ? g_.position(op.cost_of) : -1;
        if (src_at < 0 || !same_price(g_.ops[static_cast<std::size_t>(src_at)], op))
          throw InternalError("op " + std::to_string(i) + " is priced as op " + std::to_string(src) +
                              ", which is not an earlier stored op of the same kind, work, group, size and count");
        op.duration_s = g_.ops[static_cast<std::size_t>(src_at)].duration_s;
        op.plan = g_.ops[static_cast<std::size_t>(src_at)].plan;
        return;
      }
      switch (op.kind) {
        case OpKind::Compute:
          op.duration_s = op.work >= 0 ? work_s[static_cast<std::size_t>(op.work)] : 0.0;
          break;
        case OpKind::Collective:
        case OpKind::SendRecv: {
          const auto ref = plan(op);
          op.plan = ref.index;
          op.duration_s = ref.time_s;
          break;
        }
        case OpKind::Delay:
          // The part of a layer group's compute before its CP ring can run: all of it but the
          // window of its attention kernels that hides the ring's steps.
          if (op.work >= 0) {
            const auto wi = static_cast<std::size_t>(op.work);
            op.duration_s = std::max(0.0, work_s[wi] - op.count * work_attention_s[wi]);
          }
          // A latency-bound collective of a few bytes over every rank (the gradient norm).
          else if (op.group >= 0 && g_.groups[static_cast<std::size_t>(op.group)].kind == workload::GroupKind::World)
            op.duration_s = network && cl_.spec().world_size() > 1 ? costmodel::small_allreduce_time_s(cl_.spec(), comm_) : 0.0;
          break;
      }
    };
    // The stored ops. (The ops of a copied pass (BuildOptions::compact_copies) are not: each lasts
    // what the op it copies lasts (StepGraph::CopiedPass), which the one-pass replay reads.)
    std::size_t i = 0, at = 0;
    for (const auto& copy : g_.copied_passes()) {
      for (; i < static_cast<std::size_t>(copy.base); ++i, ++at) price(i, at);
      i += static_cast<std::size_t>(copy.count);
    }
    for (; at < g_.ops.size(); ++i, ++at) price(i, at);
  }

 private:
  // One plan per distinct (kind, group, bytes, count) of the step, folded from the collective of
  // its (kind, group, bytes), which is priced through the process's cache.
  PlanRef plan(const Op& op) {
    const OpKey key{static_cast<int>(op.collective), op.group, op.message_bytes, op.count};
    // The ops of a group mostly repeat one of its two latest collectives (the micro-batches of a
    // stage; a TP group alternates the collectives beside and after a layer group's compute).
    Last* last = nullptr;
    if (op.group >= 0) {
      const auto gi = static_cast<std::size_t>(op.group);
      if (last_.size() <= gi) last_.resize(g_.groups.size() > gi ? g_.groups.size() : gi + 1);
      last = &last_[gi];
      if (last->ref[0].index >= 0 && key == last->key[0]) return last->ref[0];
      if (last->ref[1].index >= 0 && key == last->key[1]) {
        std::swap(last->key[0], last->key[1]);
        std::swap(last->ref[0], last->ref[1]);
        return last->ref[0];
      }
    }
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      if (last != nullptr) last->push(key, it->second);
      return it->second;
    }
    const auto& one = collective(op);
    const Folded folded = with_count(*one, op.count);
    PlanRef ref;
    ref.index = static_cast<std::int32_t>(g_.plans.size());
    ref.time_s = folded.time_s;
    // The range shares the priced collective's lifetime (aliasing pointer).
    g_.plans.push_folded(one->plan, op.count, folded.setup_s, std::shared_ptr<const FlowRange>(one, &one->range));
    cache_.emplace(key, ref);
    if (last != nullptr) last->push(key, ref);
    return ref;
  }

  const std::shared_ptr<const OnePlan>& collective(const Op& op) {
    const auto key = std::make_tuple(static_cast<int>(op.collective), op.group, op.message_bytes);
    auto it = collectives_.find(key);
    if (it != collectives_.end()) return it->second;
    PlanInputs in;
    in.kind = op.collective;
    in.instances = &g_.groups[static_cast<std::size_t>(op.group)].instances;
    in.bytes = op.message_bytes;
    in.settings = &comm_;
    return collectives_.emplace(key, PlanCache::instance().get(cl_, in)).first->second;
  }

  StepGraph& g_;
  const topology::Cluster& cl_;
  const costmodel::ComputeModel& cm_;
  const costmodel::CommSettings& comm_;
  // (kind, group, message bytes, count), the doubles compared as values (as an ordered map would).
  struct OpKey {
    int kind = -1;
    std::int32_t group = -1;
    double message_bytes = 0;
    double count = 0;
    bool operator==(const OpKey& o) const {
      return kind == o.kind && group == o.group && message_bytes == o.message_bytes && count == o.count;
    }
  };
  struct OpKeyHash {
    // Equal values, equal hashes: 0 and -0 hash alike.
    static std::uint64_t bits(double v) { return v == 0.0 ? 0 : std::bit_cast<std::uint64_t>(v); }
    std::size_t operator()(const OpKey& k) const {
      std::uint64_t h = static_cast<std::uint64_t>(k.kind) * 0x9e3779b97f4a7c15ULL ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.group));
      h = (h ^ bits(k.message_bytes)) * 0xbf58476d1ce4e5b9ULL;
      h = (h ^ bits(k.count)) * 0x94d049bb133111ebULL;
      return static_cast<std::size_t>(h ^ (h >> 31));
    }
  };
  std::unordered_map<OpKey, PlanRef, OpKeyHash> cache_;
  struct Last {
    OpKey key[2];
    PlanRef ref[2];
    // `k` becomes the latest; the latest before it the one before.
    void push(const OpKey& k, const PlanRef& r) {
      key[1] = key[0];
      ref[1] = ref[0];
      key[0] = k;
      ref[0] = r;
    }
  };
  std::vector<Last> last_;  // per group: the plans of its two latest distinct collectives
  std::map<std::tuple<int, std::int32_t, double>, std::shared_ptr<const OnePlan>> collectives_;
};

}  // namespace

void cost_step(StepGraph& graph, const topology::Cluster& cluster, const costmodel::ComputeModel& compute,
               const costmodel::CommSettings& comm) {
  Coster(graph, cluster, compute, comm).run();
}

void set_plan_cache_enabled(bool enabled) { PlanCache::instance().set_enabled(enabled); }

PlanCacheStats plan_cache_stats() { return PlanCache::instance().stats(); }

}  // namespace stepsim::sim
