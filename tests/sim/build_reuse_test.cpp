// The builder's reuse of a layer group's compute work and of whole passes across micro-batches
// (BuildOptions::reuse_group_work, reuse_passes) against making them for every pass: the same graph, op by op and edge by edge,
// and the same replay, on layouts that split passes differently (interleaved, uneven and explicit
// pipeline layouts, per-layer granularity, buckets split per layer, CP, overlaps, recomputation).
// Copied passes kept as patterns (BuildOptions::compact_copies): the same ops (the copies unpriced)
// and the same replay.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/sim/build.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/topology/cluster.hpp"

using namespace stepsim;

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

// Op i of both graphs, field by field (not its edges).
// Op i of each graph (StepGraph::op_at: stored or copied) field by field.
void check_same_op(const sim::StepGraph& a, const sim::StepGraph& b, std::size_t i) {
  const auto x = a.op_at(static_cast<std::int32_t>(i));
  const auto y = b.op_at(static_cast<std::int32_t>(i));
  const auto flops = [](const sim::StepGraph& g, const sim::Op& o) {
    return o.kind == sim::OpKind::Compute && o.work >= 0 ? g.works[static_cast<std::size_t>(o.work)].flops : 0.0;
  };
  CAPTURE(i);
  CHECK(x.kind == y.kind);
  CHECK(x.phase == y.phase);
  CHECK(x.stream == y.stream);
  CHECK(x.collective == y.collective);
  CHECK(x.device == y.device);
  CHECK(x.peer_device == y.peer_device);
  CHECK(x.micro_batch == y.micro_batch);
  CHECK(x.chunk == y.chunk);
  CHECK(x.layer == y.layer);
  CHECK(x.work == y.work);
  CHECK(flops(a, x) == flops(b, y));
  CHECK(x.group == y.group);
  CHECK(x.message_bytes == y.message_bytes);
  CHECK(x.count == y.count);
  CHECK(x.duration_s == y.duration_s);
  CHECK(x.plan == y.plan);
  CHECK(x.alloc_bytes == y.alloc_bytes);
  CHECK(x.free_bytes == y.free_bytes);
  CHECK(x.label == y.label);
}

void check_same_graph(const sim::StepGraph& a, const sim::StepGraph& b) {
  REQUIRE(a.ops.size() == b.ops.size());
  REQUIRE(a.num_edges() == b.num_edges());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    check_same_op(a, b, i);
    const auto id = static_cast<std::int32_t>(i);
    CHECK(a.successors(id).to_vector() == b.successors(id).to_vector());
    CHECK(a.predecessors(id).to_vector() == b.predecessors(id).to_vector());
  }
  REQUIRE(a.works.size() == b.works.size());
  for (std::size_t w = 0; w < a.works.size(); ++w) {
    CHECK(a.works[w].terms == b.works[w].terms);
    CHECK(a.works[w].shares_sms == b.works[w].shares_sms);
    CHECK(a.works[w].flops == b.works[w].flops);
  }
  CHECK(a.kernel_lists.size() == b.kernel_lists.size());
  CHECK(a.groups.size() == b.groups.size());
  CHECK(a.plans.size() == b.plans.size());
}

// Layouts that split passes differently.
const std::vector<std::vector<std::string>>& cases() {
  static const std::vector<std::vector<std::string>> all{
      {},
      {"training.recompute=full"},
      {"training.recompute=selective", "parallel.schedule=interleaved", "parallel.vpp=2"},
      {"parallel.schedule=interleaved", "parallel.vpp=4", "training.global_batch=32"},
      {"parallel.schedule=interleaved", "parallel.vpp=2", "parallel.overlap_p2p_comm=false"},
      {"parallel.schedule=interleaved", "parallel.vpp=2", "parallel.first_stage_layers=6", "parallel.last_stage_layers=6"},
      {"parallel.schedule=interleaved", "parallel.vpp=null", "parallel.pipeline_layout=E|t*8|t*8|t*8|t*8|||L"},
      {"parallel.schedule=interleaved", "parallel.vpp=null", "parallel.pipeline_layout=E|t*4|t*4|t*4|(t*5|)*3,t*5L"},
      {"parallel.cp=2", "parallel.pp=2"},
      {"parallel.tp=1", "parallel.pp=2", "parallel.overlap_grad_reduce=true", "parallel.overlap_param_gather=true"},
      {"parallel.tp=1", "parallel.pp=2", "parallel.schedule=interleaved", "parallel.vpp=2", "parallel.overlap_grad_reduce=true",
       "parallel.overlap_param_gather=true"},
      {"parallel.schedule=gpipe"},
      {"parallel.tp_comm_overlap=true"},
      {"parallel.pp=1", "parallel.tp=2", "cluster.nodes=1", "cluster.gpus_per_node=2", "training.global_batch=4"},
      {"parallel.tp=1", "parallel.pp=2", "parallel.sharding=optimizer_grads"},
      {"parallel.tp=1", "parallel.pp=2", "parallel.sharding=optimizer_grads_params", "parallel.overlap_param_gather=true"},
      {"parallel.tp=1", "parallel.pp=2", "parallel.sharding=optimizer_grads_params", "parallel.overlap_param_gather=false"},
      {"parallel.cp=2", "parallel.pp=2", "parallel.schedule=interleaved", "parallel.vpp=2", "parallel.overlap_grad_reduce=true"},
      {"parallel.sharding=none", "parallel.overlap_grad_reduce=true"},
  };
  return all;
}

