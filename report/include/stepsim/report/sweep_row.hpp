#pragma once
// One row of a sweep's results file: one candidate, its memory estimate and (when simulated) its
// step figures, written as one line of JSON and read back by rankings, merging and `stepsim report`.
//
// Row (one line of JSON, keys in this order; values that do not apply are null):
//   index, key, sweep (the sweep's fingerprint), sweep_candidates (the sweep's number of
//   candidates, all shards), status ("simulated" | "pruned" | "error"), reason, scenario (the
//   scenario object loaded), summary, paper_total_bytes, stepsim_peak_bytes, then the fields of one
//   step as every output writes them (step_fields below: model ... cost_usd_per_million_tokens, with oom a boolean on
//   every row), then analytic_step_time_s, analytic_tokens_per_s (refined rows: the analytic
//   engine's figures of the same candidate, which chose it for refinement).
// "pruned" rows did not pass the memory prune and were not simulated (reason says why; oom is
// true). A refined row (re-simulated with SimGrid) has the candidate's index and key and engine
// "simgrid"; it replaces the candidate's analytic row when the results are sorted (older files
// wrote its key as "<key> engine=simgrid"). Older files' statuses "ok" and "oom" read as
// "simulated" and "pruned". Rows hold no wall-clock figures: a row depends on the candidate only.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/report/step_report.hpp"
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::report {

// One row of a results file, as rankings, merging and `stepsim report` read it (the line itself
// is kept verbatim). Values that are null or absent in the line keep the defaults below: the
// figures of the memory estimate and of the simulation stay empty.
struct SweepRow {
  std::int64_t index = 0;
  std::string key;
  std::string sweep;                  // fingerprint of the sweep that wrote it (empty: unknown)
  std::int64_t sweep_candidates = 0;  // candidates of that sweep, all shards (0: unknown)
  std::string status;                 // simulated | pruned | error
  std::string reason;
  std::string summary;
  std::string model;
  std::string cluster;
  std::string gpu;
  std::int64_t gpus = 0;
  std::int64_t tp = 1, cp = 1, pp = 1, dp = 1, vpp = 1;
  std::int64_t micro_batch = 1, global_batch = 0, seq_len = 0;
  std::string schedule;
  std::string recompute;
  std::string cp_comm_type = "p2p";   // rows of older files have none: p2p
  std::vector<std::int64_t> hierarchical_cp_sizes;  // a2a+p2p only (null in the row otherwise)
  std::optional<std::int64_t> paper_total_bytes, stepsim_peak_bytes, gpu_memory_bytes;
  std::string engine;                 // empty when not simulated
  // Simulated rows only.
  std::optional<double> step_time_s, tokens_per_s, tokens_per_s_per_gpu, tflops_per_gpu, mfu, bubble_fraction,
      exposed_comm_fraction;
  std::optional<std::int64_t> peak_memory_bytes;
  bool oom = false;                   // out of memory: in the timeline (simulated) or by the estimate (pruned)
  std::optional<double> time_to_train_s, gpu_hours, cost_usd, cost_usd_per_million_tokens;
  std::optional<double> analytic_step_time_s, analytic_tokens_per_s;  // refined rows only
  std::string line;                   // the JSON line, without the newline

  [[nodiscard]] bool simulated() const { return step_time_s.has_value(); }
  // Simulated, fits in memory, no error: the rows that rank and plot.
  [[nodiscard]] bool runnable() const { return status == "simulated" && simulated() && !oom; }
};

// The fields of a row that describe a scenario: summary, model, cluster, gpu, gpus, the layout.
void describe_scenario(SweepRow& r, const scenarios::Scenario& s);
// The figures of a simulated step (engine, step time ... cost); status "simulated".
void set_step_figures(SweepRow& r, const StepReport& rep);
// A row of one simulated step: describe_scenario and set_step_figures.
[[nodiscard]] SweepRow step_row(const scenarios::Scenario& s, const StepReport& rep);

// The keys of one step, in the order every output writes them (run, compare and report JSON,
// sweep rows, CSV columns): model, cluster, gpu, gpus, tp, cp, cp_comm_type, hierarchical_cp_sizes,
// pp, dp, vpp, micro_batch,
// global_batch, seq_len, schedule, recompute, engine, step_time_s, tokens_per_s,
// tokens_per_s_per_gpu, tflops_per_gpu, mfu, bubble_fraction, exposed_comm_fraction,
// peak_memory_bytes, gpu_memory_bytes, oom, time_to_train_s, gpu_hours, cost_usd,
// cost_usd_per_million_tokens.
// Units are in the names; fractions are fractions (mfu 0.43), bytes are bytes.
[[nodiscard]] const std::vector<std::string>& step_fields();

// The JSON line of `r` (keys in the order above, no newline); `scenario_json` is the candidate's
// scenario object as JSON text.
[[nodiscard]] std::string row_line(const SweepRow& r, const std::string& scenario_json);

// Parses one line. Throws ScenarioError(origin, ...) when it is not a row: not JSON, not an object,
// or no "status" string of simulated, pruned or error (or the older ok, oom). A row without an index gets `missing_index`.
[[nodiscard]] SweepRow parse_row(const std::string& line, const std::string& origin = "<row>", std::int64_t missing_index = 0);

// The non-blank lines of a results text, in order.
struct RowLine {
  std::string text;             // without the newline
  std::int64_t number = 0;      // 1-based line number
  std::size_t start = 0;        // offset of its first byte
  bool terminated = false;      // a newline ends it (false: the text's last line, maybe cut short)
};
[[nodiscard]] std::vector<RowLine> row_lines(const std::string& text);

}  // namespace stepsim::report
