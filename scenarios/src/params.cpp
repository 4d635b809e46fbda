#include "stepsim/scenarios/params.hpp"

#include <cstdio>

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
  for (const Param& p : param_table::kParams)
    if (p.key == key) return p;
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