void check_same_trace(const sim::Trace& ta, const sim::Trace& tb) {
  CHECK(ta.makespan_s == tb.makespan_s);
  REQUIRE(ta.ops.size() == tb.ops.size());
  for (std::size_t i = 0; i < ta.ops.size(); ++i) {
    CAPTURE(i);
    CHECK(ta.ops[i].start_s == tb.ops[i].start_s);
    CHECK(ta.ops[i].end_s == tb.ops[i].end_s);
  }
}

}  // namespace

// `f(scenario, cluster, compute model, build options)` for each case, at chunk and at layer granularity.
template <typename F>
void for_each_case(F&& f) {
  for (const bool per_layer : {false, true}) {
    for (const auto& sets : cases()) {
      CAPTURE(per_layer);
      CAPTURE(sets.empty() ? std::string("default") : sets.back());
      const auto s = scenario(sets);
      const topology::Cluster cluster(s.cluster);
      const costmodel::ComputeModel cm(s.cluster.gpu, s.software);
      sim::BuildOptions o;
      o.per_layer = per_layer;
      o.comm = s.comm;
      f(s, cluster, cm, o);
    }
  }
}

TEST_CASE("reused layer-group work and passes: the graph and the replay of making them for every pass") {
  for_each_case([](const scenarios::Scenario& s, const topology::Cluster& cluster, const costmodel::ComputeModel& cm, sim::BuildOptions o) {
    const auto reused = sim::build_step(s, cluster, cm, o);
    o.reuse_group_work = false;
    o.reuse_passes = false;
    const auto made = sim::build_step(s, cluster, cm, o);
    check_same_graph(reused.graph, made.graph);
    CHECK(reused.work.hardware_flops_per_gpu == made.work.hardware_flops_per_gpu);
    check_same_trace(sim::run_analytic(reused.graph), sim::run_analytic(made.graph));
  });
}

TEST_CASE("copied passes noted, not stored: the same ops, the same one-pass replay, no edge queries") {
  std::size_t replayed = 0;
  for_each_case([&](const scenarios::Scenario& s, const topology::Cluster& cluster, const costmodel::ComputeModel& cm, sim::BuildOptions o) {
    const auto listed = sim::build_step(s, cluster, cm, o);
    o.compact_copies = true;
    const auto compact = sim::build_step(s, cluster, cm, o);
    CHECK_FALSE(compact.graph.copied_passes().empty());
    REQUIRE(compact.graph.op_count() == listed.graph.ops.size());
    // Only the ops outside copied passes stored; a copied op reads as the op it copies (priced as
    // it), of its micro-batch: the graph's op with its edges.
    std::size_t copied = 0;
    for (const auto& c : compact.graph.copied_passes()) {
      copied += static_cast<std::size_t>(c.count);
      for (std::int32_t k = 0; k < c.count; ++k) CHECK(compact.graph.position(c.base + k) == -1);
    }
    CHECK(compact.graph.ops.size() + copied == listed.graph.ops.size());
    for (std::size_t i = 0; i < listed.graph.ops.size(); ++i) {
      check_same_op(compact.graph, listed.graph, i);
      CHECK(compact.graph.op_at(static_cast<std::int32_t>(i)).cost_of == listed.graph.ops[i].cost_of);
    }
    CHECK(compact.work.hardware_flops_per_gpu == listed.work.hardware_flops_per_gpu);
    // Each op's predecessors, listed or from its copied pass's pattern: those of the graph with
    // its edges, in the same order.
    std::vector<std::vector<std::int32_t>> preds(compact.graph.op_count());
    for (std::size_t i = 0; i < preds.size(); ++i) preds[i] = compact.graph.listed_predecessors(static_cast<std::int32_t>(i)).to_vector();
    for (const auto& c : compact.graph.copied_passes()) {
      const auto& p = compact.graph.pass_pattern(c.pattern);
      for (std::int32_t k = 0; k < c.count; ++k)
        for (auto e = p.first[static_cast<std::size_t>(k)]; e < p.first[static_cast<std::size_t>(k) + 1]; ++e) {
          const std::int32_t ref = p.refs[static_cast<std::size_t>(e)];
          preds[static_cast<std::size_t>(c.base + k)].push_back(ref >= 0 ? c.base + ref : c.outside[static_cast<std::size_t>(-1 - ref)]);
        }
    }
    for (std::size_t i = 0; i < preds.size(); ++i) {
      CAPTURE(i);
      CHECK(preds[i] == listed.graph.predecessors(static_cast<std::int32_t>(i)).to_vector());
    }
    CHECK_FALSE(compact.graph.listed_edges_into_copies());
    compact.graph.validate_edges_and_plans();
    // Declined on both (then the driver builds the graph with its edges) or the same times.
    const auto tc = sim::replay_in_index_order(compact.graph);
    const auto tl = sim::replay_in_index_order(listed.graph);
    REQUIRE(tc.has_value() == tl.has_value());
    if (tc) check_same_trace(*tc, *tl);
    replayed += tc ? 1U : 0U;
    CHECK_THROWS_AS((void)compact.graph.successors(0), InternalError);
    CHECK_THROWS_AS((void)compact.graph.predecessors(0), InternalError);
    CHECK_THROWS_AS((void)compact.graph.num_edges(), InternalError);
    CHECK_THROWS_AS((void)compact.graph.find_cycle(), InternalError);
  });
  // All but the two ZeRO-3 layouts without prefetching (declined on both graphs).
  CHECK(replayed == 2 * cases().size() - 2);
}
