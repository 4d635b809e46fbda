// Importers: Hugging Face configs give the presets' models and parameter counts; a Megatron-LM
// command line gives the scenario a user would write by hand for the same run.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../common/scratch.hpp"
#include "stepsim/driver/simulate.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/import.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/workload/params.hpp"

namespace sc = stepsim::scenarios;

namespace {

const std::string kData = STEPSIM_HF_DATA;

sc::Scenario with_model(const std::string& model_json) {
  return sc::load_scenario_text(R"({"model": )" + model_json +
                                R"(, "cluster": {"preset": "dgx-h100", "nodes": 1}, "training": {"seq_len": 4096, "global_batch": 8}})");
}

// Every parameter of the model (one rank with TP 1 and PP 1 holds them all).
double total_params(const sc::Scenario& s) { return stepsim::workload::stage_params(s, 0); }

sc::Imported import_file(const std::string& name) {
  const std::string file = kData + "/" + name + "/config.json";
  return sc::model_from_hf_config(sc::read_input_file(file), file);
}

// A Megatron command line, `base` then `more`, imported for one node.
sc::Imported import_on_one_node(const std::vector<std::string>& base, const std::vector<std::string>& more) {
  auto args = base;
  args.insert(args.end(), more.begin(), more.end());
  sc::MegatronImportOptions o;
  o.nodes = 1;
  return sc::scenario_from_megatron_args(args, o);
}

}  // namespace

TEST_CASE("import hf: Llama 3.1 8B's config.json is the llama-3.1-8b preset") {
  const auto imported = import_file("llama-3.1-8b");
  CHECK(imported.warnings.empty());
  const auto hf = with_model(imported.json);
  const auto preset = with_model(R"("llama-3.1-8b")");
  const auto &a = hf.model, &b = preset.model;
  CHECK(a.layers == b.layers);
  CHECK(a.hidden == b.hidden);
  CHECK(a.ffn_hidden == b.ffn_hidden);
  CHECK(a.heads == b.heads);
  CHECK(a.kv_heads == b.kv_heads);
  CHECK(a.vocab == b.vocab);
  CHECK(a.tied_embeddings == b.tied_embeddings);
  CHECK(a.mlp == b.mlp);
  CHECK(a.norm == b.norm);
  CHECK(a.bias == b.bias);
  CHECK(total_params(hf) == total_params(preset));
  CHECK(total_params(hf) == 8030261248.0);  // Llama 3.1 8B: 8.03 B
}

TEST_CASE("import hf: Qwen2-7B's parameters, without the QKV biases it warns about") {
  const auto imported = import_file("qwen2-7b");
  REQUIRE(imported.warnings.size() == 1);
  CHECK(imported.warnings[0] == "attention biases: the Q, K and V biases are not modelled (4608 parameters per layer)");
  // Embedding and output 2 x 152064 x 3584; per layer q, o 3584^2 each, k, v 3584 x 512 each, MLP
  // 3 x 3584 x 18944, two norms; the final norm: 7,615,487,488 = the published 7,615,616,512
  // less 28 x 4,608 bias parameters.
  CHECK(total_params(with_model(imported.json)) == 7615487488.0);
}

TEST_CASE("import hf: Qwen3-8B has per-head query and key norms, and the published parameter count") {
  const auto imported = import_file("qwen3-8b");
  CHECK(imported.warnings.empty());
  const auto s = with_model(imported.json);
  CHECK(s.model.qk_norm);
  CHECK(s.model.kv_heads == 8);
  CHECK_FALSE(s.model.tied_embeddings);
  // Embedding and output 2 x 151936 x 4096 = 1,244,659,712; per layer q, o 4096^2 each, k, v
  // 4096 x 1024 each (41,943,040), MLP 3 x 4096 x 12288 (150,994,944), two RMSNorms (8,192) and the
  // query and key RMSNorms over head_dim 128 (256): 192,946,432, x 36 = 6,946,071,552; the final
  // norm 4,096: 8,190,735,360, Qwen3-8B's published 8.19 B.
  CHECK(total_params(s) == 8190735360.0);
  auto without = s;
  without.model.qk_norm = false;
  CHECK(total_params(s) - total_params(without) == 36.0 * 2.0 * 128.0);
  // OLMo 2's norms span all heads: mapped to per-head norms, with a warning that counts the weights.
  const auto olmo = sc::model_from_hf_config(R"({"model_type": "olmo2", "num_hidden_layers": 2, "hidden_size": 512,
      "intermediate_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000})", "c.json");
  CHECK(with_model(olmo.json).model.qk_norm);
  CHECK(olmo.warnings == std::vector<std::string>{
                             "q_norm/k_norm: olmo2 normalizes all query heads (512) and all key heads (128) at once; priced as per-head "
                             "norms over the same elements (model.qk_norm: the same activations and kernel bytes, 512 fewer norm weights "
                             "per layer)"});
}

