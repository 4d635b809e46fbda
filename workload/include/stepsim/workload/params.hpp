#pragma once
// The parameters one rank holds, in Megatron's physical layout: matrices split by TP, norm
// weights replicated, the vocabulary padded to a multiple of 128 t. Counts are per TP rank.

#include <cstdint>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::workload {

// One transformer layer: attention 2h^2(1 + k/a)/t, MLP 3hf/t (SwiGLU) or 2hf/t (GeLU), biases of
// column-parallel layers split by t and of row-parallel layers replicated, two norms replicated.
[[nodiscard]] double layer_params(const scenarios::Scenario& s);
// The weight matrices of the layer's GEMMs (QKV, proj, FC1, FC2), without biases and norms:
// 2h^2(1 + k/a)/t + 3hf/t (SwiGLU) or 2hf/t (GeLU).
[[nodiscard]] double layer_gemm_weights(const scenarios::Scenario& s);
// The embedding shard (padded vocabulary / t rows of h).
[[nodiscard]] double embedding_params(const scenarios::Scenario& s);
// One norm: h (RMSNorm) or 2h (LayerNorm: weight and bias).
[[nodiscard]] double final_norm_params(const scenarios::Scenario& s);
// Output-layer parameters on the last stage (0 when tied embeddings share the first stage's).
[[nodiscard]] double output_params(const scenarios::Scenario& s);
// Everything a rank of `stage` holds.
[[nodiscard]] double stage_params(const scenarios::Scenario& s, std::int64_t stage);

}  // namespace stepsim::workload
