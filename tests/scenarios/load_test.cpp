#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>

#include "../common/scratch.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/layout.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/scenarios/params.hpp"

using namespace stepsim;
using scenarios::Override;

namespace {

const char* kBase = R"({
  "name": "llama31-8b-tsubame",
  "model": "llama-3.1-8b",
  "cluster": { "gpu": "h100-sxm-94gb", "gpus_per_node": 4, "nodes": 1 },
  "training": { "seq_len": 8192, "global_batch": 1024, "micro_batch": 1, "recompute": "none" },
  "parallel": { "tp": 2, "cp": 1, "pp": 1, "dp": 2, "vpp": 1, "schedule": "1f1b",
                "sequence_parallel": true, "distributed_optimizer": true }
})";

// Loads kBase with overrides and returns the error (path and message) it raises.
std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    std::vector<Override> ov;
    for (const auto& s : sets) ov.push_back(scenarios::parse_override(s));
    (void)scenarios::load_scenario_text(text, ov, "scenario.json");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "<no error>";
}

std::string err(const std::vector<std::string>& sets) { return error_of(kBase, sets); }

}  // namespace

TEST_CASE("the issue's example scenario loads with presets resolved and SI units") {
  const auto s = scenarios::load_scenario_text(kBase);
  CHECK(s.name == "llama31-8b-tsubame");
  CHECK(s.model.layers == 32);
  CHECK(s.model.hidden == 4096);
  CHECK(s.model.kv_heads == 8);
  CHECK(s.model.vocab == 128256);
  CHECK(s.cluster.gpu.memory_bytes == 94.0 * 1024 * 1024 * 1024);
  CHECK(s.cluster.gpu.peak_bf16_flops == 989e12);
  CHECK(s.parallel.dp == 2);
  CHECK(s.micro_batches() == 512);
  CHECK(s.cluster.intra_node.bw_Bps == 450e9);
  CHECK(s.cluster.inter_node.nic_Bps == 50e9);
}

TEST_CASE("dp is derived from the world size when omitted") {
  const auto s = scenarios::load_scenario_text(kBase, {{"parallel.dp", "null"}, {"cluster.nodes", "4"}});
  CHECK(s.parallel.dp == 8);
  std::string text = kBase;
  text.replace(text.find("\"dp\": 2, "), 9, "");
  const auto d = scenarios::load_scenario_text(text, {scenarios::parse_override("cluster.nodes=4")});
  CHECK(d.parallel.dp == 8);
}

TEST_CASE("--set overrides use the same validation, and reach into presets") {
  const auto s = scenarios::load_scenario_text(kBase, {scenarios::parse_override("parallel.tp=4"),
                                                       scenarios::parse_override("parallel.dp=1"),
                                                       scenarios::parse_override("training.micro_batch=2"),
                                                       scenarios::parse_override("model.layers=16")});
  CHECK(s.parallel.tp == 4);
  CHECK(s.training.micro_batch == 2);
  CHECK(s.model.layers == 16);
  CHECK(s.model.hidden == 4096);
  CHECK(err({"parallel.tp=3"}).find("parallel.tp") == 0);
  CHECK(err({"nonsense"}).find("--set") == 0);
}

TEST_CASE("cluster presets: {\"preset\": \"dgx-h100\", \"nodes\": 16}") {
  const auto s = scenarios::load_scenario_text(
      R"({"model": "llama-3.1-70b", "cluster": {"preset": "dgx-h100", "nodes": 16},
          "training": {"seq_len": 8192, "global_batch": 1024}, "parallel": {"tp": 8, "pp": 4}})");
  CHECK(s.world_size() == 128);
  CHECK(s.cluster.gpus_per_node == 8);
  CHECK(s.cluster.gpu.name == "h100-sxm-80gb");
  CHECK(s.cluster.inter_node.nics_per_node == 8);
  CHECK(s.parallel.dp == 4);
  for (const auto& name : scenarios::cluster_preset_names()) {
    CAPTURE(name);
    CHECK_NOTHROW(scenarios::load_scenario_text(
        R"({"model": "llama-3.1-8b", "cluster": {"preset": ")" + name + R"(", "nodes": 2},
            "training": {"seq_len": 4096, "global_batch": 64}})"));
  }
}

TEST_CASE("uneven pipelines: first and last stage layers, the rest shared evenly") {
  auto ov = [](std::vector<std::string> v) {
    std::vector<Override> out;
    for (const auto& x : v) out.push_back(scenarios::parse_override(x));
    return out;
  };
  // Llama-3.1-8B: 32 layers over 4 stages, 6 on the first and the last, 10 on each of the two others.
  const auto s = scenarios::load_scenario_text(kBase, ov({"parallel.tp=1", "parallel.pp=4", "parallel.dp=1",
                                                          "parallel.first_stage_layers=6", "parallel.last_stage_layers=6"}));
  const auto l = scenarios::pipeline_layout(s);
  CHECK(l.stage_layers(0) == 6);
  CHECK(l.stage_layers(1) == 10);
  CHECK(l.stage_layers(2) == 10);
  CHECK(l.stage_layers(3) == 6);
  const auto f = scenarios::load_scenario_text(kBase, ov({"parallel.tp=1", "parallel.pp=4", "parallel.dp=1",
                                                          "parallel.first_stage_layers=8"}));
  CHECK(scenarios::pipeline_layout(f).stage_layers(0) == 8);
  CHECK(scenarios::pipeline_layout(f).stage_layers(3) == 8);
  const auto even = scenarios::load_scenario_text(kBase, ov({"parallel.tp=1", "parallel.pp=4", "parallel.dp=1"}));
  for (int i = 0; i < 4; ++i) CHECK(scenarios::pipeline_layout(even).stage_layers(i) == 8);
}

namespace {

std::vector<Override> overrides(const std::vector<std::string>& v) {
  std::vector<Override> out;
  for (const auto& x : v) out.push_back(scenarios::parse_override(x));
  return out;
}

// Layers of every virtual stage (chunk j of stage i at j p + i).
std::vector<std::int64_t> virtual_stage_layers(const scenarios::PipelineLayout& l) {
  std::vector<std::int64_t> out;
  for (std::int64_t k = 0; k < l.virtual_stages(); ++k) out.push_back(l.layers(l.at(k).stage, l.at(k).chunk));
  return out;
}

}  // namespace

TEST_CASE("uneven stages with interleaving: each stage's layers split evenly over its chunks, as Megatron's offsets") {
  // 32 layers, p = 4, v = 2, 6 on the first and last stage: 10 on the others, chunks of 3, 5, 5, 3.
  const auto s = scenarios::load_scenario_text(kBase, overrides({"parallel.tp=1", "parallel.pp=4", "parallel.dp=1",
                                                                 "parallel.schedule=interleaved", "parallel.vpp=2",
                                                                 "parallel.first_stage_layers=6", "parallel.last_stage_layers=6"}));
  const auto l = scenarios::pipeline_layout(s);
  CHECK(virtual_stage_layers(l) == std::vector<std::int64_t>{3, 5, 5, 3, 3, 5, 5, 3});
  // Megatron's get_transformer_layer_offset: vp_stage x (3 + 20/2 + 3) + 3 + (pp_rank - 1) x 10/2.
  CHECK(l.first_layer(1, 1) == 16 + 3);
  CHECK(l.first_layer(2, 1) == 16 + 3 + 5);
  CHECK(l.first_layer(0, 1) == 16);
  CHECK(l.stage_layers(0) == 6);
}

TEST_CASE("embedding and loss counted in the split: the first and the last chunk hold one layer less") {
  // 30 layers + embedding + loss = 32 = 4 stages x 2 chunks x 4.
  const auto s = scenarios::load_scenario_text(kBase, overrides({"model.layers=30", "parallel.tp=1", "parallel.pp=4", "parallel.dp=1",
                                                                 "parallel.schedule=interleaved", "parallel.vpp=2",
                                                                 "parallel.account_for_embedding_in_pipeline_split=true",
                                                                 "parallel.account_for_loss_in_pipeline_split=true"}));
  const auto l = scenarios::pipeline_layout(s);
  CHECK(virtual_stage_layers(l) == std::vector<std::int64_t>{3, 4, 4, 4, 4, 4, 4, 3});
  CHECK(l.first_layer(0, 1) == 15);
  CHECK(l.stage_layers(0) == 7);
  CHECK(l.stage_layers(3) == 7);
  // Only the loss counted: 33 layers + 1 = 34 does not split over 4 stages; 31 + 1 = 32 does.
  const auto loss = scenarios::load_scenario_text(kBase, overrides({"model.layers=31", "parallel.tp=1", "parallel.pp=4", "parallel.dp=1",
                                                                    "parallel.account_for_loss_in_pipeline_split=true"}));
  CHECK(virtual_stage_layers(scenarios::pipeline_layout(loss)) == std::vector<std::int64_t>{8, 8, 8, 7});
}

