#include "stepsim/report/validation_report.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
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

std::pair<double, double> compared_values(const ValidationCase& c) {
  if (c.measured_step_time_s) return {*c.measured_step_time_s, c.predicted_step_time_s};
  if (c.measured_peak_allocated_gib) return {*c.measured_peak_allocated_gib, c.predicted_peak_allocated_gib};
  return {c.measured_tflops_per_gpu.value_or(0.0), c.predicted_tflops_per_gpu};
}

std::size_t cases_within(const std::vector<ValidationCase>& cases, double bound) {
  return static_cast<std::size_t>(
      std::count_if(cases.begin(), cases.end(), [&](const ValidationCase& c) { return std::abs(c.error) <= bound; }));
}

double mean_absolute_error(const std::vector<ValidationCase>& cases) {
  if (cases.empty()) return 0;
  double sum = 0;
  for (const auto& c : cases) sum += std::abs(c.error);
  return sum / static_cast<double>(cases.size());
}

namespace {

// 1-based ranks; a run of equal values shares the mean of the ranks it spans.
std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double mean_rank = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (std::size_t k = i; k <= j; ++k) rank[order[k]] = mean_rank;
    i = j + 1;
  }
  return rank;
}

}  // namespace

std::optional<double> spearman_rank_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return std::nullopt;
  const auto rx = average_ranks(x);
  const auto ry = average_ranks(y);
  const double n = static_cast<double>(x.size());
  const double mean = (n + 1.0) / 2.0;  // the mean of any rank vector
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  if (sxx == 0 || syy == 0) return std::nullopt;
  return sxy / std::sqrt(sxx * syy);
}

std::size_t top_overlap(const std::vector<double>& measured, const std::vector<double>& predicted, std::size_t top_measured,
                        std::size_t top_predicted) {
  if (measured.size() != predicted.size()) throw InternalError("top_overlap: measured and predicted differ in size");
  // The positions of the k largest values, ties in position order.
  const auto top = [](const std::vector<double>& v, std::size_t k) {
    std::vector<std::size_t> order(v.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] > v[b]; });
    order.resize(std::min(k, order.size()));
    return order;
  };
  const auto best_predicted = top(predicted, top_predicted);
  std::size_t n = 0;
  for (const std::size_t i : top(measured, top_measured))
    if (std::find(best_predicted.begin(), best_predicted.end(), i) != best_predicted.end()) ++n;
  return n;
}

ValidationStats validation_stats(const std::vector<ValidationCase>& cases) {
  ValidationStats s;
  s.records = cases.size();
  s.mape = mean_absolute_error(cases);
  for (const auto& c : cases) s.max_abs_error = std::max(s.max_abs_error, std::abs(c.error));
  s.predicted_oom = static_cast<std::size_t>(std::count_if(cases.begin(), cases.end(), [](const ValidationCase& c) { return c.predicted_oom; }));
  std::vector<double> measured, predicted;
  bool same_quantity = true;
  for (const auto& c : cases) {
    same_quantity = same_quantity && c.measured_step_time_s.has_value() == cases.front().measured_step_time_s.has_value() &&
                    c.measured_peak_allocated_gib.has_value() == cases.front().measured_peak_allocated_gib.has_value();
    const auto [m, p] = compared_values(c);
    measured.push_back(m);
    predicted.push_back(p);
  }
  if (same_quantity) s.spearman = spearman_rank_correlation(measured, predicted);
  const bool memory = !cases.empty() && cases.front().measured_peak_allocated_gib.has_value();
  if (same_quantity && !memory && cases.size() > kTopPredicted) {
    // Fastest first: a step time ranks by its negation.
    if (cases.front().measured_step_time_s)
      for (std::size_t i = 0; i < measured.size(); ++i) measured[i] = -measured[i], predicted[i] = -predicted[i];
    s.top_measured_in_top_predicted = top_overlap(measured, predicted, kTopMeasured, kTopPredicted);
  }
  return s;
}

