#include "stepsim/sim/memory_events.hpp"

#include <string>

#include "stepsim/scenarios/error.hpp"

namespace stepsim::sim {

std::vector<memory::MemEvent> memory_events(const StepGraph& graph, const Trace& trace) {
  StepTally tally;
  tally.add_trace(graph, trace);
  return tally.memory_events();
}

memory::Timeline memory_timeline(const StepGraph& graph, StepTally& tally, double fragmentation_fraction, bool points) {
  if (tally.devices() != graph.devices.size())
    throw InternalError("a tally of " + std::to_string(tally.devices()) + " devices for a graph of " + std::to_string(graph.devices.size()));
  std::vector<std::int64_t> stat, cap;
  stat.reserve(graph.devices.size());
  cap.reserve(graph.devices.size());
  for (const auto& d : graph.devices) {
    stat.push_back(d.static_bytes);
    cap.push_back(d.capacity_bytes);
  }
  return memory::build_timeline_by_device(tally.memory_events_by_device(), stat, cap, fragmentation_fraction, points);
}

memory::Timeline memory_timeline(const StepGraph& graph, const Trace& trace, double fragmentation_fraction, bool points) {
  StepTally tally;
  tally.add_trace(graph, trace);
  return memory_timeline(graph, tally, fragmentation_fraction, points);
}

}  // namespace stepsim::sim
