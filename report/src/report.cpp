#include "stepsim/report/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "stepsim/report/compare.hpp"
#include "stepsim/report/format.hpp"
#include "stepsim/report/html.hpp"
#include "stepsim/report/metrics.hpp"
#include "stepsim/report/svg.hpp"
#include "stepsim/report/tables.hpp"
#include "step_json.hpp"
#include "stepsim/scenarios/error.hpp"

namespace stepsim::report {

namespace {

using Json = nlohmann::ordered_json;

std::string header_line(const ReportOptions& o) { return "stepsim " + o.version; }

// Text around a set of tables in the chosen format.
std::string wrap_tables(const std::string& header, std::vector<Table> tables, ReportFormat f,
                        const std::vector<std::string>& columns = {}) {
  // --columns chooses the columns of the first (main) table.
  if (!tables.empty() && !columns.empty()) tables.front() = select_columns(tables.front(), columns);
  // No comment line: the provenance goes to ReportOutput::meta_json.
  if (f == ReportFormat::Csv) return tables.empty() ? std::string() : to_csv(tables.front());
  std::ostringstream os;
  switch (f) {
    case ReportFormat::Markdown:
      os << header << "\n";
      for (const auto& t : tables) os << "\n" << to_markdown(t);
      break;
    case ReportFormat::Latex:
      os << latex_tables(header, tables);
      break;
    default:
      break;
  }
  return os.str();
}

// ---- sweep results -------------------------------------------------------------------------

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string series_name(const SweepRow& r) { return r.model + " on " + (r.cluster.empty() ? r.gpu : r.cluster); }

struct SweepCounts {
  std::size_t total = 0, ok = 0, simulated = 0, oom_pruned = 0, oom_simulated = 0, errors = 0;
};

SweepCounts count(const SweepResultSet& s) {
  SweepCounts c;
  c.total = s.rows.size();
  for (const auto& r : s.rows) {
    if (r.simulated()) ++c.simulated;
    if (r.status == "error")
      ++c.errors;
    else if (r.status == "pruned" || r.oom)
      ++(r.simulated() ? c.oom_simulated : c.oom_pruned);
    else
      ++c.ok;
  }
  return c;
}

std::string join_distinct(const std::vector<std::string>& v) {
  std::vector<std::string> d;
  for (const auto& s : v)
    if (!s.empty() && std::find(d.begin(), d.end(), s) == d.end()) d.push_back(s);
  std::string out;
  for (std::size_t i = 0; i < d.size(); ++i) out += (i ? ", " : "") + d[i];
  return out.empty() ? "-" : out;
}

std::string sweep_description(const SweepResultSet& s) {
  const auto c = count(s);
  std::vector<std::string> models, clusters;
  std::int64_t g_lo = 0, g_hi = 0;
  for (const auto& r : s.rows) {
    models.push_back(r.model);
    clusters.push_back(r.cluster.empty() ? r.gpu : r.cluster);
    if (r.gpus > 0) {
      g_lo = g_lo == 0 ? r.gpus : std::min(g_lo, r.gpus);
      g_hi = std::max(g_hi, r.gpus);
    }
  }
  std::ostringstream os;
  os << "sweep " << s.source << ": " << c.total << " candidates, " << c.ok << " runnable, "
     << c.oom_pruned + c.oom_simulated << " out of memory (" << c.oom_pruned << " pruned by the memory estimate, "
     << c.oom_simulated << " in simulation), " << c.errors << " errors; model " << join_distinct(models) << "; cluster "
     << join_distinct(clusters) << "; " << (g_lo == g_hi ? std::to_string(g_lo) : std::to_string(g_lo) + "-" + std::to_string(g_hi))
     << " GPUs";
  return os.str();
}

Table counts_table(const SweepResultSet& s) {
  const auto c = count(s);
  Table t;
  t.caption = "Candidates by outcome";
  t.columns = {"outcome", "candidates"};
  t.right_aligned = {false, true};
  t.rows = {{"runnable (simulated, fits)", std::to_string(c.ok)},
            {"out of memory: pruned by the memory estimate", std::to_string(c.oom_pruned)},
            {"out of memory: in simulation", std::to_string(c.oom_simulated)},
            {"error", std::to_string(c.errors)},
            {"total", std::to_string(c.total)}};
  return t;
}

std::string status_text(const SweepRow& r) {
  if (r.status == "pruned" || r.oom) return r.simulated() ? "OOM (simulated)" : "OOM (estimate)";
  return r.status;
}

// The ranked table for reading (Markdown, LaTeX, HTML): top rows, human units.
Table ranked_table(const SweepResultSet& s, std::size_t top) {
  const auto order = ranked_rows(s);
  std::set<std::string> models, clusters;
  for (const auto& r : s.rows) {
    models.insert(r.model);
    clusters.insert(r.cluster.empty() ? r.gpu : r.cluster);
  }
  // The step metrics of the registry (not the GPU's memory); time to train, GPU-hours and cost
  // only when some row has them.
  std::vector<const Metric*> shown;
  for (const auto& m : step_metrics()) {
    if (m.json_key == "gpu_memory_bytes") continue;
    const bool always = m.of_report(StepReport{}).has_value();
    if (always || std::any_of(s.rows.begin(), s.rows.end(), [&m](const SweepRow& r) { return m.of_row(r).has_value(); }))
      shown.push_back(&m);
  }
  const bool show_model = models.size() > 1, show_cluster = clusters.size() > 1;
  Table t;
  const std::size_t n = top == 0 ? order.size() : std::min(top, order.size());
  t.caption = n < order.size() ? "Top " + std::to_string(n) + " of " + std::to_string(order.size()) + " candidates by tokens/s"
                               : "All " + std::to_string(order.size()) + " candidates by tokens/s";
  auto col = [&](const std::string& name, bool right) {
    t.columns.push_back(name);
    t.right_aligned.push_back(right);
  };
  col("rank", true);
  if (show_model) col("model", false);
  if (show_cluster) col("cluster", false);
  col("GPUs", true), col("TP", true), col("CP", true), col("PP", true), col("DP", true), col("VPP", true);
  col("mb", true), col("schedule", false), col("recompute", false), col("status", false);
  for (const auto* m : shown) col(m->short_name, true);
  for (std::size_t k = 0; k < n; ++k) {
    const auto& r = s.rows[order[k]];
    std::vector<std::string> row;
    row.push_back(std::to_string(k + 1));
    if (show_model) row.push_back(r.model);
    if (show_cluster) row.push_back(r.cluster.empty() ? r.gpu : r.cluster);
    for (auto v : {r.gpus, r.tp, r.cp, r.pp, r.dp, r.vpp, r.micro_batch}) row.push_back(std::to_string(v));
    row[row.size() - 5] += cp_comm_suffix(layout_of(r));  // the CP cell
    row.push_back(r.schedule);
    row.push_back(r.recompute);
    row.push_back(status_text(r));
    for (const auto* m : shown) {
      // A row pruned by the memory estimate shows the estimate's peak.
      auto v = m->of_row(r);
      if (!v && m->json_key == "peak_memory_bytes" && r.stepsim_peak_bytes) v = static_cast<double>(*r.stepsim_peak_bytes);
      row.push_back(v ? value_text(*m, *v, m->row_decimals) : "-");
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

Json sweep_row_json(const SweepRow& r, std::size_t rank) {
  Json j;
  j["rank"] = rank;
  j["index"] = r.index;
  j["key"] = r.key;
  j["status"] = r.status;
  j["reason"] = r.reason.empty() ? Json(nullptr) : Json(r.reason);
  detail::put_step_fields(j, r);
  j["paper_total_bytes"] = r.paper_total_bytes ? Json(*r.paper_total_bytes) : Json(nullptr);
  j["stepsim_peak_bytes"] = r.stepsim_peak_bytes ? Json(*r.stepsim_peak_bytes) : Json(nullptr);
  return j;
}

// Every row, in rank order, as sweep_row_json writes it, as CSV with `columns` chosen (all when
// empty): made a block of rows at a time, so that a large sweep never holds its whole table.
std::string full_csv(const SweepResultSet& s, const std::vector<std::string>& columns) {
  constexpr std::size_t kBlockRows = 4096;
  const auto order = ranked_rows(s);
  if (order.empty()) return columns.empty() ? to_csv(Table{}) : to_csv(select_columns(Table{}, columns));
  std::string out;
  for (std::size_t begin = 0; begin < order.size(); begin += kBlockRows) {
    Table t;
    const std::size_t end = std::min(order.size(), begin + kBlockRows);
    t.rows.reserve(end - begin);
    for (std::size_t k = begin; k < end; ++k) detail::add_json_row(t, sweep_row_json(s.rows[order[k]], k + 1));
    const std::string block = columns.empty() ? to_csv(t) : to_csv(select_columns(t, columns));
    // The header line once.
    out.append(begin == 0 ? block : block.substr(block.find('\n') + 1));
  }
  return out;
}

// Best value of `metric` per GPU count, one series per model/cluster, on log-log axes when the
// GPU counts span a factor of two or more. Each series carries ideal scaling from its smallest
// GPU count: the value grows as GPUs^scaling_exponent (1 for a total rate, 0 for a rate per GPU).
XYChart throughput_chart(const SweepResultSet& s, const std::string& title, const std::string& y_label,
                         std::optional<double> SweepRow::*metric, double scaling_exponent) {
  std::map<std::string, std::map<std::int64_t, double>> best;
  std::int64_t g_lo = 0, g_hi = 0;
  for (const auto& r : s.rows) {
    if (!r.runnable() || !(r.*metric)) continue;
    auto& m = best[series_name(r)];
    const auto it = m.find(r.gpus);
    if (it == m.end() || *(r.*metric) > it->second) m[r.gpus] = *(r.*metric);
    g_lo = g_lo == 0 ? r.gpus : std::min(g_lo, r.gpus);
    g_hi = std::max(g_hi, r.gpus);
  }
  XYChart c;
  c.title = title;
  c.x_label = "GPUs";
  c.y_label = y_label;
  c.log_x = g_lo > 0 && g_hi >= 2 * g_lo;
  c.log_y = c.log_x && scaling_exponent > 0;
  c.reference_label = scaling_exponent > 0 ? "ideal (linear) scaling from the smallest GPU count"
                                           : "ideal scaling: the per-GPU rate of the smallest GPU count";
  std::set<std::int64_t> counts;
  for (const auto& [name, m] : best) {
    for (const auto& [g, v] : m) counts.insert(g);
    XYSeries sr;
    sr.name = name;
    sr.lines = true;
    for (const auto& [g, v] : m) sr.points.push_back({static_cast<double>(g), v, ""});
    if (m.size() > 1) {
      const auto g0 = static_cast<double>(m.begin()->first);
      const double v0 = m.begin()->second;
      for (const auto& [g, v] : m)
        sr.reference.push_back({static_cast<double>(g), v0 * std::pow(static_cast<double>(g) / g0, scaling_exponent), ""});
    }
    c.series.push_back(std::move(sr));
  }
  for (auto g : counts) c.x_ticks.push_back(static_cast<double>(g));
  return c;
}

// Time against resources; one Pareto front (lower-left: nothing both faster and cheaper) over all
// models and clusters, highlighted in the series of each of its points.
XYChart pareto_chart(const SweepResultSet& s) {
  bool all_train = true, all_cost = true;
  std::size_t n = 0;
  for (const auto& r : s.rows) {
    if (!r.runnable()) continue;
    ++n;
    all_train = all_train && r.time_to_train_s && r.gpu_hours;
    all_cost = all_cost && r.cost_usd;
  }
  if (n == 0) all_train = all_cost = false;
  XYChart c;
  if (all_train) {
    c.title = "Time to train vs " + std::string(all_cost ? "cost" : "GPU-hours") + " (Pareto front highlighted)";
    c.x_label = all_cost ? "cost (USD)" : "GPU-hours to train";
    c.y_label = "time to train (h)";
  } else {
    c.title = "Step time vs GPU time per step (Pareto front highlighted)";
    c.x_label = "GPU-hours per step";
    c.y_label = "step time (s)";
  }
  struct Point {
    XYPoint p;
    std::string series;
  };
  std::vector<Point> all;
  std::map<std::string, std::vector<XYPoint>> groups;
  for (const auto& r : s.rows) {
    if (!r.runnable()) continue;
    XYPoint p;
    if (all_train) {
      p.x = all_cost ? *r.cost_usd : *r.gpu_hours;
      p.y = *r.time_to_train_s / 3600.0;
    } else {
      p.x = *r.step_time_s * static_cast<double>(r.gpus) / 3600.0;
      p.y = *r.step_time_s;
    }
    p.label = std::to_string(r.gpus) + " GPUs " + layout_label(layout_of(r), true);
    all.push_back({p, series_name(r)});
    groups[series_name(r)].push_back({p.x, p.y, ""});
  }
  std::stable_sort(all.begin(), all.end(), [](const Point& a, const Point& b) {
    return a.p.x < b.p.x || (a.p.x == b.p.x && a.p.y < b.p.y);
  });
  std::map<std::string, std::vector<XYPoint>> front;
  double best_y = 1e300, x_lo = 1e300, x_hi = 0, y_lo = 1e300, y_hi = 0;
  for (const auto& a : all) {
    x_lo = std::min(x_lo, a.p.x), x_hi = std::max(x_hi, a.p.x), y_lo = std::min(y_lo, a.p.y), y_hi = std::max(y_hi, a.p.y);
    if (a.p.y < best_y) {
      front[a.series].push_back(a.p);
      best_y = a.p.y;
    }
  }
  for (auto& [name, pts] : groups) {
    XYSeries sr;
    sr.name = name;
    sr.points = std::move(pts);
    sr.highlight = front[name];
    c.series.push_back(std::move(sr));
  }
  c.log_x = x_lo > 0 && x_hi > 10 * x_lo;
  c.log_y = y_lo > 0 && y_hi > 10 * y_lo;
  return c;
}

std::vector<ReportFile> sweep_svgs(const SweepResultSet& s) {
  std::vector<ReportFile> out;
  out.push_back({"throughput.svg", svg_document(xy_svg(throughput_chart(s, "Best throughput vs GPU count", "tokens/s",
                                                                        &SweepRow::tokens_per_s, 1.0)))});
  out.push_back({"tflops_per_gpu.svg",
                 svg_document(xy_svg(throughput_chart(s, "Best model TFLOP/s per GPU vs GPU count", "TFLOP/s per GPU",
                                                      &SweepRow::tflops_per_gpu, 0.0)))});
  out.push_back({"pareto.svg", svg_document(xy_svg(pareto_chart(s)))});
  return out;
}

// Inline form of a standalone SVG file (without its XML declaration).
std::string inline_svg(const ReportFile& f) {
  const auto pos = f.text.find("<svg");
  return pos == std::string::npos ? f.text : f.text.substr(pos);
}

// ---- scenario runs --------------------------------------------------------------------------

Table metrics_table(const std::vector<ScenarioRun>& runs) {
  std::vector<CompareColumn> columns;
  for (const auto& r : runs) columns.push_back({r.label, r.scenario, r.simulation.report});
  return comparison_table(columns, CompareStyle::Report);
}

Table stages_table(const std::vector<ScenarioRun>& runs) {
  Table t;
  t.caption = "Per pipeline stage: compute, exposed communication, idle time and peak memory";
  if (runs.size() > 1) {
    t.columns.push_back("run");
    t.right_aligned.push_back(false);
  }
  for (const char* c : {"stage", "compute (s)", "exposed comm (s)", "idle (s)", "peak (GiB)", "peak at (s)"}) {
    t.columns.push_back(c);
    t.right_aligned.push_back(true);
  }
  for (const auto& r : runs)
    for (const auto& st : r.simulation.report.stages) {
      std::vector<std::string> row;
      if (runs.size() > 1) row.push_back(r.label);
      row.insert(row.end(), {std::to_string(st.stage), fixed(st.compute_s, 4), fixed(st.exposed_comm_s, 4), fixed(st.idle_s, 4),
                             gib(st.peak_memory_bytes, 2), fixed(st.peak_memory_time_s, 4)});
      t.rows.push_back(std::move(row));
    }
  return t;
}

// CSV keeps one table, one row per run and pipeline stage: the label, the step's fields (as in
// a sweep row) and the stage's figures.
Table csv_table(const std::vector<ScenarioRun>& runs) {
  std::vector<Json> rows;
  for (const auto& r : runs) {
    Json step;
    step["label"] = r.label;
    detail::put_step_fields(step, step_row(r.scenario, r.simulation.report));
    for (const auto& st : r.simulation.report.stages) {
      Json j = step;
      j["stage"] = st.stage;
      j["stage_compute_s"] = st.compute_s;
      j["stage_exposed_comm_s"] = st.exposed_comm_s;
      j["stage_idle_s"] = st.idle_s;
      j["stage_peak_memory_bytes"] = st.peak_memory_bytes;
      j["stage_peak_memory_time_s"] = st.peak_memory_time_s;
      rows.push_back(std::move(j));
    }
  }
  return detail::rows_table(rows);
}

std::string csv_meta(const ReportOptions& o, const std::string& kind, const std::string& description) {
  return csv_meta_json(o.version, kind, description);
}

std::string runs_header(const std::vector<ScenarioRun>& runs, const ReportOptions& o) {
  std::string h = header_line(o) + ": ";
  if (runs.size() == 1) return h + runs.front().simulation.report.summary;
  for (std::size_t i = 0; i < runs.size(); ++i)
    h += (i ? "; " : "") + runs[i].label + " = " + runs[i].simulation.report.summary;
  return h;
}

}  // namespace

std::string csv_meta_json(const std::string& version, const std::string& kind, const std::string& description) {
  Json j;
  j["generator"] = "stepsim " + version;
  j["kind"] = kind;
  j["description"] = description;
  j["units"] = "in the column names: _s seconds, _bytes bytes, fractions (mfu, *_fraction) as fractions, cost in USD";
  return j.dump(2) + "\n";
}

ReportFormat parse_report_format(const std::string& name) {
  if (name == "md" || name == "markdown") return ReportFormat::Markdown;
  if (name == "csv") return ReportFormat::Csv;
  if (name == "latex" || name == "tex") return ReportFormat::Latex;
  if (name == "html") return ReportFormat::Html;
  if (name == "json") return ReportFormat::Json;
  throw ScenarioError("--format", "unknown format '" + name + "' (md, csv, latex, html or json)");
}

bool looks_like_sweep_results(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    return !j.is_discarded() && j.is_object() && j.contains("status");
  }
  return false;
}

SweepResultsReader::SweepResultsReader(const std::string& origin, std::uintmax_t file_bytes) : origin_(origin), file_bytes_(file_bytes) {
  out_.source = base_name(origin);
}

void SweepResultsReader::add_line(const std::string& text, std::int64_t number, bool terminated) {
  read_bytes_ += text.size() + 1;
  // After the first rows, room for the file's rows at their mean length (and 5 % more): growing
  // the array by doubling would hold two arrays of rows at once. At most a row per 256 bytes of
  // the file (a row a sweep writes has over a thousand), should the first rows be short ones.
  constexpr std::size_t kRowsBeforeEstimate = 64;
  constexpr double kMinRowBytes = 256;
  if (file_bytes_ > 0 && out_.rows.size() == kRowsBeforeEstimate && read_bytes_ > 0) {
    const double file = static_cast<double>(file_bytes_);
    const double rows = file / static_cast<double>(read_bytes_) * static_cast<double>(out_.rows.size());
    out_.rows.reserve(static_cast<std::size_t>(std::min(rows * 1.05 + 1.0, file / kMinRowBytes + 1.0)));
  }
  if (text.find_first_not_of(" \t\r") == std::string::npos) return;
  try {
    out_.rows.push_back(parse_row(text, origin_ + ":" + std::to_string(number), static_cast<std::int64_t>(out_.rows.size())));
    // The report reads the parsed fields only: the line's bytes (most of a row's) are released.
    std::string().swap(out_.rows.back().line);
  } catch (const ScenarioError&) {
    // A last line without its newline that is not a row: a write cut short (a killed sweep).
    if (terminated || out_.rows.empty()) throw;
    out_.truncated_line = static_cast<std::size_t>(number);
  }
}

SweepResultSet SweepResultsReader::finish() {
  SweepResultSet out = std::move(out_);
  if (out.rows.empty()) throw ScenarioError(origin_, "no results rows (empty file)");
  // Rows in candidate order whatever order the file has (a sweep appends them as they finish):
  // their positions sorted (stably), then the rows moved into that order in place, so that no
  // second array of rows is held.
  auto& rows = out.rows;
  std::vector<std::size_t> order(rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&rows](std::size_t a, std::size_t b) {
    return std::tie(rows[a].sweep, rows[a].index, rows[a].key) < std::tie(rows[b].sweep, rows[b].index, rows[b].key);
  });
  for (std::size_t i = 0; i < order.size(); ++i) {
    // Place i takes row order[i]: follow the cycle through i.
    if (order[i] == i) continue;
    SweepRow first = std::move(rows[i]);
    std::size_t j = i;
    while (order[j] != i) {
      const std::size_t from = order[j];
      rows[j] = std::move(rows[from]);
      order[j] = j;
      j = from;
    }
    rows[j] = std::move(first);
    order[j] = j;
  }
  // A candidate re-simulated with SimGrid has a second row with the same index (in older files):
  // it replaces the first. The rows of one candidate are now next to each other.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (kept > 0 && rows[kept - 1].sweep == rows[i].sweep && rows[kept - 1].index == rows[i].index) {
      if (rows[i].simulated() && rows[i].engine == "simgrid") rows[kept - 1] = std::move(rows[i]);
    } else {
      if (kept != i) rows[kept] = std::move(rows[i]);
      ++kept;
    }
  }
  rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(kept), rows.end());
  return out;
}

