#pragma once
// Sweep files: the fixed part of a scenario ("base") plus lists of values for any field ("axes"),
// and the deterministic enumeration of the candidate scenarios they describe.
//
//   {
//     "name": "llama70b-h100",
//     "base": { ...a scenario object, same schema as a scenario file... },
//     "axes": {
//       "gpus": [64, 128],                     total GPUs: cluster.nodes = gpus / gpus_per_node
//       "model": ["llama-3.1-70b"],            preset names or objects
//       "cluster": ["dgx-h100", {...}],        preset names or cluster objects (base nodes kept)
//       "parallel.tp": "auto",                 every divisor of what is left of the world size
//       "parallel.pp": [1, 2, 4],
//       "training.micro_batch": [1, 2],
//       "any.dotted.path": [values...],
//       "zip": [{"cluster.preset": "dgx-h100", "cost.usd_per_gpu_hour": 2.5},   one point per object,
//               {"cluster.preset": "dgx-b200", "cost.usd_per_gpu_hour": 5.0}]   its fields set together
//     },
//     "constraints": { "tp_cp_within_node": true, "max_tp": 8, "max_cp": 8, "max_pp": 16,
//                      "max_dp": 1024, "powers_of_two": false }
//   }
//
// A zip is one axis (named "zip", its values the objects; crossed with the other axes): each
// object names the same fields, none of them gpus, a layout axis, the schedule, vpp or another axis.
// Candidate order: axes in a fixed order (model, cluster, cluster.nodes, gpus, other fields
// and the zip alphabetically, training.seq_len, training.global_batch, training.micro_batch,
// training.recompute, parallel.tp, parallel.cp, parallel.pp, parallel.dp, parallel.schedule,
// parallel.vpp), the first axis varying slowest, values in the order given. A candidate that
// fails the scenario loader's cross-field rules (tp not dividing the heads, ...) or the
// constraints is skipped and counted; a value that is malformed in itself (wrong type, unknown
// preset, unknown key) is a ScenarioError naming its place in the sweep file.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::scenarios {

struct SweepConstraints {
  bool tp_cp_within_node = true;            // tp * cp <= GPUs per node (the seed paper's rule)
  std::optional<std::int64_t> max_tp;
  std::optional<std::int64_t> max_cp;
  std::optional<std::int64_t> max_pp;
  std::optional<std::int64_t> max_dp;
  bool powers_of_two = false;               // tp, cp, pp and dp powers of two
};

struct SweepAxis {
  std::string name;                         // "gpus", "model", "cluster" or a dotted scenario path
  bool automatic = false;                   // "auto" (parallel.tp/cp/pp/dp only)
  std::vector<std::string> values_json;     // each value as compact JSON text
};

struct SweepSpec {
  std::string name;
  std::string origin;                       // file name for messages
  std::string base_json;                    // the base scenario object, compact JSON
  std::vector<SweepAxis> axes;              // in candidate order (slowest first)
  SweepConstraints constraints;
};

// Parses a sweep file's text; throws ScenarioError naming the JSON path ("axes.parallel.tp[2]").
[[nodiscard]] SweepSpec parse_sweep_text(const std::string& json_text, const std::string& origin = "<sweep>");
[[nodiscard]] SweepSpec load_sweep_file(const std::string& file);

struct Candidate {
  std::int64_t index = 0;                   // position among the valid candidates
  std::string key;                          // canonical: "axis=value" for every axis, space-separated
  std::string scenario_json;                // the scenario object, compact JSON
  Scenario scenario;                        // loaded from scenario_json, when `loaded`
  bool loaded = false;
};

// What an enumeration went through.
struct EnumerationCounts {
  std::int64_t valid = 0;                   // valid candidates visited
  std::int64_t generated = 0;               // combinations tried
  std::int64_t excluded_by_constraints = 0;
  std::int64_t invalid = 0;                 // rejected by the loader's cross-field rules
  std::map<std::string, std::int64_t> invalid_by_field;  // "parallel.tp" -> count
  bool complete = true;                     // false when the visitor stopped it early
};

// Called with every valid candidate in candidate order; returns false to stop the enumeration.
using CandidateVisitor = std::function<bool(Candidate&&)>;

// Visits the candidates one at a time (memory independent of their number). Throws ScenarioError
// when a value is malformed, or when no candidate is valid (naming the first reason).
// With `prechecks` (the default) the layouts of each combination of the other axes are judged by
// the loader's cross-field rules on one scenario read for that combination, and only those that
// pass are loaded; false loads every combination (slower, the same result: for tests).
// CandidateLoad::JsonOnly visits the candidates that the prechecks judged valid with their JSON
// only (`loaded` false: whoever needs the scenario loads scenario_json), for passes that count
// candidates or hand them to workers as JSON; the candidates, their order and the counts are
// those of a loading enumeration.
enum class CandidateLoad { Scenario, JsonOnly };
EnumerationCounts for_each_candidate(const SweepSpec& spec, const CandidateVisitor& visit, bool prechecks = true,
                                     CandidateLoad load = CandidateLoad::Scenario);

// The counts of a whole enumeration without keeping any candidate; with stop_after > 0 it stops
// after that many candidates (complete is then false when more may follow).
[[nodiscard]] EnumerationCounts count_candidates(const SweepSpec& spec, std::int64_t stop_after = 0);

// Every candidate of the sweep, in candidate order, kept in memory (small sweeps and tests).
struct Enumeration : EnumerationCounts {
  std::vector<Candidate> candidates;
};
[[nodiscard]] Enumeration enumerate(const SweepSpec& spec);

// "generated 1200, 300 excluded by constraints, 52 invalid (parallel.tp 40, training.global_batch 12), 848 candidates"
[[nodiscard]] std::string enumeration_summary(const EnumerationCounts& e);

}  // namespace stepsim::scenarios
