#pragma once
// Engines replay a StepGraph and return when each op started and ended.
//
// Both engines obey the same rules: an op starts when all its predecessors have finished and its
// (device, stream) is free; among ready ops of a stream the lowest op index goes first. Compute and
// Delay ops last `duration_s`. Communication ops:
//  - analytic: last `duration_s` (the cost model's closed form, which equals the CommPlan's time
//    when no link is shared);
//  - simgrid: replay their CommPlan on the cluster's links: setup delay, then the rounds one after
//    another, each round's flows sharing links with every other flow in flight.

#include <string>
#include <vector>

#include "stepsim/sim/graph.hpp"
#include "stepsim/topology/cluster.hpp"

namespace stepsim::sim {

enum class EngineKind { Analytic, SimGrid };
std::string to_string(EngineKind e);

struct OpTime {
  double start_s = 0;
  double end_s = 0;
};

struct Trace {
  EngineKind engine = EngineKind::Analytic;
  std::vector<OpTime> ops;          // indexed like StepGraph::ops
  double makespan_s = 0;
};

Trace run_analytic(const StepGraph& graph);

// Runs SimGrid in a forked child process (SimGrid's engine cannot be re-created in one process)
// and returns its trace. Throws InternalError when the child fails.
Trace run_simgrid(const StepGraph& graph, const topology::Cluster& cluster);

Trace run(EngineKind engine, const StepGraph& graph, const topology::Cluster& cluster);

}  // namespace stepsim::sim
