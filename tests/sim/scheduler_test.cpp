#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/scheduler.hpp"
#include "stepsim/topology/cluster.hpp"

#include "../common/cluster_spec.hpp"
#include "random_graph.hpp"

namespace sim = stepsim::sim;
namespace topology = stepsim::topology;

namespace {

sim::Op op_on(std::int32_t device, sim::Stream stream, double duration_s, sim::OpKind kind = sim::OpKind::Compute) {
  sim::Op op;
  op.kind = kind;
  op.device = device;
  op.stream = stream;
  op.duration_s = duration_s;
  op.label = "op";
  return op;
}

// Replays `g` with the scheduler alone, every op lasting its duration_s; returns (op, start) in
// the order the scheduler started them.
std::vector<std::pair<std::int32_t, double>> reference_starts(const sim::StepGraph& g) {
  sim::StreamScheduler scheduler(g);
  std::vector<std::pair<std::int32_t, double>> starts;
  auto start = [&](std::int32_t op, double now_s) {
    starts.emplace_back(op, now_s);
    scheduler.schedule({now_s + g.ops[static_cast<std::size_t>(op)].duration_s, 0, op, -1});
  };
  scheduler.begin(start);
  scheduler.run([&](const sim::SchedulerEvent& e) { scheduler.complete(e.op); }, start);
  CHECK(scheduler.completed() == g.ops.size());
  return starts;
}

}  // namespace

TEST_CASE("scheduler: one op per stream at a time, lowest ready index first, same-instant releases") {
  sim::StepGraph g;
  g.devices.resize(2);
  g.add_op(op_on(0, sim::Stream::Compute, 1.0));   // 0
  g.add_op(op_on(0, sim::Stream::TpComm, 1.0));    // 1
  g.add_op(op_on(1, sim::Stream::Compute, 2.0));   // 2: released by 1 at t = 1
  g.add_op(op_on(1, sim::Stream::Compute, 3.0));   // 3: released by 0 at t = 1
  g.add_op(op_on(0, sim::Stream::Compute, 0.0));   // 4: ready at 0, waits for 0 (same stream)
  g.add_op(op_on(0, sim::Stream::Compute, 0.5));   // 5: after 4 (edge), zero-duration chain
  g.add_edge(0, 3);
  g.add_edge(1, 2);
  g.add_edge(4, 5);
  const auto starts = reference_starts(g);
  // At t = 1 the streams start in the order their events touched them: device 0's compute stream
  // (freed by op 0) before device 1's (fed by ops 0 and 1); op 4 ends at once and op 5 follows in
  // a second pass at t = 1; op 3 waits for op 2 (lower index, released at the same instant).
  const std::vector<std::pair<std::int32_t, double>> expected = {{0, 0.0}, {1, 0.0}, {4, 1.0}, {2, 1.0},
                                                                 {5, 1.0}, {3, 3.0}};
  CHECK(starts == expected);
}

TEST_CASE("scheduler: events of one instant are handled by kind, then op, then item") {
  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(op_on(0, sim::Stream::Compute, 0.0));
  sim::StreamScheduler scheduler(g);
  scheduler.schedule({2.0, 1, 0, 5});
  scheduler.schedule({2.0, 0, 3, -1});
  scheduler.schedule({1.0, 2, 9, 0});
  scheduler.schedule({2.0, 1, 0, 4});
  scheduler.schedule({3.0, 0, 0, 0});
  std::vector<std::pair<double, int>> seen;
  scheduler.run_until(
      2.0, [&](const sim::SchedulerEvent& e) { seen.emplace_back(e.time_s, e.kind * 100 + e.item); },
      [](std::int32_t, double) {});
  const std::vector<std::pair<double, int>> expected = {{1.0, 200}, {2.0, -1}, {2.0, 104}, {2.0, 105}};
  CHECK(seen == expected);
  REQUIRE(scheduler.has_events());
  CHECK(scheduler.next_event_s() == 3.0);
}

TEST_CASE("engines: both start ops in the stream scheduler's order on an ideal network") {
  // Communication ops carry an empty plan whose setup equals their duration (an ideal network:
  // no flow), so both engines must reproduce the scheduler's replay exactly.
  const topology::Cluster cluster(test_support::make_spec(2, 1, 1));
  const sim::StepGraph g = test_support::random_delay_graph(777, 4, 600, 3, 3);
  const auto starts = reference_starts(g);
  REQUIRE(starts.size() == g.ops.size());
  const sim::Trace analytic = sim::run_analytic(g);
  const sim::Trace simgrid = sim::run_simgrid(g, cluster);
  int analytic_mismatches = 0;
  int simgrid_mismatches = 0;
  for (const auto& [op, start_s] : starts) {
    const auto i = static_cast<std::size_t>(op);
    if (analytic.ops[i].start_s != start_s) ++analytic_mismatches;
    if (simgrid.ops[i].start_s != start_s) ++simgrid_mismatches;
    if (simgrid.ops[i].end_s != analytic.ops[i].end_s) ++simgrid_mismatches;
  }
  CHECK(analytic_mismatches == 0);
  CHECK(simgrid_mismatches == 0);
  CHECK(simgrid.makespan_s == analytic.makespan_s);
  // The scheduler starts ops in time order.
  for (std::size_t k = 1; k < starts.size(); ++k) CHECK(starts[k - 1].second <= starts[k].second);
}

TEST_CASE("streams have names") {
  CHECK(sim::to_string(sim::Stream::Compute) == "compute");
  CHECK(sim::to_string(sim::Stream::TpComm) == "tp comm");
  CHECK(sim::to_string(sim::Stream::CpComm) == "cp comm");
  CHECK(sim::to_string(sim::Stream::PpComm) == "pp comm");
  CHECK(sim::to_string(sim::Stream::DpComm) == "dp comm");
}
