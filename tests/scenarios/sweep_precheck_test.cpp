// The enumeration's layout prechecks (the cross-field rules applied to one read scenario per
// combination of the other axes, without a JSON document or an exception per layout) against the
// loader on every combination: the same candidates, the same counts per reason, the same errors.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/scenarios/sweep.hpp"

using namespace stepsim;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Everything an enumeration tells, as text: counts, reasons, every candidate, or the error. A
// candidate visited without its scenario (CandidateLoad::JsonOnly) is loaded here: a JSON the
// loader refuses shows in the text. `unloaded` counts those candidates.
std::string outcome(const std::string& text, bool prechecks, scenarios::CandidateLoad load = scenarios::CandidateLoad::Scenario,
                    int* unloaded = nullptr) {
  try {
    const auto spec = scenarios::parse_sweep_text(text, "sweep.json");
    std::string out;
    const auto counts = scenarios::for_each_candidate(
        spec,
        [&](scenarios::Candidate&& c) {
          out += std::to_string(c.index) + " " + c.key + " " + c.scenario_json + "\n";
          if (load == scenarios::CandidateLoad::Scenario && !c.loaded) out += "not loaded\n";
          if (!c.loaded) {
            if (unloaded != nullptr) ++*unloaded;
            try {
              (void)scenarios::load_scenario_text(c.scenario_json, {}, spec.origin);
            } catch (const ScenarioError& e) {
              out += std::string("the loader refuses it: ") + e.what() + "\n";
            }
          }
          return true;
        },
        prechecks, load);
    return scenarios::enumeration_summary(counts) + "\n" + out;
  } catch (const ScenarioError& e) {
    return std::string("error: ") + e.what();
  }
}

// With prechecks, without, and visiting the candidates the prechecks accept by their JSON alone:
// the same candidates and counts. Returns how many the last visited without loading them.
int check_same(const std::string& text) {
  const auto fast = outcome(text, true);
  const auto slow = outcome(text, false);
  int unloaded = 0;
  const auto json_only = outcome(text, true, scenarios::CandidateLoad::JsonOnly, &unloaded);
  CHECK(fast.size() > 40);
  CHECK(fast == slow);
  CHECK(json_only == fast);
  return unloaded;
}

const char* kBase = R"("base": {"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 2},
    "training": {"seq_len": 40, "global_batch": 16}})";

}  // namespace

TEST_CASE("layout prechecks: the example sweeps and the GPT-3 175B bench sweep") {
  check_same(read(STEPSIM_SOURCE_DIR "/scenarios/examples/sweep-llama70b-h100.json"));
  check_same(read(STEPSIM_SOURCE_DIR "/scenarios/examples/sweep-long-context-cp.json"));  // CP types, a2a's head rule
  // Every one of the GPT-3 search's 1,665 candidates is judged by the prechecks: none is loaded.
  CHECK(check_same(read(STEPSIM_SOURCE_DIR "/bench/sweeps/gpt3-175b-a100-4096.json")) == 1665);
}

TEST_CASE("layout prechecks: dp lists, every schedule, values outside the readers' ranges, dp in the base") {
  // tp 100000 and vpp 2000 lie outside the ranges of parallel.tp and parallel.vpp: the loader decides.
  check_same(std::string("{") + kBase + R"(, "axes": {"parallel.tp": [1, 2, 3, 8, 100000], "parallel.cp": "auto",
      "parallel.dp": [1, 2, 4, 16], "parallel.schedule": ["1f1b", "gpipe", "interleaved"], "parallel.vpp": [1, 2, 2000]},
      "constraints": {"tp_cp_within_node": false}})");
  check_same(R"({"base": {"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 2},
      "training": {"seq_len": 4096, "global_batch": 24}, "parallel": {"tp": 2, "dp": 4}},
      "axes": {"parallel.pp": "auto", "training.micro_batch": [1, 2, 3], "gpus": [8, 16, 20]}})");
  check_same(std::string("{") + kBase + R"(, "axes": {"parallel.tp": "auto", "parallel.pp": "auto", "parallel.dp": "auto",
      "training.recompute": ["none", "full"], "parallel.vpp": [1, 2, 4]}})");
}

TEST_CASE("layout prechecks: hierarchical CP sizes in the base, checked against each layout's cp, with any CP type") {
  check_same(R"({"base": {"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 2},
      "training": {"seq_len": 40, "global_batch": 16}, "parallel": {"hierarchical_cp_sizes": [2, 2]}},
      "axes": {"parallel.tp": "auto", "parallel.cp": [1, 2, 4], "parallel.pp": "auto",
               "parallel.cp_comm_type": ["p2p", "a2a+p2p"]}})");
}

TEST_CASE("layout prechecks: a sweep without a valid candidate names the loader's first reason") {
  check_same(std::string("{") + kBase + R"(, "axes": {"parallel.tp": [3, 5], "parallel.pp": [1, 2]}})");
  check_same(std::string("{") + kBase + R"(, "axes": {"parallel.schedule": ["interleaved"], "parallel.vpp": [1, 3]}})");
}
