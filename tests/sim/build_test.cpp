// The step graph builder and the schedules against their closed forms.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/memory/estimator.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/sim/build.hpp"
#include "stepsim/sim/cost.hpp"
#include "stepsim/workload/params.hpp"
#include "stepsim/workload/program.hpp"
#include "stepsim/workload/kernels.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/memory_events.hpp"
#include "stepsim/topology/cluster.hpp"

using namespace stepsim;
using scenarios::Schedule;

namespace {

scenarios::Scenario scenario(const std::vector<std::string>& sets) {
  const char* base = R"({"model": "llama-3.1-8b",
    "cluster": {"gpu": "h100-sxm-94gb", "gpus_per_node": 4, "nodes": 2},
    "training": {"seq_len": 4096, "global_batch": 16},
    "parallel": {"tp": 2, "pp": 4}})";
  std::vector<scenarios::Override> ov;
  for (const auto& s : sets) ov.push_back(scenarios::parse_override(s));
  return scenarios::load_scenario_text(base, ov);
}

sim::BuiltStep build(const scenarios::Scenario& s, bool symmetric = true) {
  const topology::Cluster cluster(s.cluster);
  const costmodel::ComputeModel cm(s.cluster.gpu, s.software);
  sim::BuildOptions o;
  o.symmetric_instances = symmetric;
  return sim::build_step(s, cluster, cm, o);
}

// Forward passes last tf per stage (split evenly over chunks and layer groups), backward tb;
// everything else is free.
void set_uniform(sim::StepGraph& g, double tf, double tb, std::int64_t layers_per_chunk, std::int64_t v) {
  for (auto& op : g.ops) {
    if (op.kind != sim::OpKind::Compute) {
      op.duration_s = 0;
      continue;
    }
    const double share = 1.0 / static_cast<double>(v);
    // a pass split per layer spreads the pass time over its layer ops
    (void)layers_per_chunk;
    if (op.phase == sim::Phase::Forward) op.duration_s = tf * share;
    else if (op.phase == sim::Phase::Backward) op.duration_s = tb * share;
    else op.duration_s = 0;
  }
}

}  // namespace

TEST_CASE("ideal cluster: 1F1B and GPipe take (m + p - 1)(tf + tb), interleaved (m + (p - 1)/v)(tf + tb)") {
  const double tf = 1.0, tb = 2.0;
  struct Case { Schedule sch; int p, m, v; };
  const Case cases[] = {{Schedule::OneFOneB, 4, 8, 1}, {Schedule::OneFOneB, 4, 2, 1}, {Schedule::OneFOneB, 2, 16, 1},
                        {Schedule::GPipe, 4, 8, 1},    {Schedule::Interleaved, 4, 8, 2}, {Schedule::Interleaved, 2, 4, 4},
                        {Schedule::Interleaved, 4, 4, 2}};
  for (const auto& c : cases) {
    CAPTURE(c.p); CAPTURE(c.m); CAPTURE(c.v); CAPTURE(static_cast<int>(c.sch));
    auto s = scenario({"cluster.ideal_network=true", "parallel.tp=1", "cluster.gpus_per_node=" + std::to_string(c.p),
                       "cluster.nodes=1", "parallel.pp=" + std::to_string(c.p), "training.global_batch=" + std::to_string(c.m),
                       "parallel.schedule=" + scenarios::to_string(c.sch), "parallel.vpp=" + std::to_string(c.v)});
    REQUIRE(s.micro_batches() == c.m);
    auto b = build(s);
    set_uniform(b.graph, tf, tb, s.model.layers / (c.p * c.v), c.v);
    const auto tr = sim::run_analytic(b.graph);
    const double expect = c.sch == Schedule::Interleaved ? (c.m + (c.p - 1.0) / c.v) * (tf + tb) : (c.m + c.p - 1.0) * (tf + tb);
    CHECK(tr.makespan_s == doctest::Approx(expect).epsilon(1e-12));
  }
}

TEST_CASE("interleaved overlap_p2p_comm: a pass waits for the stage's previous send in its own direction only") {
  // p 4, v 2, m 8, ideal cluster: forwards 1 s and backwards 2 s per stage, pipeline sends tc.
  const auto make = [](bool overlap) {
    auto s = scenario({"cluster.ideal_network=true", "parallel.tp=1", "cluster.gpus_per_node=4", "cluster.nodes=1", "parallel.pp=4",
                       "training.global_batch=8", "parallel.schedule=interleaved", "parallel.vpp=2",
                       std::string("parallel.overlap_p2p_comm=") + (overlap ? "true" : "false")});
    CHECK(s.parallel.overlap_p2p_comm == overlap);
    return build(s);
  };
  // Every pass's first compute op and the pipeline sends of its own stage among its predecessors,
  // by phase (the same phase as the pass, the other one).
  const auto waits = [](const sim::StepGraph& g) {
    std::map<std::string, int> n;
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
      const auto& op = g.ops[i];
      if (op.kind != sim::OpKind::Compute || (op.phase != sim::Phase::Forward && op.phase != sim::Phase::Backward)) continue;
      for (const auto pred : g.predecessors(static_cast<std::int32_t>(i))) {
        const auto& q = g.ops[static_cast<std::size_t>(pred)];
        if (q.kind != sim::OpKind::SendRecv || q.device != op.device) continue;
        ++n[q.phase == op.phase ? "same" : "other"];
      }
    }
    return n;
  };
  auto overlapped = make(true), blocking = make(false);
  auto w = waits(overlapped.graph);
  CHECK(w["other"] == 0);
  CHECK(w["same"] > 0);
  w = waits(blocking.graph);
  CHECK(w["other"] > 0);
  // The default follows the schedule and the software stack; other schedules cannot overlap.
  CHECK(scenario({"parallel.schedule=interleaved", "parallel.vpp=2"}).parallel.overlap_p2p_comm);
  CHECK(scenario({"parallel.schedule=interleaved", "parallel.vpp=2", "software=nemo-25.02"}).parallel.overlap_p2p_comm);
  for (const char* old : {"megatron-lm-2021", "megatron-lm-2022", "megatron-deepspeed-2021"}) {
    CAPTURE(old);
    const auto s = scenario({"parallel.schedule=interleaved", "parallel.vpp=2", std::string("software=") + old});
    CHECK_FALSE(s.software.overlap_p2p_comm);
    CHECK_FALSE(s.parallel.overlap_p2p_comm);
    CHECK(scenario({"parallel.schedule=interleaved", "parallel.vpp=2", std::string("software=") + old, "parallel.overlap_p2p_comm=true"})
              .parallel.overlap_p2p_comm);
  }
  CHECK_FALSE(scenario({}).parallel.overlap_p2p_comm);
  CHECK_THROWS_WITH_AS(scenario({"parallel.overlap_p2p_comm=true"}), doctest::Contains("parallel.overlap_p2p_comm"),
                       ScenarioError);
  // Timing: free sends give the closed form either way; sends of tc cost the blocking schedule more.
  const double tf = 1.0, tb = 2.0;
  const auto makespan = [&](sim::StepGraph g, double tc) {
    set_uniform(g, tf, tb, 4, 2);
    for (auto& op : g.ops)
      if (op.kind == sim::OpKind::SendRecv) op.duration_s = tc;
    return sim::run_analytic(g).makespan_s;
  };
  const double ideal = (8.0 + 3.0 / 2.0) * (tf + tb);
  CHECK(makespan(overlapped.graph, 0.0) == doctest::Approx(ideal).epsilon(1e-12));
  CHECK(makespan(blocking.graph, 0.0) == doctest::Approx(ideal).epsilon(1e-12));
  const double over = makespan(overlapped.graph, 0.2), block = makespan(blocking.graph, 0.2);
  CHECK(over > ideal);
  CHECK(block > over + 0.2);
}

