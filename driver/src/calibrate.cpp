#include "stepsim/driver/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "stepsim/report/format.hpp"
#include "stepsim/scenarios/error.hpp"

namespace stepsim::driver {

namespace {

std::string join(const std::vector<std::string>& xs, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < xs.size(); ++i) s += (i ? sep : "") + xs[i];
  return s;
}

bool selected(const std::string& name, const std::vector<std::string>& filters) {
  if (filters.empty()) return true;
  for (const auto& f : filters)
    if (name.find(f) != std::string::npos) return true;
  return false;
}

std::string percent(double fraction) { return report::fixed(100.0 * fraction, 2) + " %"; }

}  // namespace

std::vector<std::string> efficiency_parameter_names() { return scenarios::efficiency_parameter_names(); }

std::pair<double, double> efficiency_parameter_bounds(const std::string& name) {
  if (name == "gemm_max" || name == "gemm_fp8_max" || name == "attn_max") return {0.2, 1.0};
  if (name == "hbm_eff") return {0.2, 0.95};
  if (name == "comm_slowdown") return {0.0, 0.5};
  throw ScenarioError("--params", "unknown parameter '" + name + "' (expected one of " +
                                      join(efficiency_parameter_names(), ", ") + ")");
}

double get_efficiency_parameter(const costmodel::Efficiency& e, const std::string& name) {
  if (name == "gemm_max") return e.gemm_max;
  if (name == "gemm_fp8_max") return e.fp8_gemm_fraction();
  if (name == "attn_max") return e.attn_max;
  if (name == "hbm_eff") return e.hbm_eff;
  if (name == "comm_slowdown") return e.comm_slowdown;
  (void)efficiency_parameter_bounds(name);  // throws
  return 0;
}

void set_efficiency_parameter(costmodel::Efficiency& e, const std::string& name, double value) {
  if (name == "gemm_max") e.gemm_max = value;
  else if (name == "gemm_fp8_max") e.gemm_fp8_max = value;
  else if (name == "attn_max") e.attn_max = value;
  else if (name == "hbm_eff") e.hbm_eff = value;
  else if (name == "comm_slowdown") e.comm_slowdown = value;
  else (void)efficiency_parameter_bounds(name);  // throws
}

FitOptions calibrate_fit_options() {
  FitOptions o;
  o.max_iterations = 30;
  o.max_evaluations = 400;
  o.relative_step = 1e-4;  // the simulator is piecewise smooth; a coarse step sees its slope
  o.initial_lambda = 1e-3;
  o.x_tolerance = 1e-7;
  o.cost_tolerance = 1e-10;
  o.gradient_tolerance = 1e-12;
  return o;
}

costmodel::Efficiency calibration_start(const scenarios::GpuSpec& gpu, const std::string& base_gpu) {
  if (base_gpu.empty()) return scenarios::default_efficiency(gpu);
  // The fitted fractions are of each GPU's own published ceilings (matmul throughput, attention
  // figures of its architecture, HBM bandwidth), so they carry over as they are.
  return scenarios::gpu_preset(base_gpu, "--base").efficiency;
}

