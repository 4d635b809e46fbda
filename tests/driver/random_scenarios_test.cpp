// Scenarios drawn at random over the fields that combine (layout, schedule, pipeline splits,
// recomputation, precision, sharding, CP variants, rank order, overlaps, software, cluster), each
// loaded and simulated: a combination is either refused with a ScenarioError naming a field, or
// simulated into a report whose figures hold together, the same twice (the second time as a sweep
// simulates it: copied passes kept as patterns, no communication rows).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "stepsim/driver/simulate.hpp"
#include "stepsim/report/step_report.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"

using namespace stepsim;

namespace {

// Draws from a fixed-seed std::mt19937_64 (its sequence is the standard's), without the
// implementation-defined distributions, so that every platform draws the same scenarios.
class Draw {
 public:
  explicit Draw(std::uint64_t seed) : rng_(seed) {}
  bool chance(int percent) { return static_cast<int>(rng_() % 100) < percent; }
  template <typename T>
  T pick(std::initializer_list<T> xs) {
    return *(xs.begin() + static_cast<std::ptrdiff_t>(rng_() % xs.size()));
  }
  std::string pick(std::initializer_list<const char*> xs) { return pick<const char*>(xs); }

 private:
  std::mt19937_64 rng_;
};

// One scenario's --set lines, on the default scenario. Layouts of at most 128 GPUs and at most
// 16 micro-batches per pipeline, so that a case takes milliseconds.
std::map<std::string, std::string> draw_scenario(Draw& d) {
  std::map<std::string, std::string> s;
  s["model"] = d.pick({"llama-3.1-8b", "llama-3.1-70b", "gpt3-175b", "llama-3.1-405b"});
  const std::string preset = d.pick({"dgx-a100", "abci-a", "dgx-h100", "tsubame4", "dgx-h200", "h200-nvl", "dgx-b200", "dgx-b300",
                                     "gb200-nvl72", "gb300-nvl72"});
  s["cluster.preset"] = preset;
  const bool rack = preset == "gb200-nvl72" || preset == "gb300-nvl72";
  if (rack) s["cluster.nvlink_domain_gpus"] = std::to_string(d.pick({4, 8}));
  const int per_node = rack || preset == "tsubame4" ? 4 : 8;
  int tp = 1, cp = 1, pp = 1, dp = 1;
  do {
    tp = d.pick({1, 2, 4, 8});
    cp = d.pick({1, 1, 2, 4});
    pp = d.pick({1, 2, 4, 8});
    dp = d.pick({1, 2, 4});
  } while ((tp * cp * pp * dp) % per_node != 0 && tp * cp * pp * dp > per_node);
  const int world = tp * cp * pp * dp;
  if (world < per_node) s["cluster.gpus_per_node"] = std::to_string(world);
  s["cluster.nodes"] = std::to_string(std::max(1, world / per_node));
  s["parallel.tp"] = std::to_string(tp);
  s["parallel.cp"] = std::to_string(cp);
  s["parallel.pp"] = std::to_string(pp);
  const std::string schedule = pp > 1 ? d.pick({"1f1b", "gpipe", "interleaved"}) : std::string("1f1b");
  s["parallel.schedule"] = schedule;
  if (schedule == "interleaved") s["parallel.vpp"] = std::to_string(d.pick({2, 3, 4, 8}));
  const int mb = d.pick({1, 1, 2, 4});
  s["training.micro_batch"] = std::to_string(mb);
  s["training.global_batch"] = std::to_string(mb * dp * d.pick({1, 2, 4, 8, 16}));
  s["training.seq_len"] = std::to_string(d.pick({1024, 2048, 4096, 8192, 16384}));
  const std::string recompute = d.pick({"none", "selective", "full"});
  s["training.recompute"] = recompute;
  if (recompute == "full" && d.chance(50)) {
    s["training.recompute_method"] = d.pick({"uniform", "block"});
    s["training.recompute_num_layers"] = std::to_string(d.pick({1, 2, 4}));
  }
  if (recompute == "selective" && d.chance(30))
    s["training.recompute_modules"] = d.pick({R"(["core_attn"])", R"(["mlp"])", R"(["layernorm"])", R"(["core_attn","mlp"])"});
  if (d.chance(30)) s["training.precision"] = d.pick({"bf16", "fp8-delayed", "fp8-current", "mxfp8"});
  if (s.count("training.precision") != 0 && s["training.precision"] != "bf16" && d.chance(30))
    s["training.fp8_params"] = d.pick({"true", "false"});
  if (d.chance(30)) s["training.grad_dtype"] = d.pick({"fp32", "bf16"});
  if (d.chance(20)) s["training.optimizer_offload_fraction"] = d.pick({"0", "0.5", "1"});
  if (d.chance(20)) s["training.attention"] = d.pick({"flash", "unfused"});
  if (d.chance(40)) s["parallel.sharding"] = d.pick({"none", "optimizer", "optimizer_grads", "optimizer_grads_params"});
  if (d.chance(20)) s["parallel.distributed_optimizer_instances"] = d.pick({"1", "2"});
  for (const char* flag : {"parallel.sequence_parallel", "parallel.overlap_grad_reduce", "parallel.overlap_param_gather",
                           "parallel.overlap_p2p_comm", "parallel.tp_comm_overlap", "software.cuda_graphs", "software.fused_cross_entropy",
                           "model.tied_embeddings", "cluster.ideal_network", "parallel.account_for_embedding_in_pipeline_split",
                           "parallel.account_for_loss_in_pipeline_split"})
    if (d.chance(20)) s[flag] = d.pick({"true", "false"});
  if (d.chance(30)) s["parallel.cp_comm_type"] = d.pick({"p2p", "all_gather", "a2a", "a2a+p2p"});
  if (d.chance(10)) s["parallel.hierarchical_cp_sizes"] = d.pick({"[2,2]", "[1,4]", "[2,1]"});
  if (d.chance(20)) s["parallel.microbatch_group_size"] = std::to_string(d.pick({1, 2, 4, 8}));
  if (d.chance(15)) s["parallel.first_stage_layers"] = std::to_string(d.pick({1, 2, 4, 7}));
  if (d.chance(15)) s["parallel.last_stage_layers"] = std::to_string(d.pick({1, 2, 4, 7}));
  if (d.chance(10)) s["parallel.pipeline_layout"] = d.pick({"E|t*4|t*4,L", "Et*2|t*2|L", "E|(t|)*6,L", "Et|tL"});
  if (d.chance(15)) s["parallel.rank_order"] = d.pick({"tp-cp-dp-pp", "tp-cp-pp-dp", "tp-dp-cp-pp", "pp-tp-cp-dp"});
  if (d.chance(20)) s["comm.algorithm"] = d.pick({"auto", "ring", "tree", "nvls"});
  if (d.chance(10)) s["cluster.inter_node.topology"] = d.pick({"rail-fat-tree", "fat-tree", "single-switch"});
  if (d.chance(10)) s["cluster.inter_node.oversubscription"] = d.pick({"1", "2", "4"});
  if (d.chance(10)) s["software"] = d.pick({"megatron-core-0.8", "nemo-24.09", "nemo-25.04", "megatron-lm-2021", "nemo-26.02"});
  if (d.chance(10)) s["memory.fragmentation_fraction"] = d.pick({"0", "0.05", "0.3"});
  return s;
}

std::string describe(const std::map<std::string, std::string>& sets) {
  std::string out;
  for (const auto& [k, v] : sets) out += " --set " + k + "=" + v;
  return out;
}

// What holds for every report: finite, positive step time and throughput; fractions in [0, 1];
// each stage busy at most the step; the peak over the stages' peaks; out of memory exactly when an
// OOM point is named, and within the GPU's memory otherwise.
void check_report(const report::StepReport& r, const std::string& what) {
  INFO(what);
  REQUIRE(std::isfinite(r.step_time_s));
  CHECK(r.step_time_s > 0);
  CHECK(r.tokens_per_s > 0);
  CHECK(r.mfu > 0);
  CHECK(r.mfu <= 1.0);
  CHECK(r.bubble_fraction >= 0);
  CHECK(r.bubble_fraction <= 1.0);
  CHECK(r.exposed_comm_fraction >= 0);
  CHECK(r.exposed_comm_fraction <= 1.0);
  CHECK(r.peak_memory_bytes > 0);
  CHECK(r.oom == r.oom_point.has_value());
  if (!r.oom) CHECK(r.peak_memory_bytes <= r.gpu_memory_bytes);
  if (r.oom_point) CHECK(r.oom_point->bytes_over > 0);
  for (const auto& st : r.stages) {
    CHECK(st.compute_s > 0);
    CHECK(st.compute_s + st.exposed_comm_s <= r.step_time_s * (1 + 1e-9));
    CHECK(st.idle_s >= 0);
    CHECK(st.peak_memory_bytes <= r.peak_memory_bytes);
    CHECK(st.peak_memory_time_s >= 0);
    CHECK(st.peak_memory_time_s <= r.step_time_s * (1 + 1e-9));
  }
}

}  // namespace

