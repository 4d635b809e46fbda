#include "stepsim/sim/memory_events.hpp"

namespace stepsim::sim {

std::vector<memory::MemEvent> memory_events(const StepGraph& graph, const Trace& trace) {
  StepTally tally;
  tally.add_trace(graph, trace);
  return tally.memory_events();
}

memory::Timeline memory_timeline(const StepGraph& graph, const StepTally& tally, double fragmentation_fraction, bool points) {
  std::vector<std::int64_t> stat, cap;
  for (const auto& d : graph.devices) {
    stat.push_back(d.static_bytes);
    cap.push_back(d.capacity_bytes);
  }
  // Grouped by device, as build_timeline groups them: it keeps them as they are.
  return memory::build_timeline(tally.memory_events(), stat, cap, fragmentation_fraction, points);
}

memory::Timeline memory_timeline(const StepGraph& graph, const Trace& trace, double fragmentation_fraction, bool points) {
  StepTally tally;
  tally.add_trace(graph, trace);
  return memory_timeline(graph, tally, fragmentation_fraction, points);
}

}  // namespace stepsim::sim