TEST_CASE("1F1B: the timeline peak of every stage equals the closed-form stepsim estimate") {
  for (const auto& extra : std::vector<std::vector<std::string>>{
           {}, {"training.recompute=full"}, {"training.global_batch=2"}, {"parallel.pp=2", "training.micro_batch=2"},
           {"model.qk_norm=true"}, {"model.qk_norm=true", "model.norm=layernorm", "parallel.cp=2", "cluster.nodes=4", "training.recompute=full"},
           {"parallel.first_stage_layers=6", "parallel.last_stage_layers=6"},
           {"parallel.tp=1", "parallel.pp=8", "training.recompute=selective"},
           {"training.recompute=full", "training.recompute_method=block", "training.recompute_num_layers=3"},
           {"training.recompute=full", "training.recompute_num_layers=3"},
           {"training.recompute=selective", R"(training.recompute_modules=["mlp", "layernorm"])"},
           {"cluster.nodes=4", "parallel.sharding=optimizer_grads", "training.grad_dtype=bf16",
            "training.optimizer_offload_fraction=0.5"},
           {"cluster.nodes=4", "parallel.sharding=optimizer_grads_params"},
           {"cluster.nodes=4", "parallel.sharding=none"},
           // a stage without layers (no backward working set) and a loss-only stage
           {"parallel.pipeline_layout=Et*16|t*16||L"}}) {
    auto sets = extra;
    auto s = scenario(sets);
    CAPTURE(s.parallel.pp); CAPTURE(s.micro_batches());
    auto b = build(s);
    const topology::Cluster cluster(s.cluster);
    const auto tr = sim::run_analytic(b.graph);
    const auto tl = sim::memory_timeline(b.graph, tr, s.memory.fragmentation_fraction);
    const auto est = memory::stepsim_estimate(s);
    REQUIRE(tl.devices.size() == est.stages.size());
    for (std::size_t i = 0; i < est.stages.size(); ++i) {
      CAPTURE(i);
      CHECK(tl.devices[i].peak_bytes == est.stages[i].total_bytes);
      CHECK(est.stages[i].in_flight == std::min<std::int64_t>(s.parallel.pp - static_cast<std::int64_t>(i), s.micro_batches()));
    }
  }
}

TEST_CASE("uneven interleaved layouts: the step graph computes every layer once per micro-batch, chunk by chunk") {
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"parallel.vpp=2", "parallel.first_stage_layers=6", "parallel.last_stage_layers=6"},
           {"parallel.vpp=null", "parallel.pipeline_layout=E|t*8|t*8|t*8|t*8|||L"}}) {
    auto all = sets;
    all.insert(all.begin(), {"parallel.schedule=interleaved", "training.global_batch=16"});
    const auto s = scenario(all);
    const auto layout = scenarios::pipeline_layout(s);
    for (const bool per_layer : {false, true}) {
      const topology::Cluster cluster(s.cluster);
      const costmodel::ComputeModel cm(s.cluster.gpu, s.software);
      sim::BuildOptions o;
      o.per_layer = per_layer;
      const auto b = sim::build_step(s, cluster, cm, o);
      // forward ops per (stage, chunk, micro-batch): one per layer group, at least one for a chunk
      // holding only the embedding or the loss
      std::map<std::pair<int, int>, int> fwd;
      for (const auto& op : b.graph.ops)
        if (op.kind == sim::OpKind::Compute && op.phase == sim::Phase::Forward) ++fwd[{op.stage, op.chunk}];
      for (std::int64_t i = 0; i < layout.stages(); ++i)
        for (std::int64_t j = 0; j < layout.chunks_per_stage(); ++j) {
          const std::int64_t groups = per_layer ? std::max<std::int64_t>(1, layout.layers(i, j)) : 1;
          CHECK(fwd[{static_cast<int>(i), static_cast<int>(j)}] == groups * s.micro_batches());
        }
      CHECK(sim::run_analytic(b.graph).makespan_s > 0);
    }
  }
}

TEST_CASE("GPipe holds all m micro-batches on every stage at its peak") {
  auto s = scenario({"parallel.schedule=gpipe"});
  auto b = build(s);
  const auto tl = sim::memory_timeline(b.graph, sim::run_analytic(b.graph), s.memory.fragmentation_fraction);
  const auto est = memory::stepsim_estimate(s);
  for (std::size_t i = 0; i < est.stages.size(); ++i) {
    CHECK(est.stages[i].in_flight == s.micro_batches());
    CHECK(tl.devices[i].peak_bytes == est.stages[i].total_bytes);
  }
}

TEST_CASE("both engines give the same makespan where no link is shared") {
  // PP only, 4 stages on NVLink; and TP only on 2 GPUs: no two concurrent flows share a link.
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"parallel.tp=1", "cluster.nodes=1", "parallel.pp=4"},
           {"parallel.tp=2", "parallel.pp=1", "cluster.nodes=1", "cluster.gpus_per_node=2", "training.global_batch=4",
            "model.layers=4"},
           // CP only on 2 GPUs, K and V gathered or exchanged all-to-all (the DP x CP gradient
           // reduction after the backward, so that it shares no link with them)
           {"parallel.tp=1", "parallel.cp=2", "parallel.pp=1", "cluster.nodes=1", "cluster.gpus_per_node=2", "training.global_batch=4",
            "model.layers=4", "parallel.overlap_grad_reduce=false", "parallel.cp_comm_type=all_gather"},
           {"parallel.tp=1", "parallel.cp=2", "parallel.pp=1", "cluster.nodes=1", "cluster.gpus_per_node=2", "training.global_batch=4",
            "model.layers=4", "parallel.overlap_grad_reduce=false", "parallel.cp_comm_type=a2a"}}) {
    CAPTURE(sets.back());
    const auto s = scenario(sets);
    auto b = build(s);
    const topology::Cluster cluster(s.cluster);
    const auto a = sim::run_analytic(b.graph);
    const auto g = sim::run_simgrid(b.graph, cluster);
    CHECK(g.makespan_s == doctest::Approx(a.makespan_s).epsilon(1e-6));
    CHECK(a.makespan_s > 0);
  }
}

