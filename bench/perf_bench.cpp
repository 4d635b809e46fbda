// CPU-time figures behind bench/perf.sh (CPU seconds, not wall time: the machine is shared).
//
//   perf_bench sweep SWEEP.json   enumeration, then every candidate evaluated in this process as a
//                                 sweep worker does (memory verdict, analytic simulation of those
//                                 that fit, one SimulationCache); CPU time of the enumeration, of the
//                                 pruned candidates and of the simulated ones; a digest of the rows
//   perf_bench phases SWEEP.json  CPU time of each stage of the simulated candidates' simulation, in all and by graph size
//   perf_bench fork N             CPU time (parent and child) of forking a worker that exits at once
//   perf_bench exec N CMD ARGS... CPU time (user + system) and peak RSS of N runs of a command

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <string>
#include <vector>

#include "stepsim/driver/sweep.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/scenarios/sweep.hpp"
#include "stepsim/memory/timeline.hpp"
#include "stepsim/report/step_report.hpp"
#include "stepsim/sim/build.hpp"
#include "stepsim/sim/cost.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/memory_events.hpp"
#include "stepsim/sim/tally.hpp"
#include "stepsim/driver/simulate.hpp"
#include "stepsim/support/heap.hpp"
#include "stepsim/support/subprocess.hpp"

namespace {

double process_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + 1e-6 * static_cast<double>(tv.tv_usec); }

struct ChildrenUsage {
  double cpu_s = 0;
  long max_rss_kib = 0;
};

ChildrenUsage children_usage() {
  rusage ru{};
  ::getrusage(RUSAGE_CHILDREN, &ru);
  return {seconds(ru.ru_utime) + seconds(ru.ru_stime), ru.ru_maxrss};
}

