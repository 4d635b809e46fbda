#include "stepsim/sim/memory_events.hpp"

namespace stepsim::sim {

std::vector<memory::MemEvent> memory_events(const StepGraph& graph, const Trace& trace) {
  std::vector<memory::MemEvent> ev;
  ev.reserve(graph.ops.size());  // passes allocate at their start and free at their end: about one event per op
  for (std::size_t i = 0; i < graph.ops.size(); ++i) {
    const auto& op = graph.ops[i];
    const auto id = static_cast<std::int32_t>(i);
    if (op.alloc_bytes != 0) ev.push_back({trace.ops[i].start_s, op.device, op.alloc_bytes, id});
    if (op.free_bytes != 0) ev.push_back({trace.ops[i].end_s, op.device, -op.free_bytes, id});
  }
  return ev;
}

memory::Timeline memory_timeline(const StepGraph& graph, const Trace& trace, double fragmentation_fraction) {
  std::vector<std::int64_t> stat, cap;
  for (const auto& d : graph.devices) {
    stat.push_back(d.static_bytes);
    cap.push_back(d.capacity_bytes);
  }
  return memory::build_timeline(memory_events(graph, trace), stat, cap, fragmentation_fraction);
}

}  // namespace stepsim::sim
