// Importers of Hugging Face configs and Megatron-LM command lines.

#include "stepsim/scenarios/import.hpp"

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "json_text.hpp"

namespace stepsim::scenarios {

namespace {

using OrderedJson = nlohmann::ordered_json;
using Json = nlohmann::json;

// Families of Hugging Face configs by model_type.
enum class HfFamily { Gated, Gpt2, NeoX };

// How a family normalizes the queries and keys: not at all, per head over the head dimension
// (stepsim's model.qk_norm), or over all heads of the projection at once.
enum class HfQkNorm { None, PerHead, FullWidth };

struct HfType {
  const char* model_type;
  HfFamily family;
  bool tied_default;  // tie_word_embeddings when absent (the config class's default)
  bool bias;          // linear layers with biases (stepsim's model.bias: all of them)
  HfQkNorm qk_norm;   // q_norm and k_norm of the attention
};

// The config classes of transformers: LlamaConfig, MistralConfig, Qwen2Config (tie false),
// GemmaConfig and Gemma2Config (tie true), GPT2Config (PretrainedConfig's default: tie true),
// GPTNeoXConfig (tie false, biases), Qwen3Config (tie false; q_norm and k_norm RMSNorms over
// head_dim), Gemma3TextConfig (tie true; the same per-head norms), Olmo2Config (tie false; q_norm
// over all query heads, k_norm over all key heads).
constexpr HfType kHfTypes[] = {
    {"llama", HfFamily::Gated, false, false, HfQkNorm::None},
    {"mistral", HfFamily::Gated, false, false, HfQkNorm::None},
    {"qwen2", HfFamily::Gated, false, false, HfQkNorm::None},
    {"qwen3", HfFamily::Gated, false, false, HfQkNorm::PerHead},
    {"gemma", HfFamily::Gated, true, false, HfQkNorm::None},
    {"gemma2", HfFamily::Gated, true, false, HfQkNorm::None},
    {"gemma3_text", HfFamily::Gated, true, false, HfQkNorm::PerHead},
    {"olmo2", HfFamily::Gated, false, false, HfQkNorm::FullWidth},
    {"gpt2", HfFamily::Gpt2, true, true, HfQkNorm::None},
    {"gpt_neox", HfFamily::NeoX, false, true, HfQkNorm::None},
};

// Fields that do not change the cost of a training step.
const std::set<std::string>& hf_cost_free() {
  static const std::set<std::string> s{
      "_name_or_path", "architectures", "model_type", "torch_dtype", "transformers_version", "bos_token_id", "eos_token_id",
      "pad_token_id", "initializer_range", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "use_cache",
      "max_position_embeddings", "n_positions", "n_ctx", "rope_theta", "rope_scaling", "rotary_emb_base", "attention_dropout",
      "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop", "summary_type", "summary_use_proj", "summary_activation",
      "summary_proj_to_labels", "summary_first_dropout", "task_specific_params", "pretraining_tp", "scale_attn_weights",
      "reorder_and_upcast_attn", "scale_attn_by_inverse_layer_idx", "classifier_dropout", "tokenizer_class", "id2label",
      "label2id", "max_window_layers", "use_sliding_window", "attention_bias", "mlp_bias", "head_dim", "hidden_activation",
      "hidden_act", "activation_function", "tie_word_embeddings", "sliding_window", "n_inner", "query_pre_attn_scalar"};
  return s;
}

const Json* field(const Json& j, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (auto it = j.find(n); it != j.end() && !it->is_null()) return &*it;
  return nullptr;
}

std::int64_t positive(const Json& j, std::initializer_list<const char*> names, const std::string& origin) {
  const Json* v = field(j, names);
  if (v == nullptr) throw ScenarioError(origin + "." + *names.begin(), "is required");
  if (!v->is_number_integer() || v->get<std::int64_t>() < 1)
    throw ScenarioError(origin + "." + *names.begin(), "must be a positive integer, got " + v->dump());
  return v->get<std::int64_t>();
}

}  // namespace

Imported model_from_hf_config(const std::string& json_text, const std::string& origin) {
  const Json j = detail::parse_json_text(json_text, origin);
  if (!j.is_object()) throw ScenarioError(origin, "must hold a JSON object (a Hugging Face config.json)");
  Imported out;
  const std::string type = j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  const HfType* t = nullptr;
  for (const auto& k : kHfTypes)
    if (type == k.model_type) t = &k;
  if (t == nullptr) {
    t = &kHfTypes[0];
    out.warnings.push_back("model_type: \"" + type + "\" is not one stepsim knows (llama, mistral, qwen2, qwen3, gemma, gemma2, " +
                           "gemma3_text, olmo2, gpt2, gpt_neox); read as a Llama-like config");
  }
  const std::int64_t layers = positive(j, {"num_hidden_layers", "n_layer"}, origin);
  const std::int64_t hidden = positive(j, {"hidden_size", "n_embd"}, origin);
  const std::int64_t heads = positive(j, {"num_attention_heads", "n_head"}, origin);
  const std::int64_t kv_heads = field(j, {"num_key_value_heads"}) ? positive(j, {"num_key_value_heads"}, origin) : heads;
  const std::int64_t vocab = positive(j, {"vocab_size"}, origin);
  std::int64_t ffn = 4 * hidden;
  if (field(j, {"intermediate_size", "n_inner"}) != nullptr) ffn = positive(j, {"intermediate_size", "n_inner"}, origin);
  else if (t->family == HfFamily::Gated) throw ScenarioError(origin + ".intermediate_size", "is required");
  bool tied = t->tied_default;
  if (const Json* v = field(j, {"tie_word_embeddings"})) {
    if (!v->is_boolean()) throw ScenarioError(origin + ".tie_word_embeddings", "must be true or false");
    tied = v->get<bool>();
  }
  std::string act = "silu";
  if (const Json* v = field(j, {"hidden_activation", "hidden_act", "activation_function"}); v != nullptr && v->is_string())
    act = v->get<std::string>();
  if (t->family == HfFamily::Gated && act != "silu" && act != "swish")
    out.warnings.push_back("hidden_act: \"" + act + "\" in a gated MLP is priced as SwiGLU (the same GEMM shapes)");
  if (t->family != HfFamily::Gated && act.rfind("gelu", 0) != 0)
    out.warnings.push_back("activation_function: \"" + act + "\" is priced as GeLU");
  if (const Json* v = field(j, {"head_dim"}); v != nullptr && v->is_number_integer() && v->get<std::int64_t>() * heads != hidden)
    out.warnings.push_back("head_dim: " + v->dump() + " x " + std::to_string(heads) + " heads differs from hidden_size " +
                           std::to_string(hidden) + "; stepsim assumes head_dim = hidden_size / heads");
  const bool attention_bias = field(j, {"attention_bias"}) != nullptr && j["attention_bias"].is_boolean() && j["attention_bias"].get<bool>();
  if (type == "qwen2" || (!t->bias && attention_bias))
    out.warnings.push_back("attention biases: the Q, K and V biases are not modelled (" + std::to_string(hidden + 2 * kv_heads * (hidden / heads)) +
                           " parameters per layer)");
  if (const Json* v = field(j, {"sliding_window"});
      v != nullptr && v->is_number_integer() && !(j.contains("use_sliding_window") && j["use_sliding_window"] == false))
    out.warnings.push_back("sliding_window: " + v->dump() + "-token sliding-window attention is not modelled (attention over the whole sequence)");
  if (t->qk_norm == HfQkNorm::FullWidth)
    out.warnings.push_back("q_norm/k_norm: " + type + " normalizes all query heads (" + std::to_string(hidden) + ") and all key heads (" +
                           std::to_string(kv_heads * (hidden / heads)) + ") at once; priced as per-head norms over the same elements (" +
                           "model.qk_norm: the same activations and kernel bytes, " + std::to_string(hidden + kv_heads * (hidden / heads) -
                           2 * (hidden / heads)) + " fewer norm weights per layer)");
  for (auto it = j.begin(); it != j.end(); ++it) {
    static const std::set<std::string> mapped{"num_hidden_layers", "n_layer", "hidden_size", "n_embd", "num_attention_heads", "n_head",
                                              "num_key_value_heads", "vocab_size", "intermediate_size"};
    if (mapped.count(it.key()) != 0 || hf_cost_free().count(it.key()) != 0) continue;
    out.warnings.push_back(it.key() + ": not modelled (ignored)");
  }

  OrderedJson m;
  std::string name = j.contains("_name_or_path") && j["_name_or_path"].is_string() ? j["_name_or_path"].get<std::string>() : "";
  m["name"] = name.empty() ? (type.empty() ? std::string("hf-model") : type) : name;
  m["source"] = "Hugging Face config " + origin;
  m["layers"] = layers;
  m["hidden"] = hidden;
  m["ffn_hidden"] = ffn;
  m["heads"] = heads;
  m["kv_heads"] = kv_heads;
  m["vocab"] = vocab;
  m["tied_embeddings"] = tied;
  m["mlp"] = t->family == HfFamily::Gated ? "swiglu" : "gelu";
  m["norm"] = t->family == HfFamily::Gated ? "rmsnorm" : "layernorm";
  m["bias"] = t->bias;
  if (t->qk_norm != HfQkNorm::None) m["qk_norm"] = true;
  out.json = m.dump(2);
  return out;
}

std::vector<std::string> split_arguments(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  bool have = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      else cur += c;
      continue;
    }
    if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (c == '#' && !have) {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      have = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (have) out.push_back(cur);
      cur.clear();
      have = false;
      continue;
    }
    cur += c;
    have = true;
  }
  if (quote != 0) throw ScenarioError("arguments", std::string("an unclosed ") + quote + " quote");
  if (have) out.push_back(cur);
  return out;
}

