#pragma once
// One scenario through the whole pipeline: cluster, cost model, step graph, engine, memory
// timeline, report.

#include <cstdint>
#include <memory>
#include <optional>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/memory/timeline.hpp"
#include "stepsim/report/step_report.hpp"
#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/sim/build.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/topology/cluster.hpp"

namespace stepsim::driver {

using report::Simulation;

// Cluster models and compute models of the scenarios simulated so far, by their specs: a sweep
// simulates many layouts of few clusters, and building a 1,024-GPU cluster costs more than a
// small step.
class SimulationCache {
 public:
  SimulationCache();
  ~SimulationCache();
  SimulationCache(const SimulationCache&) = delete;
  SimulationCache& operator=(const SimulationCache&) = delete;

  // The cluster model of `c` (built on first use).
  [[nodiscard]] const topology::Cluster& cluster(const scenarios::ClusterSpec& c);
  // The compute model of `gpu` with its embedded efficiency under `software` (built on first use).
  [[nodiscard]] const costmodel::ComputeModel& compute(const scenarios::GpuSpec& gpu, const scenarios::SoftwareSpec& software);

 private:
  struct Models;
  std::unique_ptr<Models> models_;
};

struct SimulateOptions {
  // default: simgrid up to engine.auto_simgrid_max_gpus GPUs (1,024) and kMaxSimGridFlows flows, analytic beyond
  std::optional<sim::EngineKind> engine;
  bool per_layer = false;
  // Replaces the efficiency of the scenario's GPU (cluster.gpu.efficiency; stepsim calibrate).
  std::optional<costmodel::Efficiency> efficiency;
  // Reuse the cluster and compute models of earlier calls (not the compute model when
  // `efficiency` is set); nullptr: build them for this call.
  SimulationCache* cache = nullptr;
};


// The SimGrid platform keeps a route table that grows as the square of the GPU count.
inline constexpr std::int64_t kMaxSimGridGpus = 4096;

[[nodiscard]] sim::EngineKind default_engine(const scenarios::Scenario& s);

// Most ops simulate() builds into a step graph (about 300 bytes each with edges and trace: 6 GB).
inline constexpr double kMaxOps = 2e7;
// Ops of the step graph of `s`, estimated before building it: pp * vpp * micro-batches * 2 passes
// * op groups per pass (1, or the layers of the largest chunk with per_layer) * 4 (compute, TP/SP
// collectives, CP ring, PP send per group, with margin).
[[nodiscard]] double estimated_ops(const scenarios::Scenario& s, bool per_layer);
// Throws ScenarioError("training.global_batch", "... would need N ops (limit 20,000,000) ...")
// when estimated_ops(s, per_layer) exceeds kMaxOps.
void check_graph_size(const scenarios::Scenario& s, bool per_layer);

// Most point-to-point flows the SimGrid engine replays in one step (a TP1 DP1024 ring step of
// ~4e7 flows takes minutes).
inline constexpr double kMaxSimGridFlows = 2e7;
// Flows the SimGrid engine replays for `graph`: over its communication ops, the flows of each
// round of the op's plan times the round's repeat count.
[[nodiscard]] double simgrid_flow_count(const sim::StepGraph& graph);
// Throws ScenarioError("--engine", "... use --engine analytic") when simgrid_flow_count(graph)
// exceeds kMaxSimGridFlows.
void check_simgrid_size(const sim::StepGraph& graph);
// Throws ScenarioError("--engine", ...) when the cluster has more than kMaxSimGridGpus GPUs.
void check_simgrid_gpus(const scenarios::Scenario& s);

[[nodiscard]] Simulation simulate(const scenarios::Scenario& s, const SimulateOptions& options = {});

}  // namespace stepsim::driver
