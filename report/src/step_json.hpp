#pragma once
// The JSON of one step (step_fields() of sweep_row.hpp), shared by every writer of the library.

#include <nlohmann/json.hpp>

#include "stepsim/report/sweep_row.hpp"

namespace stepsim::report::detail {

// Adds the step_fields() of `r` to `j`, in their order (null where a value does not apply).
void put_step_fields(nlohmann::ordered_json& j, const SweepRow& r);

// A CSV cell of a JSON value: "" for null, true/false, numbers as JSON writes them, strings as they are.
[[nodiscard]] std::string csv_cell(const nlohmann::ordered_json& v);

}  // namespace stepsim::report::detail