namespace {

// Megatron-LM arguments that take a value, and flags, that do not change the cost of a step.
const std::set<std::string>& megatron_cost_free() {
  static const std::set<std::string> s{
      "--lr", "--min-lr", "--lr-decay-style", "--lr-decay-iters", "--lr-decay-samples", "--lr-warmup-iters",
      "--lr-warmup-samples", "--lr-warmup-fraction", "--weight-decay", "--clip-grad", "--adam-beta1", "--adam-beta2",
      "--adam-eps", "--init-method-std", "--seed", "--data-path", "--split", "--save", "--load", "--log-interval",
      "--eval-iters", "--eval-interval", "--save-interval", "--tensorboard-dir", "--tokenizer-type", "--tokenizer-model",
      "--position-embedding-type", "--rotary-base", "--rotary-percent", "--max-position-embeddings", "--attention-dropout",
      "--hidden-dropout", "--distributed-backend", "--transformer-impl", "--wandb-project", "--wandb-exp-name",
      "--exit-interval", "--exit-duration-in-mins", "--make-vocab-size-divisible-by", "--distributed-timeout-minutes",
      "--norm-epsilon", "--data-cache-path", "--vocab-file", "--merge-file", "--num-workers", "--use-rotary-position-embeddings",
      "--no-masked-softmax-fusion", "--use-mcore-models", "--mock-data", "--no-load-optim", "--no-load-rng", "--bf16",
      "--use-flash-attn", "--log-throughput", "--log-timers-to-tensorboard", "--no-bias-swiglu-fusion", "--no-rope-fusion",
      "--manual-gc", "--ckpt-format", "--dist-ckpt-strictness", "--attention-softmax-in-fp32", "--accumulate-allreduce-grads-in-fp32",
      "--rotary-seq-len-interpolation-factor", "--use-rope-scaling", "--attention-backend", "--timing-log-level", "--micro-batch-size",
      "--global-batch-size", "--seq-length"};
  return s;
}

const std::set<std::string>& megatron_flags() {
  static const std::set<std::string> s{
      "--swiglu", "--disable-bias-linear", "--untie-embeddings-and-output-weights", "--group-query-attention", "--sequence-parallel",
      "--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap", "--recompute-activations",
      "--bf16", "--fp16", "--use-flash-attn", "--use-mcore-models", "--mock-data", "--no-load-optim", "--no-load-rng",
      "--log-throughput", "--log-timers-to-tensorboard", "--no-bias-swiglu-fusion", "--no-rope-fusion", "--manual-gc",
      "--attention-softmax-in-fp32", "--accumulate-allreduce-grads-in-fp32", "--use-rope-scaling", "--no-masked-softmax-fusion",
      "--use-rotary-position-embeddings", "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
      "--overlap-p2p-communication", "--no-overlap-p2p-communication", "--no-gradient-accumulation-fusion",
      "--cross-entropy-loss-fusion", "--grad-reduce-in-bf16",
      "--optimizer-cpu-offload", "--use-megatron-fsdp", "--fp8-param-gather", "--qk-layernorm"};
  return s;
}

// Arguments that take a list of values (nargs="*" / "+").
const std::set<std::string>& megatron_list_args() {
  static const std::set<std::string> s{"--recompute-modules", "--cp-comm-type", "--hierarchical-context-parallel-sizes"};
  return s;
}

}  // namespace

