#pragma once
// The result of `stepsim validate` (predicted vs published step time and TFLOP/s per GPU per record;
// MAPE, max |error|, the Spearman rank correlation and the measured top 5 among the predicted top 8
// per set and per table), its cross-validated
// form (`--cross-validate`), the GPU coverage (`--gpus`) and their writers.

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace stepsim::report {

struct ValidationCase {
  std::string name;
  std::string table;                                // the group of records ranked together
  std::string gpu;                                  // the record's GPU preset name
  std::optional<double> measured_step_time_s;
  std::optional<double> measured_tflops_per_gpu;
  double predicted_step_time_s = 0;
  double predicted_tflops_per_gpu = 0;              // model_flops(scenario, flops_formula) / (step time x GPUs)
  std::string flops_formula;
  // A memory record: peak allocated memory of the last rank (no step simulated; times are 0).
  std::optional<double> measured_peak_allocated_gib;
  double predicted_peak_allocated_gib = 0;
  // A timed record (a run that was measured, so it fitted in memory): stepsim's peak device memory
  // over the step (the stage that peaks, allocator fragmentation included), the GPU's memory, and
  // whether stepsim calls the run out of memory. None for memory records.
  std::optional<double> predicted_peak_memory_gib;
  std::optional<double> gpu_memory_gib;
  bool predicted_oom = false;
  // Signed relative error on the measured quantity: predicted / measured - 1, on the step time
  // where it was measured, the peak allocated memory for a memory record, else on TFLOP/s per GPU.
  double error = 0;
};

// The quantity a case is compared on: {measured, predicted} step time where the step time was
// measured, peak allocated memory for a memory record, else TFLOP/s per GPU.
[[nodiscard]] std::pair<double, double> compared_values(const ValidationCase& c);

// A record that is listed but not simulated, with the reason ("FP8 is not modelled yet").
struct ValidationSkip {
  std::string name;
  std::string table;
  std::string reason;
};

// Figures of a group of cases (a set, a table of a set).
struct ValidationStats {
  std::size_t records = 0;
  double mape = 0;                                  // mean |error| (a fraction; 0 for no records)
  double max_abs_error = 0;                         // largest |error|
  // Spearman rank correlation of predicted vs measured values of the compared quantity (ties get
  // their average rank); none with fewer than 2 records, when either side is constant, or when the
  // cases do not all compare the same quantity.
  std::optional<double> spearman;
  // How many of the kTopMeasured fastest records as measured are among the kTopPredicted fastest
  // as predicted (fastest: the shortest step time, or the most TFLOP/s per GPU); none for memory
  // records, for cases that do not all compare the same quantity, and for groups of kTopPredicted
  // records or fewer (where the answer could only be all of them).
  std::optional<std::size_t> top_measured_in_top_predicted;
  // Measured runs (they ran, so they fitted) that stepsim calls out of memory.
  std::size_t predicted_oom = 0;
};

// The ranking check of a group: the measured top 5 among the predicted top 8.
inline constexpr std::size_t kTopMeasured = 5;
inline constexpr std::size_t kTopPredicted = 8;

struct ValidationTableResult {
  std::string name;
  ValidationStats stats;
};

struct ValidationSetResult {
  std::string name;
  ValidationStats stats;                            // over every simulated record of the set
  std::vector<ValidationTableResult> tables;        // in order of first appearance in the set
  std::vector<ValidationCase> records;
  std::vector<ValidationSkip> skipped;
};

struct ValidationReport {
  std::string engine;                               // "analytic" or "simgrid"
  std::vector<std::string> overrides;               // "path=value" as given
  std::vector<ValidationSetResult> sets;
};

// Cases whose |error| is at most `bound` (0.05: within 5 %).
[[nodiscard]] std::size_t cases_within(const std::vector<ValidationCase>& cases, double bound);
// Mean absolute error of a list of cases (0 for none).
[[nodiscard]] double mean_absolute_error(const std::vector<ValidationCase>& cases);
// Spearman's rank correlation: Pearson's correlation of the ranks, tied values sharing the mean of
// the ranks they span. None when the sizes differ, n < 2, or either side has a single distinct value.
[[nodiscard]] std::optional<double> spearman_rank_correlation(const std::vector<double>& x, const std::vector<double>& y);
// How many of the `top_measured` largest of `measured` are among the `top_predicted` largest of
// `predicted` (the same positions; ties broken by position, the earlier first).
[[nodiscard]] std::size_t top_overlap(const std::vector<double>& measured, const std::vector<double>& predicted, std::size_t top_measured,
                                      std::size_t top_predicted);
// MAPE, max |error|, Spearman and the top-5-in-top-8 count of a group of cases.
[[nodiscard]] ValidationStats validation_stats(const std::vector<ValidationCase>& cases);
// The figures of a set's records, overall and per table (records and skipped are set by the caller).
void summarize(ValidationSetResult& set);

// Writers (deterministic, fixed decimals). JSON keys: engine, overrides, sets[{name, records_count,
// mape, max_abs_error, spearman, top5_measured_in_top8_predicted, predicted_oom_count, tables[{name, records_count, mape,
// max_abs_error, spearman, top5_measured_in_top8_predicted, predicted_oom_count}],
// records[{name, table, gpu, measured_step_time_s, predicted_step_time_s, measured_tflops_per_gpu,
// predicted_tflops_per_gpu, flops_formula, predicted_peak_memory_gib, gpu_memory_gib,
// predicted_oom, error}; memory records: {name, table, gpu,
// measured_peak_allocated_gib, predicted_peak_allocated_gib, error}], skipped[{name, table,
// reason}]}] (a set of memory records also has within_5_percent); unmeasured quantities and
// undefined correlations are null. A set of memory records prints its peaks and the number of
// records within 5 % in the table and Markdown forms.
[[nodiscard]] std::string validation_table(const ValidationReport& r);
[[nodiscard]] std::string validation_markdown(const ValidationReport& r);
[[nodiscard]] std::string validation_json(const ValidationReport& r);
// LaTeX: the records and the summary as booktabs tables with labels (tab:stepsim-validation,
// tab:stepsim-validation-summary). CSV: one row per record, machine units (seconds, TFLOP/s,
// error as a fraction), no comment line.
[[nodiscard]] std::string validation_latex(const ValidationReport& r);
[[nodiscard]] std::string validation_csv(const ValidationReport& r);

// ---- cross-validation (leave one table out, per GPU)

// One fit of the efficiency parameters: on which GPU, the records it used, the values found.
struct CrossValidationFit {
  std::string gpu;
  std::string left_out;                             // "set/table" predicted by this fit; "" for the fit on all records
  std::size_t training_records = 0;
  std::vector<double> values;                       // in CrossValidationReport::params order; NaN: not fitted on this GPU
};

// The same records predicted three ways: with the embedded efficiency files (`committed`, as
// validate prints), with parameters fitted on every record of the GPU (`fitted`, in-sample), and
// with parameters fitted on the GPU's records outside the record's table (`cross_validated`; a
// table whose GPU has no other record is left out there and listed in `not_cross_validated`).
struct CrossValidationReport {
  std::string engine;
  std::vector<std::string> params;                  // fitted on some GPU, in calibrate's order
  std::vector<std::string> overrides;
  ValidationReport committed;
  ValidationReport fitted;
  ValidationReport cross_validated;
  std::vector<CrossValidationFit> fits;
  std::vector<std::string> not_cross_validated;     // "set/table: reason"
};

// Writers: per set and per table, MAPE / max |error| / Spearman of the three predictions side by
// side, then the fits. JSON keys: engine, params, overrides, sets[{name, committed, fitted,
// cross_validated, tables[{name, committed, fitted, cross_validated}]}] where each figure is
// {records_count, mape, max_abs_error, spearman} or null, fits[{gpu, left_out, training_records,
// values{param: value} (the parameters fitted on that GPU)}], not_cross_validated.
[[nodiscard]] std::string cross_validation_table(const CrossValidationReport& r);
[[nodiscard]] std::string cross_validation_markdown(const CrossValidationReport& r);
[[nodiscard]] std::string cross_validation_json(const CrossValidationReport& r);

// ---- which GPUs have measured records

struct GpuCoverage {
  std::string gpu;                                  // GPU preset name
  std::size_t records = 0;                          // simulated (not skipped) records on this GPU
  std::vector<std::string> sets;                    // the sets they are in
  std::string efficiency_kind;                      // "fitted", "derived" or "default"
  std::string efficiency_fit;                       // the efficiency file's fit record ("" when none)
};

// Writers: one row per GPU preset: records, sets, whether its efficiency is measured (fitted to
// records) or derived (no records). JSON: gpus[{gpu, records_count, sets, efficiency_kind, efficiency_fit}].
[[nodiscard]] std::string gpu_coverage_table(const std::vector<GpuCoverage>& gpus);
[[nodiscard]] std::string gpu_coverage_markdown(const std::vector<GpuCoverage>& gpus);
[[nodiscard]] std::string gpu_coverage_json(const std::vector<GpuCoverage>& gpus);

}  // namespace stepsim::report