TEST_CASE("pipeline_layout in Megatron's notation: virtual stages in model order, vpp and interleaving derived") {
  const auto s = scenarios::load_scenario_text(
      kBase, overrides({"parallel.tp=1", "parallel.pp=2", "parallel.dp=2", "parallel.vpp=null", "parallel.schedule=null",
                        "parallel.pipeline_layout=E|t*16|(t*8,)*2|L"}));
  CHECK(s.parallel.vpp == 2);
  CHECK(s.parallel.schedule == scenarios::Schedule::Interleaved);
  const auto l = scenarios::pipeline_layout(s);
  // virtual stage 0 (stage 0 chunk 0): E; 1 (stage 1 chunk 0): 16; 2 (stage 0 chunk 1): 16; 3: L.
  CHECK(virtual_stage_layers(l) == std::vector<std::int64_t>{0, 16, 16, 0});
  CHECK(l.first_layer(0, 1) == 16);
  CHECK(l.stage_layers(0) == 16);
  CHECK(l.stage_layers(1) == 16);
  // Repeats of groups, commas, and one chunk per stage.
  CHECK(scenarios::parse_pipeline_layout("Et*3|(tt|)*2,t,L") == std::vector<std::string>{"Ettt", "tt", "tt", "tL"});
  CHECK(scenarios::parse_pipeline_layout("E((t|)*2)*2,L") == std::vector<std::string>{"Et", "t", "t", "t", "L"});
  const auto one = scenarios::load_scenario_text(kBase, overrides({"parallel.tp=1", "parallel.pp=2", "parallel.dp=2", "parallel.vpp=null",
                                                                   "parallel.pipeline_layout=Et*15|t*17L"}));
  CHECK(one.parallel.vpp == 1);
  CHECK(one.parallel.schedule == scenarios::Schedule::OneFOneB);
  CHECK(virtual_stage_layers(scenarios::pipeline_layout(one)) == std::vector<std::int64_t>{15, 17});
}

TEST_CASE("pipeline_layout errors name the field and say what is wrong with the notation") {
  const std::pair<const char*, const char*> cases[] = {
      {"Et*16|t*1xL", "unknown symbol 'x' at position 10"},
      {"Et*16|t*16m|L", "multi-token prediction"},
      {"(Et*16|t*16L", "is not closed"},
      {"Et*|t*16L", "needs a count"},
      {"Et*16|t*16|L", "3 virtual stages (separated by '|') are not a multiple of pp=2"},
      {"Et*16|t*15L", "holds 31 transformer layers, the model has 32"},
      {"t*16E|t*16L", "E must open the first stage"},
      {"Et*16|t*16", "exactly one E and one L"},
      {"E(((((((((((((((((((((((((((((((((t)))))))))))))))))))))))))))))))))t*30|t*L", "nested deeper than 32"},
      {"E(t*2)*1000000|t*16L", "expands to more than 1048576 symbols"},
  };
  for (const auto& [layout, reason] : cases) {
    const std::string msg = err({"parallel.tp=1", "parallel.pp=2", "parallel.dp=2", std::string("parallel.pipeline_layout=") + layout});
    CAPTURE(msg);
    CHECK(msg.rfind("parallel.pipeline_layout: ", 0) == 0);
    CHECK(msg.find(reason) != std::string::npos);
  }
}

TEST_CASE("overlap_param_gather follows the distributed optimizer and overlap_grad_reduce when unset") {
  auto load = [](std::vector<std::string> sets) {
    std::vector<Override> ov;
    for (const auto& x : sets) ov.push_back(scenarios::parse_override(x));
    return scenarios::load_scenario_text(kBase, ov);
  };
  CHECK(load({}).parallel.overlap_param_gather);
  CHECK_FALSE(load({"parallel.overlap_grad_reduce=false"}).parallel.overlap_param_gather);
  CHECK_FALSE(load({"parallel.distributed_optimizer=false"}).parallel.overlap_param_gather);
  CHECK_FALSE(load({"parallel.overlap_param_gather=false"}).parallel.overlap_param_gather);
}

TEST_CASE("sharding, its distributed_optimizer alias, and the recomputation and offload fields") {
  auto load = [](std::vector<std::string> sets) {
    std::vector<Override> ov;
    for (const auto& x : sets) ov.push_back(scenarios::parse_override(x));
    return scenarios::load_scenario_text(kBase, ov);
  };
  using scenarios::Sharding;
  CHECK(load({}).parallel.sharding == Sharding::Optimizer);
  CHECK(load({"parallel.distributed_optimizer=true"}).parallel.sharding == Sharding::Optimizer);
  CHECK(load({"parallel.distributed_optimizer=false"}).parallel.sharding == Sharding::None);
  CHECK(load({"parallel.sharding=optimizer_grads", "parallel.distributed_optimizer=true"}).parallel.sharding == Sharding::OptimizerGrads);
  const auto z3 = load({"parallel.sharding=optimizer_grads_params"}).parallel;
  CHECK(z3.shards_optimizer());
  CHECK(z3.shards_grads());
  CHECK(z3.shards_params());
  CHECK(z3.overlap_param_gather);
  const auto z2 = load({"parallel.sharding=optimizer_grads"}).parallel;
  CHECK(z2.shards_grads());
  CHECK_FALSE(z2.shards_params());

  const auto full = load({"training.recompute=full", "training.recompute_method=block", "training.recompute_num_layers=3"}).training;
  CHECK(full.recompute_method == scenarios::RecomputeMethod::Block);
  CHECK(full.recompute_num_layers == 3);
  CHECK(load({"training.recompute=full"}).training.recompute_method == scenarios::RecomputeMethod::Uniform);
  CHECK(load({"training.recompute=full"}).training.recompute_num_layers == 1);
  const auto sel = load({"training.recompute=selective", R"(training.recompute_modules=["mlp", "layernorm"])"}).training;
  CHECK(sel.recompute_modules == scenarios::RecomputeModules{false, true, true});
  CHECK(load({"training.recompute=selective"}).training.recompute_modules == scenarios::RecomputeModules{true, false, false});
  CHECK(load({"training.optimizer_offload_fraction=0.25"}).training.optimizer_offload_fraction == 0.25);
  CHECK(load({"training.grad_dtype=bf16"}).training.grads_in_fp32 == false);
  CHECK(load({}).parallel.cp_comm_type == scenarios::CpCommType::P2P);
  CHECK(load({"parallel.cp_comm_type=all_gather"}).parallel.cp_comm_type == scenarios::CpCommType::AllGather);
  CHECK(load({"parallel.cp=2", "parallel.dp=1", "parallel.cp_comm_type=a2a"}).parallel.cp_comm_type == scenarios::CpCommType::A2A);
  const auto hier = load({"parallel.tp=1", "parallel.cp=4", "parallel.dp=1", "parallel.cp_comm_type=a2a+p2p", "parallel.hierarchical_cp_sizes=[2, 2]"}).parallel;
  CHECK(hier.cp_a2a_size() == 2);
  CHECK(hier.cp_ring_size() == 2);
  // Given with another type (as Megatron allows), the sizes are checked and unused.
  CHECK(load({"parallel.cp=2", "parallel.dp=1", "parallel.hierarchical_cp_sizes=[2, 1]"}).parallel.cp_a2a_size() == 1);
  const auto ring = load({}).parallel;
  CHECK(ring.cp_a2a_size() == 1);
  CHECK(ring.cp_ring_size() == ring.cp);
}

TEST_CASE("every model and GPU preset loads") {
  CHECK(scenarios::model_preset_names().size() == 7);
  CHECK(scenarios::gpu_preset_names().size() == 10);
  CHECK(scenarios::gpu_preset("gb300-288gb").peak_fp8_flops == doctest::Approx(5000e12));
  for (const auto& n : scenarios::model_preset_names()) CHECK_NOTHROW(scenarios::model_preset(n));
  for (const auto& n : scenarios::gpu_preset_names()) CHECK(scenarios::gpu_preset(n).peak_bf16_flops > 0);
  CHECK(scenarios::model_preset("llama-3.1-405b").layers == 126);
  CHECK(scenarios::model_preset("gpt3-175b").tied_embeddings);
}

