#pragma once
// Sweeps: every candidate of a sweep file gets the memory estimate; those that fit are simulated
// (analytic engine) in worker processes; the best K may be re-simulated with SimGrid. One JSON
// line per candidate is appended to a results file as soon as it is known, so a killed sweep loses
// nothing and `resume` continues it. Rankings and merging of shard files.
//
// Rows are report::SweepRow (stepsim/report/sweep_row.hpp).

#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
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
class MpiSession;

enum class PruneRule {
  PaperUsableFraction,  // paper_estimate total <= memory.usable_fraction x GPU memory
  Stepsim,              // stepsim_estimate peak <= GPU memory - memory.headroom_gib (the default)
};
// "stepsim" | "paper-usable-fraction" (also its former name "paper-80"); throws
// ScenarioError("--prune", ...) otherwise.
[[nodiscard]] PruneRule parse_prune_rule(const std::string& text);
[[nodiscard]] std::string to_string(PruneRule rule);
// The rule's name and what it compares ("stepsim (stepsim peak <= GPU memory - memory.headroom_gib)").
[[nodiscard]] std::string describe(PruneRule rule);

struct MemoryVerdict {
  std::int64_t paper_total_bytes = 0;
  std::int64_t stepsim_peak_bytes = 0;
  std::int64_t gpu_memory_bytes = 0;
  bool fits = false;
  std::string reason;  // why it does not fit (empty when it fits)
};
[[nodiscard]] MemoryVerdict memory_verdict(const scenarios::Scenario& s, PruneRule rule);

// What every row of one sweep carries: the sweep's fingerprint and its number of candidates.
struct SweepStamp {
  std::string fingerprint;
  std::int64_t candidates = 0;
};

// The fingerprint of a sweep: 16 hex digits of a 64-bit FNV-1a hash over the stepsim version, the
// base scenario, the axes, the constraints and the prune rule (canonical JSON). Rows of one sweep
// share it; a --resume or a merge compares it.
[[nodiscard]] std::string sweep_fingerprint(const scenarios::SweepSpec& spec, PruneRule rule, const std::string& version);

// Evaluates one candidate: memory verdict, then (when it fits) simulate() with `engine` and `cache`.
// Simulation failures become "error" rows. `refined` marks a SimGrid re-simulation row (simulated
// even when the memory estimate prunes it).
[[nodiscard]] SweepRow evaluate_candidate(const scenarios::Candidate& c, PruneRule rule, sim::EngineKind engine,
                            SimulationCache& cache, bool refined = false, const SweepStamp& stamp = {});

// An "error" row of a candidate that could not be evaluated (its worker process died).
[[nodiscard]] SweepRow failed_row(const scenarios::Candidate& c, const std::string& reason, const SweepStamp& stamp);

// How reading a results file ended.
struct RowScan {
  std::int64_t rows = 0;
  bool truncated_tail = false;        // the last line has no newline and is not a row: a cut-off write
  std::int64_t truncated_line = 0;    // its line number (1-based) when truncated_tail
  bool missing_newline = false;       // the last line is a row without its newline
  std::uint64_t good_bytes = 0;       // bytes up to the end of the last row line
};
// Streams the rows of a results file (a regular file of any size; memory is one line) to
// `visit` with their line number, in file order; rows need an index and a key. A bad line is a ScenarioError naming file
// and line, except a last line without its newline, which is a cut-off write (truncated_tail).
RowScan scan_rows(const std::string& file, const std::function<void(SweepRow&&, std::int64_t line)>& visit);

struct RowFile : RowScan {
  std::vector<SweepRow> rows;
};
// The rows of a results file in memory (scan_rows).
[[nodiscard]] RowFile read_rows(const std::string& file);

// Sorting results files into one: rows by sweep (in order of first appearance), candidate index
// and key; one row per candidate: an identical repeat is dropped and counted, a refined (SimGrid)
// row replaces the analytic one (unless it failed: a warning), two different rows of one candidate of one sweep are a
// ScenarioError naming both lines. Memory is bounded by `chunk_bytes`: longer inputs are sorted
// in runs written next to the output and merged.
struct SortStats {
  std::int64_t rows = 0;                   // rows written
  std::int64_t duplicates = 0;             // identical repeats dropped
  std::int64_t replaced = 0;               // analytic rows replaced by their refined row
  std::vector<std::string> warnings;       // cut-off last lines ignored; sweeps with missing candidates
};
inline constexpr std::int64_t kSortChunkBytes = std::int64_t{64} << 20;
struct SortOptions {
  std::string run_dir;                     // where runs go (default: the system's temporary directory)
  std::int64_t chunk_bytes = kSortChunkBytes;
  bool check_coverage = false;             // warn about sweeps whose candidates lack rows (merging shards)
};
// Writes the sorted rows of `inputs` (files), one line each, to `out`, calling `on_row` with each
// row written. A file with text but no row, or no row at all, is a ScenarioError.
SortStats sort_rows(const std::vector<std::string>& inputs, std::ostream& out, const std::function<void(const SweepRow&)>& on_row = {},
                    const SortOptions& options = {});