CalibrateResult calibrate_records(const std::vector<ValidationRecord>& records, const CalibrateOptions& options) {
  const auto gpu = scenarios::gpu_preset(options.gpu, "--gpu");
  for (const auto& p : options.params) (void)efficiency_parameter_bounds(p);  // names checked first
  std::vector<ValidationRecord> used;
  CalibrateResult r;
  std::size_t held_out = 0;  // records on the GPU in sets that are not fitted on
  for (const auto& rec : records) {
    if (rec.skipped() || rec.measures_memory()) continue;
    const auto s = scenarios::load_scenario_text(rec.scenario_json, options.overrides,
                                                 "validation set " + rec.set + ", record " + rec.name);
    if (s.cluster.gpu.name != gpu.name) continue;
    if (!rec.fit) {
      ++held_out;
      continue;
    }
    used.push_back(rec);
    r.records.push_back(rec.set + "/" + rec.name);
  }
  if (used.empty() && !options.params.empty())
    throw ScenarioError("--gpu", held_out > 0 ? "the selected validation records on " + gpu.name +
                                                    " are in sets that are compared, never fitted on (fit false)"
                                              : "no selected validation record runs on " + gpu.name);

  r.start = calibration_start(gpu, options.base_gpu);
  // The records' graphs are built once and re-costed for every efficiency the fit tries.
  RecordPricer pricer(used, options.overrides);
  auto errors = [&](const costmodel::Efficiency& e) { return pricer.price(e); };
  r.mape_before = report::mean_absolute_error(errors(r.start));
  r.efficiency = r.start;
  r.efficiency.fitted.clear();  // a file written without a fit (derived) lists none
  if (!options.params.empty()) {
    const auto n = static_cast<Eigen::Index>(options.params.size());
    Eigen::VectorXd x0(n), lo(n), hi(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const auto& p = options.params[static_cast<std::size_t>(i)];
      const auto [l, h] = efficiency_parameter_bounds(p);
      lo[i] = l;
      hi[i] = h;
      x0[i] = std::clamp(get_efficiency_parameter(r.start, p), l, h);
    }
    auto to_efficiency = [&](const Eigen::VectorXd& x) {
      costmodel::Efficiency e = r.start;
      for (Eigen::Index i = 0; i < n; ++i) set_efficiency_parameter(e, options.params[static_cast<std::size_t>(i)], x[i]);
      return e;
    };
    auto residuals = [&](const Eigen::VectorXd& x) {
      const auto cases = errors(to_efficiency(x));
      Eigen::VectorXd res(static_cast<Eigen::Index>(cases.size()));
      for (std::size_t i = 0; i < cases.size(); ++i) res[static_cast<Eigen::Index>(i)] = cases[i].error;
      return res;
    };
    r.fit = fit_least_absolute(residuals, x0, lo, hi, options.fit);
    r.efficiency = to_efficiency(r.fit.x);
    // The fitted parameters: the start point's (a fit on top of a fit) and these.
    std::vector<std::string> fitted;
    for (const auto& name : efficiency_parameter_names())
      if (std::find(r.start.fitted.begin(), r.start.fitted.end(), name) != r.start.fitted.end() ||
          std::find(options.params.begin(), options.params.end(), name) != options.params.end())
        fitted.push_back(name);
    r.efficiency.fitted = fitted;
  }
  r.mape_after = report::mean_absolute_error(errors(r.efficiency));

  std::ostringstream src;
  src << "stepsim calibrate --gpu " << gpu.name;
  if (!options.set_names.empty()) src << " --sets " << join(options.set_names, ",");
  if (!options.record_filters.empty()) src << " --records " << join(options.record_filters, ",");
  if (!options.base_gpu.empty()) src << " --base " << options.base_gpu;
  for (const auto& o : options.overrides) src << " --set " << o.path << "=" << o.value;
  src << " --params " << (options.params.empty() ? std::string("none") : join(options.params, ","));
  if (options.params.empty()) {
    src << ": no parameter fitted; ";
    src << (options.base_gpu.empty() ? std::string("the GPU's own published ceilings as they are (matmul throughput, SMs, attention figures of its architecture, HBM bandwidth; the default efficiency)")
                                     : "the fitted fractions of " + options.base_gpu +
                                           " applied to this GPU's own published ceilings (matmul throughput, SMs, attention figures, HBM bandwidth)");
  } else {
    src << ": least absolute relative step-time (or TFLOP/s) error (the MAPE) of " << used.size() << " records";
    src << " (" << join(r.records, ", ") << "); MAPE " << percent(r.mape_before) << " at the start point, "
        << percent(r.mape_after) << " fitted; other parameters from "
        << (options.base_gpu.empty() ? std::string("the default efficiency") : options.base_gpu);
    // A fit on top of an earlier fit keeps that fit's record.
    if (!options.base_gpu.empty() && !r.start.fit.empty()) src << " (" << r.start.fit << ")";
  }
  r.source = src.str();
  return r;
}

CalibrateResult calibrate(const CalibrateOptions& options) {
  const auto names = options.set_names.empty() ? validation_set_names() : options.set_names;
  std::vector<ValidationRecord> records;
  std::vector<bool> matched(options.record_filters.size(), false);
  for (const auto& name : names)
    for (const auto& rec : validation_records(name)) {
      if (rec.skipped() || !selected(rec.name, options.record_filters)) continue;
      records.push_back(rec);
      for (std::size_t i = 0; i < options.record_filters.size(); ++i)
        if (rec.name.find(options.record_filters[i]) != std::string::npos) matched[i] = true;
    }
  // A filter that selects nothing is a typo, not a request for fewer records.
  for (std::size_t i = 0; i < matched.size(); ++i)
    if (!matched[i])
      throw ScenarioError("--records", "\"" + options.record_filters[i] + "\" matches no record of the validation sets " +
                                           join(names, ", "));
  return calibrate_records(records, options);
}

}  // namespace stepsim::driver
