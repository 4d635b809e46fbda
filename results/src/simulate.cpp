#include "stepsim/results/simulate.hpp"

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/sim/memory_events.hpp"
#include "stepsim/topology/cluster.hpp"

namespace stepsim::results {

sim::EngineKind default_engine(const scenarios::Scenario& s) {
  return s.world_size() <= 1024 ? sim::EngineKind::SimGrid : sim::EngineKind::Analytic;
}

Simulation simulate(const scenarios::Scenario& s, const SimulateOptions& options) {
  const auto engine = options.engine.value_or(default_engine(s));
  if (engine == sim::EngineKind::SimGrid && s.world_size() > kMaxSimGridGpus)
    throw ScenarioError("--engine", "the simgrid engine handles up to " + std::to_string(kMaxSimGridGpus) +
                                        " GPUs; this cluster has " + std::to_string(s.world_size()) + " (use --engine analytic)");
  const topology::Cluster cluster(s.cluster);
  const costmodel::ComputeModel compute(s.cluster.gpu,
                                        options.efficiency.value_or(costmodel::ComputeModel::calibrated(s.cluster.gpu)));
  sim::BuildOptions bo;
  bo.per_layer = options.per_layer;
  Simulation out;
  out.step = sim::build_step(s, cluster, compute, bo);
  out.trace = sim::run(engine, out.step.graph, cluster);
  out.timeline = sim::memory_timeline(out.step.graph, out.trace, s.memory.fragmentation_fraction);
  out.report = make_report(s, out.step, out.trace, out.timeline);
  return out;
}

}  // namespace stepsim::results
