#pragma once
// Importers: a Hugging Face config.json as a model, a Megatron-LM pretrain_gpt.py command line as
// a scenario. Each gives the JSON text of a stepsim object and a warning for every setting of the
// input that changes the cost of a step but that stepsim does not model. Settings that do not
// change the cost (token ids, dropout, learning rates, rope bases, paths, logging) are ignored
// without a warning; the lists are in src/import.cpp.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stepsim::scenarios {

struct Imported {
  std::string json;                   // the object, pretty-printed JSON
  std::vector<std::string> warnings;  // "<field>: ..." one per setting not modelled
};

// A Hugging Face config.json (Llama, Mistral, Qwen2, Qwen3, Gemma, Gemma 3, OLMo 2, GPT-2 and GPT-NeoX
// field names) as a "model" object. Throws ScenarioError(origin + ".<field>", ...) for a missing or malformed field.
[[nodiscard]] Imported model_from_hf_config(const std::string& json_text, const std::string& origin);

struct MegatronImportOptions {
  std::string cluster = "dgx-h100";   // cluster preset (Megatron's arguments do not name the machine)
  std::optional<std::int64_t> nodes;  // default: the fewest nodes that hold TP x CP x PP (DP 1), with a warning
  std::string name = "megatron-import";
};
// The arguments of pretrain_gpt.py ("--num-layers 32", "--num-layers=32", flags) as a scenario
// object, with Megatron's defaults where an argument is absent (no sequence parallelism, no
// distributed optimizer, no overlaps, tied embeddings, biases, GeLU, LayerNorm). Throws
// ScenarioError naming the argument for a missing required one or a malformed value.
[[nodiscard]] Imported scenario_from_megatron_args(const std::vector<std::string>& args, const MegatronImportOptions& options);

// Splits the text of an arguments file into arguments (whitespace, backslash-newline
// continuations, '#' comments to the end of a line, single and double quotes).
[[nodiscard]] std::vector<std::string> split_arguments(const std::string& text);

}  // namespace stepsim::scenarios