TEST_CASE("import hf: GPT-2 reads n_layer / n_embd / n_head, GeLU, LayerNorm, biases, tied embeddings") {
  const auto imported = import_file("gpt2");
  CHECK(imported.warnings.empty());
  const auto m = with_model(imported.json).model;
  CHECK(m.layers == 12);
  CHECK(m.hidden == 768);
  CHECK(m.ffn_hidden == 3072);
  CHECK(m.heads == 12);
  CHECK(m.kv_heads == 12);
  CHECK(m.vocab == 50257);
  CHECK(m.tied_embeddings);
  CHECK(m.mlp == sc::MlpKind::Gelu);
  CHECK(m.norm == sc::NormKind::LayerNorm);
  CHECK(m.bias);
}

TEST_CASE("import hf: unknown settings warn, missing or malformed ones are errors naming the field") {
  const auto moe = sc::model_from_hf_config(R"({"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 64,
      "intermediate_size": 128, "num_attention_heads": 4, "vocab_size": 100, "num_local_experts": 8})", "c.json");
  CHECK(moe.warnings == std::vector<std::string>{
                            "model_type: \"mixtral\" is not one stepsim knows (llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, olmo2, gpt2, "
                            "gpt_neox); read as a Llama-like config",
                            "num_local_experts: not modelled (ignored)"});
  CHECK_THROWS_WITH_AS((void)sc::model_from_hf_config(R"({"model_type": "llama", "hidden_size": 64})", "c.json"),
                       "c.json.num_hidden_layers: is required", stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS((void)sc::model_from_hf_config(R"({"model_type": "llama", "num_hidden_layers": -2})", "c.json"),
                       "c.json.num_hidden_layers: must be a positive integer, got -2", stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS((void)sc::model_from_hf_config("[1]", "c.json"), "c.json: must hold a JSON object (a Hugging Face config.json)",
                       stepsim::ScenarioError);
}

TEST_CASE("a scenario names a Hugging Face config as its model, relative to its own folder, with overrides") {
  const auto dir = test_support::fresh_dir("import", "hf");
  std::filesystem::create_directories(dir / "models");
  std::filesystem::copy_file(kData + "/llama-3.1-8b/config.json", dir / "models" / "config.json",
                             std::filesystem::copy_options::overwrite_existing);
  const auto file = (dir / "s.json").string();
  std::ofstream(file) << R"({"model": {"hf_config": "models/config.json", "layers": 16},
    "cluster": {"preset": "dgx-h100", "nodes": 1}, "training": {"seq_len": 4096, "global_batch": 8}})";
  const auto s = sc::load_scenario_file(file);
  CHECK(s.model.layers == 16);
  CHECK(s.model.hidden == 4096);
  CHECK(s.model.kv_heads == 8);
  CHECK_THROWS_WITH_AS((void)with_model(R"({"hf_config": 3})"), "model.hf_config: must be the path of a config.json", stepsim::ScenarioError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("import megatron: a Llama 3.1 8B command line is the hand-written scenario of the same run") {
  const auto args = sc::split_arguments(R"(--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 \
    --group-query-attention --num-query-groups 8 --vocab-size 128256 --swiglu --normalization RMSNorm \
    --disable-bias-linear --untie-embeddings-and-output-weights   # Llama's shape
    --seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size=1024 \
    --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer \
    --overlap-grad-reduce --overlap-param-gather --bf16 --lr 3e-4 --train-iters 100 --position-embedding-type rope \
    --data-path "/data/my corpus" --use-mcore-models)");
  sc::MegatronImportOptions o;
  o.nodes = 2;
  const auto imported = sc::scenario_from_megatron_args(args, o);
  CHECK(imported.warnings.empty());
  const auto mine = sc::load_scenario_text(imported.json);
  const auto hand = sc::load_scenario_text(R"({"name": "megatron-import", "model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 2},
      "training": {"seq_len": 8192, "global_batch": 1024, "micro_batch": 1, "train_tokens": 838860800},
      "parallel": {"tp": 4, "pp": 2, "sequence_parallel": true, "distributed_optimizer": true,
                   "overlap_grad_reduce": true, "overlap_param_gather": true}})");
  CHECK(total_params(mine) == total_params(hand));
  CHECK(mine.parallel.dp == 2);
  stepsim::driver::SimulateOptions so;
  so.engine = stepsim::sim::EngineKind::Analytic;
  const auto a = stepsim::driver::simulate(mine, so).report;
  const auto b = stepsim::driver::simulate(hand, so).report;
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.peak_memory_bytes == b.peak_memory_bytes);
  CHECK(a.time_to_train_s == b.time_to_train_s);
}

