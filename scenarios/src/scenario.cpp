#include "stepsim/scenarios/scenario.hpp"

#include <algorithm>
#include <array>

#include "stepsim/scenarios/error.hpp"

namespace stepsim::scenarios {

Efficiency default_efficiency(const GpuSpec&) {
  Efficiency e;
  e.gemm_max = 1.0;
  e.attn_max = 1.0;
  e.hbm_eff = 0.85;
  e.comm_slowdown = 0.05;
  e.kind = EfficiencyKind::Default;
  e.source = "built-in: the published ceilings (gemm_max, attn_max 1; hbm_eff 0.85; comm_slowdown 0.05)";
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