// 64-bit FNV-1a over the row lines: equal digests, identical rows.
std::uint64_t fnv1a(std::uint64_t h, const std::string& s) {
  for (const unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

int sweep(const char* file) {
  namespace sc = stepsim::scenarios;
  namespace dr = stepsim::driver;
  const auto spec = sc::load_sweep_file(file);
  double t0 = process_cpu_s();
  const auto counts = sc::count_candidates(spec);
  const double enum_s = process_cpu_s() - t0;

  dr::SimulationCache cache;
  double pruned_s = 0, simulated_s = 0;
  std::int64_t pruned = 0, simulated = 0;
  std::uint64_t digest = 14695981039346656037ULL;
  (void)sc::for_each_candidate(spec, [&](sc::Candidate&& c) {
    t0 = process_cpu_s();
    c.scenario = sc::load_scenario_text(c.scenario_json, {}, spec.origin);  // what a worker receives is JSON
    c.loaded = true;
    const auto row = dr::evaluate_candidate(c, dr::PruneRule::Stepsim, stepsim::sim::EngineKind::Analytic, cache);
    const double dt = process_cpu_s() - t0;
    if (row.simulated()) {
      simulated_s += dt;
      ++simulated;
    } else {
      pruned_s += dt;
      ++pruned;
    }
    digest = fnv1a(digest, row.line + "\n");
    return true;
  }, true, sc::CandidateLoad::JsonOnly);
  const auto rate = [](std::int64_t n, double s) { return s > 0 ? static_cast<double>(n) / s : 0.0; };
  const auto per_ms = [](double s, std::int64_t n) { return n > 0 ? 1e3 * s / static_cast<double>(n) : 0.0; };
  const double total_s = enum_s + pruned_s + simulated_s;
  std::printf("sweep %s\n", spec.name.c_str());
  std::printf("  %s\n", sc::enumeration_summary(counts).c_str());
  std::printf("  %-34s %10.3f CPU-s %9.1f us/combination\n", "enumeration", enum_s,
              counts.generated > 0 ? 1e6 * enum_s / static_cast<double>(counts.generated) : 0.0);
  std::printf("  %-34s %10.3f CPU-s %9.3f ms each %9.0f /CPU-s\n", ("pruned (" + std::to_string(pruned) + ")").c_str(), pruned_s,
              per_ms(pruned_s, pruned), rate(pruned, pruned_s));
  std::printf("  %-34s %10.3f CPU-s %9.3f ms each %9.0f /CPU-s\n", ("simulated (" + std::to_string(simulated) + ")").c_str(),
              simulated_s, per_ms(simulated_s, simulated), rate(simulated, simulated_s));
  std::printf("  %-34s %10.3f CPU-s %9.3f ms each %9.0f /CPU-s\n", "all, enumeration included", total_s,
              per_ms(total_s, pruned + simulated), rate(pruned + simulated, total_s));
  const auto plans = stepsim::sim::plan_cache_stats();
  std::printf("  plan cache: %lld hits, %lld misses (%lld of them from a ring shape, %lld on routes already found), %lld entries\n",
              static_cast<long long>(plans.hits), static_cast<long long>(plans.misses), static_cast<long long>(plans.ring_shapes_used),
              static_cast<long long>(plans.routes_reused), static_cast<long long>(plans.entries));
  std::printf("  rows digest %016llx\n", static_cast<unsigned long long>(digest));
  return 0;
}

// The CPU time of each stage of simulate() over the sweep's candidates that fit (the ones a
// worker simulates), and their ops: where a simulated candidate's time goes.
int phases(const char* file) {
  namespace sc = stepsim::scenarios;
  namespace dr = stepsim::driver;
  namespace sim = stepsim::sim;
  const auto spec = sc::load_sweep_file(file);
  dr::SimulationCache cache;
  const char* names[] = {"scenario JSON", "memory verdict", "graph build", "costing", "replay and tally", "memory timeline",
                         "report"};
  double spent[7] = {};
  std::int64_t simulated = 0;
  double ops = 0, copies = 0;
  // The same by the size of the candidate's graph (ops): small graphs show the fixed cost of a
  // candidate, large ones what a graph that no longer fits in cache costs per op.
  struct SizeBin {
    double max_ops;
    std::int64_t candidates = 0;
    double ops = 0;
    double spent[7] = {};
  };
  std::vector<SizeBin> bins{{2e3}, {1e4}, {5e4}, {std::numeric_limits<double>::infinity()}};
  (void)sc::for_each_candidate(spec, [&](sc::Candidate&& c) {
    double t = process_cpu_s();
    double own[7] = {};
    const auto lap = [&](int phase) {
      const double now = process_cpu_s();
      spent[phase] += now - t;
      own[phase] += now - t;
      t = now;
    };
    c.scenario = sc::load_scenario_text(c.scenario_json, {}, spec.origin);
    lap(0);
    const auto verdict = dr::memory_verdict(c.scenario, dr::PruneRule::Stepsim);
    lap(1);
    if (!verdict.fits) return true;
    const auto& s = c.scenario;
    const auto& cluster = cache.cluster(s.cluster);
    const auto& compute = cache.compute(s.cluster.gpu, s.software);
    // As a sweep worker's simulate(): copied passes as patterns, the one-pass replay tallying the
    // ops (the graph with its edges and the stream scheduler where it declines).
    sim::BuildOptions bo;
    bo.comm = s.comm;
    bo.compact_copies = true;
    auto step = sim::build_step_graph(s, cluster, bo);
    lap(2);
    sim::cost_step(step.graph, cluster, compute, s.comm);
    lap(3);
    thread_local sim::StepTally tally;
    step.graph.validate_edges_and_plans();
    sim::Trace trace;
    if (const auto makespan_s = sim::replay_in_index_order(step.graph, tally)) {
      trace.makespan_s = *makespan_s;
    } else {
      bo.compact_copies = false;
      step = sim::build_step(s, cluster, compute, bo);
      trace = sim::run(sim::EngineKind::Analytic, step.graph, cluster);
      tally.add_trace(step.graph, trace);
    }
    lap(4);
    const auto timeline = sim::memory_timeline(step.graph, tally, s.memory.fragmentation_fraction, false);
    lap(5);
    const auto report = stepsim::report::make_report(s, step, trace, tally, timeline, false);
    lap(6);
    ++simulated;
    ops += static_cast<double>(step.graph.op_count());
    const auto n = static_cast<double>(step.graph.op_count());
    for (auto& b : bins)
      if (n < b.max_ops) {
        ++b.candidates;
        b.ops += n;
        for (int i = 0; i < 7; ++i) b.spent[i] += own[i];
        break;
      }
    // Not stored (copied passes of a compact graph), or stored as copies (Op::cost_of).
    for (const auto& copy : step.graph.copied_passes()) copies += copy.count;
    for (const auto& op : step.graph.ops) copies += op.cost_of >= 0 ? 1.0 : 0.0;
    return true;
  }, true, sc::CandidateLoad::JsonOnly);
  double total = 0;
  for (const double x : spent) total += x;
  std::printf("phases of %lld simulated candidates, %.0f ops each on average (%.3f CPU-s in all):\n",
              static_cast<long long>(simulated), simulated > 0 ? ops / static_cast<double>(simulated) : 0.0, total);
  for (int i = 0; i < 7; ++i)
    std::printf("  %-18s %8.3f CPU-s %6.1f %% %8.1f ns/op\n", names[i], spent[i], total > 0 ? 100 * spent[i] / total : 0.0,
                ops > 0 ? 1e9 * spent[i] / ops : 0.0);
  // Ops of passes recorded once and copied: those a compact graph does not store (StepGraph::CopiedPass)
  // and copies it stores (where a pass's edges leave it, or in a graph built again with its edges).
  std::printf("  ops copied from a recorded pass: %.1f %%\n", ops > 0 ? 100.0 * copies / ops : 0.0);
  std::printf("by graph size (ns per op: build, costing, replay, memory timeline, report):\n");
  double lower = 0;
  for (const auto& b : bins) {
    double all = 0;
    for (const double x : b.spent) all += x;
    const auto per_op = [&](int i) { return b.ops > 0 ? 1e9 * b.spent[i] / b.ops : 0.0; };
    const std::string range = std::isinf(b.max_ops) ? ">= " + std::to_string(static_cast<long long>(lower))
                                                    : std::to_string(static_cast<long long>(lower)) + "-" +
                                                          std::to_string(static_cast<long long>(b.max_ops));
    std::printf("  %-14s ops %5lld candidates %8.3f CPU-s %7.1f us each  %6.1f %6.1f %6.1f %6.1f %6.1f\n", range.c_str(),
                static_cast<long long>(b.candidates), all, b.candidates > 0 ? 1e6 * all / static_cast<double>(b.candidates) : 0.0,
                per_op(2), per_op(3), per_op(4), per_op(5), per_op(6));
    lower = b.max_ops;
  }
  return 0;
}

int fork_workers(int n) {
  const double self0 = process_cpu_s();
  const double kids0 = children_usage().cpu_s;
  for (int i = 0; i < n; ++i) {
    stepsim::support::Child child([](int) { return 0; }, "bench", true, stepsim::support::Channel::Duplex);
    child.close_input();
    (void)child.read_to_end();
    (void)child.wait();
  }
  const double self_s = process_cpu_s() - self0;
  const double kids_s = children_usage().cpu_s - kids0;
  std::printf("worker fork + exit: %.3f ms CPU each (parent %.3f, child %.3f; %d forks)\n", 1e3 * (self_s + kids_s) / n,
              1e3 * self_s / n, 1e3 * kids_s / n, n);
  return 0;
}

int exec_runs(int n, char** argv) {
  const double kids0 = children_usage().cpu_s;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = ::fork();
    if (pid < 0) return 3;
    if (pid == 0) {
      std::FILE* null = std::freopen("/dev/null", "w", stdout);
      (void)null;
      ::execv(argv[0], argv);
      std::_Exit(127);
    }
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "perf_bench: %s failed\n", argv[0]);
      return 1;
    }
  }
  const auto kids = children_usage();
  std::printf("%.2f ms CPU per run (%d runs), peak RSS %.1f MiB\n", 1e3 * (kids.cpu_s - kids0) / n, n,
              static_cast<double>(kids.max_rss_kib) / 1024.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The heap as the command line sets it up, which its sweep workers inherit.
  stepsim::support::reserve_huge_page_heap(stepsim::support::kDefaultHeapPadBytes);
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "sweep" && argc == 3) return sweep(argv[2]);
  if (cmd == "phases" && argc == 3) return phases(argv[2]);
  if (cmd == "fork" && argc == 3) return fork_workers(std::atoi(argv[2]));
  if (cmd == "exec" && argc > 3) return exec_runs(std::atoi(argv[2]), argv + 3);
  std::fprintf(stderr, "usage: perf_bench sweep SWEEP.json | phases SWEEP.json | fork N | exec N CMD [ARGS...]\n");
  return 2;
}