TEST_CASE("import megatron: Megatron's defaults, warnings for what is not modelled, errors naming the argument") {
  const std::vector<std::string> base{"--num-layers", "4", "--hidden-size", "256", "--num-attention-heads", "8", "--vocab-size", "1000",
                                      "--seq-length", "512", "--global-batch-size", "8"};
  auto args = base;
  args.insert(args.end(), {"--fp8-format", "hybrid", "--moe-router-topk", "2", "--num-layers-per-virtual-pipeline-stage", "1",
                           "--pipeline-model-parallel-size", "2"});
  const auto imported = sc::scenario_from_megatron_args(args, {});
  const auto s = sc::load_scenario_text(imported.json);
  CHECK_FALSE(s.parallel.sequence_parallel);
  CHECK_FALSE(s.parallel.shards_optimizer());
  CHECK(s.model.tied_embeddings);
  CHECK(s.model.bias);
  CHECK(s.model.mlp == sc::MlpKind::Gelu);
  CHECK(s.model.norm == sc::NormKind::LayerNorm);
  CHECK(s.model.ffn_hidden == 1024);
  CHECK(s.parallel.vpp == 2);
  CHECK(s.parallel.schedule == sc::Schedule::Interleaved);
  CHECK(s.training.precision == sc::TrainingPrecision::Fp8Delayed);
  CHECK(s.training.fp8_amax_history_len == 1);
  CHECK(imported.warnings == std::vector<std::string>{
                                 "--moe-router-topk 2: not modelled (ignored)",
                                 "the world size is not in Megatron's arguments: 1 node(s) of dgx-h100 (pass --nodes for the run's data parallelism)"});
  // SwiGLU without an FFN size: 2/3 of 4h rounded down to a multiple of 64.
  CHECK_FALSE(s.model.qk_norm);
  auto qk = base;
  qk.push_back("--qk-layernorm");
  const auto with_qk = sc::scenario_from_megatron_args(qk, {});
  CHECK(sc::load_scenario_text(with_qk.json).model.qk_norm);
  CHECK(with_qk.warnings.size() == 1);  // the world size only
  auto instances = base;
  instances.insert(instances.end(), {"--use-distributed-optimizer", "--num-distributed-optimizer-instances", "2"});
  sc::MegatronImportOptions one_node;
  one_node.nodes = 1;  // DP 8
  const auto with_instances = sc::load_scenario_text(sc::scenario_from_megatron_args(instances, one_node).json);
  CHECK(with_instances.parallel.distributed_optimizer_instances == 2);
  CHECK(with_instances.parallel.shard_group_size() == 4);
  auto swiglu = base;
  swiglu.push_back("--swiglu");
  CHECK(sc::load_scenario_text(sc::scenario_from_megatron_args(swiglu, {}).json).model.ffn_hidden == 640);
  auto no_vocab = base;
  no_vocab.erase(no_vocab.begin() + 6, no_vocab.begin() + 8);
  CHECK_THROWS_WITH_AS((void)sc::scenario_from_megatron_args(no_vocab, {}),
                       "--vocab-size: is required: the vocabulary comes from the tokenizer, which the import cannot read", stepsim::ScenarioError);
  auto bad = base;
  bad.insert(bad.end(), {"--tensor-model-parallel-size", "two"});
  CHECK_THROWS_WITH_AS((void)sc::scenario_from_megatron_args(bad, {}), "--tensor-model-parallel-size: must be a positive integer, got \"two\"",
                       stepsim::ScenarioError);
}