TEST_CASE("random scenarios: refused with a ScenarioError, or simulated into a coherent report, the same twice") {
  Draw d(20261205);
  int simulated = 0, refused = 0, simgrid = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto sets = draw_scenario(d);
    const std::string what = "case " + std::to_string(i) + ":" + describe(sets);
    std::vector<scenarios::Override> overrides;
    for (const auto& [k, v] : sets) overrides.push_back(scenarios::parse_override(k + "=" + v));
    driver::SimulateOptions o;
    o.engine = sim::EngineKind::Analytic;
    // Every ninth draw, when it loads, also on the SimGrid engine.
    const bool with_simgrid = i % 9 == 0;
    try {
      const auto s = scenarios::load_scenario_text(scenarios::default_scenario_text(), overrides, "<random>");
      const auto first = driver::simulate(s, o).report;
      check_report(first, what);
      // Again as a sweep simulates it (copied passes kept as patterns, no communication rows): the
      // same report but those rows.
      o.compact_graph = true;
      o.communication_rows = false;
      const auto again = driver::simulate(s, o).report;
      o.compact_graph = false;
      o.communication_rows = true;
      auto first_rows_off = first;
      first_rows_off.communication.clear();
      INFO(what);
      CHECK(report::report_json(s, again) == report::report_json(s, first_rows_off));
      if (with_simgrid) {
        o.engine = sim::EngineKind::SimGrid;
        check_report(driver::simulate(s, o).report, what + " (simgrid)");
        ++simgrid;
      }
      ++simulated;
    } catch (const ScenarioError& e) {
      // Refused in one line that names what is wrong.
      const std::string message = e.what();
      INFO(what << ": " << message);
      CHECK(message.find('\n') == std::string::npos);
      CHECK(!message.empty());
      ++refused;
    }
  }
  // The draws are meant to be mostly valid: a change that refuses far more of them (or all) is
  // seen here rather than passing on the refusals alone.
  MESSAGE(simulated << " simulated (" << simgrid << " also with simgrid), " << refused << " refused");
  CHECK(simulated >= 150);
  CHECK(simgrid >= 15);
}
