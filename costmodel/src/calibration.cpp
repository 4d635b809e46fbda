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

const std::string kValidationDir = "validation/";
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

std::vector<std::string> validation_set_names() { return names_under(kValidationDir); }

std::string validation_set_text(const std::string& name) {
  const std::string* text = find_file(kValidationDir + name + kJson);
  if (!text) throw ScenarioError("validate", "unknown validation set '" + name + "'");
  return *text;
}

std::vector<ValidationRecord> parse_validation_set(const std::string& text, const std::string& set_name) {
  const json j = parse(text, set_name);
  if (!j.is_object()) throw ScenarioError(set_name, "must be a JSON object");
  only_keys(j, {"source", "notes", "records"}, set_name);
  string_field(j, "source", set_name);
  const auto records = j.find("records");
  if (records == j.end() || !records->is_array() || records->empty())
    throw ScenarioError(set_name + ".records", "must be a non-empty array");

  std::vector<ValidationRecord> out;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < records->size(); ++i) {
    const json& r = (*records)[i];
    const std::string where = set_name + ".records[" + std::to_string(i) + "]";
    if (!r.is_object()) throw ScenarioError(where, "must be an object");
    only_keys(r, {"name", "scenario", "measured", "flops_formula", "notes"}, where);
    ValidationRecord rec;
    rec.set = set_name;
    rec.name = string_field(r, "name", where);
    if (!seen.insert(rec.name).second) throw ScenarioError(where + ".name", "duplicate name '" + rec.name + "'");
    const auto sc = r.find("scenario");
    if (sc == r.end() || !sc->is_object()) throw ScenarioError(where + ".scenario", "must be an object");
    rec.scenario_json = sc->dump();
    const auto measured = r.find("measured");
    if (measured == r.end() || !measured->is_object()) throw ScenarioError(where + ".measured", "must be an object");
    only_keys(*measured, {"step_time_s", "tflops_per_gpu"}, where + ".measured");
    if (measured->contains("step_time_s")) rec.step_time_s = number(*measured, "step_time_s", where + ".measured");
    if (measured->contains("tflops_per_gpu"))
      rec.tflops_per_gpu = number(*measured, "tflops_per_gpu", where + ".measured");
    if (!rec.step_time_s && !rec.tflops_per_gpu)
      throw ScenarioError(where + ".measured", "needs step_time_s or tflops_per_gpu");
    if ((rec.step_time_s && !(*rec.step_time_s > 0)) || (rec.tflops_per_gpu && !(*rec.tflops_per_gpu > 0)))
      throw ScenarioError(where + ".measured", "measurements must be positive");
    const std::string formula = string_field(r, "flops_formula", where);
    try {
      rec.flops_formula = flops_formula_from_string(formula);
    } catch (const ScenarioError&) {
      throw ScenarioError(where + ".flops_formula", "unknown formula '" + formula +
                                                        "' (expected megatron-causal, megatron-pre-0.11 or narayanan-eq3)");
    }
    if (r.contains("notes")) rec.notes = string_field(r, "notes", where);
    out.push_back(std::move(rec));
  }
  return out;
}

std::vector<ValidationRecord> validation_records(const std::string& set_name) {
  return parse_validation_set(validation_set_text(set_name), set_name);
}

}  // namespace stepsim::costmodel
