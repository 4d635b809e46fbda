#pragma once
// Compute time: the kernels of workload/kernels.hpp on a GPU through a roofline with
// size-dependent efficiency:
// time = max(flops / (peak * eff_flops(size)), bytes / (hbm * eff_bytes)).
// The efficiency curves have a few parameters per GPU type, part of the GPU's spec (presets read
// scenarios/presets/efficiency/, fitted by `stepsim calibrate`), never constants in code.
// Model-FLOP formulas of whole steps (megatron_model_flops and the published variants).

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/workload/kernels.hpp"

namespace stepsim::costmodel {

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
  [[nodiscard]] double time_s(const workload::Kernel& k) const;
  [[nodiscard]] double time_s(const std::vector<workload::Kernel>& ks) const;
  // The SM-sharing rule: compute that runs while communication kernels share the SMs takes
  // time_s x (1 + comm_slowdown).
  [[nodiscard]] double comm_slowed_time_s(double time_s) const;
  [[nodiscard]] double overlapped_time_s(const workload::Kernel& k) const;
  [[nodiscard]] const Efficiency& efficiency() const { return gpu_.efficiency; }
  [[nodiscard]] const scenarios::GpuSpec& gpu() const { return gpu_; }

 private:
  scenarios::GpuSpec gpu_;
};

// Megatron's model FLOPs of one step (megatron/training/training.py num_floating_point_operations,
// causal attention term s/(2h); docs/training-step.md section 9), with the padded vocabulary as Megatron
// uses it (args.padded_vocab_size):
// F = 12 B s L h^2 [ (1 + k/a + s/(2h)) (q/h) + (f/h) g + v/(2 L h) ], g = 3/2 for SwiGLU, else 1.
[[nodiscard]] double megatron_model_flops(const scenarios::Scenario& s);

// The FLOP counts the published runs report throughput with.
enum class FlopsFormula {
  MegatronCausal,  // "megatron-causal": megatron_model_flops above
  MegatronPre011,  // "megatron-pre-0.11": same with s/h instead of s/(2h) (megatron-core up to
                   // core_v0.11.0; for GPT shapes equal to Korthikanti et al. 2022's model FLOPs
                   // 72 B s L h^2 (1 + s/(6h) + v/(12 L h)))
  NarayananEq3,    // "narayanan-eq3": 96 B s L h^2 (1 + s/(6h) + V/(16 L h)), hardware FLOPs with
                   // full recomputation (Narayanan et al. SC'21 Eq. 3), V the model's vocabulary
};
[[nodiscard]] FlopsFormula flops_formula_from_string(const std::string& name);  // throws ScenarioError("flops_formula", ...)
[[nodiscard]] std::string to_string(FlopsFormula f);
[[nodiscard]] double model_flops(const scenarios::Scenario& s, FlopsFormula f);

}  // namespace stepsim::costmodel
