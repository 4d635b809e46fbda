#include "stepsim/sim/memory_events.hpp"

namespace stepsim::sim {

namespace {

// The events in op order.
std::vector<memory::MemEvent> in_op_order(const StepGraph& graph, const Trace& trace) {
  std::vector<memory::MemEvent> ev;
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    const auto& op = graph.ops[i];
    const auto id = static_cast<std::int32_t>(i);
    if (op.alloc_bytes != 0) ev.push_back({trace.ops[i].start_s, op.device, op.alloc_bytes, id});
    if (op.free_bytes != 0) ev.push_back({trace.ops[i].end_s, op.device, -op.free_bytes, id});
  }
  return ev;
}

}  // namespace

std::vector<memory::MemEvent> memory_events(const StepGraph& graph, const Trace& trace) {
  // Grouped by device (counted first), in op order within a device: the order build_timeline
  // groups them in, so that it keeps them as they are.
  const std::size_t devices = graph.devices.size();
  std::vector<std::size_t> next(devices + 1, 0);
  for (const auto& op : graph.ops) {
    const auto dv = static_cast<std::size_t>(op.device);
    if (op.device < 0 || dv >= devices) return in_op_order(graph, trace);  // build_timeline places these
    next[dv + 1] += (op.alloc_bytes != 0 ? 1U : 0U) + (op.free_bytes != 0 ? 1U : 0U);
  }
  for (std::size_t dv = 0; dv < devices; ++dv) next[dv + 1] += next[dv];
  std::vector<memory::MemEvent> ev(next[devices]);
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    const auto& op = graph.ops[i];
    const auto id = static_cast<std::int32_t>(i);
    auto& at = next[static_cast<std::size_t>(op.device)];
    if (op.alloc_bytes != 0) ev[at++] = {trace.ops[i].start_s, op.device, op.alloc_bytes, id};
    if (op.free_bytes != 0) ev[at++] = {trace.ops[i].end_s, op.device, -op.free_bytes, id};
  }
  return ev;
}

memory::Timeline memory_timeline(const StepGraph& graph, const Trace& trace, double fragmentation_fraction, bool points) {
  std::vector<std::int64_t> stat, cap;
  for (const auto& d : graph.devices) {
    stat.push_back(d.static_bytes);
    cap.push_back(d.capacity_bytes);
  }
  return memory::build_timeline(memory_events(graph, trace), stat, cap, fragmentation_fraction, points);
}

}  // namespace stepsim::sim
