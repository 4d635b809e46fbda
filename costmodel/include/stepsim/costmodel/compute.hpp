#pragma once
// Compute work and time. The kernels of one rank for one micro-batch (a transformer layer, the
// embedding, the output layer and loss, the optimizer step), split by TP and CP exactly as the step
// graph splits them, and their time on a GPU through a roofline with size-dependent efficiency:
// time = max(flops / (peak * eff_flops(size)), bytes / (hbm * eff_bytes)).
// The efficiency curves have a few parameters per GPU type, read from data files in
// costmodel/data/ (fitted by `stepsim calibrate`), never constants in code.

#include <string>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::costmodel {

enum class KernelKind { Gemm, Attention, Memory };

struct Kernel {
  std::string name;          // "qkv.fprop", "attn.fwd", "fc1.wgrad", "rmsnorm", ...
  KernelKind kind = KernelKind::Memory;
  double flops = 0;          // executed FLOPs (FlashAttention backward: 2.5 x forward)
  double bytes = 0;          // HBM bytes read + written
  double m = 0, n = 0, k = 0;  // GEMM shape (Y[m,n] = X[m,k] W[k,n]); attention: m = queries, n = keys, k = head dim
};

// One rank, one micro-batch, one transformer layer.
std::vector<Kernel> layer_forward(const scenarios::Scenario& s);
std::vector<Kernel> layer_backward(const scenarios::Scenario& s);
// Extra forward work the backward pass of one layer re-runs: selective = attention core forward,
// full = the whole layer forward, none = empty.
std::vector<Kernel> layer_recompute(const scenarios::Scenario& s);
// First stage: embedding lookup (forward) and scatter-add of its gradient (backward).
std::vector<Kernel> embedding_forward(const scenarios::Scenario& s);
std::vector<Kernel> embedding_backward(const scenarios::Scenario& s);
// Last stage: final norm, logits GEMM (padded vocabulary / t), fp32 cross-entropy.
std::vector<Kernel> output_forward(const scenarios::Scenario& s);
std::vector<Kernel> output_backward(const scenarios::Scenario& s);
// Optimizer step on `params` parameters held by this rank's optimizer shard (Adam, fp32 state).
std::vector<Kernel> optimizer_step(const scenarios::Scenario& s, double params);

// Parameters of the efficiency curves of one GPU type (costmodel/data/<gpu>.json or the default).
struct Efficiency {
  double gemm_max = 0;         // asymptotic fraction of peak for large GEMMs
  double gemm_half_flops = 0;  // GEMM size (FLOPs) at which half of gemm_max is reached
  double attn_max = 0;         // same for the fused attention kernels
  double attn_half_flops = 0;
  double hbm_eff = 0;          // fraction of HBM bandwidth reached by memory-bound kernels
  double comm_slowdown = 0;    // compute slowdown while communication kernels run alongside (SM sharing)
};

class ComputeModel {
 public:
  ComputeModel(const scenarios::GpuSpec& gpu, const Efficiency& eff);
  // The calibrated efficiency of `gpu` (by preset name; unknown names get the default curve).
  static Efficiency calibrated(const scenarios::GpuSpec& gpu);

  double time_s(const Kernel& k) const;
  double time_s(const std::vector<Kernel>& ks) const;
  const Efficiency& efficiency() const { return eff_; }

 private:
  scenarios::GpuSpec gpu_;
  Efficiency eff_;
};

double total_flops(const std::vector<Kernel>& ks);

// Megatron's model FLOPs of one step (megatron/training/training.py num_floating_point_operations,
// causal attention term s/(2h); training-step.md section 9):
// F = 12 B s L h^2 [ (1 + k/a + s/(2h)) (q/h) + (f/h) g + v/(2 L h) ], g = 3/2 for SwiGLU, else 1.
double megatron_model_flops(const scenarios::Scenario& s);

}  // namespace stepsim::costmodel
