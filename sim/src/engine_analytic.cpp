// The analytic engine: every op lasts its duration_s; the stream scheduler (scheduler.hpp) replays
// the graph with one event per op end.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/scheduler.hpp"

namespace stepsim::sim {

Trace run_analytic(const StepGraph& graph) {
  // The cycle search is not needed up front: ops on a cycle never become ready, which the replay
  // detects at the end. The scheduler checks each op as it copies it (StepGraph::check_op).
  graph.validate_edges_and_plans();

  const std::size_t n = graph.ops.size();
  Trace trace;
  trace.engine = EngineKind::Analytic;
  trace.ops.resize(n);
  StreamScheduler scheduler(graph, StreamScheduler::CheckOps{});
  auto start = [&](std::int32_t op, double now_s) {
    const double end_s = now_s + scheduler.duration_s(op);
    trace.ops[static_cast<std::size_t>(op)] = {now_s, end_s};
    scheduler.schedule({end_s, 0, op, -1});
  };
  auto end = [&](const SchedulerEvent& e) {
    scheduler.complete(e.op);
    trace.makespan_s = e.time_s;
  };
  scheduler.begin(start);
  scheduler.run(end, start);

  if (scheduler.completed() != n) {
    const auto cycle = graph.find_cycle();
    throw InternalError(cycle.empty() ? "analytic engine: " + std::to_string(n - scheduler.completed()) +
                                            " ops never became ready"
                                      : graph.describe_cycle(cycle));
  }
  return trace;
}

}  // namespace stepsim::sim
