// The SimGrid engine: replays the step graph on a SimGrid platform derived from the cluster, so
// that flows which share a link share its bandwidth (max-min fairness, SimGrid's CM02 model with
// the alpha-beta settings: no cross-traffic, no TCP window bound). Three parts:
//   - simgrid_platform.*: the hosts, links and routes the step's flows use (prepared in the
//     parent, built in the child);
//   - simgrid_replay.*: the replay of the graph with the stream scheduler, activities created just
//     in time;
//   - this file: the simulation process.
//
// Process model. SimGrid 3.32 allows one engine per process and keeps global state, so every
// simulation runs in a fork()ed child. The parent checks the graph and the cluster, prepares the
// platform description, forks, and reads the child's answer from a pipe: a status byte, then
// either the trace (start/end of every op and the makespan, as raw doubles) or an error message.
// Call run_simgrid from a single-threaded process (parallel sweeps should use processes).
//
// The replay is a plugin (libstepsim-simgrid.so, simgrid_replay.cpp) that only the child loads
// (dlopen), so that stepsim, its sweep workers and analytic runs never load libsimgrid and its
// dependencies. The plugin is looked up next to the running executable (/proc/self/exe), then at
// its build-tree path.

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "simgrid_platform.hpp"
#include "simgrid_replay.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/support/plugin.hpp"
#include "stepsim/support/subprocess.hpp"

namespace stepsim::sim {

namespace {

// ---------------------------------------------------------------------------------------------
// Pipe protocol between child and parent.

constexpr std::uint8_t kStatusOk = 0;
constexpr std::uint8_t kStatusError = 1;

using support::write_all;

void write_error(int fd, const std::string& message) {
  const std::uint8_t status = kStatusError;
  const std::uint64_t len = message.size();
  (void)(write_all(fd, &status, 1) && write_all(fd, &len, sizeof len) && write_all(fd, message.data(), message.size()));
}

// Loads the plugin (in the simulation process) and returns its replay function.
SimGridReplayFn load_replay() {
  const std::string path = support::plugin_path(kSimGridPluginFile, STEPSIM_SIMGRID_PLUGIN);
  void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) throw InternalError("simgrid engine: cannot load the SimGrid plugin: " + std::string(::dlerror()));
  void* fn = ::dlsym(lib, kSimGridReplaySymbol);
  if (fn == nullptr) throw InternalError("simgrid engine: " + path + " has no " + kSimGridReplaySymbol);
  return reinterpret_cast<SimGridReplayFn>(fn);
}

// Body of the child process; returns its exit code.
int child_main(int fd, const StepGraph& graph, const Platform& platform) {
  int code = 0;
  try {
    Trace trace;
    std::string error;
    switch (load_replay()(&graph, &platform, &trace, &error)) {
      case kReplayOk: break;
      case kReplayOutOfMemory: return support::kOutOfMemoryExitCode;
      default: write_error(fd, error); return 2;
    }
    const double makespan_s = trace.makespan_s;

    const std::uint8_t status = kStatusOk;
    const std::uint64_t n = trace.ops.size();
    const bool ok = write_all(fd, &status, 1) && write_all(fd, &n, sizeof n) &&
                    write_all(fd, trace.ops.data(), n * sizeof(OpTime)) &&
                    write_all(fd, &makespan_s, sizeof makespan_s);
    code = ok ? 0 : 1;
  } catch (const std::bad_alloc&) {
    code = support::kOutOfMemoryExitCode;  // the parent reports it as its own
  } catch (const std::exception& e) {
    write_error(fd, e.what());
    code = 2;
  } catch (...) {
    write_error(fd, "unknown exception in the SimGrid child process");
    code = 2;
  }
  // The child ends with std::_Exit (support::Child), skipping SimGrid's slow teardown.
  return code;
}

}  // namespace

