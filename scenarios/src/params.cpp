#include "stepsim/scenarios/params.hpp"

#include <cstdio>
#include <string_view>
#include <unordered_map>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/names.hpp"

namespace stepsim::scenarios {

namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

}  // namespace

std::span<const Param> parameters() { return param_table::kParams; }

const Param& parameter(std::string_view key) {
  // By key, built once: scenario reading asks for a parameter at every field it reads.
  static const std::unordered_map<std::string_view, const Param*> by_key = [] {
    std::unordered_map<std::string_view, const Param*> m;
    for (const Param& p : param_table::kParams) m.emplace(p.key, &p);  // the first of a key, as a scan would find
    return m;
  }();
  if (const auto it = by_key.find(key); it != by_key.end()) return *it->second;
  throw InternalError("scenarios: no parameter \"" + std::string(key) + "\" in the parameter table");
}

std::string to_string(ParamType t) {
  static constexpr NameTable<ParamType, 7> kNames{{
      {"integer", ParamType::Integer}, {"number", ParamType::Number}, {"bool", ParamType::Boolean}, {"string", ParamType::String},
      {"choice", ParamType::Choice}, {"preset", ParamType::Preset}, {"object", ParamType::Object}}};
  return name_of(kNames, t);
}

std::string default_text(const Param& p) {
  if (!p.value) return std::string(p.default_text);
  if (p.type == ParamType::Boolean) return *p.value != 0 ? "true" : "false";
  return number_text(*p.value);
}

std::string range_text(const Param& p) {
  if (p.type == ParamType::Integer) return number_text(p.min) + " .. " + number_text(p.max);
  if (p.type == ParamType::Number) return (p.min_exclusive ? "(" : "[") + number_text(p.min) + ", " + number_text(p.max) + "]";
  return {};
}

}  // namespace stepsim::scenarios
