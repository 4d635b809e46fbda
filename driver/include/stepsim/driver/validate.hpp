#pragma once
// `stepsim validate`: every record of the embedded validation sets (driver/data/validation/)
// simulated and compared with its published measurement: predicted vs measured step time and
// TFLOP/s per GPU, the signed error of each case, and per set and per table the mean absolute
// percentage error, the largest error, the Spearman rank correlation of the layouts and how many of
// the 5 fastest as measured are among the 8 fastest as predicted. Skipped
// records are listed with their reason. Also the leave-one-table-out cross-validation of the
// calibrated efficiency parameters and the list of GPUs with measured records.

#include <memory>
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

using report::CrossValidationReport;
using report::GpuCoverage;
using report::ValidationCase;
using report::ValidationReport;
using report::ValidationSetResult;

// Simulates one record (loading its scenario with `options.overrides`) and compares it. The record
// must not be skipped (InternalError).
[[nodiscard]] ValidationCase validate_record(const ValidationRecord& record, const ValidateOptions& options);
// Records priced again and again with other efficiencies of their GPU (calibrate): each record's
// scenario, cluster and step graph are built once; price() re-costs the graphs with the given
// efficiency (sim::cost_step) and replays them with the analytic engine. Its cases are those of
// validate_record with that efficiency and the analytic engine. Skipped and memory records are
// not taken (InternalError).
class SimulationCache;  // simulate.hpp

class RecordPricer {
 public:
  RecordPricer(const std::vector<ValidationRecord>& records, const std::vector<scenarios::Override>& overrides);
  ~RecordPricer();
  RecordPricer(const RecordPricer&) = delete;
  RecordPricer& operator=(const RecordPricer&) = delete;
  // The cases with `efficiency` as the efficiency of every record's GPU, in the records' order.
  [[nodiscard]] std::vector<ValidationCase> price(const costmodel::Efficiency& efficiency);

 private:
  struct Prepared;
  std::unique_ptr<SimulationCache> models_;  // the records' cluster models, one per distinct cluster
  std::vector<std::unique_ptr<Prepared>> records_;
};

// The records of one set: skipped ones listed with their reason, the others simulated; a record the
// chosen engine cannot run (ScenarioError on "--engine": the simgrid engine's GPU or flow limits) is
// listed as skipped with the engine's reason.
[[nodiscard]] ValidationSetResult validate_set(const std::string& name, const std::vector<ValidationRecord>& records,
                                               const ValidateOptions& options);
// validate_set of every requested set; throws ScenarioError("validate", ...) for an unknown set.
[[nodiscard]] ValidationReport validate(const ValidateOptions& options);

struct CrossValidateOptions {
  ValidateOptions validate;                        // sets and overrides; the engine is analytic (as calibrate)
  // Parameters fitted per GPU (calibrate's names); empty: each GPU's own, those its efficiency
  // (the embedded file, or the records' cluster.gpu.efficiency) lists as "fitted".
  std::vector<std::string> params;
};

// Leave one table out, per GPU: for every table (set/table) of the requested sets, the parameters
// of its GPU are fitted (calibrate_records, from calibrate's start point) on every other
// non-skipped record of that GPU in the requested sets and predict the table; also the fit on all
// of the GPU's records and the embedded files' predictions (the committed report has no skipped
// lists). Deterministic.
[[nodiscard]] CrossValidationReport cross_validate(const CrossValidateOptions& options);
// The same on the given records (their sets in order of first appearance; skipped ones ignored);
// options.validate.set_names is not used.
[[nodiscard]] CrossValidationReport cross_validate_records(const std::vector<ValidationRecord>& records,
                                                           const CrossValidateOptions& options);

// Every GPU preset with the number of non-skipped records of the requested sets (all when empty)
// that run on it, and the kind and fit record of its efficiency file.
[[nodiscard]] std::vector<GpuCoverage> gpu_coverage(const std::vector<std::string>& set_names);

}  // namespace stepsim::driver
