// simulate(): the limits on the step graph's size and on the flows the SimGrid engine replays; the compact graph of a sweep.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "stepsim/driver/simulate.hpp"
#include "stepsim/memory/estimator.hpp"
#include "stepsim/report/format.hpp"
#include "stepsim/report/step_report.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/topology/cluster.hpp"

using namespace stepsim;
using namespace stepsim::report;
using namespace stepsim::driver;

namespace {

scenarios::Scenario scenario(const std::vector<std::string>& sets) {
  std::vector<scenarios::Override> ov;
  for (const auto& s : sets) ov.push_back(scenarios::parse_override(s));
  return scenarios::load_scenario_text(scenarios::default_scenario_text(), ov, "<default scenario>");
}

std::string error_of(const scenarios::Scenario& s, const SimulateOptions& o) {
  try {
    (void)simulate(s, o);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("estimated ops: pp * vpp * micro-batches * (groups per pass * ops per forward and backward group + two sends)") {
  // pp 4, 256 micro-batches, 80 layers, TP8: per group a forward and its TP op, a backward and its
  // two TP ops (beside the compute and in line: software.tp_backward_overlap).
  const auto def = scenario({});
  CHECK(estimated_ops(def, false) == 4.0 * 256 * (1 * 5 + 2));
  CHECK(estimated_ops(def, true) == 4.0 * 256 * (20 * 5 + 2));
  CHECK(estimated_ops(scenario({"software.tp_backward_overlap=false"}), true) == 4.0 * 256 * 2 * (20 * 2 + 1));
  const auto inter = scenario({"parallel.schedule=interleaved", "parallel.vpp=2"});
  CHECK(estimated_ops(inter, true) == 4.0 * 2 * 256 * (10 * 5 + 2));
  const auto uneven = scenario({"parallel.first_stage_layers=18", "parallel.last_stage_layers=18"});  // 22 on the others
  CHECK(estimated_ops(uneven, true) == 4.0 * 256 * (22 * 5 + 2));
  // CP adds a ring op and a join per group, an overlapped TP collective a join
  const auto cp = scenario({"parallel.cp=2", "parallel.tp_comm_overlap=true", "parallel.pp=2"});
  CHECK(estimated_ops(cp, false) == 2.0 * static_cast<double>(cp.micro_batches()) * 2 * (1 * 5 + 1));
  CHECK_NOTHROW(check_graph_size(def, true));
}

TEST_CASE("a step graph beyond the op limit is refused before it is built") {
  SimulateOptions o;
  o.engine = sim::EngineKind::Analytic;
  o.per_layer = true;
  // 2,000 layers and 4,096 micro-batches: 4,096 x (2,000 x 5 + 2) = 40,968,192 ops (per layer a
  // forward and its TP op, a backward and its two TP ops; per micro-batch two sends).
  const auto layers = scenario({"model.layers=2000", "training.global_batch=4096", "parallel.pp=1", "parallel.tp=8",
                                "cluster.nodes=1"});
  CHECK(error_of(layers, o) ==
        "training.global_batch: the step graph of 4,096 micro-batches would need 40,968,192 ops (limit 20,000,000); use fewer "
        "micro-batches or --granularity chunk");
  o.per_layer = false;
  const auto batch = scenario({"training.global_batch=16777216"});
  CHECK(error_of(batch, o).rfind("training.global_batch: the step graph of 4,194,304 micro-batches would need 117,440,512 ops", 0) == 0);
}

TEST_CASE("the simgrid engine's flow limit counts the flows it starts, one per class of flows that move alike") {
  // Llama-3.1-8B with TP1 PP1 DP1024: 1,023-step rings of 1,024 flows, over 20 M flows in the
  // step's plans (refused when the limit counted those); the flows of a ring step move alike in
  // a few classes, so SimGrid starts far fewer, and it runs.
  const auto wide = scenario({"model=llama-3.1-8b", "cluster.nodes=128", "parallel.tp=1", "parallel.pp=1",
                              "training.global_batch=1024", "training.seq_len=4096"});
  const topology::Cluster cluster(wide.cluster);
  const costmodel::ComputeModel compute(wide.cluster.gpu, wide.software);
  const auto step = sim::build_step(wide, cluster, compute);
  CHECK(simgrid_flow_count(step.graph) > kMaxSimGridFlows);
  const double replayed = simgrid_replayed_flow_count(step.graph, cluster);
  CHECK(replayed == static_cast<double>(sim::simgrid_platform_stats(step.graph, cluster).step_replayed_flows));
  CHECK(replayed > 0);
  CHECK(replayed < 0.01 * simgrid_flow_count(step.graph));
  CHECK_NOTHROW(check_simgrid_size(replayed));
  SimulateOptions o;
  o.engine = sim::EngineKind::SimGrid;
  CHECK(simulate(wide, o).report.engine == "simgrid");
  CHECK(default_engine(wide) == sim::EngineKind::SimGrid);
  CHECK(simulate(wide).report.engine == "simgrid");

  // 1,024 layers on 2 stages of 512 chunks, DP 8,192 rings: more flows than the limit even one
  // per class. Named, simgrid is refused in one line; left to choose, simulate() takes analytic.
  const auto deep = scenario({"model=llama-3.1-8b", "model.layers=1024", "cluster.nodes=2048", "parallel.tp=1", "parallel.pp=2",
                              "parallel.schedule=interleaved", "parallel.vpp=512", "training.global_batch=16384",
                              "training.seq_len=4096", "engine.auto_simgrid_max_gpus=16384"});
  const topology::Cluster deep_cluster(deep.cluster);
  const costmodel::ComputeModel deep_compute(deep.cluster.gpu, deep.software);
  const double too_many = simgrid_replayed_flow_count(sim::build_step(deep, deep_cluster, deep_compute).graph, deep_cluster);
  CHECK(too_many > kMaxSimGridFlows);
  CHECK_THROWS_WITH_AS(check_simgrid_size(too_many), doctest::Contains("; use --engine analytic"), ScenarioError);
  CHECK(error_of(deep, o) == "--engine: the simgrid engine would replay " + grouped(too_many) +
                                 " flows in this step (limit 20,000,000); use --engine analytic");
  CHECK(default_engine(deep) == sim::EngineKind::SimGrid);
  const auto chosen = simulate(deep).report;
  CHECK(chosen.engine == "analytic");
  CHECK(chosen.engine_reason == grouped(too_many) + " flows, more than simgrid's 20,000,000");
  // The default scenario is well within the limit, and the count is what its plans say.
  const auto def = scenario({});
  const topology::Cluster c2(def.cluster);
  const costmodel::ComputeModel m2(def.cluster.gpu, def.software);
  const auto small = sim::build_step(def, c2, m2);
  double flows = 0;
  for (const auto& op : small.graph.ops)
    if (op.plan >= 0)
      for (const auto& round : small.graph.plans[static_cast<std::size_t>(op.plan)].rounds)
        flows += static_cast<double>(round.flows.size() * static_cast<std::size_t>(round.repeat));
  CHECK(simgrid_flow_count(small.graph) == flows);
  CHECK(flows > 0);
  CHECK(flows < kMaxSimGridFlows);
}

TEST_CASE("a user-described GPU with the H100 preset's numbers gives the preset's step time") {
  // The default scenario's cluster (16 x DGX H100) written out, with the GPU as numbers only.
  const std::string gpu = R"({"memory_gib": 80, "peak_bf16_tflops": 989, "hbm_TBps": 3.35, "nvlink_GBps": 450,
      "matmul_bf16_tflops": 794.5, "sms": 132, "gemm_tile_m": 128, "gemm_tile_n": 256, "gemm_small_tile": 128,
      "gemm_small_tile_efficiency": 0.76, "gemm_k_overhead": 425, "architecture": "hopper",
      "efficiency": {"gemm_max": 0.919618616, "gemm_fp8_max": 0.767476825, "attn_max": 1, "hbm_eff": 0.85, "comm_slowdown": 0.05}})";
  const auto user = scenario({"cluster={\"gpus_per_node\": 8, \"nodes\": 16, \"gpu\": " + gpu +
                              ", \"inter_node\": {\"nics_per_node\": 8, \"nic_Gbps\": 400, \"topology\": \"rail-fat-tree\"}}"});
  const auto preset = scenario({});
  REQUIRE(user.cluster.preset.empty());
  REQUIRE(user.cluster.gpu.name == "custom");
  CHECK(user.cluster.gpu.efficiency.source == "cluster.gpu.efficiency");
  for (const auto engine : {sim::EngineKind::Analytic, sim::EngineKind::SimGrid}) {
    SimulateOptions o;
    o.engine = engine;
    const double preset_s = simulate(preset, o).report.step_time_s;
    CHECK(preset_s == doctest::Approx(63.38).epsilon(1e-3));
    CHECK(simulate(user, o).report.step_time_s == preset_s);
  }
}

TEST_CASE("the automatic engine: simgrid up to engine.auto_simgrid_max_gpus GPUs") {
  CHECK(default_engine(scenario({})) == sim::EngineKind::SimGrid);  // 128 GPUs
  CHECK(default_engine(scenario({"engine.auto_simgrid_max_gpus=64"})) == sim::EngineKind::Analytic);
}

TEST_CASE("estimated trace events: 2 per estimated op, 4 per micro-batch, chunk and stage, 7 per stage, beyond the limit --trace is refused") {
  const auto def = scenario({});  // pp 4, 256 micro-batches, TP8: 7,168 estimated ops
  CHECK(estimated_trace_events(def, false) == 2.0 * 7168 + 4.0 * 256 * 4 + 7 * 4);
  CHECK_NOTHROW(check_trace_size(def, false));
  // 262,144 micro-batches: 4 x 262,144 x 7 = 7,340,032 ops (within the graph limit), 18,874,396 events.
  const auto big = scenario({"training.global_batch=1048576"});
  CHECK(estimated_trace_events(big, false) == 2.0 * 7340032 + 4.0 * 262144 * 4 + 7 * 4);
  CHECK_THROWS_WITH_AS(check_trace_size(big, false),
                       "--trace: the Chrome trace of this step would hold about 18,874,396 events (limit 5,000,000); use fewer "
                       "micro-batches (a larger training.micro_batch) or run without --trace",
                       ScenarioError);
}

TEST_CASE("estimated memory: base + per GPU + per op, and with simgrid per flow") {
  const auto& c = kMemoryCosts;
  CHECK(estimated_memory_bytes(0, 0, 0, false) == c.base_bytes);
  CHECK(estimated_memory_bytes(1000, 2e6, 5e6, false) == c.base_bytes + 1000 * c.per_gpu_bytes + 2e6 * c.per_op_bytes);
  CHECK(estimated_memory_bytes(1000, 2e6, 5e6, true) ==
        c.base_bytes + 1000 * c.per_gpu_bytes + 2e6 * c.per_op_bytes + 5e6 * c.per_flow_bytes);
  // The default budget holds the default scenario many times over, and is the process's budget.
  CHECK(memory_budget_bytes() == kDefaultMemoryBudgetBytes);
  CHECK(estimated_memory_bytes(128, 7168, 0, false) < 0.05 * static_cast<double>(kDefaultMemoryBudgetBytes));
}

TEST_CASE("a run over the memory budget is refused before it is built, naming the estimate and the budget") {
  SimulateOptions o;
  o.engine = sim::EngineKind::Analytic;
  const auto def = scenario({});  // 128 GPUs, 7,168 estimated ops
  const double bytes = estimated_memory_bytes(128, 7168, 0, false);
  o.memory_budget_bytes = static_cast<std::int64_t>(bytes) - 1;
  const auto refused = error_of(def, o);
  CHECK(refused.rfind("--memory-budget-gib: this run would take about 40.6 MiB of memory (128 GPUs, 7,168 ops), over the budget of "
                      "40.6 MiB; use fewer micro-batches (a larger training.micro_batch) or fewer GPUs, or raise --memory-budget-gib",
                      0) == 0);
  o.memory_budget_bytes = static_cast<std::int64_t>(bytes) + 1;
  CHECK(error_of(def, o) == "<no error>");
  // The largest step graph (kMaxOps) is refused under the default budget, even on one GPU.
  CHECK(estimated_memory_bytes(1, kMaxOps, 0, false) > static_cast<double>(kDefaultMemoryBudgetBytes));
}

TEST_CASE("with simgrid the flows count, left to choose, simulate() takes the analytic engine") {
  const auto def = scenario({});
  const topology::Cluster cluster(def.cluster);
  const costmodel::ComputeModel compute(def.cluster.gpu, def.software);
  const auto step = sim::build_step(def, cluster, compute);
  const double flows = simgrid_flow_count(step.graph);
  const auto ops = static_cast<double>(step.graph.ops.size());
  const double simgrid_bytes = estimated_memory_bytes(128, ops, flows, true);
  REQUIRE(simgrid_bytes > estimated_memory_bytes(128, 7168, 0, false));
  SimulateOptions o;
  o.memory_budget_bytes = static_cast<std::int64_t>(simgrid_bytes) - 1;
  CHECK(simulate(def, o).report.engine == "analytic");
  o.engine = sim::EngineKind::SimGrid;
  CHECK(error_of(def, o).find(" SimGrid flows), over the budget of ") != std::string::npos);
  CHECK(error_of(def, o).find("--engine analytic") != std::string::npos);
}

TEST_CASE("the software stack's host time per pass adds to every forward and backward of a chunk") {
  // One stage, no network: 4 micro-batches, each a forward and a backward pass of one chunk, so
  // 1 ms of host time per pass adds 8 ms to the step.
  const std::vector<std::string> base = {"model=llama-3.1-8b", "cluster.nodes=1", "parallel.tp=8", "parallel.pp=1",
                                         "training.global_batch=4", "training.seq_len=4096", "cluster.ideal_network=true"};
  auto with_host = base;
  with_host.push_back("software.microbatch_host_us=1000");
  SimulateOptions o;
  o.engine = sim::EngineKind::Analytic;
  const double plain = simulate(scenario(base), o).report.step_time_s;
  const double hosted = simulate(scenario(with_host), o).report.step_time_s;
  CHECK(hosted - plain == doctest::Approx(8e-3).epsilon(1e-6));
}

TEST_CASE("GB200 NVL72: both engines run it, and TP across two trays stays on NVLink inside the 72-GPU domain") {
  const std::vector<std::string> nvl72 = {"cluster.preset=gb200-nvl72", "cluster.nodes=36", "parallel.tp=8", "parallel.pp=2",
                                          "training.global_batch=144"};
  const auto s = scenario(nvl72);
  CHECK(s.world_size() == 144);
  CHECK(s.cluster.gpu.name == "gb200-186gb");
  SimulateOptions o;
  o.engine = sim::EngineKind::Analytic;
  const double analytic = simulate(s, o).report.step_time_s;
  o.engine = sim::EngineKind::SimGrid;
  const double simgrid = simulate(s, o).report.step_time_s;
  CHECK(simgrid == doctest::Approx(analytic).epsilon(0.01));
  // The same trays with an NVLink domain of one tray: TP 8 crosses the network and is slower.
  auto split = nvl72;
  split.push_back("cluster.nvlink_domain_gpus=4");
  o.engine = sim::EngineKind::Analytic;
  CHECK(simulate(scenario(split), o).report.step_time_s > 1.2 * analytic);
}

TEST_CASE("H200 NVL: two bridged NVLink domains per server, both engines run it, TP 8 across the domains is slower than TP 4 inside one") {
  const std::vector<std::string> nvl = {"cluster.preset=h200-nvl", "cluster.nodes=2", "model=llama-3.1-8b", "parallel.tp=4",
                                        "parallel.pp=1", "training.global_batch=32", "training.seq_len=4096"};
  const auto s = scenario(nvl);
  CHECK(s.cluster.gpu.name == "h200-nvl-141gb");
  CHECK(s.cluster.gpu.peak_bf16_flops == 835.5e12);
  CHECK(s.cluster.nvlink_domain_size() == 4);
  CHECK_FALSE(s.cluster.intra_node.nvswitch);
  CHECK(s.cluster.intra_node.pcie_Bps == 32e9);
  CHECK(s.cluster.inter_node.nics_per_node == 4);
  SimulateOptions o;
  o.engine = sim::EngineKind::Analytic;
  const auto analytic = simulate(s, o).report;
  o.engine = sim::EngineKind::SimGrid;
  CHECK(simulate(s, o).report.step_time_s == doctest::Approx(analytic.step_time_s).epsilon(0.01));
  // No NVLS without NVSwitches, and the TP all-reduces of TP 8 cross PCIe between the domains.
  for (const auto& c : analytic.communication) CHECK(c.algorithm != "nvls");
  auto tp8 = nvl;
  tp8[3] = "parallel.tp=8";
  o.engine = sim::EngineKind::Analytic;
  const auto wide = simulate(scenario(tp8), o).report;
  CHECK(wide.step_time_s > 1.2 * analytic.step_time_s);
  // The same layout on DGX H200 (one NVSwitch domain of 8, 989 TFLOP/s) is faster.
  auto dgx = tp8;
  dgx[0] = "cluster.preset=dgx-h200";
  CHECK(simulate(scenario(dgx), o).report.step_time_s < 0.8 * wide.step_time_s);
}

TEST_CASE("DGX B300: the preset carries its published figures and runs in BF16 and MXFP8, faster than DGX B200") {
  const std::vector<std::string> b300 = {"cluster.preset=dgx-b300", "cluster.nodes=2", "parallel.tp=8", "parallel.pp=1", "training.global_batch=16"};
  const auto s = scenario(b300);
  CHECK(s.cluster.gpu.name == "b300-288gb");
  CHECK(s.cluster.gpu.peak_bf16_flops == 2250e12);
  CHECK(s.cluster.gpu.peak_fp8_flops == 4500e12);
  CHECK(s.cluster.gpu.sms == 160);
  CHECK(s.cluster.gpu.memory_bytes == 288.0 * (1LL << 30));
  SimulateOptions o;
  o.engine = sim::EngineKind::Analytic;
  const double bf16 = simulate(s, o).report.step_time_s;
  auto mx = b300;
  mx.push_back("training.precision=mxfp8");
  CHECK(simulate(scenario(mx), o).report.step_time_s < bf16);
  // Same BF16 ceilings as B200 but more SMs and twice the NIC bandwidth: not slower.
  auto b200 = b300;
  b200[0] = "cluster.preset=dgx-b200";
  CHECK(bf16 <= simulate(scenario(b200), o).report.step_time_s);
  o.engine = sim::EngineKind::SimGrid;
  CHECK(simulate(s, o).report.step_time_s == doctest::Approx(bf16).epsilon(0.01));
}

TEST_CASE("Llama 3.1 405B examples: Meta's and NVIDIA's layouts load with 126 layers and simulate, timeline peaks as the estimate") {
  const std::string dir = std::string(STEPSIM_SOURCE_DIR) + "/scenarios/examples/llama31-405b/";
  struct Case {
    const char* file;
    std::vector<std::int64_t> stage_layers;  // per stage
    std::int64_t first_chunk, last_chunk;    // layers of the first and the last virtual stage
    const char* summary;                     // how the run's summary line names the split
  };
  const Case cases[] = {
      // Meta: 16 stages x 8 chunks of one layer, the embedding and the loss alone in their chunks
      {"meta-h100-8192gpu-tp8-pp16-vp8.json", {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7}, 0, 0,
       ", pipeline layout E|(t|)*126,L"},
      // Meta's long-context run: the same split, CP 16 gathering K and V
      {"meta-h100-16384gpu-tp8-cp16-pp16-vp8-128k.json", {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7}, 0, 0,
       "TP8 CP16 (all_gather) PP16 DP8 VPP8, interleaved, seq 131072"},
      // NVIDIA: 8 stages x 8 chunks of two layers, one less beside the embedding and the loss
      {"nvidia-h100-1024gpu-tp8-pp8-vp8-cp2.json", {15, 16, 16, 16, 16, 16, 16, 15}, 1, 1,
       ", embedding counted in the split, loss counted in the split"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.file);
    const auto s = scenarios::load_scenario_file(dir + c.file);
    CHECK(s.model.layers == 126);
    CHECK(s.parallel.vpp == 8);
    CHECK(s.parallel.schedule == scenarios::Schedule::Interleaved);
    const auto layout = scenarios::pipeline_layout(s);
    std::vector<std::int64_t> per_stage;
    for (std::int64_t i = 0; i < layout.stages(); ++i) per_stage.push_back(layout.stage_layers(i));
    CHECK(per_stage == c.stage_layers);
    CHECK(layout.layers(0, 0) == c.first_chunk);
    CHECK(layout.layers(layout.stages() - 1, 7) == c.last_chunk);
    SimulateOptions o;
    o.engine = sim::EngineKind::Analytic;
    const auto sim = simulate(s, o);
    CHECK(sim.report.step_time_s > 0);
    CHECK(sim.report.summary.find(c.summary) != std::string::npos);
    const auto est = memory::stepsim_estimate(s);
    REQUIRE(sim.report.stages.size() == est.stages.size());
    for (std::size_t i = 0; i < est.stages.size(); ++i) CHECK(sim.report.stages[i].peak_memory_bytes == est.stages[i].total_bytes);
  }
}

TEST_CASE("NVIDIA's 405B layout (TP8 PP8 VP8 CP2, embedding and loss counted) replays on SimGrid as analytically") {
  // The recipe's layout on 16 nodes (DP 1) and 8 micro-batches, so that SimGrid replays it quickly.
  auto s = scenarios::load_scenario_file(std::string(STEPSIM_SOURCE_DIR) +
                                             "/scenarios/examples/llama31-405b/nvidia-h100-1024gpu-tp8-pp8-vp8-cp2.json",
                                         {scenarios::parse_override("cluster.nodes=16"), scenarios::parse_override("training.global_batch=8")});
  SimulateOptions o;
  o.engine = sim::EngineKind::SimGrid;
  const auto sg = simulate(s, o).report;
  o.engine = sim::EngineKind::Analytic;
  const auto an = simulate(s, o).report;
  CHECK(sg.engine == "simgrid");
  CHECK(sg.step_time_s == doctest::Approx(an.step_time_s).epsilon(0.05));
  CHECK(sg.peak_memory_bytes == an.peak_memory_bytes);
}


TEST_CASE("without the communication rows (sweep rows) a report keeps every other figure") {
  const auto s = scenario({"training.global_batch=64", "cluster.nodes=4"});
  SimulateOptions with;
  with.engine = sim::EngineKind::Analytic;
  SimulateOptions without = with;
  without.communication_rows = false;
  const auto a = simulate(s, with).report;
  const auto b = simulate(s, without).report;
  CHECK_FALSE(a.communication.empty());
  CHECK(b.communication.empty());
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.tokens_per_s == b.tokens_per_s);
  CHECK(a.mfu == b.mfu);
  CHECK(a.bubble_fraction == b.bubble_fraction);
  CHECK(a.exposed_comm_fraction == b.exposed_comm_fraction);
  CHECK(a.peak_memory_bytes == b.peak_memory_bytes);
  CHECK(a.oom == b.oom);
  REQUIRE(a.stages.size() == b.stages.size());
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    CHECK(a.stages[i].compute_s == b.stages[i].compute_s);
    CHECK(a.stages[i].exposed_comm_s == b.stages[i].exposed_comm_s);
    CHECK(a.stages[i].idle_s == b.stages[i].idle_s);
  }
  CHECK(report_table(a) != report_table(b));  // the table shows the rows it has
}

