#include "stepsim/scenarios/scenario.hpp"

#include <algorithm>
#include <array>

#include "stepsim/scenarios/error.hpp"

namespace stepsim::scenarios {

std::int64_t stage_layers(const Scenario& s, std::int64_t stage) {
  const auto& p = s.parallel;
  const bool first = p.first_stage_layers.has_value(), last = p.last_stage_layers.has_value();
  if (first && stage == 0) return *p.first_stage_layers;
  if (last && stage == p.pp - 1) return *p.last_stage_layers;
  const std::int64_t rest = s.model.layers - p.first_stage_layers.value_or(0) - p.last_stage_layers.value_or(0);
  const std::int64_t stages = p.pp - (first ? 1 : 0) - (last ? 1 : 0);
  return stages > 0 ? rest / stages : 0;
}

Efficiency default_efficiency(const GpuSpec& gpu) {
  const bool a100_class = gpu.peak_bf16_flops < 600e12;
  Efficiency e;
  e.gemm_max = a100_class ? 0.78 : 0.70;
  e.gemm_half_flops = gpu.peak_bf16_flops * 5e-6;
  // FlashAttention-2 reaches 50-70 % of the A100's peak (Dao 2023) but only about 35 % of the
  // H100's (Shah et al. 2024, FlashAttention-3, section 1): it does not use Hopper's asynchronous
  // tensor cores. The measured H100 runs used FlashAttention-2.
  e.attn_max = a100_class ? 0.65 : 0.35;
  e.attn_half_flops = gpu.peak_bf16_flops * 8e-6;
  e.hbm_eff = 0.85;
  e.comm_slowdown = 0.05;
  e.kind = EfficiencyKind::Default;
  e.source = a100_class ? "built-in A100 curve (dense BF16 peak below 600 TFLOP/s)"
                        : "built-in H100 curve (dense BF16 peak of 600 TFLOP/s or more)";
  return e;
}

std::vector<int> rank_order_dims(const std::string& order) {
  static constexpr std::array<const char*, 4> kDimNames = {"tp", "cp", "dp", "pp"};
  const char* path = "parallel.rank_order";
  std::vector<int> dims;
  std::size_t start = 0;
  while (true) {
    const std::size_t dash = order.find('-', start);
    const std::string token = order.substr(start, dash == std::string::npos ? std::string::npos : dash - start);
    if (token != "ep") {
      const auto it = std::find(kDimNames.begin(), kDimNames.end(), token);
      if (it == kDimNames.end())
        throw ScenarioError(path, "unknown token '" + token + "' in '" + order +
                                      "' (expected a permutation of tp, cp, dp, pp joined by '-')");
      const int dim = static_cast<int>(it - kDimNames.begin());
      if (std::find(dims.begin(), dims.end(), dim) != dims.end())
        throw ScenarioError(path, "token '" + token + "' repeated in '" + order + "'");
      dims.push_back(dim);
    }
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  if (dims.size() != kDimNames.size()) {
    std::string missing;
    for (int d = 0; d < 4; ++d)
      if (std::find(dims.begin(), dims.end(), d) == dims.end())
        missing += std::string(missing.empty() ? "" : ", ") + kDimNames[static_cast<std::size_t>(d)];
    throw ScenarioError(path, "'" + order + "' lacks " + missing);
  }
  return dims;
}

}  // namespace stepsim::scenarios
