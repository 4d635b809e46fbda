#include "stepsim/costmodel/calibration.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "stepsim/scenarios/error.hpp"

namespace stepsim::costmodel {

namespace detail {
// Generated at configure time from costmodel/data/ (costmodel/CMakeLists.txt): relative path -> text.
const std::map<std::string, std::string>& embedded_data();
}  // namespace detail

namespace {

using nlohmann::json;

const std::string kEfficiencyDir = "efficiency/";
const std::string kJson = ".json";

// Names of the embedded files under `dir` with the ".json" suffix, sorted (std::map order).
std::vector<std::string> names_under(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& [path, text] : detail::embedded_data()) {
    if (path.rfind(dir, 0) == 0 && path.size() > dir.size() + kJson.size() &&
        path.compare(path.size() - kJson.size(), kJson.size(), kJson) == 0) {
      names.push_back(path.substr(dir.size(), path.size() - dir.size() - kJson.size()));
    }
  }
  return names;
}

const std::string* find_file(const std::string& path) {
  const auto& files = detail::embedded_data();
  const auto it = files.find(path);
  return it == files.end() ? nullptr : &it->second;
}

json parse(const std::string& text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw ScenarioError(origin, std::string("invalid JSON: ") + e.what());
  }
}

double number(const json& obj, const std::string& key, const std::string& origin) {
  const auto it = obj.find(key);
  if (it == obj.end()) throw ScenarioError(origin + "." + key, "missing");
  if (!it->is_number()) throw ScenarioError(origin + "." + key, "must be a number");
  const double v = it->get<double>();
  if (!std::isfinite(v)) throw ScenarioError(origin + "." + key, "must be finite");
  return v;
}

std::string string_field(const json& obj, const std::string& key, const std::string& origin) {
  const auto it = obj.find(key);
  if (it == obj.end()) throw ScenarioError(origin + "." + key, "missing");
  if (!it->is_string()) throw ScenarioError(origin + "." + key, "must be a string");
  return it->get<std::string>();
}

void only_keys(const json& obj, const std::set<std::string>& allowed, const std::string& origin) {
  for (const auto& [key, value] : obj.items()) {
    if (!allowed.count(key)) throw ScenarioError(origin + "." + key, "unknown key");
  }
}

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

std::vector<std::string> efficiency_gpu_names() { return names_under(kEfficiencyDir); }

std::string efficiency_text(const std::string& gpu_name) {
  const std::string* text = find_file(kEfficiencyDir + gpu_name + kJson);
  if (!text) throw ScenarioError("cluster.gpu", "no efficiency data for GPU '" + gpu_name + "'");
  return *text;
}

Efficiency efficiency_from_json(const std::string& text, const std::string& origin) {
  const json j = parse(text, origin);
  if (!j.is_object()) throw ScenarioError(origin, "must be a JSON object");
  only_keys(j, {"source", "gemm_max", "gemm_half_flops", "attn_max", "attn_half_flops", "hbm_eff", "comm_slowdown"},
            origin);
  string_field(j, "source", origin);
  Efficiency e;
  e.gemm_max = number(j, "gemm_max", origin);
  e.gemm_half_flops = number(j, "gemm_half_flops", origin);
  e.attn_max = number(j, "attn_max", origin);
  e.attn_half_flops = number(j, "attn_half_flops", origin);
  e.hbm_eff = number(j, "hbm_eff", origin);
  e.comm_slowdown = number(j, "comm_slowdown", origin);
  return e;
}

std::string efficiency_to_json(const Efficiency& e, const std::string& source) {
  std::string out = "{\n";
  out += "  \"source\": " + json(source).dump() + ",\n";
  out += "  \"gemm_max\": " + format_number(e.gemm_max) + ",\n";
  out += "  \"gemm_half_flops\": " + format_number(e.gemm_half_flops) + ",\n";
  out += "  \"attn_max\": " + format_number(e.attn_max) + ",\n";
  out += "  \"attn_half_flops\": " + format_number(e.attn_half_flops) + ",\n";
  out += "  \"hbm_eff\": " + format_number(e.hbm_eff) + ",\n";
  out += "  \"comm_slowdown\": " + format_number(e.comm_slowdown) + "\n";
  out += "}\n";
  return out;
}

Efficiency ComputeModel::calibrated(const scenarios::GpuSpec& gpu) {
  const std::string* text = find_file(kEfficiencyDir + gpu.name + kJson);
  if (!text) return default_efficiency(gpu);
  return efficiency_from_json(*text, "costmodel/data/efficiency/" + gpu.name + kJson);
}

}  // namespace stepsim::costmodel
