#pragma once
// One scenario through the whole pipeline: cluster, cost model, step graph, engine, memory
// timeline, report.

#include <cstdint>
#include <memory>
#include <optional>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/memory/timeline.hpp"
#include "stepsim/report/step_report.hpp"
#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/sim/build.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/topology/cluster.hpp"

namespace stepsim::driver {

using report::Simulation;

// Cluster models and compute models of the scenarios simulated so far, by their specs: a sweep
// simulates many layouts of few clusters, and building a 1,024-GPU cluster costs more than a
// small step.
class SimulationCache {
 public:
  SimulationCache();
  ~SimulationCache();
  SimulationCache(const SimulationCache&) = delete;
  SimulationCache& operator=(const SimulationCache&) = delete;

  // The cluster model of `c` (built on first use).
  [[nodiscard]] const topology::Cluster& cluster(const scenarios::ClusterSpec& c);
  // The compute model of `gpu` with its embedded efficiency under `software` (built on first use).
  [[nodiscard]] const costmodel::ComputeModel& compute(const scenarios::GpuSpec& gpu, const scenarios::SoftwareSpec& software);

 private:
  struct Models;
  std::unique_ptr<Models> models_;
};

struct SimulateOptions {
  // default: simgrid up to engine.auto_simgrid_max_gpus GPUs (1,024) and kMaxSimGridFlows flows, analytic beyond
  std::optional<sim::EngineKind> engine;
  bool per_layer = false;
  // Replaces the efficiency of the scenario's GPU (cluster.gpu.efficiency; stepsim calibrate).
  std::optional<costmodel::Efficiency> efficiency;
  // Reuse the cluster and compute models of earlier calls (not the compute model when
  // `efficiency` is set); nullptr: build them for this call.
  SimulationCache* cache = nullptr;
  // The memory this run may take (check_memory_budget); nullopt: memory_budget_bytes().
  std::optional<std::int64_t> memory_budget_bytes;
  // The report's per-label communication rows (StepReport::communication); a sweep row does not
  // print them.
  bool communication_rows = true;
  // The memory timeline's points (memory::DeviceTimeline::points; peaks and the OOM point are
  // there without them); a sweep row does not print them.
  bool timeline_points = true;
  // With the analytic engine and no communication rows, build the graph with
  // sim::BuildOptions::compact_copies (the same figures, less to build and to read): where the
  // one-pass replay takes it, the returned step.graph answers no edge queries, does not store the
  // ops of its copied passes (StepGraph::op_at reads them) and `trace` holds the makespan alone;
  // where it declines, the graph is built again
  // with its edges and replayed as without this option. A sweep row reads the report alone.
  bool compact_graph = false;
};


// Largest cluster the SimGrid engine runs: the largest it was measured on (bench/simgrid_scale.sh).
inline constexpr std::int64_t kMaxSimGridGpus = 16384;

[[nodiscard]] sim::EngineKind default_engine(const scenarios::Scenario& s);

// Most ops simulate() builds into a step graph (about 300 bytes each with edges and trace: 6 GB).
inline constexpr double kMaxOps = 2e7;
// Ops of the step graph of `s`, estimated before building it: pp * vpp * micro-batches * 2 passes
// * op groups per pass (1, or the layers of the largest chunk with per_layer) * 4 (compute, TP/SP
// collectives, CP ring, PP send per group, with margin).
[[nodiscard]] double estimated_ops(const scenarios::Scenario& s, bool per_layer);
// Throws ScenarioError("training.global_batch", "... would need N ops (limit 20,000,000) ...")
// when estimated_ops(s, per_layer) exceeds kMaxOps.
void check_graph_size(const scenarios::Scenario& s, bool per_layer);

// Most flows the SimGrid engine starts in one step (one per class of flows that move alike:
// sim::SimGridPlatformStats::step_replayed_flows). Measured at about 1.6 us of CPU each
// (Llama-3.1-8B TP1 PP2 vpp 16 on 16,384 H100: 1,048,572 flows in 1.7 CPU-s), so about half a
// minute at the limit.
inline constexpr double kMaxSimGridFlows = 2e7;
// Flows of the plans of `graph` (the memory estimate's SimGrid term): over its communication
// ops, the flows of each round of the op's plan times the round's repeat count.
[[nodiscard]] double simgrid_flow_count(const sim::StepGraph& graph);
// Flows the SimGrid engine starts for `graph` on `cluster`: as simgrid_flow_count, with one flow
// per class of a round's flows that move alike (prepares the SimGrid platform, no SimGrid call).
[[nodiscard]] double simgrid_replayed_flow_count(const sim::StepGraph& graph, const topology::Cluster& cluster);
// Throws ScenarioError("--engine", "... use --engine analytic") when `replayed_flows`
// (simgrid_replayed_flow_count) exceeds kMaxSimGridFlows.
void check_simgrid_size(double replayed_flows);
// Throws ScenarioError("--engine", ...) when the cluster has more than kMaxSimGridGpus GPUs.
void check_simgrid_gpus(const scenarios::Scenario& s);

// Chrome trace (stepsim run --trace): most events a trace may hold, estimated before the run as
// 2 x estimated_ops + 4 x micro-batches x vpp x pp + (1 + streams + 1) x pp (spans, memory counter
// points, flow arrows of the pipeline sends, names). At the measured
// 130-155 bytes per event a trace stays under about 0.8 GB.
inline constexpr double kMaxTraceEvents = 5e6;
[[nodiscard]] double estimated_trace_events(const scenarios::Scenario& s, bool per_layer);
// Throws what check_graph_size throws, then ScenarioError("--trace", "... would hold about N
// events (limit 5,000,000) ...") when estimated_trace_events(s, per_layer) exceeds kMaxTraceEvents.
void check_trace_size(const scenarios::Scenario& s, bool per_layer);

// The memory of a run, estimated before it runs from what it holds: per GPU of the cluster (its
// topology and placement), per op of the step graph (with its edges, its engine times and its
// memory-timeline events; the trace is streamed and costs nothing more) and, with the SimGrid
// engine, per flow of its plans (an upper bound: the replay runs one flow per class of flows
// that move at the same rate, and its platform grows with the routes, not with GPU pairs). The
// costs were measured with bench/memory_budget.sh (peak RSS of stepsim run at several sizes,
// least-squares fit: 32.6 MiB, 512.4 bytes per GPU, 311.1 / 322.5 bytes per op, 0.3 per flow;
// rounded up); the README's "Limits" section has the table.
struct MemoryCosts {
  double base_bytes;
  double per_gpu_bytes;
  double per_op_bytes;
  double per_flow_bytes;  // SimGrid only
};
inline constexpr MemoryCosts kMemoryCosts{40e6, 576, 352, 1};
// The default budget of one run: a sixth of a 24 GiB workstation, so that a run and a sweep's
// workers fit beside each other; the largest step graph (kMaxOps) needs --memory-budget-gib 7.
inline constexpr std::int64_t kDefaultMemoryBudgetBytes = std::int64_t{4} << 30;
// The budget of the runs of this process: kDefaultMemoryBudgetBytes unless set (the command
// line's --memory-budget-gib sets it for every command that simulates, sweep workers included).
[[nodiscard]] std::int64_t memory_budget_bytes();
void set_memory_budget_bytes(std::int64_t bytes);

// The memory estimate of a run: `gpus` GPUs, `ops` ops, and for the SimGrid engine `flows` flows
// (0 for the analytic engine, or before the graph is built).
[[nodiscard]] double estimated_memory_bytes(std::int64_t gpus, double ops, double flows, bool simgrid);
// Throws ScenarioError("--memory-budget-gib", "this run would take about X GiB of memory (N GPUs,
// M ops[, F SimGrid flows]), over the budget of B GiB; use ...") when the estimate exceeds
// `budget_bytes`. simulate() checks it with the estimated ops before building anything, and again
// with the ops (and flows) built before the engine runs.
void check_memory_budget(const scenarios::Scenario& s, double ops, double flows, bool simgrid, std::int64_t budget_bytes,
                         bool per_layer);

[[nodiscard]] Simulation simulate(const scenarios::Scenario& s, const SimulateOptions& options = {});

}  // namespace stepsim::driver
