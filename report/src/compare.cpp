// Side-by-side comparison of step reports.

#include "stepsim/report/compare.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "stepsim/report/format.hpp"
#include "stepsim/report/metrics.hpp"
#include "stepsim/report/sweep_row.hpp"
#include "stepsim/report/tables.hpp"
#include "step_json.hpp"

namespace stepsim::report {

namespace {

using OrderedJson = nlohmann::ordered_json;

// The difference against the reference: of a percentage in percentage points ("+1.2 pp"), of
// anything else in % of the reference ("-3.4 %").
std::string delta_text(const Metric& m, double value, double reference) {
  if (m.unit == Unit::Percent) {
    const double points = 100.0 * (value - reference);
    return (points >= 0 ? "+" : "") + fixed(points, 1) + " pp";
  }
  if (reference == 0 && value != 0) return "n/a";
  const double d = percent_difference(value, reference);
  return (d >= 0 ? "+" : "") + fixed(d, 1) + " %";
}

std::string oom_cell(const StepReport& r, CompareStyle style) {
  if (!r.oom) return "no";
  if (!r.oom_point) return style == CompareStyle::Compare ? "yes" : "no";
  const auto& o = *r.oom_point;
  if (style == CompareStyle::Compare) return "yes, stage " + std::to_string(o.stage) + " at " + o.op;
  return "stage " + std::to_string(o.stage) + " at " + fixed(o.time_s, 3) + " s (" + o.op + "), +" + gib(o.bytes_over, 2) + " GiB";
}

// The rows of one metric (the step metrics of the registry, and the peak memory of each stage),
// each value a function of the column.
struct Row {
  std::string name;
  const Metric* metric;  // how values print
  std::function<std::optional<double>(const StepReport&)> value;
  bool compare;
};

std::vector<Row> metric_rows(const std::vector<CompareColumn>& cols, CompareStyle style) {
  std::vector<Row> rows;
  for (const auto& m : step_metrics()) {
    rows.push_back({style == CompareStyle::Compare ? m.name : heading(m), &m, m.of_report, m.compare});
    if (m.json_key != "peak_memory_bytes" || style != CompareStyle::Compare) continue;
    std::size_t stages = 0;
    for (const auto& c : cols) stages = std::max(stages, c.report.stages.size());
    for (std::size_t i = 0; i < stages; ++i)
      rows.push_back({"  peak memory stage " + std::to_string(i), &m,
                      [i](const StepReport& r) {
                        return i < r.stages.size() ? std::optional<double>(static_cast<double>(r.stages[i].peak_memory_bytes))
                                                   : std::nullopt;
                      },
                      true});
  }
  return rows;
}

// The comparison for a document (Markdown, LaTeX): row names without their indent.
Table document_table(const std::vector<CompareColumn>& columns) {
  auto t = comparison_table(columns, CompareStyle::Compare);
  for (auto& row : t.rows) {
    const auto first = row[0].find_first_not_of(' ');
    if (first != std::string::npos) row[0] = row[0].substr(first);
  }
  return t;
}

}  // namespace

Table comparison_table(const std::vector<CompareColumn>& cols, CompareStyle style) {
  Table t;
  t.caption = style == CompareStyle::Compare ? "" : cols.size() > 1 ? "Step metrics, side by side" : "Step metrics";
  t.columns = {"metric"};
  t.right_aligned = {false};
  for (const auto& c : cols) {
    t.columns.push_back(c.label);
    t.right_aligned.push_back(true);
  }
  const auto row = [&](const std::string& name, auto&& cell) {
    std::vector<std::string> cells{name};
    for (const auto& c : cols) cells.push_back(cell(c));
    t.rows.push_back(std::move(cells));
  };
  const bool compare = style == CompareStyle::Compare;
  row("layout", [&](const CompareColumn& c) { return layout_label(layout_of(c.scenario), compare); });
  if (!compare) row("schedule", [](const CompareColumn& c) { return scenarios::to_string(c.scenario.parallel.schedule); });
  row("GPUs", [&](const CompareColumn& c) {
    return std::to_string(c.report.gpus) + (compare ? " " + c.scenario.cluster.gpu.name : std::string());
  });
  row("engine", [](const CompareColumn& c) { return c.report.engine; });
  for (const auto& r : metric_rows(cols, style)) {
    std::vector<std::string> cells{r.name};
    bool any = false;
    const auto ref = r.value(cols.front().report);
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const auto v = r.value(cols[i].report);
      if (!v) {
        cells.push_back("-");
        continue;
      }
      any = true;
      if (!compare) {
        cells.push_back(value_text(*r.metric, *v, r.metric->decimals));
        continue;
      }
      std::string cell = value_with_unit(*r.metric, *v, r.metric->decimals);
      if (i > 0 && r.compare && ref) cell += " (" + delta_text(*r.metric, *v, *ref) + ")";
      cells.push_back(cell);
    }
    if (any) t.rows.push_back(std::move(cells));
    if (!compare && r.metric->json_key == "peak_memory_bytes")
      row("peak memory stage", [](const CompareColumn& c) { return std::to_string(c.report.peak_stage); });
    if (!compare && r.metric->json_key == "gpu_memory_bytes")
      row("out of memory", [&](const CompareColumn& c) { return oom_cell(c.report, style); });
  }
  if (compare) row("out of memory", [&](const CompareColumn& c) { return oom_cell(c.report, style); });
  return t;
}

