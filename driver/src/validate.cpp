#include "stepsim/driver/validate.hpp"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "stepsim/driver/simulate.hpp"
#include "stepsim/report/format.hpp"
#include "stepsim/report/tables.hpp"
#include "stepsim/scenarios/error.hpp"

namespace stepsim::driver {

namespace {

std::string percent(double fraction, int decimals, bool sign) {
  std::string s = report::fixed(100.0 * fraction, decimals);
  if (sign && s[0] != '-' && s.find_first_not_of("0.") != std::string::npos) s = "+" + s;
  return s + " %";
}

std::string opt_fixed(const std::optional<double>& v, int decimals) { return v ? report::fixed(*v, decimals) : "-"; }

std::string engine_note(const ValidationReport& r) {
  std::string s = "engine: " + r.engine;
  if (r.engine == "analytic") s += " (built-in event engine, no link contention; use --engine simgrid for flows on links)";
  if (!r.overrides.empty()) {
    s += "; overrides:";
    for (const auto& o : r.overrides) s += " " + o;
  }
  return s;
}

}  // namespace

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

double mean_absolute_error(const std::vector<ValidationCase>& cases) {
  if (cases.empty()) return 0;
  double sum = 0;
  for (const auto& c : cases) sum += std::abs(c.error);
  return sum / static_cast<double>(cases.size());
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
    set.mape = mean_absolute_error(set.records);
    r.sets.push_back(std::move(set));
  }
  return r;
}

std::string validation_table(const ValidationReport& r) {
  std::ostringstream o;
  for (const auto& set : r.sets) {
    o << set.name << "  (MAPE " << percent(set.mape, 1, false) << ", " << set.records.size() << " records)\n";
    o << "  " << report::pad("record", -34) << report::pad("GPU", -16) << report::pad("step s", 10) << report::pad("measured", 10) << report::pad("TFLOP/s", 9)
      << report::pad("measured", 10) << report::pad("error", 10) << "\n";
    for (const auto& c : set.records) {
      o << "  " << report::pad(c.name, -34) << report::pad(c.gpu, -16) << report::pad(report::fixed(c.predicted_step_time_s, 3), 10)
        << report::pad(opt_fixed(c.measured_step_time_s, 3), 10) << report::pad(report::fixed(c.predicted_tflops_per_gpu, 1), 9)
        << report::pad(opt_fixed(c.measured_tflops_per_gpu, 1), 10) << report::pad(percent(c.error, 1, true), 10) << "\n";
    }
    o << "\n";
  }
  o << engine_note(r) << "\n";
  o << "error = predicted / measured - 1 on the measured quantity (step time where published, else TFLOP/s per GPU);\n"
       "TFLOP/s per GPU = the record's FLOP formula / (step time x GPUs).\n";
  return o.str();
}

std::string validation_markdown(const ValidationReport& r) {
  report::Table cases;
  cases.columns = {"set", "record", "GPU", "predicted step (s)", "measured step (s)", "predicted TFLOP/s/GPU",
                   "measured TFLOP/s/GPU", "error"};
  cases.right_aligned = {false, false, false, true, true, true, true, true};
  for (const auto& set : r.sets)
    for (const auto& c : set.records)
      cases.rows.push_back({set.name, c.name, c.gpu, report::fixed(c.predicted_step_time_s, 3), opt_fixed(c.measured_step_time_s, 3),
                            report::fixed(c.predicted_tflops_per_gpu, 1), opt_fixed(c.measured_tflops_per_gpu, 1),
                            percent(c.error, 1, true)});
  report::Table sets;
  sets.columns = {"set", "records", "MAPE"};
  sets.right_aligned = {false, true, true};
  for (const auto& set : r.sets) sets.rows.push_back({set.name, std::to_string(set.records.size()), percent(set.mape, 1, false)});
  return report::to_markdown(cases, report::MarkdownStyle::Compact) + "\n" +
         report::to_markdown(sets, report::MarkdownStyle::Compact) + "\n" + engine_note(r) + "\n";
}

std::string validation_json(const ValidationReport& r) {
  using nlohmann::ordered_json;
  auto opt = [](const std::optional<double>& v) { return v ? ordered_json(*v) : ordered_json(nullptr); };
  ordered_json j;
  j["engine"] = r.engine;
  j["overrides"] = r.overrides;
  j["sets"] = ordered_json::array();
  for (const auto& set : r.sets) {
    ordered_json js;
    js["name"] = set.name;
    js["mape"] = set.mape;
    js["records"] = ordered_json::array();
    for (const auto& c : set.records) {
      ordered_json jc;
      jc["name"] = c.name;
      jc["gpu"] = c.gpu;
      jc["measured_step_time_s"] = opt(c.measured_step_time_s);
      jc["predicted_step_time_s"] = c.predicted_step_time_s;
      jc["measured_tflops_per_gpu"] = opt(c.measured_tflops_per_gpu);
      jc["predicted_tflops_per_gpu"] = c.predicted_tflops_per_gpu;
      jc["flops_formula"] = c.flops_formula;
      jc["error"] = c.error;
      js["records"].push_back(std::move(jc));
    }
    j["sets"].push_back(std::move(js));
  }
  return j.dump(2) + "\n";
}

}  // namespace stepsim::driver
