#include "stepsim/costmodel/compute.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/workload/shape.hpp"

namespace stepsim::costmodel {

using scenarios::MlpKind;
using scenarios::Scenario;

ComputeModel::ComputeModel(const scenarios::GpuSpec& gpu, const scenarios::SoftwareSpec& software)
    : gpu_(gpu), software_(software) {
  const Efficiency& eff = gpu_.efficiency;
  if (!(gpu.peak_bf16_flops > 0)) throw ScenarioError("cluster.gpu.peak_bf16_tflops", "must be positive");
  if (!(gpu.hbm_Bps > 0)) throw ScenarioError("cluster.gpu.hbm_TBps", "must be positive");
  if (!(gpu_.matmul_bf16_flops > 0)) gpu_.matmul_bf16_flops = gpu.peak_bf16_flops;
  if (!(gpu_.matmul_fp8_flops > 0)) gpu_.matmul_fp8_flops = gpu.peak_fp8_flops * gpu_.matmul_bf16_flops / gpu.peak_bf16_flops;
  auto check_fraction = [](double v, const char* what) {
    if (!(v > 0 && v <= 1)) throw ScenarioError(std::string("efficiency.") + what, "must lie in (0, 1]");
  };
  check_fraction(eff.gemm_max, "gemm_max");
  if (eff.gemm_fp8_max != 0) check_fraction(eff.gemm_fp8_max, "gemm_fp8_max");
  check_fraction(eff.attn_max, "attn_max");
  check_fraction(eff.hbm_eff, "hbm_eff");
  if (!(eff.comm_slowdown >= 0)) throw ScenarioError("efficiency.comm_slowdown", "must be >= 0");
  if (!(software.kernel_launch_s >= 0)) throw ScenarioError("software.kernel_launch_us", "must be >= 0");
}

double ComputeModel::memory_time_s(const workload::Kernel& k) const {
  return k.bytes / (gpu_.hbm_Bps * gpu_.efficiency.hbm_eff);
}

GemmTiling ComputeModel::gemm_tiling(const workload::Kernel& k) const {
  const double sms = static_cast<double>(gpu_.sms);
  const auto tiling = [&](double tm, double tn, double efficiency) {
    GemmTiling t;
    t.tile_m = tm;
    t.tile_n = tn;
    t.efficiency = efficiency;
    t.tiles = std::ceil(k.m / tm) * std::ceil(k.n / tn) * k.batch;
    t.waves = sms > 0 ? std::ceil(t.tiles / sms) : t.tiles / std::max(sms, 1.0);
    return t;
  };
  const auto tm = static_cast<double>(gpu_.gemm_tile_m), tn = static_cast<double>(gpu_.gemm_tile_n);
  if (tm <= 0 || tn <= 0) {
    // No tile quantization: the exact output, in waves of one element per SM.
    GemmTiling t;
    t.tile_m = t.tile_n = 1;
    t.tiles = k.m * k.n * k.batch;
    t.waves = sms > 0 ? t.tiles / sms : t.tiles;
    return t;
  }
  // The tile that finishes first: the large tile either way round, or the small square tile at
  // its lower throughput per SM (the work of a wave is waves x tile area / efficiency).
  const auto cost = [](const GemmTiling& t) { return t.waves * t.tile_m * t.tile_n / t.efficiency; };
  GemmTiling best = tiling(tm, tn, 1.0);
  if (const GemmTiling b = tiling(tn, tm, 1.0); cost(b) < cost(best)) best = b;
  if (gpu_.gemm_small_tile > 0) {
    const auto side = static_cast<double>(gpu_.gemm_small_tile);
    if (const GemmTiling c = tiling(side, side, gpu_.gemm_small_tile_efficiency); cost(c) < cost(best)) best = c;
  }
  return best;
}

double ComputeModel::gemm_rate_flops(const workload::Kernel& k) const {
  if (!k.fp8) return gpu_.matmul_bf16_flops * gpu_.efficiency.gemm_max;
  if (!(gpu_.matmul_fp8_flops > 0))
    throw ScenarioError("training.precision", "an FP8 GEMM on " + gpu_.name + ", which has no FP8 peak (cluster.gpu.peak_fp8_tflops)");
  return gpu_.matmul_fp8_flops * gpu_.efficiency.fp8_gemm_fraction();
}

double ComputeModel::gemm_compute_s(const workload::Kernel& k) const {
  const GemmTiling t = gemm_tiling(k);
  const double sms = gpu_.sms > 0 ? static_cast<double>(gpu_.sms) : 1.0;
  const double sm_rate = gemm_rate_flops(k) * t.efficiency / sms;
  // Each tile also pays its fixed cost, gemm_k_overhead more elements of K.
  return t.waves * 2.0 * t.tile_m * t.tile_n * (k.k + gpu_.gemm_k_overhead) / sm_rate;
}

double ComputeModel::gemm_time_s(const workload::Kernel& k) const { return std::max(gemm_compute_s(k), memory_time_s(k)); }

namespace {

// FlashAttention-2's launch on SM80/SM90 for head dimensions up to 128 (Dao-AILab/flash-attention
// v2.5, csrc/flash_attn/src/flash_fwd_launch_template.h and flash_bwd_launch_template.h): the
// forward's grid is one CTA per 128 query rows per (sequence, head), 4 warps and 64 KiB of shared
// memory, two CTAs per SM (register-bound: 128 threads x 255 registers of 64 Ki per SM); the
// backward's is one CTA per 128 keys per (sequence, head), 8 warps and over 100 KiB of shared
// memory, one CTA per SM.
constexpr double kFa2FwdBlockQueries = 128;
constexpr double kFa2FwdCtasPerSm = 2;
constexpr double kFa2BwdBlockKeys = 128;
constexpr double kFa2BwdCtasPerSm = 1;
// The shape of the published attention figures (scenarios/presets/kernels/attention.json: batch x
// sequence = 16k tokens, hidden 2048).
constexpr double kAttentionBenchTokens = 16384;
constexpr double kAttentionBenchHidden = 2048;

// Linear interpolation of `ys` over log2(xs) at log2(x), constant beyond the ends.
double log_interpolate(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  if (x <= xs.front()) return ys.front();
  if (x >= xs.back()) return ys.back();
  for (std::size_t i = 1; i < xs.size(); ++i)
    if (x <= xs[i]) {
      const double f = std::log2(x / xs[i - 1]) / std::log2(xs[i] / xs[i - 1]);
      return ys[i - 1] + f * (ys[i] - ys[i - 1]);
    }
  return ys.back();
}

}  // namespace

double ComputeModel::attention_rate_flops(const workload::Kernel& k) const {
  const auto& c = software_.attention_curves;
  const scenarios::AttentionSeries* best = nullptr;
  double best_distance = 0;
  for (const auto& series : c.series) {
    if (series.backward != k.backward || series.causal != k.causal) continue;
    const double distance = std::fabs(std::log2(static_cast<double>(series.head_dim) / k.k));
    // Nearest head dimension; on a tie the larger one.
    if (best == nullptr || distance < best_distance || (distance == best_distance && series.head_dim > best->head_dim))
      best = &series, best_distance = distance;
  }
  if (best == nullptr) return gpu_.matmul_bf16_flops;
  return log_interpolate(c.seq_len, best->flops_per_s, k.m);
}

double attention_wave_occupancy(double ctas, double slots) {
  if (!(ctas > 0) || !(slots > 0)) return 1.0;
  return (ctas / slots) / std::ceil(ctas / slots - 1e-9);
}

double ComputeModel::attention_occupancy_factor(const workload::Kernel& k) const {
  if (software_.attention_curves.implementation != "flash-attention-2" || gpu_.sms <= 0 || !(k.m > 0) || !(k.k > 0)) return 1.0;
  const double block = k.backward ? kFa2BwdBlockKeys : kFa2FwdBlockQueries;
  const double slots = static_cast<double>(gpu_.sms) * (k.backward ? kFa2BwdCtasPerSm : kFa2FwdCtasPerSm);
  const auto occupancy_of = [&](double rows, double batch) { return attention_wave_occupancy(std::ceil(rows / block - 1e-9) * batch, slots); };
  // The published figures: 16k tokens per batch, hidden 2048, at sequence length m.
  const double bench_batch = std::max(1.0, kAttentionBenchTokens / k.m) * std::max(1.0, kAttentionBenchHidden / k.k);
  const double bench = occupancy_of(k.m, bench_batch);
  const double c = k.n > k.m ? std::round(k.n / k.m) : 1.0;
  const double whole = occupancy_of(k.m, k.batch);
  // TransformerEngine's CP ring: the forward alternates its c steps between two streams (to fill
  // one step's last wave with the next step's CTAs), so its c grids run as one.
  if (c > 1.0 && !k.backward) return bench / occupancy_of(k.m, c * k.batch);
  if (c <= 1.0 || !k.causal) return bench / whole;
  // The backward runs its c steps one after the other on one stream. Causal (2c chunks, load
  // balanced): step 0 the local blocks, then c - 1 steps in which each rank runs its dK/dV tiles
  // over half the keys or all its keys with half its queries: the step waits for the emptier grid.
  const double half = std::min(whole, occupancy_of(k.m / 2.0, k.batch));
  return bench * (1.0 / whole + (c - 1.0) / half) / c;
}

double ComputeModel::attention_compute_s(const workload::Kernel& k) const {
  return k.flops / (attention_rate_flops(k) * gpu_.efficiency.attn_max) * attention_occupancy_factor(k);
}

double ComputeModel::attention_time_s(const workload::Kernel& k) const { return std::max(attention_compute_s(k), memory_time_s(k)); }

KernelTime ComputeModel::breakdown(const workload::Kernel& k) const {
  KernelTime t;
  if (k.kind == workload::KernelKind::Host) {
    t.body_s = software_.microbatch_host_s;
    return t;
  }
  t.launch_s = software_.kernel_launch_s;
  t.memory_s = memory_time_s(k);
  if (k.kind == workload::KernelKind::Memory || k.flops <= 0) {
    t.body_s = t.memory_s;
    return t;
  }
  t.compute_s = k.kind == workload::KernelKind::Gemm ? gemm_compute_s(k) : attention_compute_s(k);
  t.body_s = std::max(t.compute_s, t.memory_s);
  return t;
}

double ComputeModel::time_s(const std::vector<workload::Kernel>& ks) const {
  double t = 0;
  for (const workload::Kernel& k : ks) t += time_s(k);
  return t;
}

double ComputeModel::comm_slowed_time_s(double time_s) const { return time_s * (1.0 + gpu_.efficiency.comm_slowdown); }

double ComputeModel::overlapped_time_s(const workload::Kernel& k) const { return comm_slowed_time_s(time_s(k)); }

namespace {

double d(std::int64_t x) { return static_cast<double>(x); }

// 12 B s L h^2 [ (1 + k/a + s/(attn_div h)) (q/h) + (f/h) g + v/(2 L h) ] (docs/training-step.md 9).
double megatron_formula(const Scenario& s, double attn_div) {
  const double B = d(s.training.global_batch);
  const double seq = d(s.training.seq_len);
  const double L = d(s.model.layers);
  const double h = d(s.model.hidden);
  const double a = d(s.model.heads);
  const double k = d(s.model.kv_heads > 0 ? s.model.kv_heads : s.model.heads);
  const double q = h;  // query projection size a d_h with d_h = h / a
  const double f = d(s.model.ffn_hidden);
  const double g = s.model.mlp == MlpKind::SwiGlu ? 1.5 : 1.0;
  const double v = d(workload::shape_of(s).padded_vocab);
  return 12.0 * B * seq * L * h * h *
         ((1.0 + k / a + seq / (attn_div * h)) * (q / h) + (f / h) * g + v / (2.0 * L * h));
}

}  // namespace

double megatron_model_flops(const Scenario& s) { return megatron_formula(s, 2.0); }

FlopsFormula flops_formula_from_string(const std::string& name) {
  if (name == "megatron-causal") return FlopsFormula::MegatronCausal;
  if (name == "megatron-pre-0.11") return FlopsFormula::MegatronPre011;
  if (name == "narayanan-eq3") return FlopsFormula::NarayananEq3;
  throw ScenarioError("flops_formula",
                      "unknown formula '" + name + "' (expected megatron-causal, megatron-pre-0.11 or narayanan-eq3)");
}

std::string to_string(FlopsFormula f) {
  switch (f) {
    case FlopsFormula::MegatronCausal: return "megatron-causal";
    case FlopsFormula::MegatronPre011: return "megatron-pre-0.11";
    case FlopsFormula::NarayananEq3: return "narayanan-eq3";
  }
  return "megatron-causal";
}

// Narayanan et al. SC'21 Eq. 3: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
double model_flops(const Scenario& s, FlopsFormula f) {
  switch (f) {
    case FlopsFormula::MegatronCausal: return megatron_formula(s, 2.0);
    case FlopsFormula::MegatronPre011: return megatron_formula(s, 1.0);
    case FlopsFormula::NarayananEq3: {
      const double B = d(s.training.global_batch);
      const double seq = d(s.training.seq_len);
      const double L = d(s.model.layers);
      const double h = d(s.model.hidden);
      const double V = d(s.model.vocab);
      return 96.0 * B * seq * L * h * h * (1.0 + seq / (6.0 * h) + V / (16.0 * L * h));
    }
  }
  return 0;
}

}  // namespace stepsim::costmodel