double percent_difference(double value, double reference) {
  if (reference == 0) return value == 0 ? 0.0 : std::nan("");
  return 100.0 * (value - reference) / reference;
}

std::string compare_table(const std::vector<CompareColumn>& columns) {
  if (columns.empty()) return "";
  auto g = comparison_table(columns, CompareStyle::Compare);
  g.rows.insert(g.rows.begin(), g.columns);
  g.rows.front().front().clear();
  std::vector<std::size_t> width(g.columns.size(), 0);
  for (const auto& row : g.rows)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string out;
  for (std::size_t c = 0; c < columns.size(); ++c)
    out += columns[c].label + ": " + columns[c].report.summary + "\n";
  out += "\n";
  for (const auto& row : g.rows) {
    std::string line = pad(row[0], -static_cast<int>(width[0]));
    for (std::size_t i = 1; i < row.size(); ++i) line += "   " + pad(row[i], static_cast<int>(width[i]));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  out += "\nDifferences in % are against the first column.\n";
  return out;
}

std::string compare_markdown(const std::vector<CompareColumn>& columns) {
  if (columns.empty()) return "";
  auto t = document_table(columns);
  return to_markdown(t, MarkdownStyle::Compact) +
         "\nDifferences are against the first column: in % of its value, of percentages in percentage points (pp).\n";
}

namespace {

// Column i's differences against the first column: in % of its value (delta_percent) and, of the
// percentages, in percentage points (delta_points); null where a value is missing.
struct Deltas {
  OrderedJson percent = OrderedJson::object();
  OrderedJson points = OrderedJson::object();
};
Deltas deltas(const std::vector<CompareColumn>& columns, std::size_t i) {
  Deltas out;
  for (const auto& m : step_metrics()) {
    if (!m.compare) continue;
    const auto v = m.of_report(columns[i].report);
    const auto ref = m.of_report(columns.front().report);
    const bool pp = m.unit == Unit::Percent;
    const double d = !(v && ref) ? std::nan("") : pp ? 100.0 * (*v - *ref) : percent_difference(*v, *ref);
    (pp ? out.points : out.percent)[m.json_key] = std::isfinite(d) ? OrderedJson(d) : OrderedJson(nullptr);
  }
  return out;
}

}  // namespace

std::string compare_csv(const std::vector<CompareColumn>& columns) {
  std::vector<OrderedJson> rows;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const auto& c = columns[i];
    OrderedJson j;
    j["label"] = c.label;
    j["scenario"] = c.report.scenario;
    detail::put_step_fields(j, step_row(c.scenario, c.report));
    const auto d = deltas(columns, i);
    // The first column is the reference: its differences are empty cells.
    for (auto it = d.percent.begin(); it != d.percent.end(); ++it) j["delta_percent_" + it.key()] = i > 0 ? it.value() : OrderedJson(nullptr);
    for (auto it = d.points.begin(); it != d.points.end(); ++it) j["delta_points_" + it.key()] = i > 0 ? it.value() : OrderedJson(nullptr);
    rows.push_back(std::move(j));
  }
  return to_csv(detail::rows_table(rows));
}

std::string compare_latex(const std::vector<CompareColumn>& columns, const std::string& provenance) {
  if (columns.empty()) return "";
  auto t = document_table(columns);
  t.caption = "Step metrics side by side; differences against the first column (of percentages in percentage points, pp)";
  t.label = "tab:stepsim-compare";
  return latex_tables(provenance, {t});
}

std::string compare_json(const std::vector<CompareColumn>& columns) {
  OrderedJson root;
  root["columns"] = OrderedJson::array();
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const auto& c = columns[i];
    OrderedJson j;
    j["label"] = c.label;
    j["scenario"] = c.report.scenario;
    j["summary"] = c.report.summary;
    detail::put_step_fields(j, step_row(c.scenario, c.report));
    const auto d = deltas(columns, i);
    const auto& delta = d.percent;
    const auto& points = d.points;
    OrderedJson stages = OrderedJson::array();
    for (const auto& st : c.report.stages) stages.push_back({{"stage", st.stage}, {"peak_memory_bytes", st.peak_memory_bytes}});
    j["stages"] = stages;
    if (c.report.oom_point)
      j["oom_point"] = {{"stage", c.report.oom_point->stage}, {"op", c.report.oom_point->op}, {"bytes_over", c.report.oom_point->bytes_over}};
    else
      j["oom_point"] = nullptr;
    j["delta_percent"] = i > 0 ? delta : OrderedJson(nullptr);
    j["delta_points"] = i > 0 ? points : OrderedJson(nullptr);
    root["columns"].push_back(j);
  }
  return root.dump(2) + "\n";
}

}  // namespace stepsim::report
