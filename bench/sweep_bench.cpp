// Sweep throughput: candidates per second for Llama-3.1-70B on 1,024 H100s (every layout),
// memory prune and analytic engine, and where one candidate's time goes.
//
//   sweep_bench [jobs] [sweep.json]
//
// The sweep file must use one GPU type (the in-process part builds one compute model).
// Prints: enumeration time; one core, in process: memory verdict, and for the candidates that
// fit, cluster set-up (once per size), build_step, run_analytic, memory timeline, report; then the
// whole run_sweep with `jobs` worker processes (default 2) into a temporary directory.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/driver/sweep.hpp"
#include "stepsim/scenarios/sweep.hpp"
#include "stepsim/sim/build.hpp"
#include "stepsim/sim/memory_events.hpp"
#include "stepsim/topology/cluster.hpp"

namespace {

const char* kSweep = R"({
  "name": "bench: llama-3.1-70b on 1,024 H100s",
  "base": {
    "model": "llama-3.1-70b",
    "cluster": { "preset": "dgx-h100", "nodes": 128 },
    "training": { "seq_len": 8192, "global_batch": 1024, "train_tokens": 15e12 },
    "cost": { "usd_per_gpu_hour": 2.5 }
  },
  "axes": {
    "parallel.tp": "auto", "parallel.cp": "auto", "parallel.pp": "auto",
    "training.micro_batch": [1, 2, 4, 8],
    "training.recompute": ["none", "selective", "full"],
    "parallel.schedule": ["1f1b", "gpipe", "interleaved"],
    "parallel.vpp": [1, 2, 4]
  }
})";

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  namespace sc = stepsim::scenarios;
  namespace rs = stepsim::driver;
  const int jobs = argc > 1 ? std::atoi(argv[1]) : 2;
  const auto spec = argc > 2 ? sc::load_sweep_file(argv[2]) : sc::parse_sweep_text(kSweep, "<bench>");

  auto t0 = std::chrono::steady_clock::now();
  const auto e = sc::enumerate(spec);
  const double t_enum = since(t0);
  std::printf("%s\n", spec.name.c_str());
  std::printf("enumeration: %s in %.3f s (%.0f candidates/s)\n", sc::enumeration_summary(e).c_str(), t_enum,
              static_cast<double>(e.candidates.size()) / t_enum);

  // One core, in process.
  double t_verdict = 0, t_build = 0, t_run = 0, t_timeline = 0, t_report = 0;
  std::int64_t fits = 0, ops = 0;
  const auto& first = e.candidates.front().scenario;
  const stepsim::costmodel::ComputeModel compute(first.cluster.gpu, first.software);
  std::map<std::int64_t, std::unique_ptr<stepsim::topology::Cluster>> clusters;  // by node count (one cluster preset)
  double t_setup = 0;
  for (const auto& c : e.candidates) {
    auto& cl = clusters[c.scenario.cluster.nodes];
    if (!cl) {
      t0 = std::chrono::steady_clock::now();
      cl = std::make_unique<stepsim::topology::Cluster>(c.scenario.cluster);
      t_setup += since(t0);
    }
    const auto& cluster = *cl;
    t0 = std::chrono::steady_clock::now();
    const auto v = rs::memory_verdict(c.scenario, rs::PruneRule::Stepsim);
    t_verdict += since(t0);
    if (!v.fits) continue;
    ++fits;
    stepsim::sim::BuildOptions bo;
    bo.symmetric_instances = false;
    t0 = std::chrono::steady_clock::now();
    const auto step = stepsim::sim::build_step(c.scenario, cluster, compute, bo);
    t_build += since(t0);
    ops += static_cast<std::int64_t>(step.graph.ops.size());
    t0 = std::chrono::steady_clock::now();
    const auto trace = stepsim::sim::run_analytic(step.graph);
    t_run += since(t0);
    t0 = std::chrono::steady_clock::now();
    const auto tl = stepsim::sim::memory_timeline(step.graph, trace, c.scenario.memory.fragmentation_fraction);
    t_timeline += since(t0);
    t0 = std::chrono::steady_clock::now();
    const auto rep = stepsim::report::make_report(c.scenario, step, trace, tl);
    t_report += since(t0);
  }
  const double n = static_cast<double>(e.candidates.size());
  const double total = t_verdict + t_build + t_run + t_timeline + t_report;
  std::printf("one core: %zu candidates, %lld fit (%.0f ops each on average)\n", e.candidates.size(), static_cast<long long>(fits),
              fits > 0 ? static_cast<double>(ops) / static_cast<double>(fits) : 0.0);
  std::printf("  cluster set-up (once per size): %.3f ms\n", 1e3 * t_setup);
  std::printf("  memory verdict  %8.3f s  %7.1f us/candidate\n", t_verdict, 1e6 * t_verdict / n);
  std::printf("  build_step      %8.3f s  %7.1f us/simulated\n", t_build, fits ? 1e6 * t_build / static_cast<double>(fits) : 0.0);
  std::printf("  run_analytic    %8.3f s  %7.1f us/simulated\n", t_run, fits ? 1e6 * t_run / static_cast<double>(fits) : 0.0);
  std::printf("  memory timeline %8.3f s  %7.1f us/simulated\n", t_timeline, fits ? 1e6 * t_timeline / static_cast<double>(fits) : 0.0);
  std::printf("  make_report     %8.3f s  %7.1f us/simulated\n", t_report, fits ? 1e6 * t_report / static_cast<double>(fits) : 0.0);
  std::printf("  total           %8.3f s  %7.0f candidates/s on one core (enumeration excluded)\n", total, n / total);

  // The whole sweep through worker processes.
  const auto dir = std::filesystem::temp_directory_path() / ("stepsim_sweep_bench_" + std::to_string(::getpid()));
  rs::SweepOptions o;
  o.jobs = jobs;
  o.out_dir = dir.string();
  o.quiet = true;
  t0 = std::chrono::steady_clock::now();
  const auto outcome = rs::run_sweep(spec, o);
  const double t_sweep = since(t0);
  std::printf("run_sweep -j %d: %lld candidates in %.3f s = %.0f candidates/s (enumeration included)\n", jobs,
              static_cast<long long>(outcome.candidates), t_sweep, static_cast<double>(outcome.candidates) / t_sweep);
  std::filesystem::remove_all(dir);
  return 0;
}