TEST_CASE("the graph validates, and its op counts follow the layout") {
  auto s = scenario({});
  auto b = build(s);
  CHECK_NOTHROW(b.graph.validate());
  std::int64_t fwd = 0, bwd = 0, send = 0, tp = 0, opt = 0;
  for (const auto& op : b.graph.ops) {
    if (op.phase == sim::Phase::Forward && op.kind == sim::OpKind::Compute) ++fwd;
    if (op.phase == sim::Phase::Backward && op.kind == sim::OpKind::Compute) ++bwd;
    if (op.kind == sim::OpKind::SendRecv) ++send;
    if (op.stream == sim::Stream::TpComm) ++tp;
    if (op.phase == sim::Phase::Optimizer) ++opt;
  }
  const std::int64_t m = s.micro_batches(), p = s.parallel.pp;
  CHECK(fwd == m * p);   // dp = 1: no bucket splits
  CHECK(bwd == m * p);
  CHECK(send == 2 * m * (p - 1));
  // one per forward pass, two per backward pass (in line, and beside the compute:
  // software.tp_backward_overlap), the cross-entropy all-reduces on the last stage, each stage's
  // norm-gradient all-reduce
  CHECK(tp == 3 * m * p + m + p);
  CHECK(opt == p);
}

TEST_CASE("CP: the K/V ring hides behind (c - 1)/c of its group's attention kernels, and the group takes its compute plus the rest of the ring") {
  // c ranks on one node (NVLink: the ring hides) or one per node (the NIC: it does not).
  for (const int c : {2, 4}) {
    for (const bool across_nodes : {false, true}) {
      CAPTURE(c);
      CAPTURE(across_nodes);
      auto s = scenario({"parallel.tp=1", "parallel.cp=" + std::to_string(c), "parallel.pp=1",
                         "cluster.nodes=" + std::to_string(across_nodes ? c : 1),
                         "cluster.gpus_per_node=" + std::to_string(across_nodes ? 1 : c), "training.global_batch=4"});
      auto b = build(s);
      const auto& g = b.graph;
      const auto tr = sim::run_analytic(g);
      const costmodel::ComputeModel cm(s.cluster.gpu, s.software);
      int checked = 0, exposed = 0;
      for (std::size_t i = 2; i + 1 < g.ops.size(); ++i) {
        const auto& ring = g.ops[i];
        if (ring.stream != sim::Stream::CpComm || ring.kind != sim::OpKind::Collective) continue;
        // The group's compute, the delay before the ring, the ring, and the join, in that order.
        const auto& wait = g.ops[i - 1];
        const auto& comp = g.ops[i - 2];
        REQUIRE(wait.kind == sim::OpKind::Delay);
        CHECK(wait.label == "cp.wait");
        REQUIRE(comp.kind == sim::OpKind::Compute);
        CHECK(wait.work == comp.work);
        // By hand: the attention kernels of the group's work, slowed like the work.
        const auto& work = g.works[static_cast<std::size_t>(comp.work)];
        double attention = 0;
        for (const auto& [list, count] : work.terms)
          for (const auto& k : g.kernel_lists[static_cast<std::size_t>(list)])
            if (k.kind == workload::KernelKind::Attention) attention += count * cm.time_s(k);
        if (work.shares_sms) attention = cm.comm_slowed_time_s(attention);
        REQUIRE(attention > 0);
        const double window = (c - 1.0) / c * attention;
        CHECK(wait.duration_s == doctest::Approx(comp.duration_s - window).epsilon(1e-12));
        CHECK(tr.ops[i - 1].start_s == tr.ops[i - 2].start_s);
        CHECK(tr.ops[i].start_s == doctest::Approx(tr.ops[i - 1].end_s).epsilon(1e-12));
        // The group ends at its start + compute + max(0, ring - window).
        const double group_s = tr.ops[i + 1].end_s - tr.ops[i - 2].start_s;
        CHECK(group_s == doctest::Approx(comp.duration_s + std::max(0.0, ring.duration_s - window)).epsilon(1e-9));
        exposed += ring.duration_s > window ? 1 : 0;
        ++checked;
      }
      CHECK(checked >= 2 * 4);  // passes whose layers wait for or finish buckets are split per layer
      if (across_nodes) CHECK(exposed > 0);
      else CHECK(exposed == 0);
    }
  }
}

TEST_CASE("without software.tp_backward_overlap, TP collectives are synchronous: no compute runs on a stage while its TP collectives run") {
  for (const auto& sched : {"1f1b", "interleaved"}) {
    auto s = scenario({std::string("parallel.schedule=") + sched, std::string("parallel.vpp=") + (std::string(sched) == "1f1b" ? "1" : "2"),
                       "software.tp_backward_overlap=false"});
    auto b = build(s);
    const auto tr = sim::run_analytic(b.graph);
    for (std::size_t dev = 0; dev < b.graph.devices.size(); ++dev) {
      std::vector<std::pair<double, double>> compute, tp;
      for (std::size_t i = 0; i < b.graph.ops.size(); ++i) {
        const auto& op = b.graph.ops[i];
        if (static_cast<std::size_t>(op.device) != dev || tr.ops[i].end_s <= tr.ops[i].start_s) continue;
        if (op.kind == sim::OpKind::Compute) compute.emplace_back(tr.ops[i].start_s, tr.ops[i].end_s);
        if (op.stream == sim::Stream::TpComm) tp.emplace_back(tr.ops[i].start_s, tr.ops[i].end_s);
      }
      REQUIRE_FALSE(tp.empty());
      int overlaps = 0;
      for (const auto& c : compute)
        for (const auto& t : tp)
          if (c.first < t.second - 1e-12 && t.first < c.second - 1e-12) ++overlaps;
      CHECK(overlaps == 0);
    }
  }
}

TEST_CASE("tp_backward_overlap: the column-parallel layers' backward collectives start with the backward compute, the rest stay in line") {
  for (const auto& sp : {"true", "false"}) {
    auto on = scenario({std::string("parallel.sequence_parallel=") + sp});
    auto off = scenario({std::string("parallel.sequence_parallel=") + sp, "software.tp_backward_overlap=false"});
    auto a = build(on), b = build(off);
    const auto ta = sim::run_analytic(a.graph), tb = sim::run_analytic(b.graph);
    CHECK(ta.makespan_s < tb.makespan_s);
    // Per backward pass: units beside the compute op that precedes them, then units in line.
    // SP: 2 all-gathers (saved inputs) + 2 reduce-scatters (dgrads) beside, 2 all-gathers (output
    // gradients) in line; without SP: 2 all-reduces (4 units) beside, none in line but the
    // logits' input on the last stage.
    const double tp_bytes = 2.0 * 4096 * 4096;
    const double layers = static_cast<double>(on.model.layers / on.parallel.pp);
    int beside = 0;
    for (std::size_t i = 1; i < a.graph.ops.size(); ++i) {
      const auto& op = a.graph.ops[i];
      if (op.stream != sim::Stream::TpComm || op.phase != sim::Phase::Backward || op.kind != sim::OpKind::Collective) continue;
      if (a.graph.ops[i - 1].kind != sim::OpKind::Compute) continue;  // the in-line one follows the beside one
      CHECK(ta.ops[i].start_s == ta.ops[i - 1].start_s);
      CHECK(op.message_bytes * op.count == tp_bytes * layers * 4.0 * (std::string(sp) == "true" ? 1.0 : 0.5));
      ++beside;
    }
    CHECK(beside == on.micro_batches() * on.parallel.pp);
    // The forward's collectives follow their compute.
    int in_line = 0;
    for (std::size_t i = 1; i < a.graph.ops.size(); ++i) {
      const auto& op = a.graph.ops[i];
      if (op.stream != sim::Stream::TpComm || op.phase != sim::Phase::Forward || op.kind != sim::OpKind::Collective ||
          a.graph.ops[i - 1].kind != sim::OpKind::Compute)
        continue;
      CHECK(ta.ops[i].start_s >= ta.ops[i - 1].end_s);
      ++in_line;
    }
    CHECK(in_line == on.micro_batches() * on.parallel.pp);
  }
}

