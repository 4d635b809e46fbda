#pragma once
// The stream scheduler both engines replay a step graph with: one place for the rules of
// engine.hpp. An op becomes ready when all its predecessors have finished; it starts when its
// (device, stream) is free, and among the ready ops of a stream the lowest op index goes first.
//
// Time advances through a heap of events, ordered by (time, kind, op, item). run_until handles
// them instant by instant: first every event of the instant (the engine's handler completes ops
// or advances their work), then, on every stream those events freed or fed, the lowest-index
// ready op starts. Handling all events of one instant before starting anything makes "lowest
// index first" hold for ops released at the same time and makes the result independent of the
// order of equal-time events. An op of zero duration ends at its start time and is completed in
// the next pass at the same instant.
//
// An engine decides what an op's work is (a fixed duration, or flows on a network) and when it
// ends; it calls complete(op) then. The analytic engine runs the whole heap at once; the SimGrid
// engine runs it up to each SimGrid timer's date.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "stepsim/sim/graph.hpp"

namespace stepsim::sim {

struct SchedulerEvent {
  double time_s = 0;
  std::uint8_t kind = 0;     // engine-defined; orders the events of one instant, lowest first
  std::int32_t op = -1;
  std::int32_t item = -1;    // engine-defined (a flow of the op's plan, ...)
};

class StreamScheduler {
 public:
  // Keeps a reference to the graph; the graph must outlive the scheduler.
  explicit StreamScheduler(const StepGraph& graph);
  // The same, checking every op as it reads it (StepGraph::check_nodes, check_op: InternalError
  // for an invalid one), so that validate_edges_and_plans() and this make validate_ops() with one
  // read of the ops.
  struct CheckOps {};
  StreamScheduler(const StepGraph& graph, CheckOps);

  // Makes every op without predecessor ready and starts what can start at time 0: calls
  // start(op, 0.0) for each op started.
  template <typename Start>
  void begin(Start&& start);

  // Adds an event; it is handled by the run_until call whose date reaches it.
  void schedule(const SchedulerEvent& e);

  // Handles the events up to date_s (inclusive), instant by instant: handle(event) for every
  // event of the instant, then start(op, now_s) for every op that starts then. Handlers may
  // schedule events and complete ops; events they schedule at the current instant are handled in
  // a further pass at that instant.
  template <typename Handle, typename Start>
  void run_until(double date_s, Handle&& handle, Start&& start);
  // run_until for every event.
  template <typename Handle, typename Start>
  void run(Handle&& handle, Start&& start) {
    run_until(std::numeric_limits<double>::infinity(), handle, start);
  }

  // Marks a started op finished: frees its stream and makes ready every successor whose last
  // predecessor it was. They start in the start phase of the current instant.
  void complete(std::int32_t op);

  [[nodiscard]] bool has_events() const { return !events_.empty(); }
  // Time of the earliest event; only when has_events().
  [[nodiscard]] double next_event_s() const { return events_.front().time_s; }
  [[nodiscard]] std::size_t num_ops() const { return ops_.size(); }
  // The op's duration_s (what compute and delay ops last), from the scheduler's compact copy.
  [[nodiscard]] double duration_s(std::int32_t op) const { return ops_[static_cast<std::size_t>(op)].duration_s; }
  [[nodiscard]] std::size_t completed() const { return completed_; }

 private:
  struct Later {
    bool operator()(const SchedulerEvent& a, const SchedulerEvent& b) const {
      if (a.time_s != b.time_s) return a.time_s > b.time_s;
      if (a.kind != b.kind) return a.kind > b.kind;
      if (a.op != b.op) return a.op > b.op;
      return a.item > b.item;
    }
  };

  template <bool kCheck>
  void init(const StepGraph& graph);
  void make_ready(std::int32_t op);
  void touch(std::uint32_t stream);
  template <typename Start>
  void start_ready(double now_s, Start&& start);

  // Compact copies of what the replay touches per op: the graph's per-op vectors and Op records
  // are scattered in memory, and a replay that chases them is bound by cache misses.
  struct OpState {
    double duration_s;
    std::uint32_t stream;    // device * kNumStreams + stream
    std::int32_t waiting;    // unfinished predecessors
  };
  std::vector<OpState> ops_;
  std::vector<std::size_t> succ_begin_;      // successors of op i: succ_[succ_begin_[i] .. succ_begin_[i + 1])
  std::vector<std::int32_t> succ_;
  std::size_t completed_ = 0;

