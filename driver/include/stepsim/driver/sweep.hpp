#pragma once
// Sweeps: every candidate of a sweep file gets the memory estimate; those that fit are simulated
// (analytic engine) in worker processes; the best K may be re-simulated with SimGrid. One JSON
// line per candidate is appended to a results file as soon as it is known, so a killed sweep loses
// nothing and `resume` continues it. Rankings and merging of shard files.
//
// Rows are report::SweepRow (stepsim/report/sweep_row.hpp).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/driver/simulate.hpp"
#include "stepsim/report/step_report.hpp"
#include "stepsim/report/sweep_row.hpp"
#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/scenarios/sweep.hpp"
#include "stepsim/sim/engine.hpp"

namespace stepsim::driver {

using report::SweepRow;

enum class PruneRule {
  Paper80,  // paper_estimate total <= usable_fraction x GPU memory
  Stepsim,  // stepsim_estimate peak <= GPU memory
};
// "paper-80" | "stepsim"; throws ScenarioError("--prune", ...) otherwise.
[[nodiscard]] PruneRule parse_prune_rule(const std::string& text);
[[nodiscard]] std::string to_string(PruneRule rule);

struct MemoryVerdict {
  std::int64_t paper_total_bytes = 0;
  std::int64_t stepsim_peak_bytes = 0;
  std::int64_t gpu_memory_bytes = 0;
  bool fits = false;
  std::string reason;  // why it does not fit (empty when it fits)
};
[[nodiscard]] MemoryVerdict memory_verdict(const scenarios::Scenario& s, PruneRule rule);

// Evaluates one candidate: memory verdict, then (when it fits) simulate() with `engine` and `cache`.
// Simulation failures become "error" rows. `refined` marks a SimGrid re-simulation row.
[[nodiscard]] SweepRow evaluate_candidate(const scenarios::Candidate& c, PruneRule rule, sim::EngineKind engine,
                            SimulationCache& cache, bool refined = false);

struct RowFile {
  std::vector<SweepRow> rows;
  bool truncated_tail = false;        // the last line has no newline and is not a row: a cut-off write
  std::int64_t truncated_line = 0;    // its line number (1-based) when truncated_tail
  bool missing_newline = false;       // the last line is a row without its newline
  std::size_t good_bytes = 0;         // bytes of the parsed lines
};
// Reads a results file (scenarios::read_input_file: a regular file of at most 64 MiB); its rows
// need an index and a key. A bad line is a ScenarioError naming file and line, except a last line
// without its newline, which is a cut-off write (truncated_tail).
[[nodiscard]] RowFile read_rows(const std::string& file);

struct SweepOptions {
  int jobs = 1;                       // worker processes
  bool resume = false;
  std::int64_t shard_index = 0;       // run candidates with index % shard_count == shard_index
  std::int64_t shard_count = 1;
  std::string out_dir = "sweep-out";
  std::int64_t refine = 0;            // re-simulate the best K with SimGrid
  PruneRule prune = PruneRule::Stepsim;
  bool progress = false;              // progress bar on stderr
  bool quiet = false;                 // no informational lines on stderr
};

struct SweepOutcome {
  std::string results_file;
  std::string summary_file;
  std::string table;                  // the ranking (also written to summary_file)
  std::int64_t candidates = 0;        // of this shard
  std::int64_t already_done = 0;      // rows found by --resume
  std::int64_t evaluated = 0;         // rows written by this run
};

// "results.jsonl" or "results.shard-I-of-N.jsonl" (and "summary.md" / "summary.shard-I-of-N.md").
[[nodiscard]] std::string results_file_name(const SweepOptions& o);
[[nodiscard]] std::string summary_file_name(const SweepOptions& o);

// Runs the sweep. Call it from a single-threaded process (it forks). Throws ScenarioError for a
// bad sweep, an existing results file without `resume`, or an unwritable directory.
SweepOutcome run_sweep(const scenarios::SweepSpec& spec, const SweepOptions& options);

// The candidate's key of a row: a refined row's key without " engine=simgrid".
[[nodiscard]] std::string base_key(const std::string& key);
// Ranking order: more tokens/s first, ties broken on the key.
[[nodiscard]] bool faster(const SweepRow& a, const SweepRow& b);

// The ranking: per cluster and GPU count the best layouts (tokens/s, fits in memory), the fastest
// that fits, and with a cost and a token budget the cheapest. Refined (SimGrid) figures replace
// analytic ones for the same candidate. Deterministic: ties break on the key.
// `header_lines` are printed first (the sweep name, the enumeration summary).
[[nodiscard]] std::string ranking_markdown(const std::vector<SweepRow>& rows, const std::vector<std::string>& header_lines,
                             std::int64_t per_cluster = 3);

// Rows of several results files (or directories holding results*.jsonl), sorted by index then
// key, one per key (the first file wins on a conflict). A truncated last line of a file is ignored
// and noted in `warnings` ("<file>:<line>: ..."). Throws ScenarioError when a file holds text but
// no row, or when the inputs hold no row at all.
[[nodiscard]] std::vector<SweepRow> merge_rows(const std::vector<std::string>& inputs, std::vector<std::string>* warnings = nullptr);

}  // namespace stepsim::driver
