#include "stepsim/sim/scheduler.hpp"

namespace stepsim::sim {

StreamScheduler::StreamScheduler(const StepGraph& graph) { init<false>(graph); }

}  // namespace stepsim::sim