TEST_CASE("GPU matmul ceilings: the published MAMF where measured, the derived ones by their formulas") {
  const auto mamf_tflops = [](const char* gpu) { return scenarios::gpu_preset(gpu).matmul_bf16_flops / 1e12; };
  // Measured (ml-engineering's MAMF table, BF16).
  CHECK(mamf_tflops("a100-sxm-80gb") == doctest::Approx(271.2));
  CHECK(mamf_tflops("h100-sxm-80gb") == doctest::Approx(794.5));
  CHECK(mamf_tflops("h200-sxm-141gb") == doctest::Approx(794.5));
  CHECK(mamf_tflops("b200-180gb") == doctest::Approx(1745.0));
  CHECK(mamf_tflops("gb200-186gb") == doctest::Approx(1822.0));
  CHECK(mamf_tflops("b300-288gb") == doctest::Approx(1769.0));
  // H200 NVL: H200 SXM's share of the peak at the NVL's dense peak, 835.5 x 794.5 / 989 = 671.19.
  CHECK(mamf_tflops("h200-nvl-141gb") == doctest::Approx(835.5 * 794.5 / 989.0).epsilon(1e-4));
  // GB300: B300's figure times GB200's over B200's, 1769.0 x 1822.0 / 1745.0 = 1847.06.
  CHECK(mamf_tflops("gb300-288gb") == doctest::Approx(1769.0 * 1822.0 / 1745.0).epsilon(1e-4));
  // No FP8 figure in the presets: the FP8 ceiling carries the BF16 share of the peak (GB200:
  // 5000 x 1822.0 / 2500 = 3644; H100: 1979 x 794.5 / 989 = 1589.8).
  CHECK(scenarios::gpu_preset("gb200-186gb").matmul_fp8_flops / 1e12 == doctest::Approx(3644.0));
  CHECK(scenarios::gpu_preset("h100-sxm-80gb").matmul_fp8_flops / 1e12 == doctest::Approx(1979.0 * 794.5 / 989.0));
}

TEST_CASE("the built-in default scenario loads") {
  const auto s = scenarios::load_scenario_text(scenarios::default_scenario_text());
  CHECK(s.model.name == "llama-3.1-70b");
  CHECK(s.world_size() == 128);
}