TEST_CASE("import megatron: --fp8-format turns FP8 on, --fp8-recipe picks delayed, tensorwise (current) or mxfp8") {
  const std::vector<std::string> base{"--num-layers", "4", "--hidden-size", "256", "--num-attention-heads", "8", "--vocab-size", "1000",
                                      "--seq-length", "512", "--global-batch-size", "8"};
  const auto import = [&](std::vector<std::string> extra, const std::string& cluster = "dgx-h100") {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    sc::MegatronImportOptions o;
    o.cluster = cluster;
    return sc::load_scenario_text(sc::scenario_from_megatron_args(args, o).json).training;
  };
  CHECK(import({}).precision == sc::TrainingPrecision::Bf16);
  const auto delayed = import({"--fp8-format", "hybrid", "--fp8-recipe", "delayed", "--fp8-amax-history-len", "1024"});
  CHECK(delayed.precision == sc::TrainingPrecision::Fp8Delayed);
  CHECK(delayed.fp8_amax_history_len == 1024);
  CHECK(import({"--fp8-format", "e4m3", "--fp8-recipe", "tensorwise"}).precision == sc::TrainingPrecision::Fp8Current);
  CHECK(import({"--fp8-format", "e4m3", "--fp8-recipe", "mxfp8"}, "dgx-b200").precision == sc::TrainingPrecision::Mxfp8);
  CHECK_THROWS_WITH_AS((void)import({"--fp8-format", "e4m3", "--fp8-recipe", "mxfp8"}),
                       "training.precision: mxfp8 needs a Blackwell GPU (h100-sxm-80gb is hopper)", stepsim::ScenarioError);
  auto blockwise = base;
  blockwise.insert(blockwise.end(), {"--fp8-format", "e4m3", "--fp8-recipe", "blockwise"});
  CHECK_THROWS_WITH_AS((void)sc::scenario_from_megatron_args(blockwise, {}),
                       "--fp8-recipe: \"blockwise\" is not modelled (delayed, tensorwise or mxfp8)", stepsim::ScenarioError);
}

TEST_CASE("import megatron: FP8 parameters, the interleaved micro-batch group and the fused cross-entropy") {
  const std::vector<std::string> args{"--num-layers", "12", "--hidden-size", "512", "--num-attention-heads", "8", "--vocab-size", "1000",
                                      "--seq-length", "1024", "--global-batch-size", "5", "--pipeline-model-parallel-size", "4",
                                      "--num-layers-per-virtual-pipeline-stage", "1", "--microbatch-group-size-per-virtual-pipeline-stage",
                                      "5", "--fp8-format", "hybrid", "--fp8-recipe", "tensorwise", "--fp8-param-gather",
                                      "--cross-entropy-loss-fusion"};
  sc::MegatronImportOptions o;
  o.nodes = 1;
  o.cluster = "dgx-h100";
  const auto imported = sc::scenario_from_megatron_args(args, o);
  for (const auto& w : imported.warnings) CHECK(w.find("not modelled") == std::string::npos);
  auto with_dp = sc::load_scenario_text(imported.json, {sc::parse_override("cluster.gpus_per_node=4")});
  CHECK(with_dp.parallel.vpp == 3);
  CHECK(with_dp.parallel.microbatch_group() == 5);
  CHECK(with_dp.training.fp8_params);
  CHECK(with_dp.software.fused_cross_entropy);
  // The interleaved schedule overlaps its pipeline sends unless --no-overlap-p2p-communication.
  CHECK(with_dp.parallel.overlap_p2p_comm);
  auto blocking = args;
  blocking.push_back("--no-overlap-p2p-communication");
  const auto no_overlap = sc::scenario_from_megatron_args(blocking, o);
  for (const auto& w : no_overlap.warnings) CHECK(w.find("not modelled") == std::string::npos);
  CHECK_FALSE(sc::load_scenario_text(no_overlap.json, {sc::parse_override("cluster.gpus_per_node=4")}).parallel.overlap_p2p_comm);
  auto te = args;
  te.insert(te.end(), {"--cross-entropy-fusion-impl", "te"});
  CHECK_THROWS_WITH_AS((void)sc::scenario_from_megatron_args(te, o),
                       "--cross-entropy-fusion-impl: \"te\" is not modelled (native; Megatron-LM's arguments.py rejects te)",
                       stepsim::ScenarioError);
}

