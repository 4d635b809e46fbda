#pragma once
// Engines replay a StepGraph and return when each op started and ended.
//
// Both engines obey the same rules, implemented once by the stream scheduler (scheduler.hpp): an
// op starts when all its predecessors have finished and its (device, stream) is free; among ready
// ops of a stream the lowest op index goes first. Compute and Delay ops last `duration_s`.
// Communication ops:
//  - analytic: last `duration_s` (the cost model's closed form, which equals the CommPlan's time
//    when no link is shared);
//  - simgrid: replay their CommPlan on the cluster's links: setup delay, then the rounds one after
//    another, each round's flows sharing links with every other flow in flight.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/sim/graph.hpp"
#include "stepsim/topology/cluster.hpp"

namespace stepsim::sim {

enum class EngineKind { Analytic, SimGrid };
[[nodiscard]] std::string to_string(EngineKind e);

// Name of a stream as traces and reports show it: "compute", "tp comm", "cp comm", "pp comm",
// "dp comm".
[[nodiscard]] std::string_view to_string(Stream s);

struct OpTime {
  double start_s = 0;
  double end_s = 0;
};

struct Trace {
  EngineKind engine = EngineKind::Analytic;
  std::vector<OpTime> ops;          // indexed like StepGraph::ops
  double makespan_s = 0;
};

// Validates the graph first (a cycle, a missing device or plan: InternalError in the caller).
// Tries replay_in_index_order, else replays with the stream scheduler: the same times either way.
[[nodiscard]] Trace run_analytic(const StepGraph& graph);
// run_analytic with the stream scheduler only (the reference of replay_in_index_order).
[[nodiscard]] Trace run_analytic_scheduled(const StepGraph& graph);

// The analytic replay in one pass over the ops in index order: each op starts when it is ready
// (its predecessors have ended) and its stream's previous op in index order has ended. That is
// the stream scheduler's result, time for time, unless some stream was idle, waiting for its next
// op in index order, while a later op of that stream was ready: the scheduler would have started
// that one. The pass checks this as it goes (each op against the latest start of its stream's earlier
// ops that waited idle), and returns nullopt where it happened, or where an
// op has a predecessor of a higher index; Moment (engine_analytic.cpp) compares readiness within
// an instant as the scheduler's passes order it. Step graphs, built in schedule order, take it.
// Expects validate_edges_and_plans() to have passed; checks each op (StepGraph::check_op) but the
// copies of a compact graph, placed as the ops they copy (StepGraph::CopiedPass).
[[nodiscard]] std::optional<Trace> replay_in_index_order(const StepGraph& graph);
// The same replay telling `tally` (reset first) of each op as it is placed instead of writing a
// trace: the makespan, or nullopt where it declines (the tally then holds part of the step).
class StepTally;
[[nodiscard]] std::optional<double> replay_in_index_order(const StepGraph& graph, StepTally& tally);

// How the SimGrid engine replays the flows of the plans. Classes (the default): one SimGrid flow
// per class of flows that provably always move at the same rate (the symmetric replicas of a
// folded device), loading the links as all of them do; same rates, same times, far fewer
// activities (sim/src/simgrid_platform.hpp). Exact: every flow of every plan on every link it
// crosses, the reference Classes is tested against.
enum class SimGridFlows { Classes, Exact };

// Runs SimGrid in a forked child process (SimGrid's engine cannot be re-created in one process)
// and returns its trace. Throws InternalError when the child fails. Call it from a
// single-threaded process. A communication op's duration_s is not used: its plan is replayed
// (setup_s, then each round's flows, each flow waiting its route latency and then sending its
// bytes, rounded to whole bytes, on links shared max-min fairly). Flows must join two distinct
// GPUs of the cluster (InternalError otherwise, before forking). An op of zero duration, or with
// an empty plan and no setup, ends at its start time.
[[nodiscard]] Trace run_simgrid(const StepGraph& graph, const topology::Cluster& cluster,
                                SimGridFlows flows = SimGridFlows::Classes);

// What the SimGrid engine would replay for this graph (computed in the caller, no SimGrid call):
// the plans' flows, the flows SimGrid replays for them, the cluster links they load and the
// SimGrid links standing for those (redundant links left out). InternalError as run_simgrid.
struct SimGridPlatformStats {
  std::int64_t plan_flows = 0;
  std::int64_t replayed_flows = 0;
  // SimGrid flows the replay of the whole step starts: over the communication ops, each round of
  // the op's plan, its replayed flows times its repeat count (what the replay's time grows with).
  std::int64_t step_replayed_flows = 0;
  std::int64_t cluster_links = 0;
  std::int64_t redundant_links = 0;
  std::int64_t simgrid_links = 0;
  std::int64_t routes = 0;
};
[[nodiscard]] SimGridPlatformStats simgrid_platform_stats(const StepGraph& graph, const topology::Cluster& cluster,
                                                          SimGridFlows flows = SimGridFlows::Classes);

struct Platform;  // sim/src/simgrid_platform.hpp
// The SimGrid platform of a graph on a cluster, prepared once (validates the graph; InternalError
// as run_simgrid): its stats, to check them before the replay, and the replay from it.
class SimGridPreparation {
 public:
  [[nodiscard]] const SimGridPlatformStats& stats() const { return stats_; }

 private:
  friend SimGridPreparation prepare_simgrid(const StepGraph& graph, const topology::Cluster& cluster, SimGridFlows flows);
  friend Trace run_simgrid(const StepGraph& graph, const SimGridPreparation& prepared);
  std::shared_ptr<const Platform> platform_;
  SimGridPlatformStats stats_;
};
[[nodiscard]] SimGridPreparation prepare_simgrid(const StepGraph& graph, const topology::Cluster& cluster,
                                                 SimGridFlows flows = SimGridFlows::Classes);
// run_simgrid on a platform prepare_simgrid made for this graph.
[[nodiscard]] Trace run_simgrid(const StepGraph& graph, const SimGridPreparation& prepared);

[[nodiscard]] Trace run(EngineKind engine, const StepGraph& graph, const topology::Cluster& cluster);

}  // namespace stepsim::sim