void summarize(ValidationSetResult& set) {
  set.stats = validation_stats(set.records);
  set.tables.clear();
  std::vector<std::string> names;
  for (const auto& c : set.records)
    if (std::find(names.begin(), names.end(), c.table) == names.end()) names.push_back(c.table);
  for (const auto& name : names) {
    std::vector<ValidationCase> cases;
    for (const auto& c : set.records)
      if (c.table == name) cases.push_back(c);
    set.tables.push_back({name, validation_stats(cases)});
  }
}

namespace {

std::string opt_ratio(const std::optional<double>& v) { return v ? fixed(*v, 3) : "-"; }

// "52.6 of 80.0", "98.7 of 94.0 OOM", or "-" where no step was simulated.
std::string peak_cell(const ValidationCase& c) {
  if (!c.predicted_peak_memory_gib || !c.gpu_memory_gib) return "-";
  return fixed(*c.predicted_peak_memory_gib, 1) + " of " + fixed(*c.gpu_memory_gib, 1) + (c.predicted_oom ? " OOM" : "");
}

// "4/5", or "-" where the check does not apply.
std::string top_cell(const ValidationStats& s) {
  return s.top_measured_in_top_predicted ? std::to_string(*s.top_measured_in_top_predicted) + "/" + std::to_string(kTopMeasured) : "-";
}

// "MAPE 3.1 %, max 9.0 %, Spearman 0.812, 12 records"
std::string stats_line(const ValidationStats& s) {
  std::string line = "MAPE " + percent(s.mape, 1, false) + ", max " + percent(s.max_abs_error, 1, false) + ", Spearman " +
                     opt_ratio(s.spearman);
  if (s.top_measured_in_top_predicted)
    line += ", measured top " + std::to_string(kTopMeasured) + " in predicted top " + std::to_string(kTopPredicted) + ": " + top_cell(s);
  line += ", " + std::to_string(s.records) + " records";
  if (s.predicted_oom > 0) line += ", " + std::to_string(s.predicted_oom) + " of them predicted out of memory";
  return line;
}

nlohmann::ordered_json stats_json(const ValidationStats& s) {
  nlohmann::ordered_json j;
  j["records_count"] = s.records;
  j["mape"] = s.mape;
  j["max_abs_error"] = s.max_abs_error;
  j["spearman"] = s.spearman ? nlohmann::ordered_json(*s.spearman) : nlohmann::ordered_json(nullptr);
  j["top5_measured_in_top8_predicted"] =
      s.top_measured_in_top_predicted ? nlohmann::ordered_json(*s.top_measured_in_top_predicted) : nlohmann::ordered_json(nullptr);
  j["predicted_oom_count"] = s.predicted_oom;
  return j;
}

// A set whose records are memory records (compared on peak allocated memory).
bool memory_set(const ValidationSetResult& set) {
  return !set.records.empty() && set.records.front().measured_peak_allocated_gib.has_value();
}

// One row per set and per table of the set: name, table, records, MAPE, max, Spearman, top 5 in top 8.
Table summary_table(const ValidationReport& r) {
  Table t;
  t.columns = {"set", "table", "records", "MAPE", "max error", "Spearman", "top 5 in top 8", "predicted OOM"};
  t.right_aligned = {false, false, true, true, true, true, true, true};
  // Memory records simulate no step: no out-of-memory verdict ("-").
  auto row = [&](const std::string& set, const std::string& table, const ValidationStats& s, bool memory) {
    t.rows.push_back({set, table, std::to_string(s.records), percent(s.mape, 1, false), percent(s.max_abs_error, 1, false),
                      opt_ratio(s.spearman), top_cell(s), memory ? "-" : std::to_string(s.predicted_oom)});
  };
  for (const auto& set : r.sets) {
    const bool memory = memory_set(set);
    row(set.name, "(whole set)", set.stats, memory);
    if (set.tables.size() > 1)
      for (const auto& table : set.tables) row(set.name, table.name, table.stats, memory);
  }
  return t;
}

Table skipped_table(const ValidationReport& r) {
  Table t;
  t.columns = {"set", "record", "skipped because"};
  for (const auto& set : r.sets)
    for (const auto& s : set.skipped) t.rows.push_back({set.name, s.name, s.reason});
  return t;
}

std::string within_line(const ValidationSetResult& set) {
  const std::size_t n = cases_within(set.records, 0.05);
  std::ostringstream o;
  o << "within 5 %: " << n << " of " << set.records.size() << " ("
    << percent(static_cast<double>(n) / static_cast<double>(set.records.size()), 1, false) << ")";
  return o.str();
}

std::string notes_text() {
  return "error = predicted / measured - 1 on the measured quantity (step time where published, peak allocated memory for\n"
         "memory records, else TFLOP/s per GPU);\n"
         "TFLOP/s per GPU = the record's FLOP formula / (step time x GPUs); Spearman = rank correlation of predicted vs\n"
         "measured values within the group (ties averaged; - for fewer than 2 records or constant values);\n"
         "top 5 in top 8 = how many of the 5 fastest records as measured are among the 8 fastest as predicted (- for memory\n"
         "records, groups of 8 records or fewer and groups that mix step times and TFLOP/s);\n"
         "peak GiB = stepsim's peak device memory of the step (the stage that peaks, fragmentation included) of the GPU's;\n"
         "predicted OOM = measured runs, which fitted, that stepsim calls out of memory (marked OOM).\n";
}

}  // namespace

