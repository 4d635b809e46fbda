// The process-wide cache of priced communication plans (cost.cpp) against pricing every plan anew:
// the same durations and the same plans, op by op, on several scenarios and settings; the plans
// folded from one collective; the group ranks shared by graphs.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/costmodel/compute.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/sim/build.hpp"
#include "stepsim/sim/cost.hpp"

using namespace stepsim;

namespace {

scenarios::Scenario scenario(const std::string& base, const std::vector<std::string>& sets) {
  std::vector<scenarios::Override> ov;
  for (const auto& s : sets) ov.push_back(scenarios::parse_override(s));
  return scenarios::load_scenario_text(base, ov);
}

void check_same(const sim::StepGraph& a, const sim::StepGraph& b) {
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].duration_s == b.ops[i].duration_s);
    CHECK(a.ops[i].plan == b.ops[i].plan);
  }
  REQUIRE(a.plans.size() == b.plans.size());
  for (std::size_t p = 0; p < a.plans.size(); ++p) {
    const auto& x = a.plans[p];
    const auto& y = b.plans[p];
    CHECK(x.setup_s == y.setup_s);
    CHECK(x.algorithm == y.algorithm);
    CHECK(x.protocol == y.protocol);
    REQUIRE(x.rounds.size() == y.rounds.size());
    for (std::size_t r = 0; r < x.rounds.size(); ++r) {
      CHECK(x.rounds[r].repeat == y.rounds[r].repeat);
      REQUIRE(x.rounds[r].flows.size() == y.rounds[r].flows.size());
      for (std::size_t f = 0; f < x.rounds[r].flows.size(); ++f) {
        CHECK(x.rounds[r].flows[f].src_gpu == y.rounds[r].flows[f].src_gpu);
        CHECK(x.rounds[r].flows[f].dst_gpu == y.rounds[r].flows[f].dst_gpu);
        CHECK(x.rounds[r].flows[f].bytes == y.rounds[r].flows[f].bytes);
      }
    }
  }
}

}  // namespace

TEST_CASE("cached plans: the durations and plans of pricing every plan anew, on one cluster and settings after another") {
  const std::string base = scenarios::default_scenario_text();  // Llama-3.1-70B, 16 DGX H100, TP8 PP4 DP4
  // Layouts, schedules and sizes on one cluster (the cache's entries are reused across them), then
  // other settings and another cluster of the same size (entries that must not be reused).
  const std::vector<std::vector<std::string>> cases{
      {},
      {"training.micro_batch=2"},
      {"parallel.tp=4", "parallel.pp=8"},
      {"parallel.schedule=interleaved", "parallel.vpp=2"},
      {"parallel.tp=2", "parallel.cp=2", "parallel.pp=2"},
      {"parallel.tp=8", "parallel.pp=1", "parallel.distributed_optimizer=false"},
      {"comm.network_efficiency=0.5"},
      {"comm.collective_setup_us=40"},
      {"cluster.preset=dgx-a100"},
      {"cluster.inter_node.oversubscription=2"},
  };
  sim::BuildOptions o;
  for (const auto& sets : cases) {
    CAPTURE(sets.size() > 0 ? sets.front() : std::string("default"));
    const auto s = scenario(base, sets);
    const topology::Cluster cluster(s.cluster);
    const costmodel::ComputeModel cm(s.cluster.gpu, s.software);
    o.comm = s.comm;
    sim::set_plan_cache_enabled(false);
    const auto fresh = sim::build_step(s, cluster, cm, o);
    sim::set_plan_cache_enabled(true);
    const auto first = sim::build_step(s, cluster, cm, o);
    const auto hits_before = sim::plan_cache_stats().hits;
    const auto again = sim::build_step(s, cluster, cm, o);
    CHECK(sim::plan_cache_stats().hits > hits_before);  // the second step's plans all come from the cache
    check_same(fresh.graph, first.graph);
    check_same(fresh.graph, again.graph);
    // The flow range stored with each priced plan is that of its flows.
    for (const auto* g : {&fresh.graph, &again.graph})
      for (std::size_t p = 0; p < g->plans.size(); ++p) {
        const sim::FlowRange* stored = g->plans.range(p);
        REQUIRE(stored != nullptr);
        const auto r = sim::flow_range(g->plans.unfolded(p));
        CHECK(stored->min_bytes == r.min_bytes);
        CHECK(stored->max_bytes == r.max_bytes);
        CHECK(stored->min_repeat == r.min_repeat);
      }
  }
  // Entries of the last case stay; a cluster built again from the same spec is another object,
  // priced anew (misses), with the same results.
  const auto s = scenario(base, {});
  const topology::Cluster one(s.cluster);
  const topology::Cluster two(s.cluster);
  const costmodel::ComputeModel cm(s.cluster.gpu, s.software);
  o.comm = s.comm;
  const auto a = sim::build_step(s, one, cm, o);
  const auto misses = sim::plan_cache_stats().misses;
  const auto b = sim::build_step(s, two, cm, o);
  CHECK(sim::plan_cache_stats().misses > misses);
  check_same(a.graph, b.graph);
}

