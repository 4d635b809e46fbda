// The analytic engine: every op lasts its duration_s; the stream scheduler (scheduler.hpp) replays
// the graph with one event per op end. Where every stream runs its ops in index order, one pass
// over the ops in index order gives the same times, and a check proves it (replay_in_index_order).

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/scheduler.hpp"
#include "stepsim/sim/tally.hpp"

namespace stepsim::sim {

namespace {

// When an op is ready, starts or ends: a time and the pass of the scheduler's instant at that
// time (scheduler.hpp: the events of an instant are handled in passes, and an op of zero duration
// started in pass p ends in pass p + 1 of the same instant). Ordered by time, then pass.
struct Moment {
  double time_s = 0;
  std::uint32_t pass = 0;  // begin() starts the ops without predecessor in pass 0
  bool operator<(const Moment& o) const { return time_s < o.time_s || (time_s == o.time_s && pass < o.pass); }
};

Trace scheduled(const StepGraph& graph) {
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

// The one-pass replay; `ended(op, i, start_s, end_s)` hears of each op in index order as it is
// placed. The makespan, or nullopt where the replay declines.
template <typename Ended>
std::optional<double> one_pass(const StepGraph& graph, Ended&& ended) {
  graph.check_nodes();
  const std::size_t n = graph.op_count();
  const std::size_t num_streams = graph.devices.size() * static_cast<std::size_t>(kNumStreams);
  // When each op ends, written at its turn before anything reads it (its successors come later),
  // so that the array is reused from one replay to the next without being cleared.
  thread_local std::vector<Moment> end;
  if (end.size() < n) end.resize(n);
  struct StreamState {
    Moment free{};  // when the stream's latest op so far ends (Moment{} before its first)
    // The latest start of its ops so far that found it idle, waiting for them to be ready.
    Moment latest_waited_start{-std::numeric_limits<double>::infinity(), 0};
  };
  std::vector<StreamState> streams(num_streams);
  double makespan_s = 0;
  // Op i's readiness `r` from its listed predecessors; false where one comes later.
  const auto listed = [&](std::size_t i, Moment& r) {
    for (const std::int32_t p : graph.listed_predecessors(static_cast<std::int32_t>(i))) {
      if (static_cast<std::size_t>(p) >= i) return false;
      if (r < end[static_cast<std::size_t>(p)]) r = end[static_cast<std::size_t>(p)];
    }
    return true;
  };
  // Op i placed on its stream once ready at `r`; false where the scheduler would differ.
  const auto place = [&](std::size_t i, const Op& op, Moment r) {
    StreamState& stream = streams[static_cast<std::size_t>(op.device) * kNumStreams + static_cast<std::size_t>(op.stream)];
    // An earlier op of the stream waited, idle, until it started, while this one was ready
    // before: the scheduler would have started this one first.
    if (r < stream.latest_waited_start) return false;
    const Moment free = stream.free;
    const Moment st = free < r ? r : free;
    if (free < r && stream.latest_waited_start < st) stream.latest_waited_start = st;
    const double end_s = st.time_s + op.duration_s;
    const Moment ends = end_s == st.time_s ? Moment{end_s, st.pass + 1} : Moment{end_s, 1};
    end[i] = ends;
    stream.free = ends;
    ended(op, i, st.time_s, end_s);
    makespan_s = std::max(makespan_s, end_s);
    return true;
  };
  // The stored ops up to each copied pass, then the pass's ops, whose in-edges are also its
  // pattern's (compact graphs; none elsewhere). `at`: the place in `ops` of the next stored op.
  std::size_t i = 0, at = 0;
  const bool listed_into_copies = graph.listed_edges_into_copies();
  for (const auto& copy : graph.copied_passes()) {
    for (; i < static_cast<std::size_t>(copy.base); ++i, ++at) {
      graph.check_op(at);
      Moment r;
      if (!listed(i, r) || !place(i, graph.ops[at], r)) return std::nullopt;
    }
    const auto& pattern = graph.pass_pattern(copy.pattern);
    // Read once: the stores to `end` could alias them.
    const std::int32_t* first = pattern.first.data();
    const std::int32_t* refs = pattern.refs.data();
    const std::int32_t base = copy.base;
    const std::array<std::int32_t, 3> outside = copy.outside;
    const auto count = static_cast<std::size_t>(copy.count);
    // A copied op is placed as the op it copies (its pass's recorded op, earlier: its device,
    // stream, duration and memory), checked by check_op at its turn.
    const Op* source = graph.ops.data() + pattern.stored;
    for (std::size_t k = 0; k < count; ++k, ++i) {
      Moment r;
      if (listed_into_copies && !listed(i, r)) return std::nullopt;
      for (std::int32_t e = first[k], stop = first[k + 1]; e < stop; ++e) {
        const std::int32_t ref = refs[e];
        // An end outside the pass that the copy does not have (-1) is past every op: declined.
        const std::int32_t p = ref >= 0 ? base + ref : outside[static_cast<std::size_t>(-1 - ref)];
        if (static_cast<std::size_t>(p) >= i) return std::nullopt;
        if (r < end[static_cast<std::size_t>(p)]) r = end[static_cast<std::size_t>(p)];
      }
      if (!place(i, source[k], r)) return std::nullopt;
    }
  }
  for (; i < n; ++i, ++at) {
    graph.check_op(at);
    Moment r;
    if (!listed(i, r) || !place(i, graph.ops[at], r)) return std::nullopt;
  }
  return makespan_s;
}

}  // namespace

std::optional<Trace> replay_in_index_order(const StepGraph& graph) {
  Trace trace;
  trace.engine = EngineKind::Analytic;
  trace.ops.resize(graph.op_count());
  const auto makespan_s = one_pass(graph, [&](const Op&, std::size_t i, double start_s, double end_s) { trace.ops[i] = {start_s, end_s}; });
  if (!makespan_s) return std::nullopt;
  trace.makespan_s = *makespan_s;
  return trace;
}

std::optional<double> replay_in_index_order(const StepGraph& graph, StepTally& tally) {
  tally.reset(graph);
  return one_pass(graph, [&](const Op& op, std::size_t i, double start_s, double end_s) {
    tally.add(op, static_cast<std::int32_t>(i), start_s, end_s);
  });
}

Trace run_analytic(const StepGraph& graph) {
  // The cycle search is not needed up front: ops on a cycle never become ready, which the replay
  // detects at the end (a cycle has a predecessor of higher index: replay_in_index_order declines
  // it). Both replays check each op as they read it (StepGraph::check_op).
  graph.validate_edges_and_plans();
  if (auto trace = replay_in_index_order(graph)) return std::move(*trace);
  return scheduled(graph);
}

Trace run_analytic_scheduled(const StepGraph& graph) {
  graph.validate_edges_and_plans();
  return scheduled(graph);
}

}  // namespace stepsim::sim
