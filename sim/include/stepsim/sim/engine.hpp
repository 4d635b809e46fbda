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
[[nodiscard]] Trace run_analytic(const StepGraph& graph);

// Runs SimGrid in a forked child process (SimGrid's engine cannot be re-created in one process)
// and returns its trace. Throws InternalError when the child fails. Call it from a
// single-threaded process. A communication op's duration_s is not used: its plan is replayed
// (setup_s, then each round's flows, each flow waiting its route latency and then sending its
// bytes, rounded to whole bytes, on links shared max-min fairly). Flows must join two distinct
// GPUs of the cluster, and all flows together may touch at most 4096 GPUs (InternalError
// otherwise, before forking). An op of zero duration, or with an empty plan and no setup, ends
// at its start time.
[[nodiscard]] Trace run_simgrid(const StepGraph& graph, const topology::Cluster& cluster);

[[nodiscard]] Trace run(EngineKind engine, const StepGraph& graph, const topology::Cluster& cluster);

}  // namespace stepsim::sim