// The bad-input table: each case names the JSON path and the reason.
TEST_CASE("bad input: one clear error naming the field") {
  struct Case {
    std::string text;                 // whole document, or empty for kBase
    std::vector<std::string> sets;
    std::string expect_prefix;        // path at the start of the message
    std::string expect_reason;        // a word of the reason
  };
  const Case cases[] = {
      {"{\"model\": ", {}, "scenario.json", "malformed JSON"},
      {"[1, 2]", {}, "scenario.json", "object"},
      {"", {"parallel.foo=1"}, "parallel.foo", "unknown key"},
      {"", {"colour=1"}, "colour", "unknown key"},
      {"", {"model=llama-9"}, "model", "unknown preset"},
      {"", {"cluster.gpu=h900"}, "cluster.gpu", "unknown preset"},
      {"", {"cluster.preset=dgx-z"}, "cluster.preset", "unknown preset"},
      {"", {"parallel.tp=\"two\""}, "parallel.tp", "must be an integer"},
      {"", {"parallel.tp=2.5"}, "parallel.tp", "must be an integer"},
      {"", {"parallel.sequence_parallel=3"}, "parallel.sequence_parallel", "true or false"},
      {"", {"training.seq_len=0"}, "training.seq_len", "at least 1"},
      {"", {"training.micro_batch=-2"}, "training.micro_batch", "at least 1"},
      {"", {"training.seq_len=1000000000000"}, "training.seq_len", "absurdly large"},
      {"", {"cluster.nodes=0"}, "cluster.nodes", "at least 1"},
      {"", {"cluster.gpu.memory_gib=-80"}, "cluster.gpu.memory_gib", "greater than 0"},
      {"", {"model.layers=1e12"}, "model.layers", "absurdly large"},
      {"", {"training.recompute=some"}, "training.recompute", "unknown value"},
      {"", {"parallel.schedule=zb"}, "parallel.schedule", "unknown value"},
      {"", {"parallel.tp=3", "parallel.dp=1"}, "parallel.tp", "does not divide the attention heads"},
      {"", {"model.heads=48", "model.hidden=6144", "model.kv_heads=12", "parallel.tp=8", "cluster.gpus_per_node=8", "parallel.dp=1"},
       "parallel.tp", "kv_heads"},
      {"", {"model.ffn_hidden=14337", "parallel.tp=2"}, "parallel.tp", "ffn_hidden"},
      {"", {"model.kv_heads=5"}, "model.kv_heads", "must divide heads"},
      {"", {"parallel.pp=3", "parallel.tp=1", "parallel.dp=1", "cluster.gpus_per_node=3"}, "parallel.pp", "does not divide the layers"},
      {"", {"parallel.pp=2", "parallel.tp=1", "parallel.schedule=interleaved", "parallel.vpp=3"}, "parallel.vpp", "not divisible by pp*vpp"},
      {"", {"parallel.vpp=2"}, "parallel.vpp", "needs schedule"},
      {"", {"parallel.pp=2", "parallel.tp=1", "parallel.schedule=interleaved"}, "parallel.vpp", "needs vpp >= 2"},
      {"", {"parallel.cp=2", "parallel.tp=1", "training.seq_len=8190"}, "training.seq_len", "2*cp"},
      {"", {"parallel.dp=4"}, "parallel.dp", "world size"},
      {"", {"parallel.tp=1", "parallel.pp=1", "parallel.dp=null", "cluster.gpus_per_node=3", "parallel.cp=2"}, "parallel", "not divisible by tp*cp*pp"},
      {"", {"training.global_batch=1000", "training.micro_batch=3"}, "training.global_batch", "not divisible by micro_batch*dp"},
      {"", {"parallel.pp=2", "parallel.tp=1", "parallel.schedule=interleaved", "parallel.vpp=2", "training.global_batch=2"},
       "training.global_batch", "at least pp"},
      {"", {"parallel.pp=4", "parallel.tp=1", "parallel.dp=1", "parallel.schedule=interleaved", "parallel.vpp=2", "training.global_batch=6"},
       "training.global_batch", "divisible by pp"},
      {"", {"parallel.microbatch_group_size=4"}, "parallel.microbatch_group_size", "interleaved schedule only"},
      {"", {"parallel.pp=4", "parallel.tp=1", "parallel.dp=1", "parallel.schedule=interleaved", "parallel.vpp=2", "training.global_batch=6",
            "parallel.microbatch_group_size=3"}, "parallel.microbatch_group_size", "must lie in [pp=4, micro-batches=6]"},
      {"", {"parallel.pp=4", "parallel.tp=1", "parallel.dp=1", "parallel.schedule=interleaved", "parallel.vpp=2", "training.global_batch=7",
            "parallel.microbatch_group_size=5"}, "parallel.microbatch_group_size", "holds 2 micro-batches (7 mod 5), fewer than pp=4"},
      {"", {"parallel.microbatch_group_size=0"}, "parallel.microbatch_group_size", "at least 1"},
      {"", {"training.fp8_params=true"}, "training.fp8_params", "needs an FP8 precision"},
      {"", {"memory.workspaces_mib=-1"}, "memory.workspaces_mib", "at least 0"},
      {"", {"parallel.tp_comm_overlap=true", "parallel.sequence_parallel=false"}, "parallel.tp_comm_overlap", "needs sequence_parallel"},
      {"", {"parallel.first_stage_layers=4"}, "parallel.first_stage_layers", "needs pp >= 2"},
      {"", {"parallel.tp=1", "parallel.pp=4", "parallel.dp=1", "parallel.first_stage_layers=6"}, "parallel.first_stage_layers",
       "cannot share the remaining 26"},
      {"", {"parallel.tp=1", "parallel.pp=2", "parallel.dp=2", "parallel.first_stage_layers=4", "parallel.last_stage_layers=4"},
       "parallel.first_stage_layers", "cannot share"},
      {"", {"parallel.tp=1", "parallel.pp=2", "parallel.dp=2", "parallel.schedule=interleaved", "parallel.vpp=2",
            "parallel.last_stage_layers=7"}, "parallel.last_stage_layers", "do not split evenly over vpp=2"},
      {"", {"parallel.tp=1", "parallel.pp=4", "parallel.dp=1", "parallel.schedule=interleaved", "parallel.vpp=2",
            "parallel.first_stage_layers=4", "parallel.last_stage_layers=6"}, "parallel.first_stage_layers", "the other stages' 11 layers"},
      {"", {"parallel.tp=1", "parallel.pp=4", "parallel.dp=1", "parallel.account_for_embedding_in_pipeline_split=true"},
       "parallel.account_for_embedding_in_pipeline_split", "33 not divisible by pp=4"},
      {"", {"parallel.tp=1", "parallel.pp=2", "parallel.dp=2", "parallel.schedule=interleaved", "parallel.vpp=4",
            "parallel.account_for_embedding_in_pipeline_split=true", "parallel.account_for_loss_in_pipeline_split=true"},
       "parallel.vpp", "17 layers per stage"},
      {"", {"parallel.tp=1", "parallel.pp=2", "parallel.dp=2", "parallel.first_stage_layers=16",
            "parallel.account_for_loss_in_pipeline_split=true"}, "parallel.first_stage_layers", "cannot be combined"},
      {"", {"parallel.tp=1", "parallel.pp=2", "parallel.dp=2", "parallel.pipeline_layout=Et*16|t*16L", "parallel.first_stage_layers=16"},
       "parallel.pipeline_layout", "cannot be combined"},
      {"", {"parallel.tp=1", "parallel.pp=2", "parallel.dp=2", "parallel.schedule=interleaved", "parallel.vpp=4",
            "parallel.pipeline_layout=Et*8|t*8|t*8|t*8L"}, "parallel.pipeline_layout", "2 chunks per stage, but vpp=4"},
      {R"({"model": {"layers": 1, "hidden": 8, "ffn_hidden": 8, "heads": 1, "vocab": 67108864},
           "cluster": {"gpu": "h100-sxm-80gb", "gpus_per_node": 1, "nodes": 1},
           "training": {"seq_len": 67108864, "global_batch": 1048576, "micro_batch": 1048576}})",
       {}, "training.micro_batch", "fp32 logits"},
      {"", {"parallel.overlap_grad_reduce=false", "parallel.overlap_param_gather=true"}, "parallel.overlap_param_gather",
       "needs a sharded optimizer"},
      {"", {"cluster.inter_node.topology=torus"}, "cluster.inter_node.topology", "unknown value"},
      {"", {"parallel.sharding=zero3"}, "parallel.sharding", "unknown value"},
      {"", {"parallel.cp_comm_type=ring"}, "parallel.cp_comm_type", "unknown value"},
      {"", {"model.kv_heads=2", "parallel.cp=2", "parallel.dp=1", "parallel.cp_comm_type=a2a"}, "parallel.cp_comm_type",
       "a2a needs cp=2 to divide the heads per TP rank (16) and the kv_heads per TP rank (1)"},
      {"", {"parallel.hierarchical_cp_sizes=[2, 2]"}, "parallel.hierarchical_cp_sizes", "(2 x 2) must be cp=1"},
      {"", {"parallel.cp=2", "parallel.dp=1", "parallel.cp_comm_type=a2a+p2p"}, "parallel.hierarchical_cp_sizes", "is needed"},
      {"", {"parallel.cp=2", "parallel.dp=1", "parallel.cp_comm_type=a2a+p2p", "parallel.hierarchical_cp_sizes=[2]"},
       "parallel.hierarchical_cp_sizes", "a list of two sizes"},
      {"", {"parallel.cp=2", "parallel.dp=1", "parallel.cp_comm_type=a2a+p2p", "parallel.hierarchical_cp_sizes=[2, 2]"},
       "parallel.hierarchical_cp_sizes", "must be cp=2"},
      {"", {"parallel.cp=2", "parallel.dp=1", "parallel.cp_comm_type=a2a+p2p", "parallel.hierarchical_cp_sizes=[0, 2]"},
       "parallel.hierarchical_cp_sizes", "integer in 1 .. 65536"},
      {"", {"model.kv_heads=2", "parallel.cp=2", "parallel.dp=1", "parallel.cp_comm_type=a2a+p2p", "parallel.hierarchical_cp_sizes=[2, 1]"},
       "parallel.hierarchical_cp_sizes", "the all-to-all groups need their size 2 to divide"},
      {"", {"parallel.sharding=optimizer", "parallel.distributed_optimizer=false"}, "parallel.distributed_optimizer", "contradicts sharding"},
      {"", {"parallel.sharding=none", "parallel.distributed_optimizer=true"}, "parallel.distributed_optimizer", "contradicts sharding"},
      {"", {"parallel.sharding=none", "parallel.distributed_optimizer=false", "parallel.overlap_param_gather=true"},
       "parallel.overlap_param_gather", "needs a sharded optimizer"},
      {"", {"training.recompute_method=block"}, "training.recompute_method", "full recomputation only"},
      {"", {"training.recompute=selective", "training.recompute_num_layers=2"}, "training.recompute_num_layers", "full recomputation only"},
      {"", {"training.recompute=full", "training.recompute_num_layers=0"}, "training.recompute_num_layers", "at least 1"},
      {"", {R"(training.recompute_modules=["mlp"])"}, "training.recompute_modules", "selective recomputation only"},
      {"", {"training.recompute=selective", R"(training.recompute_modules=["moe_act"])"}, "training.recompute_modules", "mixture-of-experts"},
      {"", {"training.recompute=selective", R"(training.recompute_modules=["attn"])"}, "training.recompute_modules", "unknown module"},
      {"", {"training.recompute=selective", "training.recompute_modules=[]"}, "training.recompute_modules", "non-empty list"},
      {"", {"training.optimizer_offload_fraction=1.5"}, "training.optimizer_offload_fraction", "absurdly large"},
      {"", {"training.optimizer_offload_fraction=-0.1"}, "training.optimizer_offload_fraction", "at least 0"},
      {"", {"cluster.inter_node.oversubscription=0.5"}, "cluster.inter_node.oversubscription", "at least 1"},
      {"", {"memory.usable_fraction=2"}, "memory.usable_fraction", "absurdly large"},
      {"", {"memory.headroom_gib=94"}, "memory.headroom_gib", "headroom_gib=94 leaves no GPU memory (the GPU has 94 GiB)"},
      {"", {"memory.headroom_gib=-1"}, "memory.headroom_gib", "at least 0"},
      {"{\"cluster\": {\"gpu\": \"h100-sxm-80gb\", \"gpus_per_node\": 8, \"nodes\": 1}, \"training\": {\"seq_len\": 1, \"global_batch\": 1}}",
       {}, "model", "is required"},
      {"", {"training.seq_len=null"}, "training.seq_len", "is required"},
      {"", {"training.seq_len=[1]"}, "training.seq_len", "must be an integer"},
  };
  for (const auto& c : cases) {
    const std::string msg = c.text.empty() ? err(c.sets) : error_of(c.text, c.sets);
    CAPTURE(msg);
    CHECK(msg.rfind(c.expect_prefix + ":", 0) == 0);
    CHECK(msg.find(c.expect_reason) != std::string::npos);
  }
}

TEST_CASE("a missing file is a scenario error naming the file") {
  try {
    (void)scenarios::load_scenario_file("/nonexistent/scenario.json");
    FAIL("no error");
  } catch (const ScenarioError& e) {
    CHECK(e.path() == "/nonexistent/scenario.json");
  }
}

TEST_CASE("numbers beyond double are errors naming the file or the field, not internal errors") {
  std::string text = kBase;
  text.replace(text.find("8192"), 4, "1e400");
  const auto in_file = error_of(text);
  CHECK(in_file.rfind("training.seq_len: unreadable JSON: number overflow", 0) == 0);
  CHECK(in_file.find("(scenario.json)") != std::string::npos);
  CHECK(in_file.find("1e400") != std::string::npos);
  CHECK(err({"training.seq_len=1e400"}) == "training.seq_len: the value 1e400 is out of range (--set)");
  CHECK(err({"cluster.gpu={\"preset\": \"h100-sxm-80gb\", \"hbm_TBps\": -1e999}"}).rfind("cluster.gpu: the value", 0) == 0);
}

