#include "stepsim/driver/simulate.hpp"

#include "stepsim/report/format.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/params.hpp"
#include "stepsim/sim/memory_events.hpp"
#include "stepsim/sim/tally.hpp"
#include "stepsim/support/out_of_memory.hpp"
#include "stepsim/topology/cluster.hpp"

namespace stepsim::driver {

static_assert(scenarios::declared_param("engine.auto_simgrid_max_gpus").max == static_cast<double>(kMaxSimGridGpus),
              "the automatic engine choice stays within the SimGrid engine's limit");

sim::EngineKind default_engine(const scenarios::Scenario& s) {
  return s.world_size() <= s.engine.auto_simgrid_max_gpus ? sim::EngineKind::SimGrid : sim::EngineKind::Analytic;
}

namespace {

using report::grouped;

// A double in a cache key: its bits in hexadecimal (equal keys, equal values; cheaper than
// printing its digits).
std::string num(double v) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, std::bit_cast<std::uint64_t>(v), 16);
  return {buf, end};
}

std::string cluster_key(const scenarios::ClusterSpec& c) {
  std::string k = c.preset + "|" + c.gpu.name + "|" + num(c.gpu.memory_bytes) + "|" + num(c.gpu.peak_bf16_flops) + "|" +
                  num(c.gpu.hbm_Bps) + "|" + num(c.gpu.nvlink_Bps) + "|" + std::to_string(c.gpus_per_node) + "|" +
                  std::to_string(c.nodes) + "|" + num(c.intra_node.bw_Bps) + "|" + num(c.intra_node.latency_s) + "|" +
                  std::to_string(c.inter_node.nics_per_node) + "|" + num(c.inter_node.nic_Bps) + "|" +
                  num(c.inter_node.latency_s) + "|" + scenarios::to_string(c.inter_node.topology) + "|" +
                  num(c.inter_node.oversubscription) + "|" + (c.ideal_network ? "1" : "0") + "|" +
                  std::to_string(c.nvlink_domain_gpus) + "|" + (c.intra_node.nvswitch ? "1" : "0") + "|" +
                  num(c.intra_node.pcie_Bps);
  return k;
}

std::string gpu_key(const scenarios::GpuSpec& g) {
  const auto& e = g.efficiency;
  return g.name + "|" + num(g.memory_bytes) + "|" + num(g.peak_bf16_flops) + "|" + num(g.matmul_bf16_flops) + "|" +
         num(g.hbm_Bps) + "|" + num(g.nvlink_Bps) + "|" + std::to_string(g.sms) + "|" + std::to_string(g.gemm_tile_m) + "x" +
         std::to_string(g.gemm_tile_n) + "|" + std::to_string(g.gemm_small_tile) + "|" + num(g.gemm_small_tile_efficiency) + "|" +
         num(g.gemm_k_overhead) + "|" + scenarios::to_string(g.architecture) + "|" + num(e.gemm_max) + "|" +
         num(e.attn_max) + "|" + num(e.hbm_eff) + "|" + num(e.comm_slowdown) + "|" + e.source + "|" +
         num(g.peak_fp8_flops) + "|" + num(g.matmul_fp8_flops) + "|" + num(e.gemm_fp8_max);
}

// The fields of a software stack the compute model reads (the fusions shape the kernel lists, not
// the model).
std::string software_key(const scenarios::SoftwareSpec& sw) {
  return sw.name + "|" + sw.attention_curves.implementation + "|" + sw.attention_curves.source + "|" +
         num(sw.kernel_launch_s) + "|" + num(sw.microbatch_host_s);
}

}  // namespace

struct SimulationCache::Models {
  std::map<std::string, std::unique_ptr<topology::Cluster>> clusters;
  std::map<std::string, std::unique_ptr<costmodel::ComputeModel>> compute;
};

SimulationCache::SimulationCache() : models_(std::make_unique<Models>()) {}
SimulationCache::~SimulationCache() = default;

const topology::Cluster& SimulationCache::cluster(const scenarios::ClusterSpec& c) {
  auto& cl = models_->clusters[cluster_key(c)];
  if (!cl) cl = std::make_unique<topology::Cluster>(c);
  return *cl;
}