TEST_CASE("split_arguments: quotes, continuations and comments") {
  CHECK(sc::split_arguments("a 'b c' \"d\"e \\\n f # g h\n i") == std::vector<std::string>{"a", "b c", "de", "f", "i"});
  CHECK_THROWS_WITH_AS((void)sc::split_arguments("a 'b"), "arguments: an unclosed ' quote", stepsim::ScenarioError);
}

TEST_CASE("import megatron: sharding, gradient dtype, recomputation options and optimizer offload") {
  const std::vector<std::string> base{"--num-layers", "8", "--hidden-size", "256", "--num-attention-heads", "8", "--vocab-size", "1000",
                                      "--seq-length", "512", "--global-batch-size", "8"};
  auto with = [&](const std::vector<std::string>& more) {
    const auto imported = import_on_one_node(base, more);
    return std::make_pair(sc::load_scenario_text(imported.json), imported.warnings);
  };
  CHECK(with({}).first.parallel.sharding == sc::Sharding::None);
  CHECK(with({}).first.training.grads_in_fp32);
  CHECK(with({"--use-distributed-optimizer"}).first.parallel.sharding == sc::Sharding::Optimizer);
  CHECK(with({"--use-megatron-fsdp"}).first.parallel.sharding == sc::Sharding::OptimizerGradsParams);
  CHECK(with({"--use-megatron-fsdp", "--data-parallel-sharding-strategy", "optim_grads"}).first.parallel.sharding ==
        sc::Sharding::OptimizerGrads);
  CHECK_THROWS_WITH_AS(with({"--use-megatron-fsdp", "--data-parallel-sharding-strategy", "zero9"}),
                       doctest::Contains("--data-parallel-sharding-strategy"), stepsim::ScenarioError);
  CHECK_FALSE(with({"--grad-reduce-in-bf16"}).first.training.grads_in_fp32);
  CHECK_FALSE(with({"--main-grads-dtype", "bf16"}).first.training.grads_in_fp32);
  CHECK(with({"--accumulate-allreduce-grads-in-fp32"}).first.training.grads_in_fp32);

  const auto [full, w1] = with({"--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", "2"});
  CHECK(full.training.recompute == sc::Recompute::Full);
  CHECK(full.training.recompute_method == sc::RecomputeMethod::Block);
  CHECK(full.training.recompute_num_layers == 2);
  CHECK(w1.empty());
  const auto [sel, w2] = with({"--recompute-granularity", "selective", "--recompute-modules", "core_attn", "mlp", "--bf16"});
  CHECK(sel.training.recompute_modules == sc::RecomputeModules{true, true, false});
  CHECK(w2.empty());
  const auto [none, w3] = with({"--recompute-method", "uniform"});
  CHECK(none.training.recompute == sc::Recompute::None);
  CHECK(w3.size() == 1);

  CHECK(with({"--optimizer-cpu-offload"}).first.training.optimizer_offload_fraction == 1.0);
  CHECK(with({"--optimizer-cpu-offload", "--optimizer-offload-fraction", "0.5"}).first.training.optimizer_offload_fraction == 0.5);
  CHECK(with({}).first.training.optimizer_offload_fraction == 0.0);
}