std::string validation_table(const ValidationReport& r) {
  std::ostringstream o;
  // Name and table columns as wide as their longest entry.
  int name_width = 34, table_width = 16;
  for (const auto& set : r.sets)
    for (const auto& c : set.records) {
      name_width = std::max(name_width, static_cast<int>(c.name.size()) + 1);
      table_width = std::max(table_width, static_cast<int>(c.table.size()) + 1);
    }
  for (const auto& set : r.sets) {
    o << set.name << "  (" << stats_line(set.stats) << ")\n";
    if (set.tables.size() > 1)
      for (const auto& table : set.tables) o << "  table " << table.name << ": " << stats_line(table.stats) << "\n";
    if (memory_set(set)) {
      o << "  " << within_line(set) << "\n";
      o << "  " << pad("record", -name_width) << pad("table", -table_width) << pad("GPU", -16) << pad("peak GiB", 10)
        << pad("measured", 10) << pad("error", 10) << "\n";
      for (const auto& c : set.records)
        o << "  " << pad(c.name, -name_width) << pad(c.table, -table_width) << pad(c.gpu, -16)
          << pad(fixed(c.predicted_peak_allocated_gib, 3), 10) << pad(opt_fixed(c.measured_peak_allocated_gib, 3), 10)
          << pad(percent(c.error, 1, true), 10) << "\n";
      for (const auto& s : set.skipped) o << "  skipped " << s.name << ": " << s.reason << "\n";
      o << "\n";
      continue;
    }
    o << "  " << pad("record", -name_width) << pad("table", -table_width) << pad("GPU", -16) << pad("step s", 10) << pad("measured", 10)
      << pad("TFLOP/s", 9) << pad("measured", 10) << pad("error", 10) << "  peak GiB\n";
    for (const auto& c : set.records) {
      o << "  " << pad(c.name, -name_width) << pad(c.table, -table_width) << pad(c.gpu, -16) << pad(fixed(c.predicted_step_time_s, 3), 10)
        << pad(opt_fixed(c.measured_step_time_s, 3), 10) << pad(fixed(c.predicted_tflops_per_gpu, 1), 9)
        << pad(opt_fixed(c.measured_tflops_per_gpu, 1), 10) << pad(percent(c.error, 1, true), 10) << "  " << peak_cell(c) << "\n";
    }
    for (const auto& s : set.skipped) o << "  skipped " << s.name << ": " << s.reason << "\n";
    o << "\n";
  }
  o << to_markdown(summary_table(r), MarkdownStyle::Padded) << "\n";
  o << engine_note(r) << "\n";
  o << notes_text();
  return o.str();
}

