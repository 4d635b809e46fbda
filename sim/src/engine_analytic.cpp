// The analytic engine: a discrete-event replay of the step graph with one binary heap of
// completion events and, per (device, stream), a binary min-heap of ready op indices.
//
// Event loop: take the earliest completion time t; complete every op ending at t (free its
// stream, release its successors into their streams' ready heaps); then, on every stream touched,
// start the lowest-index ready op if the stream is free. Processing all completions of one instant
// before starting anything makes "lowest index first among ready ops" hold for ops released at the
// same time, and makes the result independent of the order of equal-time events. An op of zero
// duration ends at its start time and is completed in the next pass at the same instant.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/sim/engine.hpp"

namespace stepsim::sim {

namespace {

struct Event {
  double time_s;
  std::int32_t op;
};

// Min-heap order on (time, op index) for std::push_heap / std::pop_heap.
struct LaterEvent {
  bool operator()(const Event& a, const Event& b) const {
    return a.time_s > b.time_s || (a.time_s == b.time_s && a.op > b.op);
  }
};

std::size_t as_index(std::int32_t i) { return static_cast<std::size_t>(i); }

}  // namespace

Trace run_analytic(const StepGraph& graph) {
  // The cycle search is not needed up front: ops on a cycle never become ready, which the replay
  // detects at the end.
  graph.validate_ops();

  const std::size_t n = graph.ops.size();
  const std::size_t num_streams = graph.devices.size() * static_cast<std::size_t>(kNumStreams);

  Trace trace;
  trace.engine = EngineKind::Analytic;
  trace.ops.resize(n);

  // Compact copies of what the replay touches per op: the graph's per-op vectors and Op records
  // are scattered in memory, and a replay that chases them is bound by cache misses. Copying them
  // in index order (sequential reads the hardware overlaps) makes the event loop several times
  // faster on large graphs.
  struct OpState {
    double duration_s;
    std::uint32_t stream;     // device * kNumStreams + stream
    std::int32_t waiting;     // unfinished predecessors
  };
  std::vector<OpState> state(n);
  std::vector<std::size_t> succ_begin(n + 1);
  std::vector<std::int32_t> succ;
  succ.reserve(graph.num_edges());
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = graph.ops[i];
    const auto id = static_cast<std::int32_t>(i);
    state[i] = {op.duration_s,
                static_cast<std::uint32_t>(static_cast<std::size_t>(op.device) * kNumStreams +
                                           static_cast<std::size_t>(op.stream)),
                static_cast<std::int32_t>(graph.predecessors(id).size())};
    succ_begin[i] = succ.size();
    const auto& out = graph.successors(id);
    succ.insert(succ.end(), out.begin(), out.end());
  }
  succ_begin[n] = succ.size();

  std::vector<std::vector<std::int32_t>> ready(num_streams);  // min-heaps of op indices
  std::vector<std::uint8_t> busy(num_streams, 0);
  std::vector<std::uint8_t> touched(num_streams, 0);
  std::vector<std::uint32_t> touched_list;
  std::vector<Event> events;
  events.reserve(std::min<std::size_t>(n, num_streams + 1024));
  const std::greater<std::int32_t> lower_index_first;

  auto make_ready = [&](std::int32_t op) {
    const std::uint32_t s = state[as_index(op)].stream;
    auto& q = ready[s];
    q.push_back(op);
    std::push_heap(q.begin(), q.end(), lower_index_first);
    if (!touched[s]) {
      touched[s] = 1;
      touched_list.push_back(s);
    }
  };
  auto start_ready = [&](double now_s) {
    for (const std::uint32_t s : touched_list) {
      touched[s] = 0;
      auto& q = ready[s];
      if (busy[s] || q.empty()) continue;
      std::pop_heap(q.begin(), q.end(), lower_index_first);
      const std::int32_t op = q.back();
      q.pop_back();
      busy[s] = 1;
      const double end_s = now_s + state[as_index(op)].duration_s;
      trace.ops[as_index(op)] = {now_s, end_s};
      events.push_back({end_s, op});
      std::push_heap(events.begin(), events.end(), LaterEvent{});
    }
    touched_list.clear();
  };

  for (std::size_t i = 0; i < n; ++i) {
    if (state[i].waiting == 0) make_ready(static_cast<std::int32_t>(i));
  }
  start_ready(0.0);

  std::size_t completed = 0;
  double makespan_s = 0;
  while (!events.empty()) {
    const double now_s = events.front().time_s;
    while (!events.empty() && events.front().time_s == now_s) {
      std::pop_heap(events.begin(), events.end(), LaterEvent{});
      const std::int32_t op = events.back().op;
      events.pop_back();
      ++completed;
      const std::uint32_t s = state[as_index(op)].stream;
      busy[s] = 0;
      if (!touched[s]) {
        touched[s] = 1;
        touched_list.push_back(s);
      }
      for (std::size_t k = succ_begin[as_index(op)]; k < succ_begin[as_index(op) + 1]; ++k) {
        const std::int32_t next = succ[k];
        if (--state[as_index(next)].waiting == 0) make_ready(next);
      }
    }
    makespan_s = now_s;
    start_ready(now_s);
  }

  if (completed != n) {
    const auto cycle = graph.find_cycle();
    throw InternalError(cycle.empty() ? "analytic engine: " + std::to_string(n - completed) + " ops never became ready"
                                      : graph.describe_cycle(cycle));
  }
  trace.makespan_s = makespan_s;
  return trace;
}

}  // namespace stepsim::sim