SweepResultSet parse_sweep_results(const std::string& text, const std::string& origin) {
  SweepResultsReader reader(origin);
  for (const auto& line : row_lines(text)) reader.add_line(line.text, line.number, line.terminated);
  return reader.finish();
}

std::vector<std::size_t> ranked_rows(const SweepResultSet& sweep) {
  std::vector<std::size_t> order(sweep.rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto group = [](const SweepRow& r) {
    if (r.runnable()) return 0;
    if (r.status == "simulated") return 1;
    if (r.status == "pruned" || r.oom) return 2;
    return 3;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& ra = sweep.rows[a];
    const auto& rb = sweep.rows[b];
    const int ga = group(ra), gb = group(rb);
    if (ga != gb) return ga < gb;
    if (ga == 0) {
      const double ta = ra.tokens_per_s.value_or(0), tb = rb.tokens_per_s.value_or(0);
      if (ta != tb) return ta > tb;
    }
    return ra.index < rb.index;
  });
  return order;
}

ReportOutput sweep_report(const SweepResultSet& sweep, const ReportOptions& options) {
  ReportOutput out;
  out.svgs = sweep_svgs(sweep);
  const std::string description = sweep_description(sweep);
  const std::string header = header_line(options) + ": " + description;
  switch (options.format) {
    case ReportFormat::Markdown:
    case ReportFormat::Latex: {
      auto top = ranked_table(sweep, options.top);
      auto counts = counts_table(sweep);
      top.label = "tab:stepsim-sweep-ranking";
      counts.label = "tab:stepsim-sweep-outcomes";
      out.text = wrap_tables(header, {top, counts}, options.format, options.columns);
      break;
    }
    case ReportFormat::Csv:
      out.text = full_csv(sweep, options.columns);  // no comment line: the provenance goes to meta_json
      out.meta_json = csv_meta(options, "sweep", description);
      break;
    case ReportFormat::Json: {
      Json j;
      j["stepsim_version"] = options.version;
      j["kind"] = "sweep";
      j["source"] = sweep.source;
      j["description"] = description;
      const auto c = count(sweep);
      j["counts"] = {{"total", c.total}, {"runnable", c.ok}, {"oom_pruned", c.oom_pruned},
                     {"oom_simulated", c.oom_simulated}, {"error", c.errors}};
      // The document as j.dump(2) writes it with the rows under "rows" (its last key), written row
      // by row: a large sweep's rows are never all held as JSON at once.
      out.text = j.dump(2);
      out.text.resize(out.text.size() - 2);  // "\n}"
      out.text += ",\n  \"rows\": [";
      const auto order = ranked_rows(sweep);
      const std::size_t head_bytes = out.text.size();
      for (std::size_t k = 0; k < order.size(); ++k) {
        // After the first rows, room for all of them at their mean length (and 5 % more), so that
        // the text is not copied as it grows.
        if (k == 64) out.text.reserve(head_bytes + (out.text.size() - head_bytes) / 64 * order.size() * 21 / 20 + 64);
        out.text += k == 0 ? "\n    " : ",\n    ";
        const std::string row = sweep_row_json(sweep.rows[order[k]], k + 1).dump(2);
        for (const char ch : row) {
          out.text += ch;
          if (ch == '\n') out.text += "    ";
        }
      }
      out.text += order.empty() ? "]\n}\n" : "\n  ]\n}\n";
      break;
    }
    case ReportFormat::Html: {
      std::vector<HtmlSection> sections;
      sections.push_back({"Candidates", "", {to_html(counts_table(sweep)), to_html(ranked_table(sweep, options.top))}, false});
      sections.push_back({"Throughput vs GPU count",
                          "Best runnable layout per GPU count, one series per model and cluster.",
                          {inline_svg(out.svgs[0]), inline_svg(out.svgs[1])}, false});
      sections.push_back({"Time vs cost", "Every runnable layout; the Pareto front (nothing both faster and cheaper) is outlined.",
                          {inline_svg(out.svgs[2])}, false});
      out.text = html_document("stepsim sweep report", description, sections, header_line(options));
      break;
    }
  }
  return out;
}

