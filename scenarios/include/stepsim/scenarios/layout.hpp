#pragma once
// Where the model's layers sit on the pipeline: p stages of v chunks each form p v virtual stages
// that a micro-batch's forward visits in order (the backward in reverse). Megatron's interleaved
// layout puts chunk j of stage i at virtual stage j p + i; the embedding is on the first virtual
// stage and the loss (final norm, output layer, cross-entropy) on the last, in every layout
// Megatron accepts. Callers ask this class, never those formulas.
//
// A scenario says how many transformer layers each virtual stage holds in one of four ways, as
// Megatron-LM does (megatron/core/transformer/transformer_block.py get_num_layers_to_build,
// transformer_layer.py get_transformer_layer_offset, pipeline_parallel_layer_layout.py):
//   even          layers / (p v) on every chunk;
//   uneven        parallel.first_stage_layers / last_stage_layers (--decoder-first/last-pipeline-
//                 num-layers) on the first / last stage, the other stages share the rest evenly;
//                 each stage's layers split evenly over its v chunks (so each count divides by v);
//   accounted     parallel.account_for_embedding_in_pipeline_split / _loss_ (the embedding and the
//                 loss each count as one layer): (layers + e + l) / p per stage, / v per chunk, the
//                 first chunk of stage 0 holding one layer less for the embedding, the last chunk
//                 of the last stage one less for the loss;
//   explicit      parallel.pipeline_layout in Megatron's --pipeline-model-parallel-layout notation.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/scenarios/error.hpp"

namespace stepsim::scenarios {

struct Scenario;

struct StageChunk {
  std::int64_t stage = 0;
  std::int64_t chunk = 0;
};

class PipelineLayout {
 public:
  // p stages of v chunks, no transformer layers (a schedule's shape only).
  PipelineLayout(std::int64_t stages, std::int64_t chunks_per_stage);
  // `layers[k]`: transformer layers of virtual stage k (k = chunk p + stage); p v entries.
  PipelineLayout(std::int64_t stages, std::int64_t chunks_per_stage, std::vector<std::int64_t> layers);

  [[nodiscard]] std::int64_t stages() const { return p_; }
  [[nodiscard]] std::int64_t chunks_per_stage() const { return v_; }
  [[nodiscard]] std::int64_t virtual_stages() const { return p_ * v_; }
  [[nodiscard]] std::int64_t virtual_stage(std::int64_t stage, std::int64_t chunk) const { return chunk * p_ + stage; }
  [[nodiscard]] StageChunk at(std::int64_t virtual_stage) const { return {virtual_stage % p_, virtual_stage / p_}; }
  // The neighbours along the forward direction; empty at the ends of the model.
  // (Inline, without a division: the step graph's builder asks for them at every pass.)
  [[nodiscard]] std::optional<StageChunk> previous(std::int64_t stage, std::int64_t chunk) const {
    if (stage > 0 && stage < p_) return StageChunk{stage - 1, chunk};
    const std::int64_t k = virtual_stage(stage, chunk);
    if (k == 0) return std::nullopt;
    return at(k - 1);
  }
  [[nodiscard]] std::optional<StageChunk> next(std::int64_t stage, std::int64_t chunk) const {
    if (stage >= 0 && stage + 1 < p_ && chunk >= 0 && chunk < v_) return StageChunk{stage + 1, chunk};
    const std::int64_t k = virtual_stage(stage, chunk);
    if (k + 1 >= virtual_stages()) return std::nullopt;
    return at(k + 1);
  }
  // The first virtual stage holds the embedding, the last the loss.
  [[nodiscard]] bool is_first(std::int64_t stage, std::int64_t chunk) const { return virtual_stage(stage, chunk) == 0; }
  [[nodiscard]] bool is_last(std::int64_t stage, std::int64_t chunk) const {
    return virtual_stage(stage, chunk) == virtual_stages() - 1;
  }

  // Transformer layers of (stage, chunk), the model index of its first one, and of a whole stage.
  [[nodiscard]] std::int64_t layers(std::int64_t stage, std::int64_t chunk) const;
  [[nodiscard]] std::int64_t first_layer(std::int64_t stage, std::int64_t chunk) const;
  [[nodiscard]] std::int64_t stage_layers(std::int64_t stage) const;
  [[nodiscard]] std::int64_t max_chunk_layers() const;

 private:
  std::int64_t p_ = 1, v_ = 1;
  std::vector<std::int64_t> layers_;  // per virtual stage
  std::vector<std::int64_t> first_;   // per virtual stage: layers before it
};

// The layout of `s` (one of the four ways above). Throws ScenarioError naming the field when the
// layers cannot be placed that way (Megatron's rules: divisibility, conflicting options).
[[nodiscard]] PipelineLayout pipeline_layout(const Scenario& s);
// The error pipeline_layout(s) would throw, nullopt when it would succeed. The even split (no
// layout option set, a sweep's usual case) is checked with integer tests, without an exception.
[[nodiscard]] std::optional<ScenarioError> pipeline_layout_error(const Scenario& s, bool messages = true);
// Transformer layers on pipeline stage `stage`: pipeline_layout(s).stage_layers(stage).
[[nodiscard]] std::int64_t stage_layers(const Scenario& s, std::int64_t stage);

// Megatron's layout notation: virtual stages in model order separated by '|', each a string of
// E (embedding), t (transformer layer), L (loss); "x*n" and "(...)*n" repeat, commas are
// cosmetic; m (multi-token prediction) is Megatron's but not modelled here. Returns the symbols
// of each virtual stage. Throws ScenarioError("parallel.pipeline_layout", ...).
[[nodiscard]] std::vector<std::string> parse_pipeline_layout(const std::string& text);

}  // namespace stepsim::scenarios