Trace run_simgrid(const StepGraph& graph, const topology::Cluster& cluster, SimGridFlows flows) {
  return run_simgrid(graph, prepare_simgrid(graph, cluster, flows));
}

Trace run_simgrid(const StepGraph& graph, const SimGridPreparation& prepared) {
  const Platform& platform = *prepared.platform_;

  static_assert(sizeof(OpTime) == 2 * sizeof(double), "OpTime is sent as two raw doubles");
  support::ChildResult child;
  try {
    child = support::run_in_child([&](int fd) { return child_main(fd, graph, platform); }, "simgrid engine");
  } catch (const support::SubprocessError& e) {
    throw InternalError(e.what());
  }
  const std::string& data = child.output;

  std::string child_message;
  if (!data.empty() && static_cast<std::uint8_t>(data[0]) == kStatusError && data.size() >= 1 + sizeof(std::uint64_t)) {
    std::uint64_t len = 0;
    std::memcpy(&len, data.data() + 1, sizeof len);
    child_message = data.substr(1 + sizeof len, static_cast<std::size_t>(len));
  }
  if (child.status.out_of_memory()) throw std::bad_alloc();
  if (!child.status.ok()) {
    throw InternalError("simgrid engine: the simulation process " + child.status.describe() +
                        (child_message.empty() ? std::string() : ": " + child_message));
  }

  const std::size_t n = graph.ops.size();
  const std::size_t expected = 1 + sizeof(std::uint64_t) + n * sizeof(OpTime) + sizeof(double);
  std::uint64_t count = 0;
  if (data.size() == expected) std::memcpy(&count, data.data() + 1, sizeof count);
  if (data.size() != expected || static_cast<std::uint8_t>(data[0]) != kStatusOk || count != n) {
    throw InternalError("simgrid engine: malformed answer from the simulation process (" +
                        std::to_string(data.size()) + " bytes, expected " + std::to_string(expected) + ")");
  }
  Trace trace;
  trace.engine = EngineKind::SimGrid;
  trace.ops.resize(n);
  std::memcpy(trace.ops.data(), data.data() + 1 + sizeof count, n * sizeof(OpTime));
  std::memcpy(&trace.makespan_s, data.data() + 1 + sizeof count + n * sizeof(OpTime), sizeof(double));
  return trace;
}

SimGridPreparation prepare_simgrid(const StepGraph& graph, const topology::Cluster& cluster, SimGridFlows flows) {
  graph.validate();
  auto platform = std::make_shared<const Platform>(prepare_platform(graph, cluster, flows));
  const Platform& p = *platform;
  SimGridPreparation out;
  SimGridPlatformStats& s = out.stats_;
  s.plan_flows = p.plan_flows;
  s.replayed_flows = static_cast<std::int64_t>(p.flows.size());
  std::vector<std::int64_t> per_plan(p.plans.size(), 0);
  for (std::size_t i = 0; i < p.plans.size(); ++i) {
    const PreparedPlan& plan = p.plans[i];
    for (std::size_t r = 0; r < plan.round_repeat.size(); ++r)
      per_plan[i] += static_cast<std::int64_t>(plan.round_begin[r + 1] - plan.round_begin[r]) * plan.round_repeat[r];
  }
  for (const Op& op : graph.ops)
    if (op.plan >= 0) s.step_replayed_flows += per_plan[static_cast<std::size_t>(op.plan)];
  s.cluster_links = p.cluster_links;
  s.redundant_links = p.redundant_links;
  s.simgrid_links = static_cast<std::int64_t>(p.link_bw_Bps.size());
  s.routes = static_cast<std::int64_t>(p.routes.size());
  out.platform_ = std::move(platform);
  return out;
}

SimGridPlatformStats simgrid_platform_stats(const StepGraph& graph, const topology::Cluster& cluster, SimGridFlows flows) {
  return prepare_simgrid(graph, cluster, flows).stats();
}

}  // namespace stepsim::sim
