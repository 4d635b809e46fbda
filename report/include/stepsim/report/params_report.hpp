#pragma once
// The scenario parameters (scenarios/params.hpp) as `stepsim params` prints them. The Markdown form
// is the field reference of scenarios/README.md (a test keeps the two equal).

#include <string>

#include "stepsim/report/tables.hpp"

namespace stepsim::report {

// One row per declared parameter: field, type, unit / values, default, range, description, source.
[[nodiscard]] Table parameter_table();
// The same as a JSON array of objects (key, type, unit, default, range, description, source).
[[nodiscard]] std::string parameter_json();

}  // namespace stepsim::report
