#include "stepsim/driver/validation_data.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"

namespace stepsim::driver {

namespace detail {
// Generated from driver/data/ by cmake/embed_files.cmake: relative path -> text.
const std::map<std::string, std::string_view>& embedded_files();
}  // namespace detail

namespace {

using nlohmann::json;

const std::string kPrefix = "validation/";
const std::string kSuffix = ".json";

// One JSON object of a validation set: its keys are checked against `allowed` on construction;
// every error names "<where>.<key>".
class Fields {
 public:
  Fields(const json& j, std::string where, std::set<std::string> allowed) : j_(j), where_(std::move(where)) {
    if (!j_.is_object()) throw ScenarioError(where_, "must be an object");
    for (const auto& item : j_.items())
      if (allowed.count(item.key()) == 0) throw ScenarioError(where_ + "." + item.key(), "unknown key");
  }
  [[nodiscard]] bool has(const std::string& key) const { return j_.contains(key); }
  [[nodiscard]] const json& get(const std::string& key) const {
    if (!has(key)) throw ScenarioError(where_ + "." + key, "missing");
    return j_.at(key);
  }
  [[nodiscard]] std::string text(const std::string& key) const {
    const json& v = get(key);
    if (!v.is_string()) throw ScenarioError(where_ + "." + key, "must be a string");
    return v.get<std::string>();
  }
  [[nodiscard]] double number(const std::string& key) const {
    const json& v = get(key);
    if (!v.is_number()) throw ScenarioError(where_ + "." + key, "must be a number");
    if (!std::isfinite(v.get<double>())) throw ScenarioError(where_ + "." + key, "must be finite");
    return v.get<double>();
  }
  [[nodiscard]] const std::string& where() const { return where_; }