Imported scenario_from_megatron_args(const std::vector<std::string>& args, const MegatronImportOptions& options) {
  Imported out;
  std::map<std::string, std::string> values;
  std::set<std::string> flags;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.rfind("--", 0) != 0) throw ScenarioError(a, "expected a Megatron argument (--name [value])");
    std::string value;
    bool has_value = false;
    if (const auto eq = a.find('='); eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    } else if (megatron_list_args().count(a) != 0) {
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) value += (value.empty() ? "" : " ") + args[++i];
      has_value = true;
    } else if (megatron_flags().count(a) == 0 && i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
      value = args[++i];
      has_value = true;
    }
    if (has_value) values[a] = value;
    else flags.insert(a);
  }
  const auto integer = [&](const std::string& name) -> std::optional<std::int64_t> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(it->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != it->second.size() || v < 1) throw ScenarioError(name, "must be a positive integer, got \"" + it->second + "\"");
    return v;
  };
  const auto required = [&](const std::string& name) {
    const auto v = integer(name);
    if (!v) throw ScenarioError(name, "is required");
    return *v;
  };
  const auto has = [&](const std::string& name) { return flags.count(name) != 0; };

  const std::int64_t layers = required("--num-layers");
  const std::int64_t hidden = required("--hidden-size");
  const std::int64_t heads = required("--num-attention-heads");
  const auto vocab = integer("--vocab-size");
  if (!vocab) throw ScenarioError("--vocab-size", "is required: the vocabulary comes from the tokenizer, which the import cannot read");
  const bool swiglu = has("--swiglu");
  // Megatron's default FFN size: 4h, or with SwiGLU 2/3 of it rounded down to a multiple of 64.
  const std::int64_t ffn = integer("--ffn-hidden-size").value_or(swiglu ? (4 * hidden * 2 / 3) / 64 * 64 : 4 * hidden);
  std::string norm = "layernorm";
  if (auto it = values.find("--normalization"); it != values.end()) {
    if (it->second == "RMSNorm") norm = "rmsnorm";
    else if (it->second != "LayerNorm") throw ScenarioError("--normalization", "unknown value \"" + it->second + "\" (RMSNorm or LayerNorm)");
  }
  OrderedJson model;
  model["name"] = "megatron-model";
  model["layers"] = layers;
  model["hidden"] = hidden;
  model["ffn_hidden"] = ffn;
  model["heads"] = heads;
  model["kv_heads"] = has("--group-query-attention") ? required("--num-query-groups") : heads;
  model["vocab"] = *vocab;
  model["tied_embeddings"] = !has("--untie-embeddings-and-output-weights");
  model["mlp"] = swiglu ? "swiglu" : "gelu";
  model["norm"] = norm;
  model["bias"] = !has("--disable-bias-linear");
  if (has("--qk-layernorm")) model["qk_norm"] = true;

  const std::int64_t tp = integer("--tensor-model-parallel-size").value_or(1);
  const std::int64_t pp = integer("--pipeline-model-parallel-size").value_or(1);
  const std::int64_t cp = integer("--context-parallel-size").value_or(1);
  OrderedJson parallel;
  parallel["tp"] = tp;
  parallel["cp"] = cp;
  parallel["pp"] = pp;
  // The layer split (scenarios/layout.hpp): uneven first/last stages, the embedding and the loss
  // counted as layers, or an explicit layout whose virtual stages give vpp (the loader derives it).
  const bool embedding_counted = has("--account-for-embedding-in-pipeline-split");
  const bool loss_counted = has("--account-for-loss-in-pipeline-split");
  std::int64_t vpp = integer("--virtual-pipeline-model-parallel-size").value_or(integer("--num-virtual-stages-per-pipeline-rank").value_or(1));
  if (const auto per = integer("--num-layers-per-virtual-pipeline-stage")) {
    const std::int64_t counted = layers + (embedding_counted ? 1 : 0) + (loss_counted ? 1 : 0);
    if (counted % (pp * *per) != 0)
      throw ScenarioError("--num-layers-per-virtual-pipeline-stage", "must divide the layers per stage (" + std::to_string(counted) + " / " +
                                                                          std::to_string(pp) + ")");
    vpp = counted / (pp * *per);
  }
  const auto layout = values.find("--pipeline-model-parallel-layout");
  if (layout != values.end()) {
    parallel["pipeline_layout"] = layout->second;
  } else {
    parallel["schedule"] = vpp > 1 ? "interleaved" : "1f1b";
    if (vpp > 1) parallel["vpp"] = vpp;
  }
  if (const auto g = integer("--microbatch-group-size-per-virtual-pipeline-stage")) parallel["microbatch_group_size"] = *g;
  if (const auto f = integer("--decoder-first-pipeline-num-layers")) parallel["first_stage_layers"] = *f;
  if (const auto l = integer("--decoder-last-pipeline-num-layers")) parallel["last_stage_layers"] = *l;
  if (embedding_counted) parallel["account_for_embedding_in_pipeline_split"] = true;
  if (loss_counted) parallel["account_for_loss_in_pipeline_split"] = true;
  parallel["sequence_parallel"] = has("--sequence-parallel");
  std::string sharding = has("--use-distributed-optimizer") ? "optimizer" : "none";
  if (has("--use-megatron-fsdp")) {
    // Megatron-FSDP's --data-parallel-sharding-strategy (default optim_grads_params).
    static const std::map<std::string, std::string> strategies{
        {"no_shard", "none"}, {"optim", "optimizer"}, {"optim_grads", "optimizer_grads"}, {"optim_grads_params", "optimizer_grads_params"}};
    const auto it = values.find("--data-parallel-sharding-strategy");
    const std::string strategy = it == values.end() ? "optim_grads_params" : it->second;
    const auto found = strategies.find(strategy);
    if (found == strategies.end())
      throw ScenarioError("--data-parallel-sharding-strategy",
                          "unknown value \"" + strategy + "\" (no_shard, optim, optim_grads or optim_grads_params)");
    sharding = found->second;
  }
  parallel["sharding"] = sharding;
  if (const auto n = integer("--num-distributed-optimizer-instances")) parallel["distributed_optimizer_instances"] = *n;
  parallel["overlap_grad_reduce"] = has("--overlap-grad-reduce");
  parallel["overlap_param_gather"] = has("--overlap-param-gather");
  parallel["tp_comm_overlap"] = has("--tp-comm-overlap");
  // Megatron overlaps the interleaved schedule's pipeline sends by default (--overlap-p2p-communication
  // is the old spelling of that default); --no-overlap-p2p-communication turns it off.
  if (has("--no-overlap-p2p-communication")) parallel["overlap_p2p_comm"] = false;
  // --cp-comm-type: one value, or one per layer (the same for every layer here). Megatron's help
  // spells the all-gather variant "allgather", TransformerEngine accepts "all_gather".
  if (const auto it = values.find("--cp-comm-type"); it != values.end()) {
    static const std::map<std::string, std::string> kTypes{
        {"p2p", "p2p"}, {"a2a", "a2a"}, {"allgather", "all_gather"}, {"all_gather", "all_gather"}, {"a2a+p2p", "a2a+p2p"}};
    std::istringstream words(it->second);
    std::string word, type;
    while (words >> word) {
      const auto found = kTypes.find(word);
      if (found == kTypes.end())
        throw ScenarioError("--cp-comm-type", "unknown value \"" + word + "\" (p2p, a2a, allgather or a2a+p2p)");
      if (!type.empty() && found->second != type)
        throw ScenarioError("--cp-comm-type", "a different type per layer is not modelled (one type for every layer)");
      type = found->second;
    }
    if (type.empty()) throw ScenarioError("--cp-comm-type", "needs a value (p2p, a2a, allgather or a2a+p2p)");
    parallel["cp_comm_type"] = type;
  }
  if (const auto it = values.find("--hierarchical-context-parallel-sizes"); it != values.end()) {
    std::istringstream words(it->second);
    std::vector<std::int64_t> sizes;
    for (std::string word; words >> word;) {
      std::size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != word.size() || v < 1)
        throw ScenarioError("--hierarchical-context-parallel-sizes", "must be positive integers, got \"" + word + "\"");
      sizes.push_back(static_cast<std::int64_t>(v));
    }
    parallel["hierarchical_cp_sizes"] = sizes;
  }

  OrderedJson training;
  const std::int64_t seq = required("--seq-length");
  const std::int64_t gbs = required("--global-batch-size");
  training["seq_len"] = seq;
  training["global_batch"] = gbs;
  training["micro_batch"] = integer("--micro-batch-size").value_or(1);
  std::string recompute = has("--recompute-activations") ? "selective" : "none";
  if (auto it = values.find("--recompute-granularity"); it != values.end()) {
    if (it->second != "full" && it->second != "selective")
      throw ScenarioError("--recompute-granularity", "unknown value \"" + it->second + "\" (full or selective)");
    recompute = it->second;
  }
  training["recompute"] = recompute;
  // FP8 is on when --fp8-format is given; --fp8-recipe (Megatron's default "delayed") picks the
  // scaling: delayed, tensorwise (TE's current scaling) or mxfp8. Megatron's amax history
  // defaults to 1 (--fp8-amax-history-len), not TE's 1024.
  if (values.count("--fp8-format") != 0) {
    std::string recipe = "delayed";
    if (auto it = values.find("--fp8-recipe"); it != values.end()) recipe = it->second;
    static const std::map<std::string, std::string> kRecipes{{"delayed", "fp8-delayed"}, {"tensorwise", "fp8-current"}, {"mxfp8", "mxfp8"}};
    const auto precision = kRecipes.find(recipe);
    if (precision == kRecipes.end())
      throw ScenarioError("--fp8-recipe", "\"" + recipe + "\" is not modelled (delayed, tensorwise or mxfp8)");
    training["precision"] = precision->second;
    if (precision->second == "fp8-delayed") training["fp8_amax_history_len"] = integer("--fp8-amax-history-len").value_or(1);
    if (has("--fp8-param-gather")) training["fp8_params"] = true;
  }
  if (recompute == "full") {
    if (auto it = values.find("--recompute-method"); it != values.end()) {
      if (it->second != "uniform" && it->second != "block")
        throw ScenarioError("--recompute-method", "unknown value \"" + it->second + "\" (uniform or block)");
      training["recompute_method"] = it->second;
    }
    if (const auto n = integer("--recompute-num-layers")) training["recompute_num_layers"] = *n;
  }
  if (auto it = values.find("--recompute-modules"); it != values.end() && recompute == "selective") {
    std::vector<std::string> modules;
    std::istringstream words(it->second);
    for (std::string w; words >> w;) modules.push_back(w);
    training["recompute_modules"] = modules;
  }
  // With --bf16 Megatron accumulates and reduces the gradients in fp32 unless told otherwise.
  const auto main_grads = values.find("--main-grads-dtype");
  const bool bf16_grads = has("--grad-reduce-in-bf16") || (main_grads != values.end() && main_grads->second == "bf16");
  training["grad_dtype"] = bf16_grads ? "bf16" : "fp32";
  if (has("--optimizer-cpu-offload")) {
    double fraction = 1.0;  // Megatron's default --optimizer-offload-fraction
    if (auto it = values.find("--optimizer-offload-fraction"); it != values.end()) {
      std::size_t used = 0;
      try {
        fraction = std::stod(it->second, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != it->second.size() || !(fraction >= 0.0 && fraction <= 1.0))
        throw ScenarioError("--optimizer-offload-fraction", "must be a number in [0, 1], got \"" + it->second + "\"");
    }
    training["optimizer_offload_fraction"] = fraction;
  }
  if (const auto iters = integer("--train-iters")) training["train_tokens"] = static_cast<double>(*iters) * static_cast<double>(gbs * seq);
  else if (const auto samples = integer("--train-samples")) training["train_tokens"] = static_cast<double>(*samples) * static_cast<double>(seq);

  for (const auto& [name, v] : values) {
    static const std::set<std::string> mapped{
        "--num-layers", "--hidden-size", "--num-attention-heads", "--vocab-size", "--ffn-hidden-size", "--normalization",
        "--num-query-groups", "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
        "--virtual-pipeline-model-parallel-size", "--num-layers-per-virtual-pipeline-stage", "--decoder-first-pipeline-num-layers",
        "--decoder-last-pipeline-num-layers", "--num-virtual-stages-per-pipeline-rank", "--pipeline-model-parallel-layout", "--seq-length", "--global-batch-size", "--micro-batch-size",
        "--recompute-granularity", "--train-iters", "--train-samples", "--recompute-method", "--recompute-num-layers",
        "--recompute-modules", "--main-grads-dtype", "--optimizer-offload-fraction", "--data-parallel-sharding-strategy",
        "--fp8-format", "--fp8-recipe", "--fp8-amax-history-len", "--microbatch-group-size-per-virtual-pipeline-stage",
        "--cross-entropy-fusion-impl", "--num-distributed-optimizer-instances", "--cp-comm-type",
        "--hierarchical-context-parallel-sizes"};
    if (mapped.count(name) == 0 && megatron_cost_free().count(name) == 0) out.warnings.push_back(name + " " + v + ": not modelled (ignored)");
  }
  for (const auto& f : flags) {
    static const std::set<std::string> mapped{"--swiglu", "--disable-bias-linear", "--untie-embeddings-and-output-weights",
                                              "--group-query-attention", "--sequence-parallel", "--use-distributed-optimizer",
                                              "--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap",
                                              "--recompute-activations", "--grad-reduce-in-bf16", "--optimizer-cpu-offload",
                                              "--use-megatron-fsdp", "--account-for-embedding-in-pipeline-split",
                                              "--account-for-loss-in-pipeline-split", "--fp8-param-gather",
                                              "--cross-entropy-loss-fusion", "--qk-layernorm", "--overlap-p2p-communication",
                                              "--no-overlap-p2p-communication"};
    if (mapped.count(f) == 0 && megatron_cost_free().count(f) == 0) out.warnings.push_back(f + ": not modelled (ignored)");
  }
  if (recompute != "full" && (values.count("--recompute-method") != 0 || values.count("--recompute-num-layers") != 0))
    out.warnings.push_back("--recompute-method/--recompute-num-layers: apply to full recomputation only (ignored)");
  if (recompute != "selective" && values.count("--recompute-modules") != 0)
    out.warnings.push_back("--recompute-modules: applies to selective recomputation only (ignored)");
  if (values.count("--fp8-format") == 0 && values.count("--fp8-recipe") != 0)
    out.warnings.push_back("--fp8-recipe without --fp8-format: FP8 is off in Megatron; priced as BF16");
  if (values.count("--fp8-format") == 0 && has("--fp8-param-gather"))
    out.warnings.push_back("--fp8-param-gather without --fp8-format: FP8 is off (ignored)");

  OrderedJson cluster;
  cluster["preset"] = options.cluster;
  const std::int64_t gpn = cluster_preset(options.cluster, "--cluster").gpus_per_node;
  std::int64_t nodes = 0;
  if (options.nodes) {
    nodes = *options.nodes;
  } else {
    const std::int64_t world = tp * cp * pp;
    nodes = (world + gpn - 1) / gpn;
    out.warnings.push_back("the world size is not in Megatron's arguments: " + std::to_string(nodes) + " node(s) of " +
                           options.cluster + " (pass --nodes for the run's data parallelism)");
  }
  cluster["nodes"] = nodes;

  OrderedJson s;
  s["name"] = options.name;
  s["model"] = model;
  s["cluster"] = cluster;
  s["training"] = training;
  s["parallel"] = parallel;
  // Megatron's native fused cross-entropy (--cross-entropy-fusion-impl native, the default), over the
  // default software preset.
  if (auto it = values.find("--cross-entropy-fusion-impl"); it != values.end() && it->second != "native")
    throw ScenarioError("--cross-entropy-fusion-impl", "\"" + it->second + "\" is not modelled (native; Megatron-LM's arguments.py rejects te)");
  if (has("--cross-entropy-loss-fusion")) {
    OrderedJson software;
    software["fused_cross_entropy"] = true;
    s["software"] = software;
  }
  out.json = s.dump(2);
  return out;
}

}  // namespace stepsim::scenarios
