#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/driver/validation_data.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"

namespace {

std::string read_source_file(const std::string& relative) {
  std::ifstream in(std::string(STEPSIM_SOURCE_DIR) + "/" + relative);
  REQUIRE_MESSAGE(in.good(), "cannot open " << relative);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("validation sets are embedded, equal the files on disk, and every scenario loads") {
  const auto names = stepsim::driver::validation_set_names();
  REQUIRE(names == std::vector<std::string>{"fujii-2024-slice", "korthikanti-2022-table5", "narayanan-sc21-table1"});
  const std::map<std::string, std::size_t> expected_counts{
      {"fujii-2024-slice", 18}, {"korthikanti-2022-table5", 8}, {"narayanan-sc21-table1", 10}};
  for (const auto& name : names) {
    CAPTURE(name);
    const std::string text = stepsim::driver::validation_set_text(name);
    CHECK(text == read_source_file("driver/data/validation/" + name + ".json"));
    const auto records = stepsim::driver::validation_records(name);
    CHECK(records.size() == expected_counts.at(name));
    for (const auto& r : records) {
      CAPTURE(r.name);
      CHECK(r.set == name);
      const auto s = stepsim::scenarios::load_scenario_text(r.scenario_json, {}, name + ":" + r.name);
      CHECK(s.world_size() == s.parallel.tp * s.parallel.cp * s.parallel.pp * s.parallel.dp);
      CHECK(stepsim::costmodel::model_flops(s, r.flops_formula) > 0);
    }
  }
}

TEST_CASE("Korthikanti Table 5: the measured times reproduce the paper's model FLOPs utilization") {
  // MFU with SP + selective: 41.5 / 51.4 / 56.0 / 56.3 %, from 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
  const std::map<std::string, double> mfu{{"gpt-22b-sp-selective", 41.5},
                                          {"gpt-175b-sp-selective", 51.4},
                                          {"gpt-530b-sp-selective", 56.0},
                                          {"gpt-1t-sp-selective", 56.3}};
  std::size_t seen = 0;
  for (const auto& r : stepsim::driver::validation_records("korthikanti-2022-table5")) {
    const auto it = mfu.find(r.name);
    if (it == mfu.end()) continue;
    ++seen;
    CAPTURE(r.name);
    const auto s = stepsim::scenarios::load_scenario_text(r.scenario_json);
    REQUIRE(r.step_time_s);
    const double achieved = stepsim::costmodel::model_flops(s, r.flops_formula) /
                            (*r.step_time_s * static_cast<double>(s.world_size()) * s.cluster.gpu.peak_bf16_flops);
    CHECK(100 * achieved == doctest::Approx(it->second).epsilon(0.005));
  }
  CHECK(seen == 4);
}

TEST_CASE("Narayanan Table 1: per-GPU throughput and share of the 312 TFLOP/s peak agree") {
  for (const auto& r : stepsim::driver::validation_records("narayanan-sc21-table1")) {
    CAPTURE(r.name);
    REQUIRE(r.tflops_per_gpu);
    CHECK(r.flops_formula == stepsim::costmodel::FlopsFormula::NarayananEq3);
    const auto s = stepsim::scenarios::load_scenario_text(r.scenario_json);
    CHECK(s.cluster.gpu.peak_bf16_flops == 312e12);
    CHECK(s.training.recompute == stepsim::scenarios::Recompute::Full);
  }
}

TEST_CASE("validation set parse errors name the record and key") {
  using stepsim::driver::parse_validation_set;
  CHECK_THROWS_WITH_AS(stepsim::driver::validation_set_text("x"), "validate: unknown validation set 'x'",
                       stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(parse_validation_set(R"({"source": "s", "records": [{"name": "a", "scenario": {}, "measured": {},
                                                "flops_formula": "megatron-causal"}]})",
                                            "set"),
                       "set.records[0].measured: needs step_time_s or tflops_per_gpu", stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(parse_validation_set(R"({"source": "s", "records": [{"name": "a", "scenario": {},
                                                "measured": {"step_time_s": 1}, "flops_formula": "x"}]})",
                                            "set"),
                       "set.records[0].flops_formula: unknown formula 'x' (expected megatron-causal, megatron-pre-0.11 or narayanan-eq3)",
                       stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(parse_validation_set(R"({"source": "s", "records": []})", "set"),
                       "set.records: must be a non-empty array", stepsim::ScenarioError);
}
