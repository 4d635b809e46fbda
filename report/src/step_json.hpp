#pragma once
// The JSON of one step (step_fields() of sweep_row.hpp), shared by every writer of the library.

#include <nlohmann/json.hpp>

#include "stepsim/report/sweep_row.hpp"
#include "stepsim/report/tables.hpp"

namespace stepsim::report::detail {

// Adds the step_fields() of `r` to `j`, in their order (null where a value does not apply).
void put_step_fields(nlohmann::ordered_json& j, const SweepRow& r);

// A CSV cell of a JSON value: "" for null, true/false, numbers as JSON writes them, strings as they are.
[[nodiscard]] std::string csv_cell(const nlohmann::ordered_json& v);

// Adds a JSON object as a row of `t`, its values as CSV cells (csv_cell): the first row added sets
// the columns (one per key, in order); later rows must have those keys.
void add_json_row(Table& t, const nlohmann::ordered_json& row);

// A table of JSON objects that have the same keys: add_json_row of each.
[[nodiscard]] Table rows_table(const std::vector<nlohmann::ordered_json>& rows);

}  // namespace stepsim::report::detail
