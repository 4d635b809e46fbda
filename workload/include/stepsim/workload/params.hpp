#pragma once
// The parameters one rank holds, in Megatron's physical layout: matrices split by TP, norm
// weights replicated, the vocabulary padded to a multiple of 128 t. Counts are per TP rank.

#include <cstdint>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::workload {

// One transformer layer: attention 2h^2(1 + k/a)/t, MLP 3hf/t (SwiGLU) or 2hf/t (GeLU), biases of
// column-parallel layers split by t and of row-parallel layers replicated, its norms replicated
// (layer_norm_params).
[[nodiscard]] double layer_params(const scenarios::Scenario& s);
// The norms of one layer, replicated on every TP rank: two over h, and with model.qk_norm one over
// the head dimension d_h = h/a for the queries and one for the keys (Megatron's q_layernorm and
// k_layernorm, whose weights every head shares): 2h + 2d_h (RMSNorm), twice that with LayerNorm.
[[nodiscard]] double layer_norm_params(const scenarios::Scenario& s);
// The weight matrices of the layer's GEMMs (QKV, proj, FC1, FC2), without biases and norms:
// 2h^2(1 + k/a)/t + 3hf/t (SwiGLU) or 2hf/t (GeLU).
[[nodiscard]] double layer_gemm_weights(const scenarios::Scenario& s);
// Bytes per element of an FP8 tensor in one orientation: 1, with MXFP8 also its E8M0 block scale,
// 1 byte per 32 elements (1 + 1/32).
[[nodiscard]] double fp8_element_bytes(scenarios::TrainingPrecision precision);
// The embedding shard (padded vocabulary / t rows of h).
[[nodiscard]] double embedding_params(const scenarios::Scenario& s);
// One norm over `width` elements: width (RMSNorm) or 2 width (LayerNorm: weight and bias).
[[nodiscard]] double norm_params(const scenarios::Scenario& s, double width);
// Bytes of the fp32 statistics a norm computes per normalized row and keeps for its backward: 4
// (RMSNorm: rstd) or 8 (LayerNorm: rstd and mean).
[[nodiscard]] double norm_statistics_bytes(const scenarios::Scenario& s);
// One norm over the hidden size: h (RMSNorm) or 2h (LayerNorm).
[[nodiscard]] double final_norm_params(const scenarios::Scenario& s);
// Output-layer parameters on the last stage (0 when tied embeddings share the first stage's).
[[nodiscard]] double output_params(const scenarios::Scenario& s);
// Everything a rank of `stage` holds.
[[nodiscard]] double stage_params(const scenarios::Scenario& s, std::int64_t stage);

}  // namespace stepsim::workload