ReportOutput scenario_report(const std::vector<ScenarioRun>& runs, const ReportOptions& options) {
  if (runs.empty()) throw InternalError("scenario_report: no runs");
  ReportOutput out;
  const bool compare = runs.size() > 1;
  const int width = compare ? 560 : 960;
  double axis_s = 0;
  for (const auto& r : runs) axis_s = std::max(axis_s, r.simulation.trace.makespan_s);
  const std::string suffixes = "abcdefghijklmnopqrstuvwxyz";
  std::vector<std::pair<std::size_t, ReportFile>> windows;  // window number, file
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const std::string sfx = compare ? std::string("_") + suffixes[i % suffixes.size()] : "";
    const std::string who = compare ? r.label + ": " : "";
    const auto mp = memory_plot(r.simulation.step.graph, r.simulation.timeline, r.simulation.report.step_time_s,
                                who + "Memory per GPU over the step, per pipeline stage");
    out.svgs.push_back({"memory" + sfx + ".svg", svg_document(memory_svg(mp, width))});
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const std::string sfx = compare ? std::string("_") + suffixes[i % suffixes.size()] : "";
    const std::string title = (compare ? r.label + ": " : std::string()) + scenarios::to_string(r.scenario.parallel.schedule) +
                              " pipeline, step " + fixed(r.simulation.report.step_time_s, 3) + " s";
    const auto gp = gantt_plot(r.simulation.step.graph, r.simulation.trace, title);
    out.svgs.push_back({"gantt" + sfx + ".svg", svg_document(gantt_svg(gp, width, axis_s))});
    const auto zoom = gantt_zoom_windows(gp, width);
    for (std::size_t k = 0; k < zoom.size(); ++k) {
      std::string slug;
      for (char ch : zoom[k].name)
        if (ch != ' ' && ch != '-') slug += ch;
      windows.push_back({k, {"gantt" + sfx + "_" + slug + ".svg", svg_document(gantt_window_svg(gp, zoom[k], width))}});
    }
  }
  // Zoomed windows after the whole-step charts, the same window of each run next to each other.
  std::stable_sort(windows.begin(), windows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::size_t first_window = out.svgs.size();
  for (auto& w : windows) out.svgs.push_back(std::move(w.second));
  const std::string header = runs_header(runs, options);
  switch (options.format) {
    case ReportFormat::Markdown:
    case ReportFormat::Latex: {
      auto m = metrics_table(runs);
      auto stages = stages_table(runs);
      m.label = "tab:stepsim-metrics";
      stages.label = "tab:stepsim-stages";
      out.text = wrap_tables(header, {m, stages}, options.format, options.columns);
      break;
    }
    case ReportFormat::Csv:
      out.text = wrap_tables(header, {csv_table(runs)}, options.format, options.columns);
      out.meta_json = csv_meta(options, compare ? "comparison" : "scenario", header);
      break;
    case ReportFormat::Json: {
      Json j;
      j["stepsim_version"] = options.version;
      j["kind"] = compare ? "comparison" : "scenario";
      Json arr = Json::array();
      for (const auto& r : runs)
        arr.push_back({{"label", r.label}, {"report", Json::parse(report_json(r.scenario, r.simulation.report))}});
      j["runs"] = arr;
      out.text = j.dump(2) + "\n";
      break;
    }
    case ReportFormat::Html: {
      std::vector<HtmlSection> sections;
      sections.push_back({"Summary", "", {to_html(metrics_table(runs)), to_html(stages_table(runs))}, false});
      HtmlSection mem{"Memory over time",
                      "Memory of one GPU of each pipeline stage over the step (static memory plus activations and buffers); "
                      "the dashed line is the GPU's capacity, a red circle marks where each stage first goes out of memory.",
                      {}, compare};
      HtmlSection gantt{"Pipeline schedule",
                        "One row per stage: compute coloured by phase on top (grey where the GPU idles), communication "
                        "below (TP/CP/PP upper half, DP lower half). Where bars are thinner than pixels, each pixel "
                        "column of a compute lane stacks the share of its time in each phase." +
                            std::string(compare ? " Both charts share one time axis." : ""),
                        {}, compare};
      HtmlSection zoom{"Pipeline schedule, zoomed",
                       "The whole step is too long to show single micro-batches: the start (the pipeline fills), the "
                       "middle (steady state) and the end (the pipeline drains, gradients are reduced, the optimizer "
                       "runs), each at a scale where a typical forward or backward bar is about 16 px wide and carries "
                       "its micro-batch number.",
                       {}, compare};
      for (std::size_t k = 0; k < out.svgs.size(); ++k) {
        const auto& f = out.svgs[k];
        (k >= first_window ? zoom : f.name.rfind("memory", 0) == 0 ? mem : gantt).blocks.push_back(inline_svg(f));
      }
      sections.push_back(std::move(mem));
      sections.push_back(std::move(gantt));
      if (!zoom.blocks.empty()) sections.push_back(std::move(zoom));
      std::string subtitle;
      for (std::size_t i = 0; i < runs.size(); ++i)
        subtitle += (i ? "; " : "") + (compare ? runs[i].label + " = " : std::string()) + runs[i].simulation.report.summary;
      out.text = html_document(compare ? "stepsim comparison report" : "stepsim scenario report", subtitle, sections,
                               header_line(options));
      break;
    }
  }
  return out;
}

}  // namespace stepsim::report