TEST_CASE("sizes whose byte counts overflow are absurdly large, naming the field most responsible") {
  // One GPU, so that the layout rules pass and only the sizes are wrong.
  const std::vector<std::string> one_gpu{"parallel.tp=1", "parallel.dp=null", "cluster.gpus_per_node=1", "model.heads=1",
                                         "model.kv_heads=1"};
  auto with = [&](std::vector<std::string> more) {
    auto sets = one_gpu;
    sets.insert(sets.end(), more.begin(), more.end());
    return err(sets);
  };
  const auto micro = with({"model.hidden=1048576", "model.ffn_hidden=4194304", "training.seq_len=67108864",
                           "training.micro_batch=1048576", "training.global_batch=67108864"});
  CHECK(micro.rfind("training.micro_batch: absurdly large: the activations of one layer and one micro-batch would take ", 0) == 0);
  CHECK(micro.find("bytes (limit 2^60)") != std::string::npos);
  CHECK(with({"model.hidden=65536", "model.ffn_hidden=262144", "training.seq_len=67108864", "training.micro_batch=1024",
              "training.global_batch=1024"})
            .rfind("training.seq_len: absurdly large", 0) == 0);
  CHECK(with({"model.hidden=1048576", "model.ffn_hidden=4194304", "model.layers=10000", "training.seq_len=1"})
            .rfind("model.hidden: absurdly large: the model's parameters", 0) == 0);
  // Unfused attention stores a x s^2 per micro-batch: the sequence length is to blame.
  CHECK(with({"model.heads=64", "model.kv_heads=8", "training.attention=unfused", "training.seq_len=33554432", "training.global_batch=64"})
            .rfind("training.seq_len: absurdly large", 0) == 0);
  // GPipe holds every micro-batch of the step.
  CHECK(with({"model.hidden=16384", "model.ffn_hidden=65536", "training.seq_len=1048576", "parallel.schedule=gpipe",
              "training.global_batch=16777216"})
            .rfind("training.global_batch: absurdly large: the activations held at the peak", 0) == 0);
  // Large but real: Llama-3.1-405B at 128k tokens.
  CHECK(error_of(kBase, {"model=llama-3.1-405b", "training.seq_len=131072", "parallel.tp=1", "parallel.dp=null",
                         "cluster.gpus_per_node=1"}) == "<no error>");
}

TEST_CASE("an object over a preset name overrides some of the preset's fields") {
  const auto def = scenarios::load_scenario_text(scenarios::default_scenario_text());
  // The default's cluster preset (dgx-h100) names its GPU: one field of it changes, the rest stays.
  const auto s = scenarios::load_scenario_text(scenarios::default_scenario_text(),
                                               {scenarios::parse_override("cluster.gpu.hbm_TBps=3")}, "<default scenario>");
  CHECK(s.cluster.gpu.hbm_Bps == 3e12);
  CHECK(s.cluster.gpu.name == "h100-sxm-80gb");
  CHECK(s.cluster.gpu.memory_bytes == def.cluster.gpu.memory_bytes);
  CHECK(s.cluster.gpu.peak_bf16_flops == def.cluster.gpu.peak_bf16_flops);
  CHECK(s.cluster.gpu.nvlink_Bps == def.cluster.gpu.nvlink_Bps);
  CHECK(s.cluster.gpus_per_node == 8);

  // The same in a file, and as an object given to --set over an explicit preset name.
  const auto f = scenarios::load_scenario_text(
      R"({"model": "llama-3.1-70b", "cluster": {"preset": "dgx-h100", "nodes": 16, "gpu": {"memory_gib": 96}},
          "training": {"seq_len": 8192, "global_batch": 1024}, "parallel": {"tp": 8, "pp": 4}})");
  CHECK(f.cluster.gpu.memory_bytes == 96.0 * 1024 * 1024 * 1024);
  CHECK(f.cluster.gpu.peak_bf16_flops == def.cluster.gpu.peak_bf16_flops);
  const auto g = scenarios::load_scenario_text(kBase, {scenarios::parse_override("cluster.gpu={\"hbm_TBps\": 5}")});
  CHECK(g.cluster.gpu.hbm_Bps == 5e12);
  CHECK(g.cluster.gpu.memory_bytes == 94.0 * 1024 * 1024 * 1024);
  const auto m = scenarios::load_scenario_text(kBase, {scenarios::parse_override("model={\"layers\": 16}")});
  CHECK(m.model.layers == 16);
  CHECK(m.model.hidden == 4096);
  // An object that names a preset replaces the old reference.
  const auto r = scenarios::load_scenario_text(
      R"({"model": "llama-3.1-70b", "cluster": {"preset": "dgx-h100", "nodes": 16, "gpu": {"preset": "h100-sxm-94gb"}},
          "training": {"seq_len": 8192, "global_batch": 1024}, "parallel": {"tp": 8, "pp": 4}})");
  CHECK(r.cluster.gpu.name == "h100-sxm-94gb");
}

TEST_CASE("input files: a directory, a device or more than 64 MiB is an error naming the file") {
  const auto dir = test_support::fresh_dir("load", "files");
  CHECK_THROWS_WITH_AS(scenarios::load_scenario_file(dir.string()), (dir.string() + ": is a directory, not a scenario file").c_str(),
                       ScenarioError);
  CHECK_THROWS_WITH_AS(scenarios::load_scenario_file("/dev/zero"), "/dev/zero: is not a regular file (expected a scenario file)",
                       ScenarioError);
  const auto big = test_support::scratch_file("load", "files/big.json", "{}");
  std::filesystem::resize_file(big, scenarios::kMaxInputFileBytes + 1);  // sparse: no 64 MiB written
  CHECK_THROWS_WITH_AS(scenarios::read_input_file(big, "scenario file"), (big + ": is larger than 64 MiB (not a scenario file)").c_str(),
                       ScenarioError);
  const auto ok = test_support::scratch_file("load", "files/ok.json", scenarios::default_scenario_text());
  CHECK(scenarios::load_scenario_file(ok).world_size() == 128);
  std::filesystem::remove_all(dir);
}

TEST_CASE("deeply nested JSON is refused while parsing, naming the input") {
  const auto nested = [](int n) { return std::string(static_cast<std::size_t>(n), '[') + std::string(static_cast<std::size_t>(n), ']'); };
  // 100,000 levels inside the cluster object overflowed the stack when the loader copied it.
  const std::string deep = R"({"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 1, "x": )" + nested(100000) +
                           R"(}, "training": {"seq_len": 4096, "global_batch": 8}})";
  CHECK(error_of(deep) == "scenario.json: JSON nested deeper than 64 levels");
  // A document at the limit parses; the unknown key is the error then.
  const std::string at_limit = R"({"model": "llama-3.1-8b", "x": )" + nested(62) + "}";
  CHECK(error_of(at_limit).find("nested deeper") == std::string::npos);
}

TEST_CASE("layout sizes beyond the world size are errors before any product overflows") {
  CHECK(err({"parallel.cp=65536", "training.seq_len=131072"}) ==
        "parallel.cp: cp=65536 exceeds the world size 4");
  CHECK(err({"parallel.dp=4194304"}) == "parallel.dp: dp=4194304 exceeds the world size 4");
  CHECK(err({"parallel.cp=3"}).find("training.seq_len") == 0);
}

TEST_CASE("a duplicate JSON key is refused, naming the key") {
  CHECK(error_of(R"({"model": "llama-3.1-8b", "model": "llama-3.1-70b"})") == "model: duplicate JSON key (scenario.json)");
  CHECK(error_of(R"({"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 1, "nodes": 2}})") ==
        "cluster.nodes: duplicate JSON key (scenario.json)");
  // The same key in two different objects is no duplicate.
  CHECK(error_of(R"({"model": {"preset": "llama-3.1-8b"}, "cluster": {"preset": "dgx-h100"}})").find("duplicate") == std::string::npos);
}

