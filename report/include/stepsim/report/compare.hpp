#pragma once
// Side-by-side comparison of simulated scenarios (`stepsim compare`): step time, throughput,
// MFU, bubble, exposed communication, peak memory per stage, OOM, time and cost to train, and
// each column's difference in % against the first.

#include <string>
#include <vector>

#include "stepsim/report/step_report.hpp"
#include "stepsim/report/tables.hpp"
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::report {

struct CompareColumn {
  std::string label;              // file name, or "<file> + overrides"
  scenarios::Scenario scenario;
  StepReport report;
};

// Difference of `value` against `reference` in percent: 100 (value - reference) / reference
// (0 when both are 0; null in JSON and "n/a" in tables when only the reference is 0).
[[nodiscard]] double percent_difference(double value, double reference);

enum class CompareStyle {
  Compare,  // `stepsim compare`: values with their units and the difference against the first column
  Report,   // `stepsim report`: units in the row names, values alone
};
// The comparison: one row per metric of the registry (rows that no column has are left out),
// one column per scenario, with the layout, GPUs, engine and out-of-memory rows.
[[nodiscard]] Table comparison_table(const std::vector<CompareColumn>& columns, CompareStyle style);

// Plain-text table (metrics as rows, scenarios as columns).
[[nodiscard]] std::string compare_table(const std::vector<CompareColumn>& columns);
// The same as a Markdown table.
[[nodiscard]] std::string compare_markdown(const std::vector<CompareColumn>& columns);
// CSV for pandas: one row per column: label, scenario, the step fields (sweep_row.hpp), then the
// differences against the first column, delta_percent_<key> (in % of its value) and
// delta_points_<key> (of percentages, in percentage points); empty cells in the first row.
[[nodiscard]] std::string compare_csv(const std::vector<CompareColumn>& columns);
// The comparison table in LaTeX (\label{tab:stepsim-compare}) after a comment line with `provenance`.
[[nodiscard]] std::string compare_latex(const std::vector<CompareColumn>& columns, const std::string& provenance);
// {"columns": [{"label", "summary", the step fields (sweep_row.hpp), "stages": [...], "delta_percent": {...},
// "delta_points": {...}}]}: differences against the first column in % of its value, and of the
// percentages (mfu, bubble_fraction, exposed_comm_fraction) in percentage points.
[[nodiscard]] std::string compare_json(const std::vector<CompareColumn>& columns);

}  // namespace stepsim::report
