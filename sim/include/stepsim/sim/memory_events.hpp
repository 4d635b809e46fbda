#pragma once
// The memory effects of a replayed step: each op's allocation at its start and release at its
// end, as timeline events (memory/timeline.hpp).

#include <vector>

#include "stepsim/memory/timeline.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/graph.hpp"
#include "stepsim/sim/tally.hpp"

namespace stepsim::sim {

// Grouped by device in device order, each device's in op order.
[[nodiscard]] std::vector<memory::MemEvent> memory_events(const StepGraph& graph, const Trace& trace);

// The timeline of every device (static memory, capacity and fragmentation from the graph and `f`).
[[nodiscard]] memory::Timeline memory_timeline(const StepGraph& graph, const Trace& trace, double fragmentation_fraction,
                                               bool points = true);
// The same from the step's tally (its memory events, each device's sorted in place).
[[nodiscard]] memory::Timeline memory_timeline(const StepGraph& graph, StepTally& tally, double fragmentation_fraction,
                                               bool points = true);

}  // namespace stepsim::sim
