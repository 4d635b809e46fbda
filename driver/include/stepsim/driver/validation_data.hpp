#pragma once
// The published measurements that `stepsim validate` and `stepsim calibrate` compare against
// (driver/data/validation/<set>.json), embedded in the library at build time.

#include <optional>
#include <string>
#include <vector>

#include "stepsim/costmodel/compute.hpp"

namespace stepsim::driver {

// ---- validation sets: {"source": "...", "notes": "...", "records": [record, ...]} where a record is
// {"name", "scenario": {stepsim scenario object}, "measured": {"step_time_s" and/or
// "tflops_per_gpu"}, "flops_formula": "narayanan-eq3" | "megatron-causal" | "megatron-pre-0.11",
// "notes"}. tflops_per_gpu is the paper's: model_flops(scenario, flops_formula) / (step time x GPUs).

struct ValidationRecord {
  std::string set;                       // the set's name ("narayanan-sc21-table1")
  std::string name;                      // the record's name, unique in its set
  std::string scenario_json;             // the scenario object as JSON text, for scenarios::load_scenario_text
  std::optional<double> step_time_s;     // measured iteration time
  std::optional<double> tflops_per_gpu;  // measured throughput per GPU (TFLOP/s, the paper's count)
  costmodel::FlopsFormula flops_formula = costmodel::FlopsFormula::MegatronCausal;
  std::string notes;
};

// Names of the embedded validation sets, sorted: fujii-2024-slice, korthikanti-2022-table5,
// narayanan-sc21-table1.
[[nodiscard]] std::vector<std::string> validation_set_names();
// The embedded JSON text of a set; throws ScenarioError("validate", ...) for an unknown name.
[[nodiscard]] std::string validation_set_text(const std::string& name);
// Parses a set's text; throws ScenarioError naming the set, record and key on malformed input.
[[nodiscard]] std::vector<ValidationRecord> parse_validation_set(const std::string& text, const std::string& set_name);
// parse_validation_set(validation_set_text(name), name).
[[nodiscard]] std::vector<ValidationRecord> validation_records(const std::string& set_name);

}  // namespace stepsim::driver