TEST_CASE("cluster.nvlink_domain_gpus: whole nodes dividing the cluster or a divisor of a node, absent or 0 means one node") {
  CHECK(scenarios::load_scenario_text(kBase).cluster.nvlink_domain_gpus == 0);
  CHECK(scenarios::load_scenario_text(kBase).cluster.nvlink_domain_size() == 4);
  const auto s = scenarios::load_scenario_text(kBase, {{"cluster.nodes", "2"}, {"parallel.dp", "4"}, {"cluster.nvlink_domain_gpus", "8"}});
  CHECK(s.cluster.nvlink_domain_gpus == 8);
  CHECK(s.cluster.nvlink_domain_size() == 8);
  CHECK(err({"cluster.nvlink_domain_gpus=-4"}).rfind("cluster.nvlink_domain_gpus:", 0) == 0);
  CHECK(err({"cluster.nvlink_domain_gpus=6"}).find("divide gpus_per_node (4) or be a multiple of it") != std::string::npos);
  CHECK(err({"cluster.nvlink_domain_gpus=3"}).rfind("cluster.nvlink_domain_gpus:", 0) == 0);
  // A divisor of gpus_per_node: NVLink-bridged GPUs of one node.
  const auto bridged = scenarios::load_scenario_text(kBase, {{"cluster.nvlink_domain_gpus", "2"}, {"cluster.intra_node.pcie_GBps", "32"},
                                                             {"cluster.intra_node.nvswitch", "false"}});
  CHECK(bridged.cluster.nvlink_domain_size() == 2);
  CHECK(bridged.cluster.comm_node_size() == 4);
  CHECK(bridged.cluster.intra_node.pcie_Bps == 32e9);
  CHECK_FALSE(bridged.cluster.intra_node.nvswitch);
  CHECK(scenarios::load_scenario_text(kBase).cluster.intra_node.nvswitch);
  CHECK(scenarios::load_scenario_text(kBase).cluster.intra_node.pcie_Bps == 64e9);
  CHECK(err({"cluster.intra_node.pcie_GBps=0"}).rfind("cluster.intra_node.pcie_GBps:", 0) == 0);
  CHECK(err({"cluster.nodes=3", "parallel.dp=6", "cluster.nvlink_domain_gpus=8"}).rfind("cluster.nvlink_domain_gpus:", 0) == 0);
}

TEST_CASE("GPU GEMM shape fields: the preset's, and one clear error for each bad value") {
  const auto s = scenarios::load_scenario_text(kBase);
  CHECK(s.cluster.gpu.gemm_small_tile == 128);
  CHECK(s.cluster.gpu.gemm_small_tile_efficiency == 0.76);
  CHECK(s.cluster.gpu.gemm_k_overhead == 425);
  CHECK(err({"cluster.gpu.gemm_small_tile_efficiency=0"}).rfind("cluster.gpu.gemm_small_tile_efficiency: must be greater than 0", 0) == 0);
  CHECK(err({"cluster.gpu.gemm_small_tile_efficiency=1.5"}).rfind("cluster.gpu.gemm_small_tile_efficiency:", 0) == 0);
  CHECK(err({"cluster.gpu.gemm_k_overhead=-1"}).rfind("cluster.gpu.gemm_k_overhead:", 0) == 0);
  CHECK(err({"cluster.gpu.gemm_small_tile=-128"}).rfind("cluster.gpu.gemm_small_tile:", 0) == 0);
  CHECK(err({"cluster.gpu.gemm_tile_m=0", "cluster.gpu.gemm_tile_n=0"}) ==
        "cluster.gpu.gemm_small_tile: needs the large tile (gemm_tile_m and gemm_tile_n) it falls back from");
}

TEST_CASE("GPU efficiency: the preset's file, an inline object, a file read at run time, the default") {
  using scenarios::EfficiencyKind;
  const auto preset = scenarios::load_scenario_text(kBase);
  const auto& e = preset.cluster.gpu.efficiency;
  CHECK(e.kind == EfficiencyKind::Fitted);
  CHECK(e.source == "scenarios/presets/efficiency/h100-sxm-94gb.json");
  CHECK(e.fit.find("stepsim calibrate --gpu h100-sxm-94gb") == 0);
  CHECK(e.gemm_max == doctest::Approx(0.658584544));

  // A parameter set over the preset keeps the others; the source says what it lies over.
  const auto over = scenarios::load_scenario_text(kBase, {scenarios::parse_override("cluster.gpu.efficiency.gemm_max=0.6")});
  CHECK(over.cluster.gpu.efficiency.gemm_max == 0.6);
  CHECK(over.cluster.gpu.efficiency.attn_max == e.attn_max);
  CHECK(over.cluster.gpu.efficiency.source ==
        "cluster.gpu.efficiency over scenarios/presets/efficiency/h100-sxm-94gb.json");

  // A GPU described by its numbers alone gets the published ceilings as they are.
  const auto custom = scenarios::load_scenario_text(
      kBase, {scenarios::parse_override(
                 R"(cluster={"gpus_per_node": 4, "nodes": 1, "gpu": {"memory_gib": 94, "peak_bf16_tflops": 989, "hbm_TBps": 3.9}})")});
  CHECK(custom.cluster.gpu.efficiency.kind == EfficiencyKind::Default);
  CHECK(custom.cluster.gpu.efficiency.gemm_max == 1.0);
  CHECK(custom.cluster.gpu.efficiency.source.rfind("built-in: the published ceilings", 0) == 0);
  CHECK(custom.cluster.gpu.sms == 0);
  CHECK(custom.cluster.gpu.gemm_small_tile == 0);
  CHECK(custom.cluster.gpu.gemm_small_tile_efficiency == 1.0);
  CHECK(custom.cluster.gpu.gemm_k_overhead == 0);
  CHECK(custom.cluster.gpu.matmul_bf16_flops == 989e12);
  CHECK(custom.cluster.gpu.architecture == scenarios::GpuArchitecture::Unknown);
  CHECK(custom.software.attention_curves.series.empty());

  // An efficiency file, as stepsim calibrate writes it, read when the scenario loads.
  const auto file = test_support::scratch_file("load", "efficiency.json", R"({"source": "a fit", "fitted": "gemm_max,hbm_eff",
                                                                          "gemm_max": 0.5, "attn_max": 0.4,
                                                                          "hbm_eff": 0.8, "comm_slowdown": 0.02})");
  const auto from_file = scenarios::load_scenario_text(kBase, {scenarios::parse_override("cluster.gpu.efficiency=" + file)});
  CHECK(from_file.cluster.gpu.efficiency.kind == EfficiencyKind::Fitted);
  CHECK(from_file.cluster.gpu.efficiency.source == file);
  CHECK(from_file.cluster.gpu.efficiency.fit == "a fit");
  CHECK(from_file.cluster.gpu.efficiency.hbm_eff == 0.8);
  CHECK(from_file.cluster.gpu.efficiency.fitted == std::vector<std::string>{"gemm_max", "hbm_eff"});
  std::filesystem::remove(file);
  // An inline object is not the fit of the file under it: it lists no fitted parameter.
  CHECK(scenarios::load_scenario_text(kBase, {scenarios::parse_override("cluster.gpu.efficiency.gemm_max=0.7")})
            .cluster.gpu.efficiency.fitted.empty());
  CHECK(error_of(kBase, {"cluster.gpu.efficiency.fitted=gemm_max,gemm_min"}) ==
        "cluster.gpu.efficiency.fitted: unknown parameter 'gemm_min' (expected a comma-separated list of gemm_max, gemm_fp8_max, "
        "attn_max, hbm_eff, comm_slowdown)");
  CHECK(error_of(kBase, {"cluster.gpu.efficiency.fitted=hbm_eff,hbm_eff"}) == "cluster.gpu.efficiency.fitted: names 'hbm_eff' twice");

  CHECK(error_of(kBase, {"cluster.gpu.efficiency.gemm_max=1.5"}) == "cluster.gpu.efficiency.gemm_max: is absurdly large (1.5 > 1)");
  CHECK(error_of(kBase, {"cluster.gpu.efficiency.kind=guessed"}) ==
        "cluster.gpu.efficiency.kind: unknown value \"guessed\" (expected one of: fitted, derived, default)");
  CHECK(error_of(kBase, {"cluster.gpu.efficiency.gemm=1"}) == "cluster.gpu.efficiency.gemm: unknown key");
  CHECK(error_of(kBase, {"cluster.gpu.efficiency=3"}) ==
        "cluster.gpu.efficiency: must be an efficiency file path or an object, got a number");
  CHECK(error_of(kBase, {"cluster.gpu.efficiency=/nonexistent/eff.json"}) ==
        "/nonexistent/eff.json: cannot open the efficiency file (no such file)");
}

