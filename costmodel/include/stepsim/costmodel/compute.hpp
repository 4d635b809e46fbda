#pragma once
// Compute time: the kernels of workload/kernels.hpp on a GPU under a software stack, each priced
// from the GPU's published ceilings (docs/hardware.md) and a few fitted fractions of them
// (scenarios::Efficiency, from scenarios/presets/efficiency/, fitted by `stepsim calibrate`):
// - GEMM: output tiles of the kernel library (tile quantization), executed in waves over the SMs
//   (wave quantization), each SM at its share of the maximum achievable matmul throughput times
//   gemm_max (FP8 GEMMs: the FP8 ceiling times gemm_fp8_max); never faster than its bytes at the
//   HBM bandwidth (skinny shapes).
// - Attention: the published throughput of the stack's attention kernel on this architecture
//   (by pass, causal mask, head dimension and sequence length) times attn_max; HBM bound alike.
// - Memory-bound kernels: bytes at hbm_eff of the HBM bandwidth.
// Every kernel adds the stack's launch gap. Model-FLOP formulas of whole steps (megatron_model_flops
// and the published variants).

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/workload/kernels.hpp"

namespace stepsim::costmodel {

// The fitted fractions of a GPU type (scenarios::GpuSpec::efficiency).
using Efficiency = scenarios::Efficiency;

// Output tiles and waves of one GEMM: the tile orientation that finishes first.
struct GemmTiling {
  double tiles = 0;       // output tiles of all `batch` products
  double waves = 0;       // ceil(tiles / SMs); tiles / SMs when the SM count is unknown
  double tile_m = 0, tile_n = 0;
  double efficiency = 1;  // the tile's throughput per SM relative to the large tile's
};

// Wave occupancy of `ctas` equal CTAs on `slots` concurrent CTA slots: (ctas / slots) /
// ceil(ctas / slots); 1 when either is not positive.
[[nodiscard]] double attention_wave_occupancy(double ctas, double slots);

// What a kernel's time is made of: the launch gap and the body, the larger of its arithmetic term
// (GEMM: waves x tile FLOPs at the per-SM matmul rate; attention: FLOPs at the published rate and
// occupancy; 0 for memory and host kernels) and its HBM term (bytes at hbm_eff of the bandwidth);
// a Host kernel's body is the stack's per-pass host time.
struct KernelTime {
  double launch_s = 0;
  double compute_s = 0;
  double memory_s = 0;
  double body_s = 0;
  [[nodiscard]] double total_s() const { return launch_s + body_s; }
};

class ComputeModel {
 public:
  // The model of `gpu` (ceilings, SMs, tile, efficiency) under `software` (attention curves,
  // launch gap). Throws ScenarioError on a non-positive peak or HBM bandwidth and on efficiency
  // parameters out of range.
  ComputeModel(const scenarios::GpuSpec& gpu, const scenarios::SoftwareSpec& software);

  // Launch gap plus the kernel's body (see above); a Host kernel is the stack's per-pass host time.
  [[nodiscard]] double time_s(const workload::Kernel& k) const { return breakdown(k).total_s(); }
  // The terms of time_s(k).
  [[nodiscard]] KernelTime breakdown(const workload::Kernel& k) const;
  [[nodiscard]] double time_s(const std::vector<workload::Kernel>& ks) const;
  // GEMM body: max(gemm_compute_s, bytes / HBM).
  [[nodiscard]] double gemm_time_s(const workload::Kernel& k) const;
  // waves x tile FLOPs / (per-SM matmul rate).
  [[nodiscard]] double gemm_compute_s(const workload::Kernel& k) const;
  [[nodiscard]] GemmTiling gemm_tiling(const workload::Kernel& k) const;
  // The GEMM ceiling at full tiles and waves: matmul_bf16 x gemm_max, or for an FP8 kernel
  // matmul_fp8 x gemm_fp8_max (gemm_max when the efficiency gives none).
  [[nodiscard]] double gemm_rate_flops(const workload::Kernel& k) const;
  // Attention body: max(attention_compute_s, bytes / HBM).
  [[nodiscard]] double attention_time_s(const workload::Kernel& k) const;
  // flops / (published rate x attn_max) x attention_occupancy_factor.
  [[nodiscard]] double attention_compute_s(const workload::Kernel& k) const;
  // How much longer the kernel's grid keeps the SMs than the published figures' grid did, both in
  // waves of CTAs over the SMs (FlashAttention-2: one CTA per 128 query rows (forward) or keys
  // (backward) per sequence and head; 2 (forward) or 1 (backward) CTAs per SM): the published
  // shape's wave occupancy over this kernel's. With context parallelism (n = c m keys) the c ring
  // steps of TransformerEngine's ring are kernels of their own: the forward alternates them
  // between two streams, so they fill the SMs as one grid of c times the CTAs; the backward runs
  // them one after the other, step 0 over the local m keys, the c - 1 others (causal, load
  // balanced) over m or m/2 keys, whichever grid is emptier. 1 for other attention
  // implementations (their launch shapes are not modeled) and unknown SM counts.
  [[nodiscard]] double attention_occupancy_factor(const workload::Kernel& k) const;
  // The published attention throughput (FLOP/s) for this kernel's pass, mask, head dimension and
  // query length: the series of the nearest head dimension (log scale), linear in log2 of the
  // sequence length, constant beyond the published range. No curves (unknown architecture): the
  // matmul ceiling.
  [[nodiscard]] double attention_rate_flops(const workload::Kernel& k) const;
  // The SM-sharing rule: compute that runs while communication kernels share the SMs takes
  // time_s x (1 + comm_slowdown).
  [[nodiscard]] double comm_slowed_time_s(double time_s) const;
  [[nodiscard]] double overlapped_time_s(const workload::Kernel& k) const;
  [[nodiscard]] const Efficiency& efficiency() const { return gpu_.efficiency; }
  [[nodiscard]] const scenarios::GpuSpec& gpu() const { return gpu_; }
  [[nodiscard]] const scenarios::SoftwareSpec& software() const { return software_; }
  // The kernel's bytes at hbm_eff of the HBM bandwidth.
  [[nodiscard]] double memory_time_s(const workload::Kernel& k) const;

 private:
  scenarios::GpuSpec gpu_;
  scenarios::SoftwareSpec software_;
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
