#pragma once
// The result of `stepsim validate` (predicted vs published step time and TFLOP/s per GPU per record,
// MAPE per set) and its writers.

#include <optional>
#include <string>
#include <vector>

namespace stepsim::report {

struct ValidationCase {
  std::string name;
  std::string gpu;                                  // the record's GPU preset name
  std::optional<double> measured_step_time_s;
  std::optional<double> measured_tflops_per_gpu;
  double predicted_step_time_s = 0;
  double predicted_tflops_per_gpu = 0;              // model_flops(scenario, flops_formula) / (step time x GPUs)
  std::string flops_formula;
  // Signed relative error on the measured quantity: predicted / measured - 1, on the step time
  // where it was measured, else on TFLOP/s per GPU.
  double error = 0;
};

struct ValidationSetResult {
  std::string name;
  double mape = 0;                                  // mean |error| over the records (a fraction)
  std::vector<ValidationCase> records;
};

struct ValidationReport {
  std::string engine;                               // "analytic" or "simgrid"
  std::vector<std::string> overrides;               // "path=value" as given
  std::vector<ValidationSetResult> sets;
};

// Mean absolute error of a list of cases (0 for none).
[[nodiscard]] double mean_absolute_error(const std::vector<ValidationCase>& cases);

// Writers (deterministic, fixed decimals). JSON keys: engine, overrides, sets[{name, mape,
// records[{name, gpu, measured_step_time_s, predicted_step_time_s, measured_tflops_per_gpu,
// predicted_tflops_per_gpu, flops_formula, error}]}]; unmeasured quantities are null.
[[nodiscard]] std::string validation_table(const ValidationReport& r);
[[nodiscard]] std::string validation_markdown(const ValidationReport& r);
[[nodiscard]] std::string validation_json(const ValidationReport& r);

}  // namespace stepsim::report
