#pragma once
// The published measurements that `stepsim validate` and `stepsim calibrate` compare against
// (driver/data/validation/<set>.json), embedded in the library at build time.

#include <optional>
#include <string>
#include <vector>

#include "stepsim/costmodel/compute.hpp"

namespace stepsim::driver {

// ---- validation sets: {"source": "...", "software": "...", "cluster": "...", "notes": "...", "fit":
// false, "records": [record, ...]} (software, cluster, notes and fit optional; "fit": false: the
// set's records are compared but never fitted on, by calibrate or the cross-validation) where a record is {"name",
// "table", "software", "scenario": {stepsim scenario object}, "measured": {"step_time_s" and/or
// "tflops_per_gpu", or "peak_allocated_gib"}, "flops_formula": "narayanan-eq3" | "megatron-causal" | "megatron-pre-0.11",
// "skip", "notes"}. tflops_per_gpu is the paper's: model_flops(scenario, flops_formula) / (step time
// x GPUs). "table" groups the records whose layouts are ranked against each other (default "all");
// every record of one table compares the same quantity (step time where measured, else TFLOP/s;
// peak_allocated_gib: torch's peak allocated memory of the last rank, compared with stepsim's
// last-stage peak without CUDA context, NCCL buffers and fragmentation).
// A record with "skip" (the reason, e.g. "FP8 is not modelled yet") is listed but not simulated;
// its scenario, measured and flops_formula are optional.

struct ValidationRecord {
  std::string set;                       // the set's name ("narayanan-sc21-table1")
  std::string name;                      // the record's name, unique in its set
  std::string table;                     // the group of records ranked together ("all" when not given)
  std::string software;                  // the software stack as published ("" when not given)
  std::string scenario_json;             // the scenario object as JSON text, for scenarios::load_scenario_text
                                         // ("" for a skipped record without one)
  std::optional<double> step_time_s;     // measured iteration time
  std::optional<double> tflops_per_gpu;  // measured throughput per GPU (TFLOP/s, the paper's count)
  std::optional<double> peak_allocated_gib;  // measured peak allocated memory of the last rank (GiB)
  costmodel::FlopsFormula flops_formula = costmodel::FlopsFormula::MegatronCausal;
  std::string skip_reason;               // non-empty: listed with this reason, not simulated
  bool fit = true;                       // false: compared only; calibrate and the cross-validation's fits leave it out
  std::string notes;

  [[nodiscard]] bool skipped() const { return !skip_reason.empty(); }
  // A memory record: compared on memory, not simulated in time (calibrate and --gpus skip it).
  [[nodiscard]] bool measures_memory() const { return peak_allocated_gib.has_value(); }
};

// Names of the embedded validation sets, sorted (dgxc-h100-llama3, fujii-2024-abci-a100, ...).
[[nodiscard]] std::vector<std::string> validation_set_names();
// The embedded JSON text of a set; throws ScenarioError("validate", ...) for an unknown name.
[[nodiscard]] std::string validation_set_text(const std::string& name);
// Parses a set's text; throws ScenarioError naming the set, record and key on malformed input.
[[nodiscard]] std::vector<ValidationRecord> parse_validation_set(const std::string& text, const std::string& set_name);
// parse_validation_set(validation_set_text(name), name).
[[nodiscard]] std::vector<ValidationRecord> validation_records(const std::string& set_name);

}  // namespace stepsim::driver
