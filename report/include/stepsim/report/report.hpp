#pragma once
// `stepsim report`: tables (Markdown, CSV, LaTeX, JSON) and an HTML report with SVG plots, from a
// sweep's results (JSON lines, one row per candidate) or from simulated scenarios (one, or two
// side by side).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/report/step_report.hpp"
#include "stepsim/report/sweep_row.hpp"
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::report {

enum class ReportFormat { Markdown, Csv, Latex, Html, Json };
// "md", "csv", "latex", "html", "json"; throws ScenarioError("--format", ...) otherwise.
[[nodiscard]] ReportFormat parse_report_format(const std::string& name);

// The provenance of a CSV file, written beside it (FILE.meta.json): generator (stepsim and its
// version), kind, description and the units of the columns.
[[nodiscard]] std::string csv_meta_json(const std::string& version, const std::string& kind, const std::string& description);

struct ReportOptions {
  std::string version;        // stepsim version printed in every header
  ReportFormat format = ReportFormat::Markdown;
  std::size_t top = 20;       // sweep rows in the Markdown/LaTeX/HTML tables (0: all)
  std::vector<std::string> columns;  // md, csv, latex: the main table's columns, in this order (empty: all)
};

struct ReportFile {
  std::string name;           // "memory.svg"
  std::string text;           // complete file (XML declaration included)
};

struct ReportOutput {
  std::string text;           // the report in the requested format
  std::string meta_json;      // CSV: its provenance (version, what it holds), for a file beside it
  std::vector<ReportFile> svgs;
};

struct SweepResultSet {
  std::string source;         // file name shown in captions (no directories)
  std::vector<SweepRow> rows;
  std::size_t truncated_line = 0;  // a cut-off last line that was ignored (its number), 0 when none
};

// True when the first non-empty line is a JSON object with a "status" key (a results row);
// a scenario file is one JSON object without it.
[[nodiscard]] bool looks_like_sweep_results(const std::string& text);
// Parses JSON lines with parse_row (null values count as absent, a row without an index gets its
// position; a value of the wrong type is an error); throws ScenarioError("<origin>:<line>", ...)
// on a malformed line, except a last line without newline after at least one row, which is a
// cut-off write: ignored and noted in truncated_line. Rows are sorted by index, then key, so the
// order of the lines does not matter. A second row with the same index and engine "simgrid" (a
// refined candidate) replaces the first.
[[nodiscard]] SweepResultSet parse_sweep_results(const std::string& text, const std::string& origin);
// The same, one line at a time (a results file of any size read as a stream); rows keep no copy
// of their line.
class SweepResultsReader {
 public:
  // `file_bytes`: the size of the whole input when known (0: unknown), from which the rows are
  // counted ahead once a few have been read, so that their array is allocated once.
  explicit SweepResultsReader(const std::string& origin, std::uintmax_t file_bytes = 0);
  // A line without its newline; `terminated`: a newline ended it.
  void add_line(const std::string& text, std::int64_t number, bool terminated);
  [[nodiscard]] SweepResultSet finish();

 private:
  std::string origin_;
  std::uintmax_t file_bytes_ = 0;
  std::uintmax_t read_bytes_ = 0;  // of the lines added so far, newlines included
  SweepResultSet out_;
};
// Row order of every sweep table: runnable rows by tokens/s (highest first), then the other
// simulated rows, rows out of memory, errors; ties by index.
[[nodiscard]] std::vector<std::size_t> ranked_rows(const SweepResultSet& sweep);

[[nodiscard]] ReportOutput sweep_report(const SweepResultSet& sweep, const ReportOptions& options);

// A simulated scenario; two of them make a side-by-side comparison.
struct ScenarioRun {
  std::string label;          // column heading ("1f1b", "A: ...")
  scenarios::Scenario scenario;
  Simulation simulation;
};

[[nodiscard]] ReportOutput scenario_report(const std::vector<ScenarioRun>& runs, const ReportOptions& options);

}  // namespace stepsim::report
