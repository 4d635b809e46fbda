#pragma once
// One scenario through the whole pipeline: cluster, cost model, step graph, engine, memory
// timeline, report.

#include <cstdint>
#include <optional>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/memory/timeline.hpp"
#include "stepsim/results/step_report.hpp"
#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/sim/build.hpp"
#include "stepsim/sim/engine.hpp"

namespace stepsim::results {

struct SimulateOptions {
  std::optional<sim::EngineKind> engine;  // default: simgrid up to 1,024 GPUs, analytic above
  bool per_layer = false;
  // Efficiency curves of the scenario's GPU instead of its embedded file (stepsim calibrate).
  std::optional<costmodel::Efficiency> efficiency;
};

struct Simulation {
  sim::BuiltStep step;
  sim::Trace trace;
  memory::Timeline timeline;
  StepReport report;
};

// The SimGrid platform keeps a route table that grows as the square of the GPU count.
inline constexpr std::int64_t kMaxSimGridGpus = 4096;

sim::EngineKind default_engine(const scenarios::Scenario& s);

Simulation simulate(const scenarios::Scenario& s, const SimulateOptions& options = {});

}  // namespace stepsim::results