namespace {

// The records, for reading.
Table cases_table(const ValidationReport& r) {
  Table cases;
  cases.caption = "Predicted vs published step time and TFLOP/s per GPU";
  cases.label = "tab:stepsim-validation";
  cases.columns = {"set", "table", "record", "GPU", "predicted step (s)", "measured step (s)", "predicted TFLOP/s/GPU",
                   "measured TFLOP/s/GPU", "error", "peak GiB"};
  cases.right_aligned = {false, false, false, false, true, true, true, true, true, true};
  for (const auto& set : r.sets)
    for (const auto& c : set.records)
      if (!c.measured_peak_allocated_gib)
        cases.rows.push_back({set.name, c.table, c.name, c.gpu, fixed(c.predicted_step_time_s, 3),
                              opt_fixed(c.measured_step_time_s, 3), fixed(c.predicted_tflops_per_gpu, 1),
                              opt_fixed(c.measured_tflops_per_gpu, 1), percent(c.error, 1, true), peak_cell(c)});
  return cases;
}

// The memory records (predicted against measured peak allocated memory).
Table memory_cases_table(const ValidationReport& r) {
  Table memory_cases;
  memory_cases.caption = "Predicted vs measured peak allocated memory";
  memory_cases.label = "tab:stepsim-validation-memory";
  memory_cases.columns = {"set", "table", "record", "GPU", "predicted peak allocated (GiB)", "measured (GiB)", "error"};
  memory_cases.right_aligned = {false, false, false, false, true, true, true};
  for (const auto& set : r.sets)
    for (const auto& c : set.records)
      if (c.measured_peak_allocated_gib)
        memory_cases.rows.push_back({set.name, c.table, c.name, c.gpu, fixed(c.predicted_peak_allocated_gib, 3),
                                     opt_fixed(c.measured_peak_allocated_gib, 3), percent(c.error, 1, true)});
  return memory_cases;
}

}  // namespace

std::string validation_latex(const ValidationReport& r) {
  auto summary = summary_table(r);
  summary.caption = "Error per validation set and table: MAPE, max error, Spearman rank correlation, measured top 5 among the "
                    "predicted top 8, measured runs predicted out of memory";
  summary.label = "tab:stepsim-validation-summary";
  std::vector<Table> tables{cases_table(r)};
  auto memory_cases = memory_cases_table(r);
  if (!memory_cases.rows.empty()) tables.push_back(std::move(memory_cases));
  tables.push_back(std::move(summary));
  return latex_tables("stepsim validate: " + engine_note(r), tables);
}

std::string validation_csv(const ValidationReport& r) {
  Table t;
  t.columns = {"set", "table", "record", "gpu", "predicted_step_time_s", "measured_step_time_s", "predicted_tflops_per_gpu",
               "measured_tflops_per_gpu", "predicted_peak_allocated_gib", "measured_peak_allocated_gib", "flops_formula", "error",
               "predicted_peak_memory_gib", "gpu_memory_gib", "predicted_oom"};
  const auto num = [](const std::optional<double>& v) { return v ? nlohmann::json(*v).dump() : std::string(); };
  for (const auto& set : r.sets)
    for (const auto& c : set.records) {
      const bool memory = c.measured_peak_allocated_gib.has_value();
      t.rows.push_back({set.name, c.table, c.name, c.gpu, memory ? std::string() : num(c.predicted_step_time_s),
                        num(c.measured_step_time_s), memory ? std::string() : num(c.predicted_tflops_per_gpu),
                        num(c.measured_tflops_per_gpu), memory ? nlohmann::json(c.predicted_peak_allocated_gib).dump() : std::string(),
                        num(c.measured_peak_allocated_gib), c.flops_formula, num(c.error), num(c.predicted_peak_memory_gib),
                        num(c.gpu_memory_gib),
                        memory || !c.predicted_peak_memory_gib ? std::string() : std::string(c.predicted_oom ? "true" : "false")});
    }
  return to_csv(t);
}