const costmodel::ComputeModel& SimulationCache::compute(const scenarios::GpuSpec& gpu, const scenarios::SoftwareSpec& software) {
  auto& cm = models_->compute[gpu_key(gpu) + "||" + software_key(software)];
  if (!cm) cm = std::make_unique<costmodel::ComputeModel>(gpu, software);
  return *cm;
}

// Ops per pass: per layer group its compute, with CP a ring op and a join (and the in-line CP
// collectives of the other types), with TP a collective
// (and a join when overlapped; in the backward with software.tp_backward_overlap one beside the
// compute and one in line); per pass a pipeline send. About 300 bytes each once built.
double estimated_ops(const scenarios::Scenario& s, bool per_layer) {
  const auto& p = s.parallel;
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  std::int64_t per_chunk = 1;
  if (per_layer)
    per_chunk = std::max(per_chunk, scenarios::pipeline_layout(s).max_chunk_layers());
  // CP: the ring and its join; in line, up to two all-to-alls (Q and O, K and V of another size)
  // or an all-gather (and a reduce-scatter backward).
  double cp = p.cp_ring_size() > 1 ? 2.0 : 0.0;
  if (p.cp_a2a_size() > 1) cp += 2.0;
  if (p.cp > 1 && p.cp_comm_type == scenarios::CpCommType::AllGather) cp += 1.5;
  const double tp_fwd = p.tp > 1 ? (p.tp_comm_overlap ? 2.0 : 1.0) : 0.0;
  const double tp_bwd = p.tp > 1 ? (p.tp_comm_overlap || s.software.tp_backward_overlap ? 2.0 : 1.0) : 0.0;
  const double per_group_pair = 2.0 * (1.0 + cp) + tp_fwd + tp_bwd;  // a forward and a backward
  return d(p.pp) * d(p.vpp) * d(s.micro_batches()) * (d(per_chunk) * per_group_pair + 2.0);
}

void check_graph_size(const scenarios::Scenario& s, bool per_layer) {
  const double ops = estimated_ops(s, per_layer);
  if (ops > kMaxOps)
    throw ScenarioError("training.global_batch",
                        "the step graph of " + grouped(static_cast<double>(s.micro_batches())) + " micro-batches would need " +
                            grouped(ops) + " ops (limit " + grouped(kMaxOps) + "); use fewer micro-batches" +
                            (per_layer ? " or --granularity chunk" : " (a larger training.micro_batch)"));
}

double estimated_trace_events(const scenarios::Scenario& s, bool per_layer) {
  // Flow arrows: two events per pipeline send, at most one send each way per micro-batch, chunk and stage.
  const double sends = 2.0 * static_cast<double>(s.micro_batches() * s.parallel.vpp * s.parallel.pp);
  return 2.0 * estimated_ops(s, per_layer) + 2.0 * sends + static_cast<double>((1 + sim::kNumStreams + 1) * s.parallel.pp);
}

void check_trace_size(const scenarios::Scenario& s, bool per_layer) {
  check_graph_size(s, per_layer);
  const double events = estimated_trace_events(s, per_layer);
  if (events > kMaxTraceEvents)
    throw ScenarioError("--trace", "the Chrome trace of this step would hold about " + grouped(events) + " events (limit " +
                                       grouped(kMaxTraceEvents) + "); use fewer micro-batches" +
                                       (per_layer ? ", --granularity chunk" : " (a larger training.micro_batch)") +
                                       " or run without --trace");
}

namespace {

std::int64_t g_memory_budget_bytes = kDefaultMemoryBudgetBytes;

// "6.6 GiB", or "40.6 MiB" under 1 GiB (so that a small budget and estimate do not both read 0.0).
std::string memory_text(double bytes) {
  constexpr double kGiB = static_cast<double>(std::int64_t{1} << 30);
  return bytes >= kGiB ? report::fixed(bytes / kGiB, 1) + " GiB" : report::fixed(bytes / (kGiB / 1024), 1) + " MiB";
}

}  // namespace

