#include "stepsim/report/validation_report.hpp"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "stepsim/report/format.hpp"
#include "stepsim/report/tables.hpp"
#include "stepsim/scenarios/error.hpp"

namespace stepsim::report {

namespace {

std::string percent(double fraction, int decimals, bool sign) {
  std::string s = fixed(100.0 * fraction, decimals);
  if (sign && s[0] != '-' && s.find_first_not_of("0.") != std::string::npos) s = "+" + s;
  return s + " %";
}

std::string opt_fixed(const std::optional<double>& v, int decimals) { return v ? fixed(*v, decimals) : "-"; }

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

double mean_absolute_error(const std::vector<ValidationCase>& cases) {
  if (cases.empty()) return 0;
  double sum = 0;
  for (const auto& c : cases) sum += std::abs(c.error);
  return sum / static_cast<double>(cases.size());
}

std::string validation_table(const ValidationReport& r) {
  std::ostringstream o;
  for (const auto& set : r.sets) {
    o << set.name << "  (MAPE " << percent(set.mape, 1, false) << ", " << set.records.size() << " records)\n";
    o << "  " << pad("record", -34) << pad("GPU", -16) << pad("step s", 10) << pad("measured", 10) << pad("TFLOP/s", 9)
      << pad("measured", 10) << pad("error", 10) << "\n";
    for (const auto& c : set.records) {
      o << "  " << pad(c.name, -34) << pad(c.gpu, -16) << pad(fixed(c.predicted_step_time_s, 3), 10)
        << pad(opt_fixed(c.measured_step_time_s, 3), 10) << pad(fixed(c.predicted_tflops_per_gpu, 1), 9)
        << pad(opt_fixed(c.measured_tflops_per_gpu, 1), 10) << pad(percent(c.error, 1, true), 10) << "\n";
    }
    o << "\n";
  }
  o << engine_note(r) << "\n";
  o << "error = predicted / measured - 1 on the measured quantity (step time where published, else TFLOP/s per GPU);\n"
       "TFLOP/s per GPU = the record's FLOP formula / (step time x GPUs).\n";
  return o.str();
}

std::string validation_markdown(const ValidationReport& r) {
  Table cases;
  cases.columns = {"set", "record", "GPU", "predicted step (s)", "measured step (s)", "predicted TFLOP/s/GPU",
                   "measured TFLOP/s/GPU", "error"};
  cases.right_aligned = {false, false, false, true, true, true, true, true};
  for (const auto& set : r.sets)
    for (const auto& c : set.records)
      cases.rows.push_back({set.name, c.name, c.gpu, fixed(c.predicted_step_time_s, 3), opt_fixed(c.measured_step_time_s, 3),
                            fixed(c.predicted_tflops_per_gpu, 1), opt_fixed(c.measured_tflops_per_gpu, 1),
                            percent(c.error, 1, true)});
  Table sets;
  sets.columns = {"set", "records", "MAPE"};
  sets.right_aligned = {false, true, true};
  for (const auto& set : r.sets) sets.rows.push_back({set.name, std::to_string(set.records.size()), percent(set.mape, 1, false)});
  return to_markdown(cases, MarkdownStyle::Compact) + "\n" +
         to_markdown(sets, MarkdownStyle::Compact) + "\n" + engine_note(r) + "\n";
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

}  // namespace stepsim::report
