// The scheduler that checks the ops it reads: apart from scheduler.cpp, which the SimGrid plugin
// also compiles, because the checks' errors are built by graph.cpp, which the plugin does not link.

#include "stepsim/sim/scheduler.hpp"

namespace stepsim::sim {

StreamScheduler::StreamScheduler(const StepGraph& graph, CheckOps) { init<true>(graph); }

}  // namespace stepsim::sim