  std::vector<std::vector<std::int32_t>> ready_;   // per stream: min-heap of op indices
  std::vector<std::uint8_t> busy_;
  std::vector<std::uint8_t> touched_;
  std::vector<std::uint32_t> touched_list_;
  std::vector<std::uint32_t> starting_;            // the touched streams being started
  std::vector<SchedulerEvent> events_;             // min-heap by Later
};

template <bool kCheck>
void StreamScheduler::init(const StepGraph& graph) {
  const std::size_t n = graph.ops.size();
  const std::size_t num_streams = graph.devices.size() * static_cast<std::size_t>(kNumStreams);
  if constexpr (kCheck) graph.check_nodes();
  ops_.resize(n);
  succ_begin_.resize(n + 1);
  succ_.reserve(graph.num_edges());
  // Copied in index order: sequential reads the hardware overlaps.
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (kCheck) graph.check_op(i);
    const Op& op = graph.ops[i];
    const auto id = static_cast<std::int32_t>(i);
    ops_[i] = {op.duration_s,
               static_cast<std::uint32_t>(static_cast<std::size_t>(op.device) * kNumStreams +
                                          static_cast<std::size_t>(op.stream)),
               static_cast<std::int32_t>(graph.predecessors(id).size())};
    succ_begin_[i] = succ_.size();
    for (const std::int32_t next : graph.successors(id)) succ_.push_back(next);
  }
  succ_begin_[n] = succ_.size();
  ready_.resize(num_streams);
  busy_.assign(num_streams, 0);
  touched_.assign(num_streams, 0);
  events_.reserve(std::min<std::size_t>(n, num_streams + 1024));
}

// The hot paths of both engines, inline.
inline void StreamScheduler::schedule(const SchedulerEvent& e) {
  events_.push_back(e);
  std::push_heap(events_.begin(), events_.end(), Later{});
}

inline void StreamScheduler::complete(std::int32_t op) {
  const auto i = static_cast<std::size_t>(op);
  ++completed_;
  const std::uint32_t s = ops_[i].stream;
  busy_[s] = 0;
  touch(s);
  for (std::size_t k = succ_begin_[i]; k < succ_begin_[i + 1]; ++k) {
    const std::int32_t next = succ_[k];
    if (--ops_[static_cast<std::size_t>(next)].waiting == 0) make_ready(next);
  }
}

inline void StreamScheduler::make_ready(std::int32_t op) {
  const std::uint32_t s = ops_[static_cast<std::size_t>(op)].stream;
  auto& q = ready_[s];
  q.push_back(op);
  std::push_heap(q.begin(), q.end(), std::greater<std::int32_t>{});
  touch(s);
}

inline void StreamScheduler::touch(std::uint32_t stream) {
  if (!touched_[stream]) {
    touched_[stream] = 1;
    touched_list_.push_back(stream);
  }
}

template <typename Start>
void StreamScheduler::begin(Start&& start) {
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i].waiting == 0) make_ready(static_cast<std::int32_t>(i));
  start_ready(0.0, start);
}

template <typename Start>
void StreamScheduler::start_ready(double now_s, Start&& start) {
  // Starting an op may touch streams (an engine completing an op at once); those are taken up by
  // the next start phase.
  starting_.swap(touched_list_);
  for (const std::uint32_t s : starting_) {
    touched_[s] = 0;
    auto& q = ready_[s];
    if (busy_[s] || q.empty()) continue;
    std::pop_heap(q.begin(), q.end(), std::greater<std::int32_t>{});
    const std::int32_t op = q.back();
    q.pop_back();
    busy_[s] = 1;
    start(op, now_s);
  }
  starting_.clear();
}

template <typename Handle, typename Start>
void StreamScheduler::run_until(double date_s, Handle&& handle, Start&& start) {
  while (!events_.empty() && events_.front().time_s <= date_s) {
    const double now_s = events_.front().time_s;
    while (!events_.empty() && events_.front().time_s == now_s) {
      std::pop_heap(events_.begin(), events_.end(), Later{});
      const SchedulerEvent e = events_.back();
      events_.pop_back();
      handle(e);
    }
    start_ready(now_s, start);
  }
}

}  // namespace stepsim::sim