TEST_CASE("tp_comm_overlap: TP collectives start with their layers' compute and the step gets shorter than in line") {
  auto base = scenario({"software.tp_backward_overlap=false"});
  auto over = scenario({"parallel.tp_comm_overlap=true"});
  auto a = build(base), b = build(over);
  const auto ta = sim::run_analytic(a.graph), tb = sim::run_analytic(b.graph);
  CHECK(tb.makespan_s < ta.makespan_s);
  int checked = 0;
  for (std::size_t i = 1; i < b.graph.ops.size(); ++i) {
    const auto& op = b.graph.ops[i];
    if (op.stream != sim::Stream::TpComm || op.label != "tp.ag_rs") continue;
    REQUIRE(b.graph.ops[i - 1].kind == sim::OpKind::Compute);
    CHECK(tb.ops[i].start_s == tb.ops[i - 1].start_s);
    ++checked;
  }
  CHECK(checked == 2 * over.micro_batches() * over.parallel.pp);
}

TEST_CASE("two GPUs per NIC: the analytic engine charges the symmetric DP rings' sharing, as SimGrid replays it") {
  // ABCI A-nodes: 8 GPUs, 4 NICs. TP8, DP over 4 nodes: the DP rings of TP ranks 2i and 2i+1 share NIC i.
  const auto s = scenarios::load_scenario_text(R"({"model": "llama-3.1-8b", "cluster": {"preset": "abci-a", "nodes": 4},
      "training": {"seq_len": 2048, "global_batch": 8}, "parallel": {"tp": 8}})");
  const topology::Cluster cluster(s.cluster);
  auto shared = build(s);
  auto s_rails = s;
  s_rails.cluster.inter_node.nics_per_node = 8;
  const topology::Cluster rails_cluster(s_rails.cluster);
  const costmodel::ComputeModel cm(s.cluster.gpu, s.software);
  auto rails = sim::build_step(s_rails, rails_cluster, cm);
  const auto a = sim::run_analytic(shared.graph), g = sim::run_simgrid(shared.graph, cluster);
  CHECK(g.makespan_s == doctest::Approx(a.makespan_s).epsilon(1e-6));
  CHECK(a.makespan_s > sim::run_analytic(rails.graph).makespan_s);
}

TEST_CASE("step end: every stage's optimizer waits for the global gradient-norm all-reduce") {
  auto b = build(scenario({"parallel.pp=4", "parallel.tp=1", "cluster.nodes=2", "parallel.dp=2"}));
  const auto tr = sim::run_analytic(b.graph);
  std::vector<double> starts;
  for (std::size_t i = 0; i < b.graph.ops.size(); ++i)
    if (b.graph.ops[i].phase == sim::Phase::Optimizer) starts.push_back(tr.ops[i].start_s);
  REQUIRE(starts.size() == 4);
  for (double t : starts) CHECK(t == starts.front());
}

TEST_CASE("tied embeddings with p > 1 all-reduce the embedding gradient between the first and last stage") {
  auto count = [](const sim::StepGraph& g) {
    return std::count_if(g.ops.begin(), g.ops.end(), [](const sim::Op& op) { return op.label == "emb.grad_ar"; });
  };
  CHECK(count(build(scenario({"model.tied_embeddings=true"})).graph) == 1);
  CHECK(count(build(scenario({})).graph) == 0);
  CHECK(count(build(scenario({"model.tied_embeddings=true", "parallel.pp=1", "parallel.dp=4"})).graph) == 0);
}

TEST_CASE("without SP, TP runs two all-reduces per layer each way (and one for the embedding, one for the logits' input)") {
  auto s = scenario({"parallel.sequence_parallel=false"});
  auto b = build(s);
  const double S = 2.0 * 4096 * 4096;  // 2 s b h / c
  const auto layers = static_cast<double>(s.model.layers / s.parallel.pp);
  bool seen_fwd0 = false, seen_bwd_last = false;
  // Per pass (micro-batch), the bytes of its TP ops: the backward has the layers' all-reduces
  // beside the compute (software.tp_backward_overlap) and the logits' input in line.
  std::map<std::int32_t, double> fwd0, bwd_last;
  for (const auto& op : b.graph.ops) {
    if (op.stream != sim::Stream::TpComm || op.label != "tp.ar") continue;
    CHECK(op.collective == costmodel::Collective::AllReduce);
    if (op.phase == sim::Phase::Forward && op.stage == 0) fwd0[op.micro_batch] += op.bytes();
    if (op.phase == sim::Phase::Backward && op.stage == 3) bwd_last[op.micro_batch] += op.bytes();
  }
  for (const auto& [mb, bytes] : fwd0) {
    CHECK(bytes == S * (2 * layers + 1));
    seen_fwd0 = true;
  }
  for (const auto& [mb, bytes] : bwd_last) {
    CHECK(bytes == S * (2 * layers + 1));
    seen_bwd_last = true;
  }
  CHECK(seen_fwd0);
  CHECK(seen_bwd_last);
}

TEST_CASE("overlapped parameter all-gathers: each bucket's gather precedes the forward of its first layer") {
  // Llama-3.1-8B, TP8 on two nodes, DP2: 27 M parameters per layer per rank, buckets of two layers.
  auto s = scenarios::load_scenario_text(R"({"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 2},
      "training": {"seq_len": 4096, "global_batch": 16}, "parallel": {"tp": 8}})");
  auto b = build(s);
  // A bucket op's layer is the bucket's first layer: the forward op that needs its parameters.
  int gathers = 0;
  for (std::size_t i = 0; i < b.graph.ops.size(); ++i) {
    if (b.graph.ops[i].label != "dp.param_ag") continue;
    ++gathers;
    int feeds = 0;
    for (auto succ : b.graph.successors(static_cast<std::int32_t>(i))) {
      const auto& op = b.graph.ops[static_cast<std::size_t>(succ)];
      if (op.phase != sim::Phase::Forward || op.kind != sim::OpKind::Compute) continue;
      CHECK(op.layer == b.graph.ops[i].layer);
      CHECK(op.micro_batch == 0);
      ++feeds;
    }
    CHECK(feeds == 1);
  }
  CHECK(gathers > 2);
  const auto tr = sim::run_analytic(b.graph);
  for (std::size_t i = 0; i < b.graph.ops.size(); ++i)
    if (b.graph.ops[i].label == "dp.param_ag")
      for (auto succ : b.graph.successors(static_cast<std::int32_t>(i)))
        CHECK(tr.ops[static_cast<std::size_t>(succ)].start_s >= tr.ops[i].end_s);
}

