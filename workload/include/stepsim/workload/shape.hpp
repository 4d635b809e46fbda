#pragma once
// The sizes of one training step that every part of the model needs, computed once from a
// scenario: tokens per rank, the padded vocabulary, bytes per element, gradient bytes per
// parameter, the gradient bucket size. Notation of docs/training-step.md: s sequence, b micro-batch,
// h hidden, t TP, c CP; n = s b / c tokens per rank in the TP region, n_sp = n / t in the SP
// region (n_sp = n without sequence parallelism).

#include <cstdint>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::workload {

// Number formats of tensors. Activations, weights and their gradients run in bf16; main gradients
// are fp32 or bf16; optimizer state is fp32.
enum class Precision : std::uint8_t { Fp32, Bf16 };

[[nodiscard]] constexpr std::int64_t bytes_per_element(Precision p) {
  switch (p) {
    case Precision::Fp32: return 4;
    case Precision::Bf16: return 2;
  }
  return 4;
}

struct Shape {
  // Parallel sizes (at least 1).
  std::int64_t tp = 1, cp = 1, pp = 1, dp = 1, vpp = 1;
  std::int64_t micro_batches = 1;  // per step and DP replica
  bool sequence_parallel = false;

  double tokens_per_rank = 0;      // n = s b / c
  double tokens_sp_region = 0;     // n_sp: n / t with sequence parallelism, n without
  std::int64_t padded_vocab = 0;   // a multiple of 128 t (Megatron --make-vocab-size-divisible-by 128, times TP)
  double vocab_per_tp_rank = 0;    // padded_vocab / t

  Precision activation_precision = Precision::Bf16;  // activations, weights, their gradients, PP and TP messages
  Precision grad_precision = Precision::Fp32;        // main gradients (training.grads_in_fp32)
  double activation_bytes_per_element = 2;
  double grad_bytes_per_param = 4;

  // Megatron's gradient bucket: max(40e6, 1e6 x data-parallel size) parameters, the data-parallel
  // group being DP x CP (megatron/core/distributed; docs/training-step.md section 6).
  double bucket_params = 40e6;

  [[nodiscard]] std::int64_t dp_cp() const { return dp * cp; }
};

[[nodiscard]] Shape shape_of(const scenarios::Scenario& s);

// Whether the model is of the GPT-2/3 family (GeLU MLP with LayerNorm): learned position
// embeddings and dropout (hidden and embedding), no RoPE. Every other combination is treated as
// Llama-like: RoPE, no dropout.
[[nodiscard]] bool gpt_family(const scenarios::ModelSpec& m);

}  // namespace stepsim::workload