std::int64_t memory_budget_bytes() { return g_memory_budget_bytes; }

void set_memory_budget_bytes(std::int64_t bytes) { g_memory_budget_bytes = bytes; }

double estimated_memory_bytes(std::int64_t gpus, double ops, double flows, bool simgrid) {
  const auto& c = kMemoryCosts;
  const double g = static_cast<double>(gpus);
  double bytes = c.base_bytes + c.per_gpu_bytes * g + c.per_op_bytes * ops;
  if (simgrid) bytes += c.per_flow_bytes * flows;
  return bytes;
}

void check_memory_budget(const scenarios::Scenario& s, double ops, double flows, bool simgrid, std::int64_t budget_bytes,
                         bool per_layer) {
  const double bytes = estimated_memory_bytes(s.world_size(), ops, flows, simgrid);
  if (bytes <= static_cast<double>(budget_bytes)) return;
  throw ScenarioError("--memory-budget-gib",
                      "this run would take about " + memory_text(bytes) + " of memory (" + grouped(static_cast<double>(s.world_size())) +
                          " GPUs, " + grouped(ops) + " ops" + (simgrid ? ", " + grouped(flows) + " SimGrid flows" : std::string()) +
                          "), over the budget of " + memory_text(static_cast<double>(budget_bytes)) +
                          "; use fewer micro-batches (a larger training.micro_batch)" + (per_layer ? ", --granularity chunk" : "") +
                          (simgrid ? ", --engine analytic" : "") + " or fewer GPUs, or raise --memory-budget-gib");
}

double simgrid_flow_count(const sim::StepGraph& graph) {
  std::vector<double> per_plan(graph.plans.size(), 0.0);
  for (std::size_t i = 0; i < graph.plans.size(); ++i)
    for (const auto& round : graph.plans.unfolded(i).rounds)
      per_plan[i] += static_cast<double>(round.flows.size()) * static_cast<double>(round.repeat);
  double flows = 0;
  for (const auto& op : graph.ops)
    if (op.plan >= 0 && static_cast<std::size_t>(op.plan) < per_plan.size()) flows += per_plan[static_cast<std::size_t>(op.plan)];
  return flows;
}

double simgrid_replayed_flow_count(const sim::StepGraph& graph, const topology::Cluster& cluster) {
  return static_cast<double>(sim::prepare_simgrid(graph, cluster).stats().step_replayed_flows);
}

void check_simgrid_size(double flows) {
  if (flows > kMaxSimGridFlows)
    throw ScenarioError("--engine", "the simgrid engine would replay " + grouped(flows) + " flows in this step (limit " +
                                        grouped(kMaxSimGridFlows) + "); use --engine analytic");
}

void check_simgrid_gpus(const scenarios::Scenario& s) {
  if (s.world_size() > kMaxSimGridGpus)
    throw ScenarioError("--engine", "the simgrid engine handles up to " + std::to_string(kMaxSimGridGpus) +
                                        " GPUs; this cluster has " + std::to_string(s.world_size()) + " (use --engine analytic)");
}

