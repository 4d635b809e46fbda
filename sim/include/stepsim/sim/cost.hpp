#pragma once
// The costing pass: prices the work of a built step graph with a cost model. Compute ops get the
// time of their kernel lists (ComputeModel::time_s), slowed while communication shares the SMs
// (ComputeModel::comm_slowed_time_s); communication ops get a plan of flows over their group
// (costmodel::plan_collective), what SimGrid replays, and as duration the plan's contended time,
// what the analytic engine charges; the gradient-norm all-reduce its latency
// (costmodel::small_allreduce_time_s). Running it again with another cost model re-prices the
// same graph (calibration) without rebuilding it.

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/costmodel/compute.hpp"
#include "stepsim/sim/graph.hpp"
#include "stepsim/topology/cluster.hpp"

namespace stepsim::sim {

void cost_step(StepGraph& graph, const topology::Cluster& cluster, const costmodel::ComputeModel& compute,
               const costmodel::CommSettings& comm);

// Priced collectives are kept for the whole process and shared by every cost_step (the candidates
// of a sweep worker repeat the same collectives on the same cluster): an entry is reused only when
// the cluster object, the settings, the kind, the groups rank by rank and the bytes are all equal;
// the count of back-to-back collectives is folded from it exactly (StepGraph::plans keeps the
// entry's plan and the count), so the results are those of pricing anew. Bounded (emptied when
// full); thread-safe. A hit or a miss is a lookup of one (cluster, settings, kind, group, bytes)
// by a costing pass; a miss prices it. A miss reads the routes of the collective's flows (their
// links, latencies, bottlenecks and shares) from an earlier miss of the same cluster, group and
// algorithm when the flows go between the same ends (another size or another collective over the
// group): `routes_reused` counts those.
struct PlanCacheStats {
  std::int64_t hits = 0;
  std::int64_t misses = 0;
  std::int64_t entries = 0;
  std::int64_t routes_reused = 0;
  // Misses priced from the ring shape (costmodel::RingShape) of the collective, without making
  // its flows: every size the tuner runs as a ring, the first included (the shape is what
  // plan_collective's ring plan is made of; tests/sim/plan_cache_test.cpp checks them bit for bit).
  std::int64_t ring_shapes_used = 0;
  // Ring shapes noted (one per ring collective of a group and settings, at its first size the
  // tuner runs as a ring); ring_shapes_used beyond them are later sizes priced from a shape.
  std::int64_t rings_noted = 0;
};
// Turns the cache on (the default) or off; either way it is emptied and its counts reset.
void set_plan_cache_enabled(bool enabled);
[[nodiscard]] PlanCacheStats plan_cache_stats();

}  // namespace stepsim::sim