TEST_CASE("a stage without transformer layers holds no backward working set") {
  const auto s = scenario({"parallel.vpp=null", "parallel.pipeline_layout=Et*16|t*16||L"});
  const auto p = workload::step_program(s);
  CHECK(memory::chunk_backward_transient_bytes(p, 0, 0) > 0);
  CHECK(memory::chunk_backward_transient_bytes(p, 2, 0) == 0);
  CHECK(memory::chunk_backward_transient_bytes(p, 3, 0) == 0);
  const auto est = memory::stepsim_estimate(s);
  for (const auto& t : est.stages[2].terms)
    if (t.key == "recompute_bytes") CHECK(t.bytes == 0);
}

TEST_CASE("interleaved: the timeline peak of every stage equals the closed-form estimate") {
  for (const auto& sets : std::vector<std::vector<std::string>>{
           {"parallel.vpp=2"}, {"parallel.vpp=4"}, {"parallel.vpp=8"},
           // few micro-batches: m = p and m = 2p
           {"parallel.vpp=2", "training.global_batch=4"}, {"parallel.vpp=4", "training.global_batch=8"},
           // uneven interleaved layouts: first/last stages, embedding and loss counted, explicit layouts
           {"parallel.vpp=2", "parallel.first_stage_layers=6", "parallel.last_stage_layers=6"},
           {"parallel.vpp=2", "parallel.first_stage_layers=4", "parallel.last_stage_layers=12"},
           {"model.layers=30", "parallel.vpp=2", "parallel.account_for_embedding_in_pipeline_split=true",
            "parallel.account_for_loss_in_pipeline_split=true"},
           {"model.layers=31", "parallel.vpp=2", "parallel.account_for_loss_in_pipeline_split=true"},
           {"parallel.vpp=null", "parallel.pipeline_layout=E|t*4|t*4|t*4|(t*5|)*3,t*5L"},
           {"parallel.vpp=null", "parallel.pipeline_layout=E|t*8|t*8|t*8|t*8|||L", "training.recompute=full"},
           // micro-batch groups other than p: one group of 5, groups of 6 with a last of 4, groups of 8
           {"parallel.vpp=2", "training.global_batch=5", "parallel.microbatch_group_size=5"},
           {"parallel.vpp=4", "training.global_batch=10", "parallel.microbatch_group_size=6"},
           {"parallel.vpp=2", "parallel.microbatch_group_size=8"}}) {
    auto all = sets;
    all.insert(all.begin(), {"parallel.schedule=interleaved", "training.global_batch=16"});
    auto s = scenario(all);
    CAPTURE(s.parallel.pipeline_layout);
    CAPTURE(s.parallel.vpp);
    auto b = build(s);
    const auto tl = sim::memory_timeline(b.graph, sim::run_analytic(b.graph), s.memory.fragmentation_fraction);
    const auto est = memory::stepsim_estimate(s);
    for (std::size_t i = 0; i < est.stages.size(); ++i) {
      CAPTURE(i);
      CHECK(tl.devices[i].peak_bytes == est.stages[i].total_bytes);
    }
  }
}

TEST_CASE("with SP, GPT's embedding all-reduces (learned positions), Llama's reduce-scatters") {
  for (const bool gpt : {false, true}) {
    auto s = scenario(gpt ? std::vector<std::string>{"model.mlp=gelu", "model.norm=layernorm", "model.kv_heads=32"}
                          : std::vector<std::string>{});
    auto b = build(s);
    const double S = 2.0 * 4096 * 4096;
    const auto layers = static_cast<double>(s.model.layers / s.parallel.pp);
    int seen = 0;
    for (const auto& op : b.graph.ops)
      if (op.stream == sim::Stream::TpComm && op.label == "tp.ag_rs" && op.phase == sim::Phase::Forward && op.stage == 0) {
        CHECK(op.bytes() == S * (4 * layers + (gpt ? 2 : 1)));
        ++seen;
      }
    CHECK(seen == s.micro_batches());
  }
}

TEST_CASE("re-costing a built graph equals a full build, for each efficiency, the graph is built once") {
  const auto s = scenario({"parallel.cp=2", "parallel.pp=2", "parallel.tp=2", "training.global_batch=8"});
  const topology::Cluster cluster(s.cluster);
  auto gpu_b = s.cluster.gpu;
  gpu_b.efficiency.gemm_max *= 0.5;
  gpu_b.efficiency.comm_slowdown = 0.2;
  const costmodel::ComputeModel cm_a(s.cluster.gpu, s.software), cm_b(gpu_b, s.software);
  sim::BuiltStep graph = sim::build_step_graph(s, cluster);
  auto same = [](const sim::StepGraph& a, const sim::StepGraph& b) {
    REQUIRE(a.ops.size() == b.ops.size());
    REQUIRE(a.plans.size() == b.plans.size());
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
      CHECK(a.ops[i].duration_s == b.ops[i].duration_s);
      CHECK(a.ops[i].plan == b.ops[i].plan);
    }
    CHECK(sim::run_analytic(a).makespan_s == sim::run_analytic(b).makespan_s);
  };
  for (const auto* cm : {&cm_a, &cm_b, &cm_a}) {
    sim::cost_step(graph.graph, cluster, *cm, costmodel::CommSettings{});
    same(graph.graph, sim::build_step(s, cluster, *cm).graph);
  }
  sim::cost_step(graph.graph, cluster, cm_b, costmodel::CommSettings{});
  const double slow = sim::run_analytic(graph.graph).makespan_s;
  sim::cost_step(graph.graph, cluster, cm_a, costmodel::CommSettings{});
  CHECK(slow > sim::run_analytic(graph.graph).makespan_s);
}