TEST_CASE("import megatron: --cp-comm-type takes one value or the same one per layer, all_gather under either spelling") {
  const std::vector<std::string> base{"--num-layers", "4", "--hidden-size", "256", "--num-attention-heads", "8", "--vocab-size", "1000",
                                      "--seq-length", "512", "--global-batch-size", "8", "--context-parallel-size", "2"};
  auto with = [&](const std::vector<std::string>& more) {
    const auto imported = import_on_one_node(base, more);
    for (const auto& w : imported.warnings) CHECK(w.find("cp-comm-type") == std::string::npos);
    return sc::load_scenario_text(imported.json).parallel.cp_comm_type;
  };
  CHECK(with({}) == sc::CpCommType::P2P);
  CHECK(with({"--cp-comm-type", "a2a"}) == sc::CpCommType::A2A);
  CHECK(with({"--cp-comm-type", "allgather"}) == sc::CpCommType::AllGather);
  CHECK(with({"--cp-comm-type", "all_gather", "all_gather", "all_gather", "all_gather", "--bf16"}) == sc::CpCommType::AllGather);
  CHECK_THROWS_WITH_AS(with({"--cp-comm-type", "p2p", "a2a", "p2p", "a2a"}),
                       "--cp-comm-type: a different type per layer is not modelled (one type for every layer)", stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(with({"--cp-comm-type", "ring"}), "--cp-comm-type: unknown value \"ring\" (p2p, a2a, allgather or a2a+p2p)",
                       stepsim::ScenarioError);
  // Hierarchical: all-to-all within pairs, the ring across them; the sizes are needed.
  CHECK(with({"--cp-comm-type", "a2a+p2p", "--hierarchical-context-parallel-sizes", "2", "1"}) == sc::CpCommType::A2AP2P);
  CHECK_THROWS_WITH_AS(with({"--cp-comm-type", "a2a+p2p"}), doctest::Contains("parallel.hierarchical_cp_sizes: is needed"),
                       stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(with({"--cp-comm-type", "a2a+p2p", "--hierarchical-context-parallel-sizes", "2", "x"}),
                       "--hierarchical-context-parallel-sizes: must be positive integers, got \"x\"", stepsim::ScenarioError);
}

TEST_CASE("import megatron: the pipeline split options map onto the layout fields, without warnings") {
  // NVIDIA's Llama 3.1 405B recipe on 1,024 H100 as a Megatron command line: the example scenario.
  const auto args = sc::split_arguments(R"(--num-layers 126 --hidden-size 16384 --ffn-hidden-size 53248 --num-attention-heads 128 \
    --group-query-attention --num-query-groups 8 --vocab-size 128256 --swiglu --normalization RMSNorm \
    --disable-bias-linear --untie-embeddings-and-output-weights --seq-length 8192 --micro-batch-size 1 --global-batch-size 512 \
    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 --context-parallel-size 2 \
    --num-layers-per-virtual-pipeline-stage 2 --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split \
    --sequence-parallel --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap)");
  sc::MegatronImportOptions o;
  o.nodes = 128;
  const auto imported = sc::scenario_from_megatron_args(args, o);
  CHECK(imported.warnings.empty());
  const auto mine = sc::load_scenario_text(imported.json);
  const auto hand = sc::load_scenario_file(std::string(STEPSIM_SOURCE_DIR) +
                                           "/scenarios/examples/llama31-405b/nvidia-h100-1024gpu-tp8-pp8-vp8-cp2.json");
  CHECK(mine.parallel.vpp == 8);
  CHECK(mine.parallel.account_for_embedding_in_pipeline_split);
  CHECK(mine.parallel.account_for_loss_in_pipeline_split);
  const auto a = sc::pipeline_layout(mine), b = sc::pipeline_layout(hand);
  for (std::int64_t i = 0; i < 8; ++i)
    for (std::int64_t j = 0; j < 8; ++j) CHECK(a.layers(i, j) == b.layers(i, j));
  CHECK(total_params(mine) == total_params(hand));

  // An explicit layout gives vpp and the interleaved schedule; uneven stages with virtual stages per rank.
  const auto layout = sc::split_arguments(R"(--num-layers 32 --hidden-size 256 --num-attention-heads 8 --vocab-size 1000 \
    --seq-length 512 --global-batch-size 16 --pipeline-model-parallel-size 4 --pipeline-model-parallel-layout "E|t*8|t*8|t*8|t*8|||L")");
  const auto l = sc::load_scenario_text(sc::scenario_from_megatron_args(layout, {}).json, {sc::parse_override("cluster.nodes=1")});
  CHECK(l.parallel.vpp == 2);
  CHECK(l.parallel.schedule == sc::Schedule::Interleaved);
  CHECK(sc::pipeline_layout(l).layers(1, 1) == 0);
  const auto uneven = sc::split_arguments(R"(--num-layers 32 --hidden-size 256 --num-attention-heads 8 --vocab-size 1000 \
    --seq-length 512 --global-batch-size 16 --pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 \
    --decoder-first-pipeline-num-layers 6 --decoder-last-pipeline-num-layers 6)");
  const auto imported_uneven = sc::scenario_from_megatron_args(uneven, {});
  CHECK(imported_uneven.warnings.size() == 1);  // the world size only
  const auto u = sc::load_scenario_text(imported_uneven.json);
  CHECK(sc::pipeline_layout(u).layers(1, 0) == 5);
  CHECK(sc::pipeline_layout(u).layers(0, 1) == 3);
}