// The default ceiling on the candidates one sweep process evaluates (its shard), and on the
// combinations the axes may generate (this many times the ceiling).
inline constexpr std::int64_t kDefaultMaxCandidates = 1'000'000;
inline constexpr std::int64_t kCombinationsPerCandidate = 100;

struct SweepOptions {
  int jobs = 1;                       // worker processes
  bool resume = false;
  std::int64_t shard_index = 0;       // run candidates with index % shard_count == shard_index
  std::int64_t shard_count = 1;
  std::string out_dir = "sweep-out";
  std::int64_t refine = 0;            // re-simulate the best K with SimGrid
  PruneRule prune = PruneRule::Stepsim;
  std::int64_t max_candidates = kDefaultMaxCandidates;  // refuse a shard with more candidates
  std::string version;                // stepsim's version, part of the fingerprint
  bool progress = false;              // progress bar on stderr
  bool quiet = false;                 // no informational lines on stderr
  MpiSession* mpi = nullptr;          // rank 0 of an MPI job: ranks 1..N-1 are the workers (jobs is not used)
};

struct SweepOutcome {
  std::string results_file;
  std::string summary_file;
  std::string table;                  // the ranking (also written to summary_file)
  std::string fingerprint;
  std::int64_t candidates = 0;        // of this shard
  std::int64_t already_done = 0;      // candidates with a row found by --resume
  std::int64_t evaluated = 0;         // rows written by this run
};

// "results.jsonl" or "results.shard-I-of-N.jsonl" (and "summary.md" / "summary.shard-I-of-N.md").
[[nodiscard]] std::string results_file_name(const SweepOptions& o);
[[nodiscard]] std::string summary_file_name(const SweepOptions& o);

// Runs the sweep: counts the candidates (refusing more than max_candidates), evaluates a few to
// estimate the time, then feeds the others to `jobs` worker processes as the enumeration yields
// them (memory independent of the number of candidates), appending each row to the results file
// as it arrives; sorts the file into one row per candidate and writes the ranking. Call it from a
// single-threaded process (it forks). Throws ScenarioError for a bad sweep, an existing results
// file without `resume`, a results file of another sweep (fingerprint), or an unwritable directory.
SweepOutcome run_sweep(const scenarios::SweepSpec& spec, const SweepOptions& options);

// The candidate's key of a row (older files wrote refined rows as "<key> engine=simgrid").
[[nodiscard]] std::string base_key(const std::string& key);
// Ranking order: more tokens/s first, ties broken on the key.
[[nodiscard]] bool faster(const SweepRow& a, const SweepRow& b);

// The ranking, built one row at a time in memory independent of the number of rows: per cluster
// and GPU count the best layouts (tokens/s, fits in memory), the fastest that fits, and with a
// cost and a token budget the cheapest. Rows come in sorted order (sort_rows); a refined row
// right after its candidate's analytic row replaces it. Deterministic: ties break on the key.
class Ranking {
 public:
  explicit Ranking(std::int64_t per_cluster = 3);
  ~Ranking();
  Ranking(const Ranking&) = delete;
  Ranking& operator=(const Ranking&) = delete;
  void add(const SweepRow& row);
  // `header_lines` are printed first (the sweep name, the enumeration summary).
  [[nodiscard]] std::string markdown(const std::vector<std::string>& header_lines);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The ranking of rows in any order (sorted by sweep, index and key first).
[[nodiscard]] std::string ranking_markdown(const std::vector<SweepRow>& rows, const std::vector<std::string>& header_lines,
                             std::int64_t per_cluster = 3);

// Rows of several results files (or directories holding results*.jsonl), as sort_rows orders and
// checks them, in memory. Cut-off last lines and sweeps with missing candidates are noted in
// `warnings`.
[[nodiscard]] std::vector<SweepRow> merge_rows(const std::vector<std::string>& inputs, std::vector<std::string>* warnings = nullptr);
// The results files named by `inputs`: files as given, directories by their results*.jsonl files
// (sorted). Throws ScenarioError for a missing input or a directory without results.
[[nodiscard]] std::vector<std::string> results_files(const std::vector<std::string>& inputs);

}  // namespace stepsim::driver