TEST_CASE("cached routes and ring shapes: collectives of one group in other sizes reuse its flows' routes, with the results of pricing anew") {
  // One cluster object; micro-batch sizes change the bytes of the TP, CP and PP collectives but
  // not their groups, so the misses of later steps find the routes of earlier ones. An
  // oversubscribed fabric makes the shares of contended links differ from the bottlenecks.
  const std::string base = scenarios::default_scenario_text();
  const std::vector<std::string> layout{"parallel.tp=2", "parallel.cp=2", "parallel.pp=2", "cluster.inter_node.oversubscription=2"};
  const auto first = scenario(base, layout);
  const topology::Cluster cluster(first.cluster);
  const costmodel::ComputeModel cm(first.cluster.gpu, first.software);
  sim::BuildOptions o;
  o.comm = first.comm;
  std::vector<scenarios::Scenario> sizes;
  for (const char* mb : {"training.micro_batch=1", "training.micro_batch=2", "training.micro_batch=4"}) {
    auto sets = layout;
    sets.emplace_back(mb);
    sizes.push_back(scenario(base, sets));
  }
  sim::set_plan_cache_enabled(true);
  std::vector<sim::BuiltStep> cached;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto before = sim::plan_cache_stats();
    cached.push_back(sim::build_step(sizes[i], cluster, cm, o));
    const auto after = sim::plan_cache_stats();
    if (i > 0) {
      CHECK(after.misses > before.misses);                // new sizes: priced
      CHECK(after.routes_reused > before.routes_reused);  // on routes found before
      // Rings from the shape of an earlier size: more rings priced from a shape than shapes noted.
      CHECK(after.ring_shapes_used - before.ring_shapes_used > after.rings_noted - before.rings_noted);
    }
  }
  sim::set_plan_cache_enabled(false);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    CAPTURE(i);
    const auto fresh = sim::build_step(sizes[i], cluster, cm, o);
    check_same(fresh.graph, cached[i].graph);
    // Every single collective's duration is its plan's contended time, priced from the topology.
    for (const auto& op : cached[i].graph.ops) {
      if (op.plan < 0 || op.count != 1.0) continue;
      CHECK(op.duration_s == costmodel::contended_time_s(cluster, cached[i].graph.plans[static_cast<std::size_t>(op.plan)]));
    }
  }
  sim::set_plan_cache_enabled(true);
}

TEST_CASE("folded plans: count x the bytes per flow, and the setup that makes the isolated time count x one collective's") {
  const std::string base = scenarios::default_scenario_text();
  // Plans over NVLink and the network, with counts above 1 (the TP units of a layer group, the CP ring steps).
  for (const auto& sets : std::vector<std::vector<std::string>>{{}, {"parallel.tp=2", "parallel.cp=2", "parallel.pp=2"},
                                                                {"cluster.inter_node.oversubscription=2"}}) {
    const auto s = scenario(base, sets);
    const topology::Cluster cluster(s.cluster);
    const costmodel::ComputeModel cm(s.cluster.gpu, s.software);
    sim::BuildOptions o;
    o.comm = s.comm;
    const auto step = sim::build_step(s, cluster, cm, o);
    const auto& plans = step.graph.plans;
    int folded_plans = 0;
    for (const auto& op : step.graph.ops) {
      if (op.plan < 0) continue;
      const auto p = static_cast<std::size_t>(op.plan);
      const double count = plans.count(p);
      CHECK(count == op.count);
      const auto& one = plans.unfolded(p);
      const auto& folded = plans[p];
      REQUIRE(folded.rounds.size() == one.rounds.size());
      for (std::size_t r = 0; r < one.rounds.size(); ++r) {
        REQUIRE(folded.rounds[r].flows.size() == one.rounds[r].flows.size());
        for (std::size_t f = 0; f < one.rounds[r].flows.size(); ++f)
          CHECK(folded.rounds[r].flows[f].bytes == one.rounds[r].flows[f].bytes * count);
      }
      // The definition of the setup, with the flows of the folded plan priced directly.
      const double one_s = costmodel::isolated_time_s(cluster, one);
      costmodel::CommPlan bare = folded;
      bare.setup_s = 0;
      if (count != 1.0) {
        ++folded_plans;
        CHECK(folded.setup_s == std::max(0.0, count * one_s - costmodel::isolated_time_s(cluster, bare)));
      }
      CHECK(costmodel::isolated_time_s(cluster, folded) == doctest::Approx(count * one_s).epsilon(1e-12));
      CHECK(plans.setup_s(p) == folded.setup_s);
    }
    CHECK(folded_plans > 0);
  }
}

TEST_CASE("group ranks: the graphs of one layout on one cluster share them") {
  const auto s = scenario(scenarios::default_scenario_text(), {"cluster.inter_node.oversubscription=2"});
  const topology::Cluster cluster(s.cluster);
  const auto a = sim::build_step_graph(s, cluster);
  const auto b = sim::build_step_graph(s, cluster);
  REQUIRE(a.graph.groups.size() == b.graph.groups.size());
  int shared = 0;
  for (std::size_t i = 0; i < a.graph.groups.size(); ++i) {
    CHECK(a.graph.groups[i].instances == b.graph.groups[i].instances);
    if (!a.graph.groups[i].instances.empty()) {
      CHECK(&a.graph.groups[i].instances.get() == &b.graph.groups[i].instances.get());
      ++shared;
    }
  }
  CHECK(shared > 0);
}
