#pragma once
// Compute work: the kernels of one rank for one micro-batch (a transformer layer, the embedding,
// the output layer and loss, the optimizer step), split by TP and CP exactly as the step graph
// splits them, with their FLOPs and HBM bytes. No time: costmodel::ComputeModel prices them.
//
// Shapes and byte counts follow docs/training-step.md (sections 1-3, 6). Notation:
// s sequence, b micro-batch, h hidden, a heads, k KV heads, d_h = h/a, f FFN hidden, t TP, c CP,
// n = s b / c tokens per rank in the TP region, n_sp = n / t in the SP region (n_sp = n without
// sequence parallelism), v the padded vocabulary (multiple of 128 t); all from Shape.
//
// Conventions of the kernel lists:
// - Communication (TP all-gather / reduce-scatter, CP ring, PP, DP) is not in these lists; the
//   layer programs (program.hpp) list it beside the kernels.
// - GEMM bytes: bf16 operands and result, 2 (mk + kn + mn). A wgrad GEMM accumulates into the
//   main gradient (Megatron's gradient-accumulation fusion): 2 (mk + kn) + 2 g mn with g = 4 bytes
//   for fp32 main gradients (read + write) or 2 for bf16. Biases are added / reduced in the
//   cuBLASLt epilogues, so they add no kernels.
// - The software stack (scenario.software) decides which fusions run: fused RoPE, bias-SwiGLU and
//   cross-entropy fusions, and gradient-accumulation fusion (without it a wgrad GEMM writes a bf16
//   gradient, 2 mn, and a separate kernel adds it to the main gradient: read 2 mn + g mn, write g mn).
// - FP8 (training.precision fp8-delayed, fp8-current, mxfp8; TransformerEngine's Linear and
//   LayerNormLinear): the GEMMs of the transformer layers (QKV, proj, FC1, FC2: fprop, dgrad,
//   wgrad) take FP8 operands, 1 byte per element, and write BF16 (wgrad: the main gradient as
//   above); attention and the output layer stay BF16. The quantization kernels around them are
//   memory kernels (see fp8 in kernels.cpp): the casts of the GEMM inputs (fused into the norm for
//   QKV and FC1 except under current scaling), the cast + transpose of the output gradients and
//   the transposes of the saved inputs for wgrad (Hopper; MXFP8 writes the column-wise copy in the
//   same pass instead), current scaling's amax pass before every cast, MXFP8's block scales
//   (1 byte per 32 elements), and the once-per-step cast + transpose of the weights, spread over
//   the step's micro-batches.
// - Memory kernels carry flops = 0 (their arithmetic is not counted in hardware FLOPs); their time
//   is the bytes term alone.
// - `flops` is what runs (FlashAttention backward = 2.5 x forward; recomputation included in the
//   recompute lists); `model_flops` is the part Megatron's model-FLOP count includes (GEMMs and the
//   causal attention core, backward = 2 x forward, nothing for recomputation or memory kernels).
//   Summing model_flops over a step gives costmodel::megatron_model_flops() exactly.

#include <string>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::workload {

// Host: time the GPU waits for the host (the software stack's per-micro-batch host time), no work.
enum class KernelKind { Gemm, Attention, Memory, Host };

struct Kernel {
  std::string name;          // "qkv.fprop", "attn.fwd", "fc1.wgrad", "norm1.fwd", ...
  KernelKind kind = KernelKind::Memory;
  double flops = 0;          // executed FLOPs (FlashAttention backward: 2.5 x forward)
  double model_flops = 0;    // the part counted as model FLOPs (see above)
  double bytes = 0;          // HBM bytes read + written
  // GEMM shape (Y[m,n] = X[m,k] W[k,n]) of one of `batch` independent products (batched GEMMs of
  // the unfused attention; 1 otherwise). Attention: m = query rows and n = keys of one sequence on
  // this rank, k = head dim, batch = micro-batch x heads on this rank.
  double m = 0, n = 0, k = 0;
  double batch = 1;
  bool backward = false;     // attention: the backward kernel
  bool causal = true;        // attention: causal mask
  bool fp8 = false;          // GEMM: FP8 operands on the FP8 tensor cores (training.precision)

  bool operator==(const Kernel&) const = default;
};

// One rank, one micro-batch, one transformer layer.
[[nodiscard]] std::vector<Kernel> layer_forward(const scenarios::Scenario& s);
[[nodiscard]] std::vector<Kernel> layer_backward(const scenarios::Scenario& s);
// Extra forward work the backward pass of one layer re-runs: selective = the forward kernels of
// training.recompute_modules (core_attn: the attention core; mlp: FC1, activation, FC2; layernorm:
// both norms); full = the whole layer forward when the recompute method picks the layer
// (`recomputed_layer`), else nothing; none = empty. model_flops of these kernels are 0.
[[nodiscard]] std::vector<Kernel> layer_recompute(const scenarios::Scenario& s, bool recomputed_layer = true);
// First stage: embedding lookup (forward) and scatter-add of its gradient (backward).
[[nodiscard]] std::vector<Kernel> embedding_forward(const scenarios::Scenario& s);
[[nodiscard]] std::vector<Kernel> embedding_backward(const scenarios::Scenario& s);
// Last stage: final norm, logits GEMM (padded vocabulary / t), fp32 cross-entropy.
[[nodiscard]] std::vector<Kernel> output_forward(const scenarios::Scenario& s);
[[nodiscard]] std::vector<Kernel> output_backward(const scenarios::Scenario& s);
// Optimizer step on `params` parameters held by this rank's optimizer shard (Adam, fp32 state).
[[nodiscard]] std::vector<Kernel> optimizer_step(const scenarios::Scenario& s, double params);
// Zeroing of the rank's gradient buffer at the start of a step (`params` = all parameters the
// rank holds, not the optimizer shard): one write of 4 bytes (fp32) or 2 bytes (bf16) per parameter.
[[nodiscard]] std::vector<Kernel> zero_grad_buffer(const scenarios::Scenario& s, double params);

// The host's part of one pass (forward or backward) of one model chunk for one micro-batch: one
// Host kernel, priced at the software stack's microbatch_host_us.
[[nodiscard]] std::vector<Kernel> host_pass();

[[nodiscard]] double total_flops(const std::vector<Kernel>& ks);
[[nodiscard]] double total_model_flops(const std::vector<Kernel>& ks);
[[nodiscard]] double total_bytes(const std::vector<Kernel>& ks);

}  // namespace stepsim::workload
