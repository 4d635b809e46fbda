#include "stepsim/driver/efficiency_file.hpp"

#include <nlohmann/json.hpp>

#include "stepsim/report/format.hpp"

namespace stepsim::driver {

namespace {

std::string format_number(double v) { return report::significant(v, 9); }

}  // namespace

std::string efficiency_to_json(const scenarios::Efficiency& e, const std::string& source) {
  std::string out = "{\n";
  out += "  \"source\": " + nlohmann::json(source).dump() + ",\n";
  if (!e.fitted.empty()) {
    std::string list;
    for (const auto& p : e.fitted) list += (list.empty() ? "" : ",") + p;
    out += "  \"fitted\": " + nlohmann::json(list).dump() + ",\n";
  }
  out += "  \"gemm_max\": " + format_number(e.gemm_max) + ",\n";
  if (e.gemm_fp8_max > 0) out += "  \"gemm_fp8_max\": " + format_number(e.gemm_fp8_max) + ",\n";
  out += "  \"attn_max\": " + format_number(e.attn_max) + ",\n";
  out += "  \"hbm_eff\": " + format_number(e.hbm_eff) + ",\n";
  out += "  \"comm_slowdown\": " + format_number(e.comm_slowdown) + "\n";
  out += "}\n";
  return out;
}

}  // namespace stepsim::driver