std::string validation_markdown(const ValidationReport& r) {
  Table cases = cases_table(r);
  cases.caption.clear();
  Table memory_cases = memory_cases_table(r);
  memory_cases.caption.clear();
  std::string within;
  for (const auto& set : r.sets)
    if (memory_set(set)) within += "- " + set.name + ": " + within_line(set) + "\n";
  std::string out;
  if (!cases.rows.empty()) out += to_markdown(cases, MarkdownStyle::Compact) + "\n";
  if (!memory_cases.rows.empty()) out += to_markdown(memory_cases, MarkdownStyle::Compact) + "\n" + within + "\n";
  out += to_markdown(summary_table(r), MarkdownStyle::Compact) + "\n";
  const auto skipped = skipped_table(r);
  if (!skipped.rows.empty()) out += to_markdown(skipped, MarkdownStyle::Compact) + "\n";
  return out + engine_note(r) + "\n";
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
    js.update(stats_json(set.stats));
    // Memory records have no out-of-memory verdict (the tables print "-").
    const bool memory = memory_set(set);
    if (memory) {
      js["predicted_oom_count"] = nullptr;
      js["within_5_percent"] = cases_within(set.records, 0.05);
    }
    js["tables"] = ordered_json::array();
    for (const auto& table : set.tables) {
      ordered_json jt;
      jt["name"] = table.name;
      jt.update(stats_json(table.stats));
      if (memory) jt["predicted_oom_count"] = nullptr;
      js["tables"].push_back(std::move(jt));
    }
    js["records"] = ordered_json::array();
    for (const auto& c : set.records) {
      ordered_json jc;
      jc["name"] = c.name;
      jc["table"] = c.table;
      jc["gpu"] = c.gpu;
      if (c.measured_peak_allocated_gib) {
        jc["measured_peak_allocated_gib"] = *c.measured_peak_allocated_gib;
        jc["predicted_peak_allocated_gib"] = c.predicted_peak_allocated_gib;
      } else {
        jc["measured_step_time_s"] = opt(c.measured_step_time_s);
        jc["predicted_step_time_s"] = c.predicted_step_time_s;
        jc["measured_tflops_per_gpu"] = opt(c.measured_tflops_per_gpu);
        jc["predicted_tflops_per_gpu"] = c.predicted_tflops_per_gpu;
        jc["flops_formula"] = c.flops_formula;
        jc["predicted_peak_memory_gib"] = opt(c.predicted_peak_memory_gib);
        jc["gpu_memory_gib"] = opt(c.gpu_memory_gib);
        jc["predicted_oom"] = c.predicted_oom;
      }
      jc["error"] = c.error;
      js["records"].push_back(std::move(jc));
    }
    js["skipped"] = ordered_json::array();
    for (const auto& s : set.skipped) js["skipped"].push_back({{"name", s.name}, {"table", s.table}, {"reason", s.reason}});
    j["sets"].push_back(std::move(js));
  }
  return j.dump(2) + "\n";
}

// ---- cross-validation