TEST_CASE("comm and engine fields: declared defaults and ranges") {
  const auto s = scenarios::load_scenario_text(kBase);
  CHECK(s.comm.algorithm == scenarios::CollectiveAlgorithm::Auto);
  CHECK(s.comm.nvlink_efficiency == 0.80);
  CHECK(s.comm.network_efficiency == 0.94);
  CHECK(s.comm.nvls_efficiency == 0.667);
  CHECK(s.comm.collective_setup_s == 0.0);
  CHECK(s.comm.p2p_setup_s == 0.0);
  CHECK(s.engine.auto_simgrid_max_gpus == 1024);
  const auto t = scenarios::load_scenario_text(
      kBase, {scenarios::parse_override("comm.nvlink_efficiency=0.9"), scenarios::parse_override("comm.collective_setup_us=5"),
              scenarios::parse_override("engine.auto_simgrid_max_gpus=64")});
  CHECK(t.comm.nvlink_efficiency == 0.9);
  CHECK(t.comm.collective_setup_s == doctest::Approx(5e-6));
  CHECK(t.engine.auto_simgrid_max_gpus == 64);
  CHECK(err({"comm.nvlink_efficiency=1.5"}) == "comm.nvlink_efficiency: is absurdly large (1.5 > 1)");
  CHECK(err({"comm.network_efficiency=0"}) == "comm.network_efficiency: must be greater than 0, got 0");
  CHECK(scenarios::load_scenario_text(kBase, {scenarios::parse_override("comm.algorithm=ring")}).comm.algorithm ==
        scenarios::CollectiveAlgorithm::Ring);
  CHECK(err({"comm.algorithm=pat"}) == "comm.algorithm: unknown value \"pat\" (expected one of: auto, ring, tree, nvls)");
  CHECK(err({"comm.bandwidth=1"}) == "comm.bandwidth: unknown key");
  CHECK(err({"engine.auto_simgrid_max_gpus=-1"}) == "engine.auto_simgrid_max_gpus: must be at least 0, got -1");
  CHECK(err({"engine.auto_simgrid_max_gpus=20000"}) == "engine.auto_simgrid_max_gpus: is absurdly large (20000 > 16384)");
}

TEST_CASE("the parameter table: one declaration per key, defaults within range, the structs' defaults") {
  std::set<std::string> keys;
  for (const auto& p : scenarios::parameters()) {
    CAPTURE(p.key);
    CHECK(keys.insert(std::string(p.key)).second);
    CHECK(!p.description.empty());
    CHECK((p.value.has_value() || !p.default_text.empty()));
    if (p.value && (p.type == scenarios::ParamType::Integer || p.type == scenarios::ParamType::Number)) {
      CHECK((p.min_exclusive ? *p.value > p.min : *p.value >= p.min));
      CHECK(*p.value <= p.max);
    }
  }
  // A scenario without "memory" gets the declared defaults, and so does a MemorySpec built in code.
  const auto s = scenarios::load_scenario_text(kBase);
  const scenarios::MemorySpec m;
  CHECK(s.memory.cuda_context_bytes == 0.5 * scenarios::kGiB);
  CHECK(m.cuda_context_bytes == s.memory.cuda_context_bytes);
  CHECK(m.nccl_buffer_bytes_per_group == s.memory.nccl_buffer_bytes_per_group);
  CHECK(m.fragmentation_fraction == s.memory.fragmentation_fraction);
  CHECK(m.usable_fraction == s.memory.usable_fraction);
  CHECK(scenarios::default_text(scenarios::parameter("parallel.schedule")) == "1f1b");
  CHECK(scenarios::range_text(scenarios::parameter("memory.usable_fraction")) == "(0, 1]");
  CHECK(scenarios::range_text(scenarios::parameter("training.micro_batch")) == "1 .. 1048576");
  CHECK_THROWS_AS((void)scenarios::parameter("model.depth"), InternalError);
}

TEST_CASE("integers beyond 2^63 - 1 are absurdly large, not wrapped to negative numbers") {
  CHECK(err({"parallel.tp=9223372036854775808"}) == "parallel.tp: is absurdly large (9223372036854775808 > 65536)");
  CHECK(err({"training.seq_len=18446744073709551615"}).rfind("training.seq_len: is absurdly large (18446744073709551615 > ", 0) == 0);
}

TEST_CASE("parallel.rank_order is checked when the scenario loads, not when it runs") {
  CHECK(err({"parallel.rank_order=zz-yy"}) ==
        "parallel.rank_order: unknown token 'zz' in 'zz-yy' (expected a permutation of tp, cp, dp, pp joined by '-')");
  CHECK(err({"parallel.rank_order=tp-cp-dp"}) == "parallel.rank_order: 'tp-cp-dp' lacks pp");
  CHECK(scenarios::load_scenario_text(kBase, {{"parallel.rank_order", "tp-dp-cp-pp"}}).parallel.rank_order == "tp-dp-cp-pp");
}

TEST_CASE("invalid UTF-8 in a --set line or a file name is an input error, not an internal one") {
  CHECK(err({"name=\xff"}) == "--set: is not valid UTF-8");
  CHECK_THROWS_WITH_AS((void)scenarios::load_scenario_file("bad\xfe.json"), "scenario file: the file name is not valid UTF-8",
                       ScenarioError);
}

TEST_CASE("software: the default preset, presets that share values by reference, inline overrides, errors") {
  const auto def = scenarios::load_scenario_text(kBase);
  CHECK(def.software.name == "megatron-core-0.20");
  CHECK(def.software.attention == scenarios::AttentionKernel::Auto);
  CHECK(def.software.attention_curves.implementation == "cudnn");  // auto on Hopper
  CHECK(def.software.fused_rope);
  CHECK_FALSE(def.software.fused_cross_entropy);
  CHECK(def.software.kernel_launch_s == doctest::Approx(0.9e-6));
  // nemo-25.04 -> nemo-25.02 (fused cross-entropy) -> nemo-24.12 -> nemo-24.09 -> nemo-24.05 (TP
  // overlap) -> megatron-core-0.20.
  const auto nemo = scenarios::load_scenario_text(kBase, {{"software", "nemo-25.04"}});
  CHECK(nemo.software.name == "nemo-25.04");
  CHECK(nemo.software.attention == scenarios::AttentionKernel::Auto);
  CHECK(nemo.software.attention_curves.implementation == "cudnn");
  CHECK(nemo.software.fused_cross_entropy);
  CHECK(nemo.software.tp_comm_overlap);
  CHECK(nemo.software.grad_accum_fusion);
  CHECK_FALSE(scenarios::load_scenario_text(kBase, {{"software", "nemo-24.12"}}).software.fused_cross_entropy);
  const auto mc08 = scenarios::load_scenario_text(kBase, {{"software", "megatron-core-0.8"}});
  CHECK(mc08.software.attention_curves.implementation == "flash-attention-2");
  CHECK(scenarios::software_preset_names() ==
        std::vector<std::string>{"megatron-core-0.20", "megatron-core-0.8", "megatron-deepspeed-2021", "megatron-lm-2021",
                                 "megatron-lm-2022", "nemo-24.05", "nemo-24.09", "nemo-24.12", "nemo-25.02", "nemo-25.04",
                                 "nemo-25.11", "nemo-26.02"});
  // The pre-core Megatron stacks: gradient-accumulation fusion only from 2022, no TransformerEngine.
  CHECK_FALSE(scenarios::load_scenario_text(kBase, {{"software", "megatron-lm-2021"}}).software.grad_accum_fusion);
  CHECK(scenarios::load_scenario_text(kBase, {{"software", "megatron-lm-2022"}}).software.grad_accum_fusion);
  CHECK_FALSE(scenarios::load_scenario_text(kBase, {{"software", "megatron-lm-2022"}}).software.fused_norm_gemm);
  // An object overrides its preset, or the default preset when it names none.
  const auto over = scenarios::load_scenario_text(kBase, {{"software", R"({"preset": "nemo-24.09", "fused_rope": false})"}});
  CHECK(over.software.name == "nemo-24.09 (modified)");
  CHECK_FALSE(over.software.fused_rope);
  CHECK(over.software.attention_curves.implementation == "cudnn");
  const auto onto = scenarios::load_scenario_text(kBase, {{"software", "nemo-24.09"}, {"software.fused_swiglu", "false"}});
  CHECK(onto.software.name == "nemo-24.09 (modified)");
  CHECK_FALSE(onto.software.fused_swiglu);
  CHECK(onto.software.tp_comm_overlap);
  const auto custom = scenarios::load_scenario_text(kBase, {{"software.kernel_launch_us", "2"}});
  CHECK(custom.software.name == "custom");
  CHECK(custom.software.kernel_launch_s == doctest::Approx(2e-6));
  CHECK(custom.software.attention == scenarios::AttentionKernel::Auto);
  // Errors name the field.
  CHECK(err({"software=nemo-99.99"}).rfind("software: unknown preset \"nemo-99.99\" (known: megatron-core-0.20, ", 0) == 0);
  CHECK(err({"software.fused_rope=1"}) == "software.fused_rope: must be true or false, got a number");
  CHECK(err({"software.attention=flash"}).rfind("software.attention: unknown value \"flash\"", 0) == 0);
  CHECK(err({"software.kernel_launch_us=-1"}).rfind("software.kernel_launch_us: must be at least 0", 0) == 0);
  CHECK(err({"software.turbo=true"}) == "software.turbo: unknown key");
  CHECK(err({"software=3"}) == "software: must be a preset name or an object, got a number");
}