 private:
  const json& j_;
  std::string where_;
};

ValidationRecord parse_record(const json& r, const std::string& set_name, const std::string& where) {
  const Fields f(r, where, {"name", "table", "software", "scenario", "measured", "flops_formula", "skip", "notes"});
  ValidationRecord rec;
  rec.set = set_name;
  rec.name = f.text("name");
  rec.table = f.has("table") ? f.text("table") : "all";
  if (rec.table.empty()) throw ScenarioError(where + ".table", "must not be empty");
  if (f.has("software")) rec.software = f.text("software");
  if (f.has("skip")) {
    rec.skip_reason = f.text("skip");
    if (rec.skip_reason.empty()) throw ScenarioError(where + ".skip", "must give the reason");
  }
  const bool required = !rec.skipped();
  if (required || f.has("scenario")) {
    if (!f.has("scenario") || !f.get("scenario").is_object()) throw ScenarioError(where + ".scenario", "must be an object");
    json scenario = f.get("scenario");
    // The record's software stack, when it is a preset, is the scenario's unless it names one.
    const auto stacks = scenarios::software_preset_names();
    if (!scenario.contains("software") && std::find(stacks.begin(), stacks.end(), rec.software) != stacks.end())
      scenario["software"] = rec.software;
    rec.scenario_json = scenario.dump();
  }
  if (required || f.has("measured")) {
    if (!f.has("measured") || !f.get("measured").is_object())
      throw ScenarioError(where + ".measured", "must be an object");
    const Fields measured(f.get("measured"), where + ".measured", {"step_time_s", "tflops_per_gpu", "peak_allocated_gib"});
    if (measured.has("step_time_s")) rec.step_time_s = measured.number("step_time_s");
    if (measured.has("tflops_per_gpu")) rec.tflops_per_gpu = measured.number("tflops_per_gpu");
    if (measured.has("peak_allocated_gib")) rec.peak_allocated_gib = measured.number("peak_allocated_gib");
    if (!rec.step_time_s && !rec.tflops_per_gpu && !rec.peak_allocated_gib)
      throw ScenarioError(measured.where(), "needs step_time_s, tflops_per_gpu or peak_allocated_gib");
    if (rec.peak_allocated_gib && (rec.step_time_s || rec.tflops_per_gpu))
      throw ScenarioError(measured.where(), "peak_allocated_gib is a memory record's only measurement");
    if ((rec.step_time_s && !(*rec.step_time_s > 0)) || (rec.tflops_per_gpu && !(*rec.tflops_per_gpu > 0)) ||
        (rec.peak_allocated_gib && !(*rec.peak_allocated_gib > 0)))
      throw ScenarioError(measured.where(), "measurements must be positive");
  }
  if (required || f.has("flops_formula")) {
    const std::string formula = f.text("flops_formula");
    try {
      rec.flops_formula = costmodel::flops_formula_from_string(formula);
    } catch (const ScenarioError&) {
      throw ScenarioError(where + ".flops_formula", "unknown formula '" + formula +
                                                        "' (expected megatron-causal, megatron-pre-0.11 or narayanan-eq3)");
    }
  }
  if (f.has("notes")) rec.notes = f.text("notes");
  return rec;
}

}  // namespace

std::vector<std::string> validation_set_names() {
  std::vector<std::string> names;
  for (const auto& entry : detail::embedded_files()) {
    const std::string& path = entry.first;
    if (path.size() > kPrefix.size() + kSuffix.size() && path.rfind(kPrefix, 0) == 0 &&
        path.compare(path.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0)
      names.push_back(path.substr(kPrefix.size(), path.size() - kPrefix.size() - kSuffix.size()));
  }
  // By set name: the files are ordered by path, where "x-sweep.json" comes before "x.json".
  std::sort(names.begin(), names.end());
  return names;
}

std::string validation_set_text(const std::string& name) {
  const auto& files = detail::embedded_files();
  const auto it = files.find(kPrefix + name + kSuffix);
  if (it == files.end()) throw ScenarioError("validate", "unknown validation set '" + name + "'");
  return std::string(it->second);
}

std::vector<ValidationRecord> parse_validation_set(const std::string& text, const std::string& set_name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ScenarioError(set_name, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) throw ScenarioError(set_name, "must be a JSON object");
  const Fields set(j, set_name, {"source", "software", "cluster", "notes", "fit", "records"});
  (void)set.text("source");
  for (const char* key : {"software", "cluster", "notes"})
    if (set.has(key)) (void)set.text(key);
  bool fit = true;
  if (set.has("fit")) {
    if (!set.get("fit").is_boolean()) throw ScenarioError(set_name + ".fit", "must be true or false");
    fit = set.get("fit").get<bool>();
  }
  if (!set.has("records") || !set.get("records").is_array() || set.get("records").empty())
    throw ScenarioError(set_name + ".records", "must be a non-empty array");
  std::vector<ValidationRecord> out;
  std::set<std::string> seen;
  std::map<std::string, int> table_quantity;  // table -> the quantity its records compare (0 step time, 1 TFLOP/s, 2 memory)
  const json& records = set.get("records");
  for (std::size_t i = 0; i < records.size(); ++i) {
    const std::string where = set_name + ".records[" + std::to_string(i) + "]";
    auto rec = parse_record(records[i], set_name, where);
    rec.fit = fit;
    if (!seen.insert(rec.name).second) throw ScenarioError(where + ".name", "duplicate name '" + rec.name + "'");
    if (!rec.skipped()) {
      const int quantity = rec.measures_memory() ? 2 : rec.step_time_s ? 0 : 1;
      const auto [it, added] = table_quantity.emplace(rec.table, quantity);
      if (!added && it->second != quantity)
        throw ScenarioError(where + ".measured", "table '" + rec.table +
                                                     "' mixes step_time_s, tflops_per_gpu and peak_allocated_gib records "
                                                     "(its layouts are ranked on one quantity)");
    }
    out.push_back(std::move(rec));
  }
  return out;
}

std::vector<ValidationRecord> validation_records(const std::string& set_name) {
  return parse_validation_set(validation_set_text(set_name), set_name);
}

}  // namespace stepsim::driver