TEST_CASE("ops copied from a recorded pass name the op they are priced as, and a wrong one is an internal error") {
  const auto s = scenario({"parallel.cp=2", "parallel.pp=2", "parallel.tp=2", "training.global_batch=8"});
  const topology::Cluster cluster(s.cluster);
  const costmodel::ComputeModel cm(s.cluster.gpu, s.software);
  sim::BuiltStep b = sim::build_step(s, cluster, cm);
  auto& ops = b.graph.ops;
  std::size_t copies = 0, comm_copies = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].cost_of < 0) continue;
    ++copies;
    const auto& src = ops[static_cast<std::size_t>(ops[i].cost_of)];
    CHECK(static_cast<std::size_t>(ops[i].cost_of) < i);
    CHECK(src.cost_of == -1);  // copies name the recorded op itself
    CHECK(src.work == ops[i].work);
    CHECK(src.duration_s == ops[i].duration_s);
    CHECK(src.plan == ops[i].plan);
    if (src.plan >= 0) ++comm_copies;
  }
  CHECK(copies > 0);
  CHECK(comm_copies > 0);
  // An op named as the price of one with another work or size is refused, not priced.
  std::size_t victim = 0;
  while (ops[victim].cost_of < 0 || ops[victim].kind != sim::OpKind::Compute) ++victim;
  const auto end = ops.begin() + static_cast<std::ptrdiff_t>(victim);
  const auto other = std::find_if(ops.begin(), end, [&](const sim::Op& o) {
    return o.kind == sim::OpKind::Compute && o.work != ops[victim].work;
  });
  REQUIRE(other != end);  // an earlier compute op of another work (the gradient-buffer zeroing at least)
  ops[victim].cost_of = static_cast<std::int32_t>(other - ops.begin());
  CHECK_THROWS_AS(sim::cost_step(b.graph, cluster, cm, costmodel::CommSettings{}), InternalError);
  ops[victim].cost_of = static_cast<std::int32_t>(victim);  // itself: not an earlier op
  CHECK_THROWS_AS(sim::cost_step(b.graph, cluster, cm, costmodel::CommSettings{}), InternalError);
}

TEST_CASE("CP all_gather and a2a: the CP group's collectives in line after each layer group's compute, no ring") {
  for (const char* type : {"all_gather", "a2a"}) {
    CAPTURE(type);
    const auto s = scenario({"parallel.cp=2", "parallel.pp=2", "parallel.tp=2", "training.global_batch=8",
                             std::string("parallel.cp_comm_type=\"") + type + "\""});
    const auto b = build(s);
    const auto& g = b.graph;
    const auto tr = sim::run_analytic(g);
    const double m = static_cast<double>(s.micro_batches()), layers = static_cast<double>(s.model.layers);
    // llama-3.1-8b: n = s b / c = 2048 tokens, d_h = 128, t = 2: K and V of a rank 4 n k d_h / t
    // with k = 8, Q (and O) 2 n a d_h / t with a = 32.
    const double kv = 4.0 * 2048 * 8 * 128 / 2, q = 2.0 * 2048 * 32 * 128 / 2;
    std::map<std::string, double> count;  // collectives by label, each op's count summed
    int in_line = 0;
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
      const auto& op = g.ops[i];
      CHECK(op.label != "cp.wait");
      CHECK(op.label != "cp.kv");
      // Nothing runs beside the compute (no TP overlap either) but, in the first and the last
      // micro-batch, the DP x CP parameter gathers and gradient reductions.
      if (op.kind == sim::OpKind::Compute && (op.phase == sim::Phase::Forward || op.phase == sim::Phase::Backward) && op.micro_batch > 0 &&
          op.micro_batch + 1 < static_cast<std::int32_t>(m))
        CHECK_FALSE(g.works[static_cast<std::size_t>(op.work)].shares_sms);
      if (op.stream != sim::Stream::CpComm || op.kind != sim::OpKind::Collective) continue;
      CHECK(g.groups[static_cast<std::size_t>(op.group)].kind == workload::GroupKind::Context);
      count[op.label] += op.count;
      if (op.label == "cp.a2a") CHECK((op.message_bytes == q || op.message_bytes == 0.5 * kv));
      else CHECK(op.message_bytes == kv);  // gathered K, or V: c x the rank's one
      // In line: it starts when the op before it in its group ends.
      const auto before = g.predecessors(static_cast<std::int32_t>(i));
      REQUIRE(before.size() == 1);
      CHECK(tr.ops[i].start_s == tr.ops[static_cast<std::size_t>(before.front())].end_s);
      ++in_line;
    }
    CHECK(in_line > 0);
    if (std::string(type) == "all_gather") {
      CHECK(count["cp.kv_ag"] == 4.0 * layers * m);  // each forward and each backward gathers K and V
      CHECK(count["cp.dkv_rs"] == 2.0 * layers * m);
      CHECK(count.size() == 2);
    } else {
      CHECK(count["cp.a2a"] == 8.0 * layers * m);  // Q, K, V, O forward; dO, dQ, dK, dV backward
      CHECK(count.size() == 1);
    }
  }
}

TEST_CASE("CP a2a+p2p: all-to-all groups of consecutive CP ranks, the ring across them, and its ends are a2a and p2p") {
  const std::vector<std::string> base{"parallel.tp=1", "parallel.cp=4", "parallel.pp=2", "training.global_batch=8"};
  const auto with = [&](std::vector<std::string> more) {
    auto sets = base;
    sets.insert(sets.end(), more.begin(), more.end());
    return scenario(sets);
  };
  const auto s = with({"parallel.cp_comm_type=a2a+p2p", "parallel.hierarchical_cp_sizes=[2, 2]"});
  const auto b = build(s);
  const topology::Placement pl(s.parallel, s.parallel.rank_order);
  const auto cp = pl.cp_group(pl.rank({0, 0, 0, 0}));
  REQUIRE(cp.size() == 4);
  bool a2a = false;
  double ring_fwd = 0, ring_bwd = 0;  // ring steps of stage 0's layers, summed over its ops
  for (const auto& op : b.graph.ops) {
    if (op.stage != 0 || op.group < 0) continue;
    const auto& g = b.graph.groups[static_cast<std::size_t>(op.group)];
    if (g.kind == workload::GroupKind::ContextA2A) {
      a2a = true;
      CHECK(g.instances[0] == std::vector<std::int64_t>{cp[0], cp[1]});  // consecutive CP ranks
      CHECK(op.label == "cp.a2a");
    }
    if (g.kind == workload::GroupKind::ContextRing) {
      CHECK(g.instances[0] == std::vector<std::int64_t>{cp[0], cp[2]});  // the same place in the next group
      (op.phase == sim::Phase::Forward ? ring_fwd : ring_bwd) += op.count;
    }
  }
  CHECK(a2a);
  // r - 1 = 1 step per layer forward, 2 backward, for the stage's 16 layers and 8 micro-batches.
  CHECK(ring_fwd == 16.0 * 8);
  CHECK(ring_bwd == 2.0 * 16 * 8);
  // Groups of all the CP ranks and no ring: Ulysses; groups of one and a ring of all: the p2p ring.
  const auto makespan = [&](const scenarios::Scenario& x) { return sim::run_analytic(build(x).graph).makespan_s; };
  CHECK(makespan(with({"parallel.cp_comm_type=a2a+p2p", "parallel.hierarchical_cp_sizes=[4, 1]"})) ==
        makespan(with({"parallel.cp_comm_type=a2a"})));
  CHECK(makespan(with({"parallel.cp_comm_type=a2a+p2p", "parallel.hierarchical_cp_sizes=[1, 4]"})) == makespan(with({})));
}