TEST_CASE("software: every preset loads on every GPU preset, with its source and published attention figures") {
  for (const auto& sw : scenarios::software_preset_names())
    for (const auto& gpu : scenarios::gpu_preset_names()) {
      CAPTURE(sw);
      CAPTURE(gpu);
      const auto s = scenarios::load_scenario_text(kBase, {{"software", sw}, {"cluster.gpu", gpu}});
      CHECK(s.software.name == sw);
      CHECK_FALSE(s.software.attention_curves.series.empty());
      CHECK_FALSE(s.software.attention_curves.source.empty());
      // Every (pass, causal) pair for each published head dimension.
      for (const auto& a : s.software.attention_curves.series) {
        int pairs = 0;
        for (const auto& b : s.software.attention_curves.series) pairs += b.head_dim == a.head_dim ? 1 : 0;
        CHECK(pairs == 4);
      }
    }
}

TEST_CASE("training.precision: FP8 needs Hopper or Blackwell with an FP8 peak, MXFP8 needs Blackwell") {
  const auto load = [](const std::string& precision, const std::string& cluster) {
    return scenarios::load_scenario_text(R"({"model": "llama-3.1-8b", "cluster": {"preset": ")" + cluster + R"(", "nodes": 1},
      "training": {"seq_len": 4096, "global_batch": 8, "precision": ")" + precision + R"("}, "parallel": {"tp": 8}})");
  };
  CHECK(load("bf16", "dgx-a100").training.precision == scenarios::TrainingPrecision::Bf16);
  CHECK(load("fp8-delayed", "dgx-h100").training.fp8());
  CHECK(load("fp8-delayed", "dgx-h100").training.fp8_amax_history_len == 1024);
  CHECK(load("fp8-current", "dgx-b200").training.precision == scenarios::TrainingPrecision::Fp8Current);
  CHECK(load("mxfp8", "dgx-b200").training.precision == scenarios::TrainingPrecision::Mxfp8);
  CHECK(load("fp8-delayed", "dgx-h100").cluster.gpu.peak_fp8_flops == 1979e12);
  CHECK_THROWS_WITH_AS(load("mxfp8", "dgx-h100"), "training.precision: mxfp8 needs a Blackwell GPU (h100-sxm-80gb is hopper)",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(load("fp8-delayed", "dgx-a100"),
                       "training.precision: fp8-delayed needs a Hopper or Blackwell GPU (a100-sxm-80gb is ampere)", ScenarioError);
  CHECK_THROWS_AS(load("fp4", "dgx-h100"), ScenarioError);
  const auto custom = scenarios::load_scenario_text(R"({"model": "llama-3.1-8b",
      "cluster": {"preset": "dgx-h100", "nodes": 1, "gpu": {"preset": "h100-sxm-80gb", "peak_fp8_tflops": 0}},
      "training": {"seq_len": 4096, "global_batch": 8}, "parallel": {"tp": 8}})");
  CHECK(custom.cluster.gpu.peak_fp8_flops == 0);
  CHECK_THROWS_WITH_AS(scenarios::load_scenario_text(R"({"model": "llama-3.1-8b",
      "cluster": {"preset": "dgx-h100", "nodes": 1, "gpu": {"preset": "h100-sxm-80gb", "peak_fp8_tflops": 0}},
      "training": {"seq_len": 4096, "global_batch": 8, "precision": "fp8-current"}, "parallel": {"tp": 8}})"),
                       "training.precision: fp8-current needs cluster.gpu.peak_fp8_tflops > 0 (h100-sxm-80gb gives none)", ScenarioError);
}

TEST_CASE("token counts take a suffix (15T, 300B, 2.5M) and anything else is refused naming the field") {
  CHECK(scenarios::parse_token_count("15T") == doctest::Approx(15e12));
  CHECK(scenarios::parse_token_count("300B") == doctest::Approx(300e9));
  CHECK(scenarios::parse_token_count("300G") == doctest::Approx(300e9));
  CHECK(scenarios::parse_token_count("2.5 M") == doctest::Approx(2.5e6));
  CHECK(scenarios::parse_token_count("8k") == doctest::Approx(8e3));
  CHECK(scenarios::parse_token_count("1e12") == doctest::Approx(1e12));
  for (const char* bad : {"", "T", "15X", "15TT", "-3T", " 15T", "15T tokens"}) CHECK_MESSAGE(!scenarios::parse_token_count(bad), bad);
  const auto s = scenarios::load_scenario_text(kBase, {Override{"training.train_tokens", "15T"}});
  CHECK(*s.training.train_tokens == doctest::Approx(15e12));
  const auto t = scenarios::load_scenario_text(kBase, {Override{"training.train_tokens", "\"300B\""}});
  CHECK(*t.training.train_tokens == doctest::Approx(300e9));
  CHECK(error_of(kBase, {"training.train_tokens=15 trillion"}).find("training.train_tokens: must be a number of tokens") == 0);
  CHECK(error_of(kBase, {"training.train_tokens=2e6T"}).find("training.train_tokens: is absurdly large") == 0);
  // Elsewhere a string is no number.
  CHECK(error_of(kBase, {"training.seq_len=8K"}).find("training.seq_len: must be an integer") == 0);
}

TEST_CASE("scenario JSON may hold // and /* */ comments") {
  const std::string text = std::string("// a comment before the object\n") + R"({
  "name": "commented", /* inline */
  "model": "llama-3.1-8b", // trailing
  "cluster": { "gpu": "h100-sxm-94gb", "gpus_per_node": 4, "nodes": 1 },
  "training": { "seq_len": 8192, "global_batch": 1024, "micro_batch": 1 },
  "parallel": { "tp": 2, "pp": 1 }
})";
  const auto s = scenarios::load_scenario_text(text);
  CHECK(s.name == "commented");
  CHECK(s.parallel.tp == 2);
}

TEST_CASE("the default scenario's name follows its GPU count, unless an override names it") {
  CHECK(scenarios::load_default_scenario().name == "llama31-70b-dgx-h100-128");
  CHECK(scenarios::load_default_scenario({Override{"cluster.nodes", "4"}}).name == "llama31-70b-dgx-h100-32");
  CHECK(scenarios::load_default_scenario({Override{"cluster.nodes", "4"}, Override{"name", "mine"}}).name == "mine");
}

TEST_CASE("a broken rule's reason is made only when asked for: the same field either way") {
  bool made = false;
  const auto reason = [&made] {
    made = true;
    return std::string("tp=3 does not divide the attention heads (32)");
  };
  const auto bare = rule_error("parallel.tp", false, reason);
  CHECK_FALSE(made);
  CHECK(bare.path() == "parallel.tp");
  CHECK(std::string(bare.what()) == "parallel.tp: ");
  const auto full = rule_error("parallel.tp", true, reason);
  CHECK(made);
  CHECK(std::string(full.what()) == "parallel.tp: tp=3 does not divide the attention heads (32)");
  // Llama-3.1-8B's 32 layers over 3 stages: the even split's rule names pp with or without its reason.
  auto s = scenarios::load_scenario_text(kBase, {Override{"parallel.tp", "1"}, Override{"parallel.pp", "4"}, Override{"parallel.dp", "1"}});
  s.parallel.pp = 3;
  const auto with = scenarios::pipeline_layout_error(s);
  const auto without = scenarios::pipeline_layout_error(s, false);
  REQUIRE(with.has_value());
  REQUIRE(without.has_value());
  CHECK(with->path() == "parallel.pp");
  CHECK(without->path() == "parallel.pp");
  CHECK(std::string(with->what()).find("does not divide the layers (32") != std::string::npos);
  CHECK(std::string(without->what()) == "parallel.pp: ");
}