TEST_CASE("compact_graph: the report of the graph with its edges, also where the one-pass replay declines") {
  // ZeRO-3 without prefetching: the one-pass replay declines and the graph is built again with its
  // edges for the stream scheduler. The others take the one-pass replay of the compact graph.
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {},
           {"parallel.schedule=interleaved", "parallel.vpp=2", "training.recompute=full"},
           {"parallel.tp=2", "parallel.pp=2", "parallel.sharding=optimizer_grads_params", "parallel.overlap_param_gather=false"}}) {
    CAPTURE(sets.size());
    const auto s = scenario(sets);
    SimulateOptions o;
    o.engine = sim::EngineKind::Analytic;
    o.communication_rows = false;
    const auto listed = simulate(s, o);
    o.compact_graph = true;
    const auto compact = simulate(s, o);
    CHECK(report_json(s, compact.report) == report_json(s, listed.report));
    // Declined: the graph returned is the one with its edges.
    if (sets.size() == 4) CHECK(compact.step.graph.copied_passes().empty());
    else CHECK_FALSE(compact.step.graph.copied_passes().empty());
    // With communication rows (which read every op's times and plan): the graph with its edges.
    o.communication_rows = true;
    CHECK(simulate(s, o).step.graph.copied_passes().empty());
  }
}