TEST_CASE("the CP ring op is a send/recv, as its plan") {
  const auto b = build(scenario({"parallel.cp=2", "parallel.pp=2", "parallel.tp=2", "training.global_batch=8"}));
  int rings = 0;
  for (const auto& op : b.graph.ops)
    if (op.stream == sim::Stream::CpComm && op.kind == sim::OpKind::Collective) {
      ++rings;
      CHECK(op.collective == costmodel::Collective::SendRecv);
      CHECK(b.graph.groups[static_cast<std::size_t>(op.group)].kind == workload::GroupKind::ContextRing);
    }
  CHECK(rings > 0);
}

namespace {

// Collectives of one label in a built step: how many, and their total bytes.
std::pair<int, double> collectives(const sim::BuiltStep& b, const std::string& label) {
  int n = 0;
  double bytes = 0;
  for (const auto& op : b.graph.ops)
    if (op.label == label) ++n, bytes += op.bytes();
  return {n, bytes};
}

}  // namespace

TEST_CASE("sharding: gradient reductions and parameter gathers per strategy, in the gradient dtype") {
  // TP2 PP4 on 16 GPUs: DP 2, 8 micro-batches; 8 layers per stage.
  const auto base = std::vector<std::string>{"cluster.nodes=4"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), base.begin(), base.end());
    return scenario(more);
  };
  const auto zero1 = with({"parallel.sharding=optimizer"});
  REQUIRE(zero1.parallel.dp == 2);
  REQUIRE(zero1.micro_batches() == 8);
  const auto b1 = build(zero1);
  const auto [rs1, rs1_bytes] = collectives(b1, "dp.grad_rs");
  CHECK(rs1 > 0);
  CHECK(collectives(b1, "dp.param_ag").first == rs1);  // one gather per bucket
  CHECK(collectives(b1, "dp.param_unshard").first == 0);
  // Every parameter's fp32 gradient is reduce-scattered once per step.
  double params = 0;
  for (int st = 0; st < 4; ++st) params += workload::stage_params(zero1, st);
  CHECK(rs1_bytes == doctest::Approx(4.0 * params).epsilon(1e-12));
  const auto none = build(with({"parallel.sharding=none"}));
  CHECK(collectives(none, "dp.grad_ar").second == doctest::Approx(4.0 * params).epsilon(1e-12));
  CHECK(collectives(none, "dp.param_ag").first == 0);
  // bf16 gradients: half the bytes.
  CHECK(collectives(build(with({"training.grad_dtype=bf16"})), "dp.grad_rs").second ==
        doctest::Approx(2.0 * params).epsilon(1e-12));

  // ZeRO-2: the same reduce-scatters after every one of the 8 micro-batches' backward.
  const auto b2 = build(with({"parallel.sharding=optimizer_grads"}));
  CHECK(collectives(b2, "dp.grad_rs").first == 8 * rs1);
  CHECK(collectives(b2, "dp.grad_rs").second == doctest::Approx(8.0 * 4.0 * params).epsilon(1e-12));
  CHECK(collectives(b2, "dp.param_ag").first == rs1);

  // ZeRO-3: a bf16 gather of each stage's parameters before each forward and backward pass (2 x 8
  // passes on each of 4 stages), no gather after the optimizer.
  const auto b3 = build(with({"parallel.sharding=optimizer_grads_params"}));
  const auto [ag3, ag3_bytes] = collectives(b3, "dp.param_unshard");
  CHECK(ag3 == 4 * 2 * 8);
  CHECK(ag3_bytes == doctest::Approx(2.0 * 8.0 * 2.0 * params).epsilon(1e-12));
  CHECK(collectives(b3, "dp.param_ag").first == 0);
  CHECK(collectives(b3, "dp.grad_rs").first == 8 * rs1);
}

TEST_CASE("ZeRO-3 with prefetched gathers: a pass ends after its parameter all-gather, with and without CP") {
  for (const int c : {1, 2}) {
    CAPTURE(c);
    const auto s = scenario({"cluster.nodes=" + std::to_string(4 * c), "parallel.cp=" + std::to_string(c),
                             "parallel.sharding=optimizer_grads_params", "parallel.overlap_param_gather=true", "training.seq_len=256"});
    REQUIRE(s.parallel.dp == 2);
    const auto b = build(s);
    const auto& g = b.graph;
    const auto tr = sim::run_analytic(g);
    int checked = 0, longer = 0;
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
      const auto& u = g.ops[i];
      if (u.label != "dp.param_unshard") continue;
      // The pass's compute, and the device's next compute after it.
      const auto phase = u.phase;
      double pass_end = 0;
      for (std::size_t j = 0; j < g.ops.size(); ++j) {
        const auto& o = g.ops[j];
        if (o.kind == sim::OpKind::Compute && o.device == u.device && o.phase == phase && o.micro_batch == u.micro_batch &&
            o.chunk == u.chunk)
          pass_end = std::max(pass_end, tr.ops[j].end_s);
      }
      double next = std::numeric_limits<double>::infinity();
      for (std::size_t j = 0; j < g.ops.size(); ++j) {
        const auto& o = g.ops[j];
        if (o.kind == sim::OpKind::Compute && o.device == u.device && tr.ops[j].start_s >= pass_end &&
            tr.ops[j].end_s > tr.ops[j].start_s && !(o.phase == phase && o.micro_batch == u.micro_batch && o.chunk == u.chunk))
          next = std::min(next, tr.ops[j].start_s);
      }
      if (!std::isfinite(next)) continue;  // the device's last pass
      CAPTURE(static_cast<int>(phase));
      CHECK(next >= tr.ops[i].end_s - 1e-12);
      longer += tr.ops[i].end_s > pass_end + 1e-12 ? 1 : 0;
      ++checked;
    }
    CHECK(checked > 0);
    CHECK(longer > 0);  // some gathers outlast their pass: the check above is not trivially true
  }
}

