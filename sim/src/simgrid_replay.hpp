#pragma once
// The replay of a step graph on SimGrid, run inside the simulation process (engine_simgrid.cpp).
//
// The graph stays in the stream scheduler (scheduler.hpp); SimGrid only sees the flows in flight
// (the just-in-time pattern: SimGrid 3.32 scans a list of all live activities on every
// completion). Pure delays (compute and delay ops, plan setup, route latency) are events of the
// scheduler, woken by SimGrid kernel timers; their times are exact sums as in the analytic
// engine. A communication op waits setup_s, then runs its plan's rounds one after the other; a
// round starts all its flows at once (each after its route latency) and ends when the last one
// ends. Zero-duration ops and empty plans use no SimGrid activity.

#include <string>

#include "simgrid_platform.hpp"
#include "stepsim/sim/engine.hpp"

namespace stepsim::sim {

// The plugin that holds the replay (the only code linked with SimGrid): its file name, and the
// C symbol of its entry, which calls replay_on_simgrid(*graph, *platform) into *trace. No
// exception leaves the plugin (the stepsim executable carries its own C++ runtime, the plugin
// uses the shared one): the entry returns kReplayOk, kReplayError with the message in *error, or
// kReplayOutOfMemory.
inline constexpr const char* kSimGridPluginFile = "libstepsim-simgrid.so";
inline constexpr const char* kSimGridReplaySymbol = "stepsim_simgrid_replay";
inline constexpr int kReplayOk = 0;
inline constexpr int kReplayError = 1;
inline constexpr int kReplayOutOfMemory = 2;
using SimGridReplayFn = int (*)(const StepGraph* graph, const Platform* platform, Trace* trace, std::string* error);

// Creates the SimGrid engine (CM02 with the alpha-beta settings: no cross-traffic, no TCP window
// bound; logging off), builds the platform, replays the graph and returns its trace. Once per
// process: SimGrid's engine cannot be created twice, and the engine and the replay are never
// destroyed (end the process with _Exit).
[[nodiscard]] Trace replay_on_simgrid(const StepGraph& graph, const Platform& platform);

}  // namespace stepsim::sim
