#include "stepsim/sim/tally.hpp"

#include <string>

#include "stepsim/scenarios/error.hpp"

namespace stepsim::sim {

void merge_in_place(std::vector<Interval>& v) {
  // One stream's ops come in the order they ran: often sorted already.
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
  // In place: the first n entries are the merged intervals so far (n <= i).
  std::size_t n = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const Interval iv = v[i];
    if (iv.second <= iv.first) continue;
    if (n > 0 && iv.first <= v[n - 1].second)
      v[n - 1].second = std::max(v[n - 1].second, iv.second);
    else
      v[n++] = iv;
  }
  v.resize(n);
}

void IntervalUnion::merge_late() {
  merge_in_place(late_);
  // Both lists sorted and merged: taken in order of their starts, each joins the last interval or
  // follows it.
  both_.clear();
  both_.reserve(v_.size() + late_.size());
  std::size_t a = 0, b = 0;
  while (a < v_.size() || b < late_.size()) {
    const Interval iv = b == late_.size() || (a < v_.size() && v_[a] < late_[b]) ? v_[a++] : late_[b++];
    if (!both_.empty() && iv.first <= both_.back().second)
      both_.back().second = std::max(both_.back().second, iv.second);
    else
      both_.push_back(iv);
  }
  v_.swap(both_);
  late_.clear();
  last_start_ = v_.empty() ? -std::numeric_limits<double>::infinity() : std::max(last_start_, v_.back().first);
}

void StepTally::reset(const StepGraph& graph) {
  devices_ = graph.devices.size();
  if (compute_.size() < devices_) compute_.resize(devices_);
  if (comm_.size() < devices_) comm_.resize(devices_);
  if (events_.size() < devices_) events_.resize(devices_);
  for (std::size_t dv = 0; dv < devices_; ++dv) {
    compute_[dv].clear();
    comm_[dv].clear();
    events_[dv].clear();
  }
}

void StepTally::add_trace(const StepGraph& graph, const Trace& trace) {
  graph.require_every_op_stored("a tally of a trace");
  if (trace.ops.size() != graph.ops.size())
    throw InternalError("a trace of " + std::to_string(trace.ops.size()) + " ops for a graph of " + std::to_string(graph.ops.size()));
  reset(graph);
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    const Op& op = graph.ops[i];
    if (op.device < 0 || static_cast<std::size_t>(op.device) >= devices_ || static_cast<int>(op.stream) >= kNumStreams)
      throw InternalError("op " + std::to_string(i) + " is on device " + std::to_string(op.device) + " of " + std::to_string(devices_));
    add(op, static_cast<std::int32_t>(i), trace.ops[i].start_s, trace.ops[i].end_s);
  }
}

std::vector<memory::MemEvent> StepTally::memory_events() const {
  std::size_t n = 0;
  for (std::size_t dv = 0; dv < devices_; ++dv) n += events_[dv].size();
  std::vector<memory::MemEvent> out;
  out.reserve(n);
  for (std::size_t dv = 0; dv < devices_; ++dv) out.insert(out.end(), events_[dv].begin(), events_[dv].end());
  return out;
}

}  // namespace stepsim::sim