TEST_CASE("distributed-optimizer instances: reduce-scatter within an instance, all-reduce of the shard across instances") {
  // TP2 PP4 on 32 GPUs: DP 4, two instances of 2 ranks each.
  const auto one = scenario({"cluster.nodes=8"});
  const auto two = scenario({"cluster.nodes=8", "parallel.distributed_optimizer_instances=2"});
  REQUIRE(two.parallel.dp == 4);
  const auto b1 = build(one), b2 = build(two);
  double params = 0;
  for (int st = 0; st < 4; ++st) params += workload::stage_params(two, st);
  const auto [rs, rs_bytes] = collectives(b2, "dp.grad_rs");
  CHECK(rs == collectives(b1, "dp.grad_rs").first);
  CHECK(rs_bytes == doctest::Approx(4.0 * params).epsilon(1e-12));
  // One all-reduce per bucket of the half bucket each rank keeps, after its reduce-scatter.
  const auto [ar, ar_bytes] = collectives(b2, "dp.grad_ar_instances");
  CHECK(ar == rs);
  CHECK(ar_bytes == doctest::Approx(4.0 * params / 2.0).epsilon(1e-12));
  CHECK(collectives(b1, "dp.grad_ar_instances").first == 0);
  CHECK(collectives(b2, "dp.param_ag").first == rs);
  for (std::size_t i = 0; i < b2.graph.ops.size(); ++i) {
    const auto& op = b2.graph.ops[i];
    const auto& g = b2.graph.groups[static_cast<std::size_t>(op.group < 0 ? 0 : op.group)];
    if (op.label == "dp.grad_rs" || op.label == "dp.param_ag") {
      CHECK(g.kind == workload::GroupKind::DataContextInstance);
      CHECK(g.instances.front().size() == 2);
    } else if (op.label == "dp.grad_ar_instances") {
      CHECK(g.kind == workload::GroupKind::DataContextReplicas);
      CHECK(g.instances.front().size() == 2);
      CHECK(op.collective == workload::Collective::AllReduce);
      // After the reduce-scatter of its bucket.
      const auto before = b2.graph.predecessors(static_cast<std::int32_t>(i));
      CHECK(std::any_of(before.begin(), before.end(),
                        [&](std::int32_t from) { return b2.graph.ops[static_cast<std::size_t>(from)].label == "dp.grad_rs"; }));
    }
  }
  // The optimizer updates a shard of half the stage's parameters instead of a quarter.
  const auto opt_bytes = [](const sim::BuiltStep& b) {
    double bytes = 0;
    for (const auto& op : b.graph.ops)
      if (op.label == "optimizer") bytes += op.bytes();
    return bytes;
  };
  CHECK(opt_bytes(b2) == doctest::Approx(2.0 * opt_bytes(b1)).epsilon(1e-12));
}

TEST_CASE("recomputation options: the backward re-runs the FLOPs of the recomputed layers or modules") {
  const auto flops_of = [](const scenarios::Scenario& s) {
    double f = 0;
    const auto g = build(s).graph;
    for (std::size_t i = 0; i < g.ops.size(); ++i)
      if (g.ops[i].kind == sim::OpKind::Compute) f += g.op_flops(i);
    return f;
  };
  const double none = flops_of(scenario({}));
  const double layer = workload::total_flops(workload::layer_forward(scenario({})));
  // Full: each of the 32 layers re-runs its forward in every micro-batch (16); block with 2 layers:
  // the first 2 of each stage's 8.
  const auto s = scenario({});
  const double passes = static_cast<double>(s.micro_batches());
  CHECK(flops_of(scenario({"training.recompute=full"})) - none == doctest::Approx(passes * 32 * layer).epsilon(1e-9));
  CHECK(flops_of(scenario({"training.recompute=full", "training.recompute_method=block", "training.recompute_num_layers=2"})) - none ==
        doctest::Approx(passes * 4 * 2 * layer).epsilon(1e-9));
}

namespace {

// The SimGrid engine replaying flow classes against every flow: same op times, far fewer flows.
sim::SimGridPlatformStats check_classes_match_exact(const scenarios::Scenario& s, std::int64_t max_replayed) {
  const topology::Cluster cluster(s.cluster);
  const auto b = build(s);
  const auto st = sim::simgrid_platform_stats(b.graph, cluster);
  const auto exact_st = sim::simgrid_platform_stats(b.graph, cluster, sim::SimGridFlows::Exact);
  CHECK(exact_st.replayed_flows == st.plan_flows);
  CHECK(st.replayed_flows <= max_replayed);
  const auto classes = sim::run_simgrid(b.graph, cluster);
  const auto exact = sim::run_simgrid(b.graph, cluster, sim::SimGridFlows::Exact);
  REQUIRE(classes.ops.size() == exact.ops.size());
  CHECK(classes.makespan_s == doctest::Approx(exact.makespan_s).epsilon(1e-9));
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < exact.ops.size(); ++i) {
    const double tol = 1e-9 * exact.makespan_s;
    if (std::abs(classes.ops[i].start_s - exact.ops[i].start_s) > tol ||
        std::abs(classes.ops[i].end_s - exact.ops[i].end_s) > tol)
      ++mismatches;
  }
  CHECK(mismatches == 0);
  return st;
}

}  // namespace

TEST_CASE("simgrid flow classes: Llama 3.1 70B on 1,024 H100 (TP8 PP8 DP16) times every op as the exact replay") {
  const auto s = scenarios::load_scenario_text(R"({"model": "llama-3.1-70b",
      "cluster": {"preset": "dgx-h100", "nodes": 128},
      "training": {"seq_len": 8192, "global_batch": 1024, "micro_batch": 1},
      "parallel": {"tp": 8, "cp": 1, "pp": 8, "dp": 16}})");
  check_classes_match_exact(s, 100);
}

TEST_CASE("simgrid flow classes: an oversubscribed rail fat-tree with DP rings across leaves") {
  // Leaf uplinks of 32 x 50 GB/s / 64 = 25 GB/s, below one NIC; DP outermost, so the DP ring of
  // each stage crosses the rail leaves (32 nodes each) twice: the flows that cross the spine, and
  // those that share links with them, move at other rates than the rest of their round.
  const char* text = R"({"model": "llama-3.1-8b",
      "cluster": {"preset": "dgx-h100", "nodes": 64, "inter_node": {"oversubscription": 64}},
      "training": {"seq_len": 2048, "global_batch": 64, "micro_batch": 1},
      "parallel": {"tp": 8, "pp": 2, "dp": 32, "rank_order": "tp-cp-pp-dp"}})";
  const auto s = scenarios::load_scenario_text(text);
  const auto st = check_classes_match_exact(s, 1000000);
  CHECK(st.replayed_flows < st.plan_flows);
  auto flat = s;
  flat.cluster.inter_node.oversubscription = 1;
  const topology::Cluster flat_cluster(flat.cluster);
  const auto flat_st = sim::simgrid_platform_stats(build(flat).graph, flat_cluster);
  CHECK(flat_st.plan_flows == st.plan_flows);
  CHECK(st.replayed_flows > flat_st.replayed_flows);
}

TEST_CASE("built step graphs replay in index order, as the stream scheduler replays them") {
  // The builder adds each stream's ops in the order the schedule runs them, so the analytic
  // engine's one-pass replay is taken, and gives the scheduler's times to the bit.
  const std::vector<std::vector<std::string>> layouts = {
      {},
      {"parallel.schedule=interleaved", "parallel.vpp=2"},
      {"parallel.cp=2", "parallel.pp=2", "training.recompute=full"},
      {"parallel.tp=1", "parallel.pp=1", "training.recompute=selective", "training.micro_batch=2"},
      {"parallel.pp=2", "parallel.distributed_optimizer=false", "parallel.overlap_grad_reduce=false"},
  };
  for (const auto& sets : layouts) {
    const auto built = build(scenario(sets));
    const auto ordered = sim::replay_in_index_order(built.graph);
    REQUIRE(ordered.has_value());
    const auto reference = sim::run_analytic_scheduled(built.graph);
    CHECK(ordered->makespan_s == reference.makespan_s);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < reference.ops.size(); ++i)
      if (ordered->ops[i].start_s != reference.ops[i].start_s || ordered->ops[i].end_s != reference.ops[i].end_s) ++differ;
    CHECK(differ == 0);
  }
}
