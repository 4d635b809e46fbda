#pragma once
// Compute work and time. The kernels of one rank for one micro-batch (a transformer layer, the
// embedding, the output layer and loss, the optimizer step), split by TP and CP exactly as the step
// graph splits them, and their time on a GPU through a roofline with size-dependent efficiency:
// time = max(flops / (peak * eff_flops(size)), bytes / (hbm * eff_bytes)).
// The efficiency curves have a few parameters per GPU type, part of the GPU's spec (presets read
// scenarios/presets/efficiency/, fitted by `stepsim calibrate`), never constants in code.
//
// Shapes and byte counts follow docs/training-step.md (sections 1-3, 6). Notation:
// s sequence, b micro-batch, h hidden, a heads, k KV heads, d_h = h/a, f FFN hidden, t TP, c CP,
// n = s b / c tokens per rank in the TP region, n_sp = n / t in the SP region (n_sp = n without
// sequence parallelism), v the padded vocabulary (multiple of 128 t).
//
// Conventions of the kernel lists:
// - Communication (TP all-gather / reduce-scatter, CP ring, PP, DP) is not in these lists; the
//   step graph inserts it between the kernels.
// - GEMM bytes: bf16 operands and result, 2 (mk + kn + mn). A wgrad GEMM accumulates into the
//   main gradient (Megatron's gradient-accumulation fusion): 2 (mk + kn) + 2 g mn with g = 4 bytes
//   for fp32 main gradients (read + write) or 2 for bf16. Biases are added / reduced in the
//   cuBLASLt epilogues, so they add no kernels.
// - Memory kernels carry flops = 0 (their arithmetic is not counted in hardware FLOPs); their time
//   is the bytes term alone.
// - `flops` is what runs (FlashAttention backward = 2.5 x forward; recomputation included in the
//   recompute lists); `model_flops` is the part Megatron's model-FLOP count includes (GEMMs and the
//   causal attention core, backward = 2 x forward, nothing for recomputation or memory kernels).
//   Summing model_flops over a step gives megatron_model_flops() exactly.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::costmodel {

enum class KernelKind { Gemm, Attention, Memory };

struct Kernel {
  std::string name;          // "qkv.fprop", "attn.fwd", "fc1.wgrad", "norm1.fwd", ...
  KernelKind kind = KernelKind::Memory;
  double flops = 0;          // executed FLOPs (FlashAttention backward: 2.5 x forward)
  double model_flops = 0;    // the part counted as model FLOPs (see above)
  double bytes = 0;          // HBM bytes read + written
  double m = 0, n = 0, k = 0;  // GEMM shape (Y[m,n] = X[m,k] W[k,n]); attention: m = queries, n = keys, k = head dim
};

// One rank, one micro-batch, one transformer layer.
std::vector<Kernel> layer_forward(const scenarios::Scenario& s);
std::vector<Kernel> layer_backward(const scenarios::Scenario& s);
// Extra forward work the backward pass of one layer re-runs: selective = attention core forward,
// full = the whole layer forward, none = empty. model_flops of these kernels are 0.
std::vector<Kernel> layer_recompute(const scenarios::Scenario& s);
// First stage: embedding lookup (forward) and scatter-add of its gradient (backward).
std::vector<Kernel> embedding_forward(const scenarios::Scenario& s);
std::vector<Kernel> embedding_backward(const scenarios::Scenario& s);
// Last stage: final norm, logits GEMM (padded vocabulary / t), fp32 cross-entropy.
std::vector<Kernel> output_forward(const scenarios::Scenario& s);
std::vector<Kernel> output_backward(const scenarios::Scenario& s);
// Optimizer step on `params` parameters held by this rank's optimizer shard (Adam, fp32 state).
std::vector<Kernel> optimizer_step(const scenarios::Scenario& s, double params);
// Zeroing of the rank's gradient buffer at the start of a step (`params` = all parameters the
// rank holds, not the optimizer shard): one write of 4 bytes (fp32) or 2 bytes (bf16) per parameter.
std::vector<Kernel> zero_grad_buffer(const scenarios::Scenario& s, double params);

// Vocabulary padded to a multiple of 128 t (Megatron --make-vocab-size-divisible-by 128, times TP).
std::int64_t padded_vocab(const scenarios::Scenario& s);
// Whether the model is of the GPT-2/3 family (GeLU MLP with LayerNorm): learned position
// embeddings and dropout (hidden and embedding), no RoPE. Every other combination is treated as
// Llama-like: RoPE, no dropout.
bool gpt_family(const scenarios::ModelSpec& m);

// The efficiency curves of a GPU are a value of its spec (scenarios::GpuSpec::efficiency, loaded
// from the GPU preset's efficiency file, the scenario or the default curve).
using Efficiency = scenarios::Efficiency;

class ComputeModel {
 public:
  // The model of `gpu` with its efficiency curves (gpu.efficiency). Throws ScenarioError on a
  // non-positive peak or HBM bandwidth and on efficiency parameters out of range.
  explicit ComputeModel(const scenarios::GpuSpec& gpu);

  // Gemm: eff = gemm_max x / (x + gemm_half_flops) with x = kernel flops; Attention alike with the
  // attn_* parameters; time = max(flops / (peak eff), bytes / (hbm_Bps hbm_eff)). Memory: the bytes
  // term only. Note flops / (peak gemm_max x / (x + half)) = (x + half) / (peak gemm_max): the
  // saturating curve is a roofline at gemm_max plus a fixed latency half / (peak gemm_max).
  double time_s(const Kernel& k) const;
  double time_s(const std::vector<Kernel>& ks) const;
  // The same while communication kernels share the SMs: time_s x (1 + comm_slowdown).
  double overlapped_time_s(const Kernel& k) const;
  [[nodiscard]] const Efficiency& efficiency() const { return gpu_.efficiency; }
  [[nodiscard]] const scenarios::GpuSpec& gpu() const { return gpu_; }

 private:
  scenarios::GpuSpec gpu_;
};

double total_flops(const std::vector<Kernel>& ks);
double total_model_flops(const std::vector<Kernel>& ks);
double total_bytes(const std::vector<Kernel>& ks);

// Megatron's model FLOPs of one step (megatron/training/training.py num_floating_point_operations,
// causal attention term s/(2h); docs/training-step.md section 9), with the padded vocabulary as Megatron
// uses it (args.padded_vocab_size):
// F = 12 B s L h^2 [ (1 + k/a + s/(2h)) (q/h) + (f/h) g + v/(2 L h) ], g = 3/2 for SwiGLU, else 1.
double megatron_model_flops(const scenarios::Scenario& s);

// The FLOP counts the published runs report throughput with.
enum class FlopsFormula {
  MegatronCausal,  // "megatron-causal": megatron_model_flops above
  MegatronPre011,  // "megatron-pre-0.11": same with s/h instead of s/(2h) (megatron-core up to
                   // core_v0.11.0; for GPT shapes equal to Korthikanti et al. 2022's model FLOPs
                   // 72 B s L h^2 (1 + s/(6h) + v/(12 L h)))
  NarayananEq3,    // "narayanan-eq3": 96 B s L h^2 (1 + s/(6h) + V/(16 L h)), hardware FLOPs with
                   // full recomputation (Narayanan et al. SC'21 Eq. 3), V the model's vocabulary
};
FlopsFormula flops_formula_from_string(const std::string& name);  // throws ScenarioError("flops_formula", ...)
std::string to_string(FlopsFormula f);
double model_flops(const scenarios::Scenario& s, FlopsFormula f);

}  // namespace stepsim::costmodel
