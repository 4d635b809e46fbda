#pragma once
// `stepsim validate`: every record of the embedded validation sets (driver/data/validation/)
// simulated and compared with its published measurement: predicted vs measured step time and
// TFLOP/s per GPU, the signed error of each case and the mean absolute percentage error per set.

#include <optional>
#include <string>
#include <vector>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/driver/validation_data.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/sim/engine.hpp"

namespace stepsim::driver {

struct ValidateOptions {
  std::vector<std::string> set_names;               // empty: every embedded set, sorted
  sim::EngineKind engine = sim::EngineKind::Analytic;
  std::vector<scenarios::Override> overrides;       // applied to every record's scenario (--set)
  // Efficiency used for the GPU named `efficiency_gpu` instead of its embedded file (calibrate).
  std::optional<costmodel::Efficiency> efficiency;
  std::string efficiency_gpu;
};

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

// Simulates one record (loading its scenario with `options.overrides`) and compares it.
ValidationCase validate_record(const ValidationRecord& record, const ValidateOptions& options);
// Every record of the requested sets; throws ScenarioError("validate", ...) for an unknown set.
ValidationReport validate(const ValidateOptions& options);
// Mean absolute error of a list of cases (0 for none).
double mean_absolute_error(const std::vector<ValidationCase>& cases);

// Writers (deterministic, fixed decimals). JSON keys: engine, overrides, sets[{name, mape,
// records[{name, gpu, measured_step_time_s, predicted_step_time_s, measured_tflops_per_gpu,
// predicted_tflops_per_gpu, flops_formula, error}]}]; unmeasured quantities are null.
std::string validation_table(const ValidationReport& r);
std::string validation_markdown(const ValidationReport& r);
std::string validation_json(const ValidationReport& r);

}  // namespace stepsim::driver
