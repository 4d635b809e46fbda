// StepTally: each device's compute and each stream's communication as merged unions, and the
// memory events grouped by device in op order, from a trace or from the one-pass replay alike.
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/tally.hpp"

namespace sim = stepsim::sim;

TEST_CASE("interval union: in order or not, the merged union of its intervals") {
  const std::vector<sim::Interval> in_order{{0, 1}, {1, 2}, {3, 4}, {3.5, 5}, {6, 6}, {7, 8}};
  std::vector<sim::Interval> expected = in_order;
  sim::merge_in_place(expected);
  CHECK(expected == std::vector<sim::Interval>{{0, 2}, {3, 5}, {7, 8}});
  sim::IntervalUnion u;
  for (const auto& iv : in_order) u.add(iv);
  CHECK(u.merged_intervals() == expected);
  u.clear();
  for (auto it = in_order.rbegin(); it != in_order.rend(); ++it) u.add(*it);
  CHECK(u.merged_intervals() == expected);
  // Two streams' intervals interleaved out of order, some overlapping across them, read halfway
  // and added to after: the merged union of all.
  const std::vector<sim::Interval> mixed{{5, 6}, {0, 1}, {6, 7}, {1.5, 2}, {9, 10}, {2, 5.5}, {8, 8}, {7.5, 9}};
  std::vector<sim::Interval> all = mixed;
  all.push_back({3, 4});
  all.push_back({11, 12});
  all.push_back({10, 10.5});
  sim::merge_in_place(all);
  CHECK(all == std::vector<sim::Interval>{{0, 1}, {1.5, 7}, {7.5, 10.5}, {11, 12}});
  u.clear();
  for (const auto& iv : mixed) u.add(iv);
  std::vector<sim::Interval> first_half = mixed;
  sim::merge_in_place(first_half);
  CHECK(u.merged_intervals() == first_half);
  u.add({3, 4});
  u.add({11, 12});
  u.add({10, 10.5});
  CHECK(u.merged_intervals() == all);
}

TEST_CASE("step tally: compute and communication unions by device, memory events by device in op order, the same from the replay") {
  sim::StepGraph g;
  g.devices.resize(2);
  const auto op = [&](std::int32_t device, sim::OpKind kind, sim::Stream stream, double duration_s, std::int64_t alloc,
                      std::int64_t free) {
    sim::Op o;
    o.kind = kind;
    o.device = device;
    o.stream = stream;
    o.duration_s = duration_s;
    o.alloc_bytes = alloc;
    o.free_bytes = free;
    if (kind != sim::OpKind::Compute) o.plan = 0;
    return g.add_op(o);
  };
  g.plans.emplace_back();
  const auto a = op(1, sim::OpKind::Compute, sim::Stream::Compute, 1.0, 10, 0);
  const auto b = op(0, sim::OpKind::Compute, sim::Stream::Compute, 2.0, 5, 5);
  const auto c = op(1, sim::OpKind::Collective, sim::Stream::TpComm, 0.5, 0, 0);
  const auto d = op(1, sim::OpKind::Compute, sim::Stream::Compute, 1.0, 0, 10);
  // On another stream of device 1, after c by index but before it in time: the device's
  // communication comes out of order of its starts.
  const auto e = op(1, sim::OpKind::Collective, sim::Stream::PpComm, 0.25, 0, 0);
  g.add_edge(a, c);
  g.add_edge(c, d);
  const auto trace = sim::run_analytic(g);
  sim::StepTally from_trace;
  from_trace.add_trace(g, trace);
  CHECK(from_trace.compute(1).merged_intervals() == std::vector<sim::Interval>{{0, 1}, {1.5, 2.5}});
  CHECK(trace.ops[static_cast<std::size_t>(e)].start_s == 0.0);
  CHECK(from_trace.comm(1).merged_intervals() == std::vector<sim::Interval>{{0, 0.25}, {1, 1.5}});
  CHECK(from_trace.comm(0).merged_intervals().empty());
  CHECK(from_trace.compute(0).merged_intervals() == std::vector<sim::Interval>{{0, 2}});
  const auto events = from_trace.memory_events();
  REQUIRE(events.size() == 4);
  CHECK(events[0].op == b);  // b's allocation and release first: device 0
  CHECK(events[0].delta_bytes == 5);
  CHECK(events[1].delta_bytes == -5);
  CHECK(events[2].op == a);
  CHECK(events[3].op == d);
  CHECK(events[3].time_s == 2.5);
  sim::StepTally replayed;
  const auto makespan_s = sim::replay_in_index_order(g, replayed);
  REQUIRE(makespan_s.has_value());
  CHECK(*makespan_s == trace.makespan_s);
  CHECK(replayed.compute(1).merged_intervals() == from_trace.compute(1).merged_intervals());
  CHECK(replayed.comm(1).merged_intervals() == from_trace.comm(1).merged_intervals());
  const auto replayed_events = replayed.memory_events();
  REQUIRE(replayed_events.size() == events.size());
  for (std::size_t k = 0; k < events.size(); ++k) {
    CHECK(replayed_events[k].op == events[k].op);
    CHECK(replayed_events[k].time_s == events[k].time_s);
  }
  // A trace of another graph: refused.
  sim::Trace short_trace = trace;
  short_trace.ops.pop_back();
  CHECK_THROWS_AS(from_trace.add_trace(g, short_trace), stepsim::InternalError);
}
