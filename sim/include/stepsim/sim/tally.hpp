#pragma once
// What the report and the memory timeline read of a replayed step, tallied op by op in index
// order: each device's compute intervals and its communication intervals (all streams),
// as merged unions, and each device's memory events (an op's allocation at its start, its release
// at its end) in op order. Filled from a trace (StepTally::add_trace) or by the one-pass replay as
// it goes (replay_in_index_order(graph, tally)): the same calls in the same order either way.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "stepsim/memory/timeline.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/graph.hpp"

namespace stepsim::sim {

using Interval = std::pair<double, double>;

// Merges intervals into disjoint sorted ones (touching ones joined, empty ones dropped), in place.
void merge_in_place(std::vector<Interval>& v);

// A union of intervals kept merged as they come, as merge_in_place would give: an interval that
// starts no earlier than the latest one so far that did (the ops of one stream do) joins the last
// merged interval or follows it; one that starts earlier (an op of another stream that started
// before) waits aside, and those are sorted and merged into the others when the union is read.
// (The merged form of a union is unique, so both give the same intervals.)
class IntervalUnion {
 public:
  // Empty again, its storage kept for the next step's intervals.
  void clear() {
    v_.clear();
    late_.clear();
    last_start_ = -std::numeric_limits<double>::infinity();
  }
  [[gnu::always_inline]] void add(Interval iv) {
    if (iv.first >= last_start_) {
      last_start_ = iv.first;
      if (iv.second <= iv.first) return;
      if (!v_.empty() && iv.first <= v_.back().second)
        v_.back().second = std::max(v_.back().second, iv.second);
      else
        v_.push_back(iv);
      return;
    }
    late_.push_back(iv);
  }
  // The merged intervals (valid until the next clear or add).
  [[nodiscard]] const std::vector<Interval>& merged_intervals() {
    if (!late_.empty()) merge_late();
    return v_;
  }

 private:
  void merge_late();  // late_ merged into v_
  std::vector<Interval> v_;     // merged, sorted
  std::vector<Interval> late_;  // came after a later start
  std::vector<Interval> both_;  // storage of merge_late
  double last_start_ = -std::numeric_limits<double>::infinity();
};

class StepTally {
 public:
  // Empty, for the devices of `graph` (storage kept from the previous step).
  void reset(const StepGraph& graph);
  // Op i (`op`) of the graph given to reset() ran from start_s to end_s. Ops come in index order,
  // each on a device and stream of the graph (StepGraph::check_op).
  [[gnu::always_inline]] void add(const Op& op, std::int32_t i, double start_s, double end_s) {
    const auto dv = static_cast<std::size_t>(op.device);
    if (op.kind == OpKind::Compute)
      compute_[dv].add({start_s, end_s});
    else if (op.kind != OpKind::Delay)
      comm_[dv].add({start_s, end_s});
    auto& ev = events_[dv];
    if (op.alloc_bytes != 0) ev.push_back({start_s, op.device, op.alloc_bytes, i});
    if (op.free_bytes != 0) ev.push_back({end_s, op.device, -op.free_bytes, i});
  }
  // reset(graph), then every op of `trace` in index order (InternalError for an op on a device or
  // stream the graph does not have, or a trace of another size).
  void add_trace(const StepGraph& graph, const Trace& trace);

  [[nodiscard]] std::size_t devices() const { return devices_; }
  [[nodiscard]] IntervalUnion& compute(std::size_t device) { return compute_[device]; }
  // The device's communication, over all its streams.
  [[nodiscard]] IntervalUnion& comm(std::size_t device) { return comm_[device]; }
  // The memory events, grouped by device in device order, each device's in op order (in time order
  // once memory_timeline has sorted them).
  [[nodiscard]] std::vector<memory::MemEvent> memory_events() const;
  // Each device's memory events (in op order as tallied, until sorted in place; lists past devices()
  // are spare storage), to be read or sorted in place (memory::build_timeline_by_device).
  [[nodiscard]] std::vector<std::vector<memory::MemEvent>>& memory_events_by_device() { return events_; }

 private:
  std::size_t devices_ = 0;
  std::vector<IntervalUnion> compute_, comm_;
  std::vector<std::vector<memory::MemEvent>> events_;
};

}  // namespace stepsim::sim
