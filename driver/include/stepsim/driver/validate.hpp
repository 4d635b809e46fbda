#pragma once
// `stepsim validate`: every record of the embedded validation sets (driver/data/validation/)
// simulated and compared with its published measurement: predicted vs measured step time and
// TFLOP/s per GPU, the signed error of each case and the mean absolute percentage error per set.

#include <optional>
#include <string>
#include <vector>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/driver/validation_data.hpp"
#include "stepsim/report/validation_report.hpp"
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

using report::ValidationCase;
using report::ValidationReport;
using report::ValidationSetResult;

// Simulates one record (loading its scenario with `options.overrides`) and compares it.
[[nodiscard]] ValidationCase validate_record(const ValidationRecord& record, const ValidateOptions& options);
// Every record of the requested sets; throws ScenarioError("validate", ...) for an unknown set.
[[nodiscard]] ValidationReport validate(const ValidateOptions& options);

}  // namespace stepsim::driver
