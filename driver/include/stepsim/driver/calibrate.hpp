#pragma once
// `stepsim calibrate`: fits a few efficiency parameters of one GPU type to the published
// measurements of the validation sets, running the simulator (analytic engine) in the loop. The
// residual of a record is its relative error (validate_record's `error`); the fit minimizes their
// mean absolute value (fit_least_absolute of driver/fit.hpp: reweighted bounded Levenberg-Marquardt)
// with fixed iteration limits and tolerances, so the same command writes the same file.

#include <string>
#include <vector>

#include "stepsim/driver/efficiency_file.hpp"
#include "stepsim/costmodel/compute.hpp"
#include "stepsim/driver/fit.hpp"
#include "stepsim/driver/validate.hpp"
#include "stepsim/driver/validation_data.hpp"
#include "stepsim/scenarios/load.hpp"

namespace stepsim::driver {

// Names of the fittable parameters, in Efficiency's order: gemm_max, gemm_fp8_max, attn_max, hbm_eff,
// comm_slowdown.
[[nodiscard]] std::vector<std::string> efficiency_parameter_names();
// Physical bounds of a parameter: efficiencies in [0.2, 0.95], half-saturation sizes in
// [1e6, 1e12] FLOPs, comm_slowdown in [0, 0.5]. Throws ScenarioError("--params", ...) for an unknown name.
[[nodiscard]] std::pair<double, double> efficiency_parameter_bounds(const std::string& name);
[[nodiscard]] double get_efficiency_parameter(const costmodel::Efficiency& e, const std::string& name);
void set_efficiency_parameter(costmodel::Efficiency& e, const std::string& name, double value);

// The fixed fit settings of stepsim calibrate.
[[nodiscard]] FitOptions calibrate_fit_options();

struct CalibrateOptions {
  std::string gpu;                                // GPU preset name whose parameters are fitted
  std::vector<std::string> set_names;             // empty: every embedded set
  std::vector<std::string> record_filters;        // keep records whose name contains one of these; empty: all
  std::vector<std::string> params;                // parameters to fit; empty: none (write the start point)
  std::vector<scenarios::Override> overrides;     // applied to every record's scenario
  // Start point: empty = default_efficiency(gpu); else the embedded efficiency of this GPU: its
  // fractions of the published ceilings, applied to the fitted GPU's own ceilings.
  std::string base_gpu;
  FitOptions fit = calibrate_fit_options();
};

struct CalibrateResult {
  costmodel::Efficiency start;
  costmodel::Efficiency efficiency;               // the fitted parameters (the others as in start)
  std::vector<std::string> records;               // "set/record" of every record used
  double mape_before = 0;
  double mape_after = 0;
  FitResult fit;
  std::string source;                             // the "source" line of the written file
};

// The start point of CalibrateOptions for `gpu` (see base_gpu).
[[nodiscard]] costmodel::Efficiency calibration_start(const scenarios::GpuSpec& gpu, const std::string& base_gpu);

// Fits on the given records (only those whose scenario runs on options.gpu and that are not skipped
// are used; throws
// ScenarioError("--gpu", ...) when none is left and parameters are to be fitted).
[[nodiscard]] CalibrateResult calibrate_records(const std::vector<ValidationRecord>& records, const CalibrateOptions& options);
// Fits on the records of options.set_names selected by options.record_filters (skipped records never
// are); a filter that matches no record is a ScenarioError("--records", ...).
[[nodiscard]] CalibrateResult calibrate(const CalibrateOptions& options);

}  // namespace stepsim::driver
