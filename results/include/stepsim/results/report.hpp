#pragma once
// `stepsim report`: tables (Markdown, CSV, LaTeX, JSON) and an HTML report with SVG plots, from a
// sweep's results (JSON lines, one row per candidate) or from simulated scenarios (one, or two
// side by side).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/results/simulate.hpp"
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::results {

enum class ReportFormat { Markdown, Csv, Latex, Html, Json };
// "md", "csv", "latex", "html", "json"; throws ScenarioError("--format", ...) otherwise.
ReportFormat parse_report_format(const std::string& name);

struct ReportOptions {
  std::string version;        // stepsim version printed in every header
  ReportFormat format = ReportFormat::Markdown;
  std::size_t top = 20;       // sweep rows in the Markdown/LaTeX/HTML tables (0: all)
};

struct ReportFile {
  std::string name;           // "memory.svg"
  std::string text;           // complete file (XML declaration included)
};

struct ReportOutput {
  std::string text;           // the report in the requested format
  std::vector<ReportFile> svgs;
};

// One row of a sweep results file.
struct ResultRow {
  std::int64_t index = 0;
  std::string key;
  std::string status;         // "ok", "oom", "error"
  std::string reason;
  std::string summary;
  std::string model, cluster, gpu;
  std::int64_t gpus = 0, tp = 1, cp = 1, pp = 1, dp = 1, vpp = 1;
  std::int64_t micro_batch = 1, global_batch = 0, seq_len = 0;
  std::string schedule, recompute;
  std::optional<double> paper_total_bytes, stepsim_peak_bytes, gpu_memory_bytes;
  // Simulated rows only.
  std::string engine;
  std::optional<double> step_time_s, tokens_per_s, tflops_per_gpu, mfu, bubble_fraction, exposed_comm_fraction;
  std::optional<double> peak_memory_bytes;
  bool oom = false;
  std::optional<double> time_to_train_s, gpu_hours, cost_usd;

  bool simulated() const { return step_time_s.has_value(); }
  // Simulated, fits in memory, no error: the rows that rank and plot.
  bool runnable() const { return status == "ok" && simulated() && !oom; }
};

struct SweepResultSet {
  std::string source;         // file name shown in captions (no directories)
  std::vector<ResultRow> rows;
};

// True when the first non-empty line is a JSON object with a "status" key (a results row);
// a scenario file is one JSON object without it.
bool looks_like_sweep_results(const std::string& text);
// Parses JSON lines (null values count as absent); throws ScenarioError("<origin>:<line>", ...) on
// a malformed line. A second row with the same index and engine "simgrid" (a refined candidate)
// replaces the first.
SweepResultSet parse_sweep_results(const std::string& text, const std::string& origin);
// Row order of every sweep table: runnable rows by tokens/s (highest first), then the other
// simulated rows, rows out of memory, errors; ties by index.
std::vector<std::size_t> ranked_rows(const SweepResultSet& sweep);

ReportOutput sweep_report(const SweepResultSet& sweep, const ReportOptions& options);

// A simulated scenario; two of them make a side-by-side comparison.
struct ScenarioRun {
  std::string label;          // column heading ("1f1b", "A: ...")
  scenarios::Scenario scenario;
  Simulation simulation;
};

ReportOutput scenario_report(const std::vector<ScenarioRun>& runs, const ReportOptions& options);

}  // namespace stepsim::results
