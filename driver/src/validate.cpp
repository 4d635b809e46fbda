#include "stepsim/driver/validate.hpp"

#include "stepsim/driver/simulate.hpp"
#include "stepsim/scenarios/error.hpp"

namespace stepsim::driver {

ValidationCase validate_record(const ValidationRecord& record, const ValidateOptions& options) {
  const auto s = scenarios::load_scenario_text(record.scenario_json, options.overrides,
                                               "validation set " + record.set + ", record " + record.name);
  SimulateOptions so;
  so.engine = options.engine;
  if (options.efficiency && s.cluster.gpu.name == options.efficiency_gpu) so.efficiency = options.efficiency;
  const auto sim = simulate(s, so);
  ValidationCase c;
  c.name = record.name;
  c.gpu = s.cluster.gpu.name;
  c.measured_step_time_s = record.step_time_s;
  c.measured_tflops_per_gpu = record.tflops_per_gpu;
  c.flops_formula = costmodel::to_string(record.flops_formula);
  c.predicted_step_time_s = sim.report.step_time_s;
  const double flops = costmodel::model_flops(s, record.flops_formula);
  c.predicted_tflops_per_gpu = flops / (c.predicted_step_time_s * static_cast<double>(s.world_size())) / 1e12;
  if (record.step_time_s)
    c.error = c.predicted_step_time_s / *record.step_time_s - 1.0;
  else if (record.tflops_per_gpu)
    c.error = c.predicted_tflops_per_gpu / *record.tflops_per_gpu - 1.0;
  return c;
}

ValidationReport validate(const ValidateOptions& options) {
  ValidationReport r;
  r.engine = sim::to_string(options.engine);
  for (const auto& o : options.overrides) r.overrides.push_back(o.path + "=" + o.value);
  const auto names = options.set_names.empty() ? validation_set_names() : options.set_names;
  for (const auto& name : names) {
    ValidationSetResult set;
    set.name = name;
    for (const auto& rec : validation_records(name)) set.records.push_back(validate_record(rec, options));
    set.mape = report::mean_absolute_error(set.records);
    r.sets.push_back(std::move(set));
  }
  return r;
}

}  // namespace stepsim::driver
