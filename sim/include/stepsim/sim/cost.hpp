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

}  // namespace stepsim::sim
