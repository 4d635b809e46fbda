#pragma once
// Builds the step graph of a scenario: the layer programs of workload/ wired in the order of the
// pipeline schedule for every micro-batch, stage and chunk, with the TP/SP collectives, the CP K/V
// ring, the PP sends, the DP gradient reduction in buckets, the optimizer step and the parameter
// all-gather, and memory effects from memory/. The builder prices nothing: cost_step (cost.hpp)
// fills durations and plans.

#include <cstdint>

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/costmodel/compute.hpp"
#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/sim/cost.hpp"
#include "stepsim/sim/graph.hpp"
#include "stepsim/topology/cluster.hpp"

namespace stepsim::sim {

struct BuildOptions {
  // One op per layer instead of one per (pass, chunk). Passes whose layers finish gradient
  // buckets or wait for parameter buckets are split per layer anyway.
  bool per_layer = false;
  // Add the flows of the symmetric groups (other TP ranks, DP replicas) to every plan that
  // leaves a node, so that both engines see the load they put on shared links (the analytic
  // engine as a static share of each link, SimGrid flow by flow). Off only to time the builder.
  bool symmetric_instances = true;
  // Make a layer group's compute work once and reuse it for the group's other micro-batches (the
  // graph is the same either way). Off only to test that.
  bool reuse_group_work = true;
  // Emit the ops and edges of a micro-batch's pass once per (stage, chunk, direction, inputs) and
  // copy them for the other micro-batches whose passes are the same (those that neither wait for
  // parameter gathers nor reduce gradients); the graph is the same either way. Off only to test that.
  bool reuse_passes = true;
  // With reuse_passes: note a copied pass (StepGraph::CopiedPass) instead of storing its ops and
  // listing its edges: its ops are those of the recorded pass, its edges a pattern of the recorded
  // pass's. Such a graph is read by replay_in_index_order alone (the trace is the same); what a
  // sweep builds.
  bool compact_copies = false;
  costmodel::CommSettings comm;  // used by build_step's costing pass
};

struct StepWork {
  double model_flops = 0;        // Megatron's model FLOPs of the whole step (all GPUs)
  double hardware_flops_per_gpu = 0;  // executed FLOPs of the busiest rank (recomputation included)
};

struct BuiltStep {
  StepGraph graph;
  StepWork work;
};

// The graph with its work, not costed (durations 0, no plans).
[[nodiscard]] BuiltStep build_step_graph(const scenarios::Scenario& s, const topology::Cluster& cluster,
                                         const BuildOptions& options = {});

// build_step_graph, then cost_step with `compute` and options.comm.
[[nodiscard]] BuiltStep build_step(const scenarios::Scenario& s, const topology::Cluster& cluster,
                                   const costmodel::ComputeModel& compute, const BuildOptions& options = {});

}  // namespace stepsim::sim