Simulation simulate(const scenarios::Scenario& scenario, const SimulateOptions& options) {
  scenarios::Scenario s = scenario;
  if (options.efficiency) s.cluster.gpu.efficiency = *options.efficiency;
  auto engine = options.engine.value_or(default_engine(s));
  // Why the automatic choice took its engine (empty when --engine named it).
  std::string engine_reason;
  if (!options.engine)
    engine_reason = grouped(static_cast<double>(s.world_size())) + " GPUs, " +
                    (engine == sim::EngineKind::SimGrid ? "at most " : "more than ") +
                    grouped(static_cast<double>(s.engine.auto_simgrid_max_gpus)) + " (engine.auto_simgrid_max_gpus)";
  if (engine == sim::EngineKind::SimGrid) check_simgrid_gpus(s);
  check_graph_size(s, options.per_layer);
  const std::int64_t budget = options.memory_budget_bytes.value_or(memory_budget_bytes());
  const double ops = estimated_ops(s, options.per_layer);
  check_memory_budget(s, ops, 0, false, budget, options.per_layer);
  const support::Activity doing("simulating the step" + (s.name.empty() ? std::string() : " of " + s.name) + " (" +
                                grouped(static_cast<double>(s.world_size())) + " GPUs, about " + grouped(ops) + " ops)");
  std::unique_ptr<topology::Cluster> own_cluster;
  std::unique_ptr<costmodel::ComputeModel> own_compute;
  if (options.cache == nullptr) own_cluster = std::make_unique<topology::Cluster>(s.cluster);
  if (options.cache == nullptr || options.efficiency) own_compute = std::make_unique<costmodel::ComputeModel>(s.cluster.gpu, s.software);
  const topology::Cluster& cluster = own_cluster ? *own_cluster : options.cache->cluster(s.cluster);
  const costmodel::ComputeModel& compute = own_compute ? *own_compute : options.cache->compute(s.cluster.gpu, s.software);
  sim::BuildOptions bo;
  bo.per_layer = options.per_layer;
  bo.comm = s.comm;
  bo.compact_copies = options.compact_graph && engine == sim::EngineKind::Analytic && !options.communication_rows;
  Simulation out;
  out.step = sim::build_step(s, cluster, compute, bo);
  // The estimate again with the ops built, before the engine and the timeline add theirs.
  const auto graph_ops = static_cast<double>(out.step.graph.op_count());
  // The SimGrid platform, prepared once for the flow limit and the replay.
  std::optional<sim::SimGridPreparation> prepared;
  if (engine == sim::EngineKind::SimGrid) {
    // The automatic choice falls back to the analytic engine; an explicit simgrid is refused.
    const double flows = simgrid_flow_count(out.step.graph);
    prepared = sim::prepare_simgrid(out.step.graph, cluster);
    const double replayed = static_cast<double>(prepared->stats().step_replayed_flows);
    const bool fits = estimated_memory_bytes(s.world_size(), graph_ops, flows, true) <= static_cast<double>(budget);
    if (!options.engine && (replayed > kMaxSimGridFlows || !fits)) {
      engine = sim::EngineKind::Analytic;
      prepared.reset();
      engine_reason = replayed > kMaxSimGridFlows ? grouped(replayed) + " flows, more than simgrid's " + grouped(kMaxSimGridFlows)
                                                  : "simgrid would not fit the memory budget (--memory-budget-gib)";
    } else {
      check_simgrid_size(replayed);
      check_memory_budget(s, graph_ops, flows, true, budget, options.per_layer);
    }
  }
  if (engine == sim::EngineKind::Analytic) check_memory_budget(s, graph_ops, 0, false, budget, options.per_layer);
  // What the report and the timeline read of the step (storage kept from one run to the next).
  thread_local sim::StepTally tally;
  bool tallied = false;
  if (bo.compact_copies) {
    // The one-pass replay tallies the ops as it places them (no trace of every op: the report's
    // communication rows, which read it, are off).
    out.step.graph.validate_edges_and_plans();
    const auto makespan_s = sim::replay_in_index_order(out.step.graph, tally);
    if (makespan_s) {
      out.trace.engine = sim::EngineKind::Analytic;
      out.trace.makespan_s = *makespan_s;
      tallied = true;
    } else {
      // Where the one-pass replay declines, the stream scheduler replays the graph with its edges
      // (built once the compact one is gone, so that the two are not held at once).
      bo.compact_copies = false;
      out.step = {};
      out.step = sim::build_step(s, cluster, compute, bo);
      out.trace = {};
    }
  }
  if (!tallied) {
    out.trace = prepared ? sim::run_simgrid(out.step.graph, *prepared) : sim::run(engine, out.step.graph, cluster);
    tally.add_trace(out.step.graph, out.trace);
  }
  out.timeline = sim::memory_timeline(out.step.graph, tally, s.memory.fragmentation_fraction, options.timeline_points);
  out.report = report::make_report(s, out.step, out.trace, tally, out.timeline, options.communication_rows);
  out.report.engine_reason = engine_reason;
  return out;
}

}  // namespace stepsim::driver
