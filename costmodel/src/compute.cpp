#include "stepsim/costmodel/compute.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/workload/shape.hpp"

namespace stepsim::costmodel {

using scenarios::MlpKind;
using scenarios::Scenario;

ComputeModel::ComputeModel(const scenarios::GpuSpec& gpu) : gpu_(gpu) {
  const Efficiency& eff = gpu_.efficiency;
  if (!(gpu.peak_bf16_flops > 0)) throw ScenarioError("cluster.gpu.peak_bf16_tflops", "must be positive");
  if (!(gpu.hbm_Bps > 0)) throw ScenarioError("cluster.gpu.hbm_TBps", "must be positive");
  auto check_fraction = [](double v, const char* what) {
    if (!(v > 0 && v <= 1)) throw ScenarioError(std::string("efficiency.") + what, "must lie in (0, 1]");
  };
  check_fraction(eff.gemm_max, "gemm_max");
  check_fraction(eff.attn_max, "attn_max");
  check_fraction(eff.hbm_eff, "hbm_eff");
  if (!(eff.gemm_half_flops >= 0)) throw ScenarioError("efficiency.gemm_half_flops", "must be >= 0");
  if (!(eff.attn_half_flops >= 0)) throw ScenarioError("efficiency.attn_half_flops", "must be >= 0");
  if (!(eff.comm_slowdown >= 0)) throw ScenarioError("efficiency.comm_slowdown", "must be >= 0");
}

double ComputeModel::time_s(const workload::Kernel& k) const {
  const double memory_s = k.bytes / (gpu_.hbm_Bps * gpu_.efficiency.hbm_eff);
  if (k.kind == workload::KernelKind::Memory || k.flops <= 0) return memory_s;
  const bool is_gemm = k.kind == workload::KernelKind::Gemm;
  const double max_eff = is_gemm ? gpu_.efficiency.gemm_max : gpu_.efficiency.attn_max;
  const double half = is_gemm ? gpu_.efficiency.gemm_half_flops : gpu_.efficiency.attn_half_flops;
  const double eff = max_eff * k.flops / (k.flops + half);
  const double compute_s = k.flops / (gpu_.peak_bf16_flops * eff);
  return std::max(compute_s, memory_s);
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
