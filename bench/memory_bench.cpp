// The sizes that drive the memory of a run, for bench/memory_budget.sh: GPUs, estimated and built
// ops, SimGrid flows, memory-timeline points and trace events of one scenario, and the memory
// the budget estimates for it.
//
//   memory_bench [simgrid|analytic] [chunk|layer] [--set key=value ...]
//
// One line: gpus estimated_ops ops flows timeline_points trace_events estimated_bytes
// (flows 0 on the analytic engine; the step is built but not simulated).

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "stepsim/driver/simulate.hpp"
#include "stepsim/scenarios/load.hpp"

namespace sd = stepsim::driver;
namespace ss = stepsim::scenarios;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: memory_bench simgrid|analytic chunk|layer [--set key=value ...]\n");
    return 2;
  }
  const bool simgrid = std::string(argv[1]) == "simgrid";
  const bool per_layer = std::string(argv[2]) == "layer";
  std::vector<ss::Override> overrides;
  for (int i = 3; i + 1 < argc; i += 2) overrides.push_back(ss::parse_override(argv[i + 1]));
  const auto s = ss::load_scenario_text(ss::default_scenario_text(), overrides, "<default scenario>");
  const stepsim::topology::Cluster cluster(s.cluster);
  const stepsim::costmodel::ComputeModel compute(s.cluster.gpu, s.software);
  stepsim::sim::BuildOptions bo;
  bo.per_layer = per_layer;
  bo.comm = s.comm;
  const auto step = stepsim::sim::build_step(s, cluster, compute, bo);
  const double ops = static_cast<double>(step.graph.ops.size());
  const double flows = simgrid ? sd::simgrid_flow_count(step.graph) : 0.0;
  // Memory-timeline points: at most one per allocation and release, plus one per device.
  double points = static_cast<double>(step.graph.devices.size());
  for (const auto& op : step.graph.ops) points += (op.alloc_bytes != 0 ? 1 : 0) + (op.free_bytes != 0 ? 1 : 0);
  std::printf("%lld %.0f %.0f %.0f %.0f %.0f %.0f\n", static_cast<long long>(s.world_size()), sd::estimated_ops(s, per_layer), ops, flows,
              points, sd::estimated_trace_events(s, per_layer), sd::estimated_memory_bytes(s.world_size(), ops, flows, simgrid));
  return 0;
}