namespace {

const ValidationSetResult* find_set(const ValidationReport& r, const std::string& name) {
  for (const auto& s : r.sets)
    if (s.name == name) return &s;
  return nullptr;
}

const ValidationStats* find_table(const ValidationReport& r, const std::string& set, const std::string& table) {
  const auto* s = find_set(r, set);
  if (!s) return nullptr;
  for (const auto& t : s->tables)
    if (t.name == table) return &t.stats;
  return nullptr;
}

// Rows: set (whole) and its tables; for each of committed / fitted / cross-validated: MAPE, max, Spearman
// and the measured top 5 among the predicted top 8.
Table cross_summary_table(const CrossValidationReport& r) {
  Table t;
  t.columns = {"set", "table", "records", "MAPE", "max", "Spearman", "top 5/8", "fit MAPE", "fit max", "fit Spearman",
               "fit top 5/8", "CV MAPE", "CV max", "CV Spearman", "CV top 5/8"};
  t.right_aligned.assign(t.columns.size(), true);
  t.right_aligned[0] = t.right_aligned[1] = false;
  auto cells = [](const ValidationStats* s, std::vector<std::string>& row) {
    if (!s || s->records == 0) {
      row.insert(row.end(), {"-", "-", "-", "-"});
      return;
    }
    row.insert(row.end(), {percent(s->mape, 1, false), percent(s->max_abs_error, 1, false), opt_ratio(s->spearman), top_cell(*s)});
  };
  for (const auto& set : r.committed.sets) {
    auto add = [&](const std::string& table, const ValidationStats& committed, const ValidationStats* fitted,
                   const ValidationStats* cv) {
      std::vector<std::string> row{set.name, table, std::to_string(committed.records)};
      cells(&committed, row);
      cells(fitted, row);
      cells(cv, row);
      t.rows.push_back(std::move(row));
    };
    const auto* fs = find_set(r.fitted, set.name);
    const auto* cs = find_set(r.cross_validated, set.name);
    add("(whole set)", set.stats, fs ? &fs->stats : nullptr, cs ? &cs->stats : nullptr);
    if (set.tables.size() > 1)
      for (const auto& table : set.tables)
        add(table.name, table.stats, find_table(r.fitted, set.name, table.name),
            find_table(r.cross_validated, set.name, table.name));
  }
  return t;
}

Table fits_table(const CrossValidationReport& r) {
  Table t;
  t.columns = {"GPU", "fitted on", "records"};
  for (const auto& p : r.params) t.columns.push_back(p);
  t.right_aligned.assign(t.columns.size(), true);
  t.right_aligned[0] = t.right_aligned[1] = false;
  for (const auto& f : r.fits) {
    std::vector<std::string> row{f.gpu, f.left_out.empty() ? "all records" : "all but " + f.left_out,
                                 std::to_string(f.training_records)};
    for (const double v : f.values) row.push_back(std::isnan(v) ? "-" : significant(v, 4));
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string cross_notes(const CrossValidationReport& r) {
  std::string s = "MAPE/max/Spearman/top 5/8 (the measured top 5 among the predicted top 8): with the embedded efficiency files (as "
                  "validate); fit: each GPU's parameters (";
  for (std::size_t i = 0; i < r.params.size(); ++i) s += (i ? ", " : "") + r.params[i];
  s += "; - where a GPU's fit does not set one) fitted on every record of the GPU (in-sample);\nCV: fitted on the GPU's records outside the table, "
       "predicting the table (leave one table out); a set's CV row pools its tables' predictions.\n";
  for (const auto& n : r.not_cross_validated) s += "not cross-validated: " + n + "\n";
  return s;
}

}  // namespace

std::string cross_validation_table(const CrossValidationReport& r) {
  std::ostringstream o;
  o << to_markdown(cross_summary_table(r), MarkdownStyle::Padded) << "\n"
    << to_markdown(fits_table(r), MarkdownStyle::Padded) << "\n"
    << "engine: " << r.engine << "\n" << cross_notes(r);
  return o.str();
}

std::string cross_validation_markdown(const CrossValidationReport& r) {
  return to_markdown(cross_summary_table(r), MarkdownStyle::Compact) + "\n" + to_markdown(fits_table(r), MarkdownStyle::Compact) +
         "\nengine: " + r.engine + "\n\n" + cross_notes(r);
}

std::string cross_validation_json(const CrossValidationReport& r) {
  using nlohmann::ordered_json;
  auto stats = [](const ValidationStats* s) { return s && s->records > 0 ? stats_json(*s) : ordered_json(nullptr); };
  ordered_json j;
  j["engine"] = r.engine;
  j["params"] = r.params;
  j["overrides"] = r.overrides;
  j["sets"] = ordered_json::array();
  for (const auto& set : r.committed.sets) {
    const auto* fs = find_set(r.fitted, set.name);
    const auto* cs = find_set(r.cross_validated, set.name);
    ordered_json js;
    js["name"] = set.name;
    js["committed"] = stats(&set.stats);
    js["fitted"] = stats(fs ? &fs->stats : nullptr);
    js["cross_validated"] = stats(cs ? &cs->stats : nullptr);
    js["tables"] = ordered_json::array();
    for (const auto& table : set.tables) {
      ordered_json jt;
      jt["name"] = table.name;
      jt["committed"] = stats(&table.stats);
      jt["fitted"] = stats(find_table(r.fitted, set.name, table.name));
      jt["cross_validated"] = stats(find_table(r.cross_validated, set.name, table.name));
      js["tables"].push_back(std::move(jt));
    }
    j["sets"].push_back(std::move(js));
  }
  j["fits"] = ordered_json::array();
  for (const auto& f : r.fits) {
    ordered_json jf;
    jf["gpu"] = f.gpu;
    jf["left_out"] = f.left_out;
    jf["training_records"] = f.training_records;
    ordered_json values;
    for (std::size_t i = 0; i < r.params.size() && i < f.values.size(); ++i)
      if (!std::isnan(f.values[i])) values[r.params[i]] = f.values[i];
    jf["values"] = std::move(values);
    j["fits"].push_back(std::move(jf));
  }
  j["not_cross_validated"] = r.not_cross_validated;
  return j.dump(2) + "\n";
}

// ---- GPU coverage

namespace {

std::string coverage_verdict(const GpuCoverage& g) {
  if (g.records == 0)
    return g.efficiency_kind == "fitted" ? "not checked: no record in these sets" : "derived, no measured record";
  return g.efficiency_kind == "fitted" ? "checked against measurements"
                                       : "checked against measurements (efficiency not fitted)";
}

Table coverage_table(const std::vector<GpuCoverage>& gpus) {
  Table t;
  t.columns = {"GPU", "measured records", "sets", "efficiency file", "predictions"};
  t.right_aligned = {false, true, false, false, false};
  for (const auto& g : gpus) {
    std::string sets;
    for (std::size_t i = 0; i < g.sets.size(); ++i) sets += (i ? ", " : "") + g.sets[i];
    t.rows.push_back({g.gpu, std::to_string(g.records), sets.empty() ? "-" : sets, g.efficiency_kind, coverage_verdict(g)});
  }
  return t;
}

std::string coverage_notes(const std::vector<GpuCoverage>& gpus) {
  std::string s = "efficiency file: fitted (to named records), derived (no fit of its own: its published ceilings, or another GPU's fitted fractions of them) or default (built-in curve);\n"
                  "its fit record:\n";
  for (const auto& g : gpus) s += "  " + g.gpu + ": " + (g.efficiency_fit.empty() ? "-" : g.efficiency_fit) + "\n";
  return s;
}

}  // namespace

std::string gpu_coverage_table(const std::vector<GpuCoverage>& gpus) {
  return to_markdown(coverage_table(gpus), MarkdownStyle::Padded) + "\n" + coverage_notes(gpus);
}

std::string gpu_coverage_markdown(const std::vector<GpuCoverage>& gpus) {
  return to_markdown(coverage_table(gpus), MarkdownStyle::Compact) + "\n" + coverage_notes(gpus);
}

std::string gpu_coverage_json(const std::vector<GpuCoverage>& gpus) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["gpus"] = ordered_json::array();
  for (const auto& g : gpus) {
    ordered_json jg;
    jg["gpu"] = g.gpu;
    jg["records_count"] = g.records;
    jg["sets"] = g.sets;
    jg["efficiency_kind"] = g.efficiency_kind;
    jg["efficiency_fit"] = g.efficiency_fit;
    j["gpus"].push_back(std::move(jg));
  }
  return j.dump(2) + "\n";
}

}  // namespace stepsim::report
