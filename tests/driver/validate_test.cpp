#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "stepsim/driver/calibrate.hpp"
#include "stepsim/driver/efficiency_file.hpp"
#include "stepsim/driver/simulate.hpp"
#include "stepsim/driver/validate.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"

namespace {

using stepsim::driver::ValidateOptions;
using stepsim::report::ValidationReport;

// The 2021-22 Megatron runs (Narayanan SC'21, Korthikanti 2022) used the unfused attention path;
// their records say so in training.attention.
ValidateOptions gpt_sets_options() {
  ValidateOptions o;
  o.set_names = {"korthikanti-2022-table5", "narayanan-sc21-table1"};
  return o;
}

double mape_of(const ValidationReport& r, const std::string& name) {
  for (const auto& s : r.sets)
    if (s.name == name) return s.mape;
  FAIL("no set " << name);
  return 0;
}

}  // namespace

TEST_CASE("validation MAPE bounds with the committed efficiency files (analytic engine)") {
  const auto gpt = stepsim::driver::validate(gpt_sets_options());
  CHECK(mape_of(gpt, "korthikanti-2022-table5") <= 0.08);
  CHECK(mape_of(gpt, "narayanan-sc21-table1") <= 0.10);
  ValidateOptions seed;
  seed.set_names = {"fujii-2024-slice"};
  const auto fujii = stepsim::driver::validate(seed);
  CHECK(mape_of(fujii, "fujii-2024-slice") <= 0.10);
  CHECK(fujii.engine == "analytic");
}

TEST_CASE("validate: every record, signed error on the measured quantity, MAPE is the mean |error|") {
  ValidateOptions o;
  o.set_names = {"korthikanti-2022-table5"};
  const auto r = stepsim::driver::validate(o);
  REQUIRE(r.sets.size() == 1);
  const auto& set = r.sets[0];
  CHECK(set.records.size() == stepsim::driver::validation_records("korthikanti-2022-table5").size());
  double sum = 0;
  for (const auto& c : set.records) {
    REQUIRE(c.measured_step_time_s);
    CHECK(c.error == doctest::Approx(c.predicted_step_time_s / *c.measured_step_time_s - 1.0));
    CHECK(c.predicted_tflops_per_gpu > 0);
    sum += std::abs(c.error);
  }
  CHECK(set.mape == doctest::Approx(sum / static_cast<double>(set.records.size())));
}

TEST_CASE("validate: TFLOP/s records compare the record's FLOP formula over step time and GPUs") {
  ValidateOptions o;
  o.set_names = {"fujii-2024-slice"};
  const auto r = stepsim::driver::validate(o);
  const auto& c = r.sets.at(0).records.at(0);
  REQUIRE(c.measured_tflops_per_gpu);
  CHECK_FALSE(c.measured_step_time_s);
  CHECK(c.flops_formula == "megatron-pre-0.11");
  CHECK(c.error == doctest::Approx(c.predicted_tflops_per_gpu / *c.measured_tflops_per_gpu - 1.0));
}

TEST_CASE("validate: deterministic JSON with the documented keys") {
  ValidateOptions o;
  o.set_names = {"korthikanti-2022-table5"};
  const auto a = stepsim::report::validation_json(stepsim::driver::validate(o));
  const auto b = stepsim::report::validation_json(stepsim::driver::validate(o));
  CHECK(a == b);
  const auto j = nlohmann::json::parse(a);
  REQUIRE(j["sets"].size() == 1);
  const auto& set = j["sets"][0];
  CHECK(set["name"] == "korthikanti-2022-table5");
  CHECK(set["mape"].is_number());
  for (const char* key : {"name", "measured_step_time_s", "predicted_step_time_s", "measured_tflops_per_gpu",
                          "predicted_tflops_per_gpu", "error"})
    CHECK_MESSAGE(set["records"][0].contains(key), key);
  CHECK(set["records"][0]["measured_tflops_per_gpu"].is_null());
  CHECK(stepsim::report::validation_markdown(stepsim::driver::validate(o)).find("| korthikanti-2022-table5 | 8 |") !=
        std::string::npos);
}

TEST_CASE("validate: an unknown set names the command") {
  ValidateOptions o;
  o.set_names = {"no-such-set"};
  CHECK_THROWS_WITH_AS(stepsim::driver::validate(o), doctest::Contains("validate"), stepsim::ScenarioError);
}

TEST_CASE("calibrate on one synthetic record moves gemm_max to the value that produced it") {
  // One record whose "measurement" is the simulator's own step time with gemm_max = 0.6.
  auto rec = stepsim::driver::validation_records("korthikanti-2022-table5").at(1);  // gpt-22b-sp-selective
  const auto s = stepsim::scenarios::load_scenario_text(rec.scenario_json);
  auto truth = stepsim::scenarios::default_efficiency(s.cluster.gpu);
  truth.gemm_max = 0.6;
  stepsim::driver::SimulateOptions so;
  so.engine = stepsim::sim::EngineKind::Analytic;
  so.efficiency = truth;
  rec.step_time_s = stepsim::driver::simulate(s, so).report.step_time_s;
  rec.tflops_per_gpu.reset();

  stepsim::driver::CalibrateOptions co;
  co.gpu = s.cluster.gpu.name;
  co.params = {"gemm_max"};
  const auto r = stepsim::driver::calibrate_records({rec}, co);
  CHECK(r.start.gemm_max == 1.0);  // the default efficiency: the published ceilings
  CHECK(r.efficiency.gemm_max == doctest::Approx(0.6).epsilon(1e-4));
  CHECK(r.mape_before > 0.05);
  CHECK(r.mape_after < 1e-4);
  CHECK(r.efficiency.hbm_eff == r.start.hbm_eff);  // parameters not fitted are kept
  CHECK(r.records == std::vector<std::string>{"korthikanti-2022-table5/gpt-22b-sp-selective"});

  // The written file parses back to the same parameters, and the same fit writes the same file.
  const auto text = stepsim::driver::efficiency_to_json(r.efficiency, r.source);
  const auto file = (std::filesystem::temp_directory_path() / ("stepsim_fit_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(file) << text;
  const auto back = stepsim::scenarios::load_scenario_text(rec.scenario_json, {{"cluster.gpu.efficiency", file}}).cluster.gpu.efficiency;
  std::filesystem::remove(file);
  CHECK(back.gemm_max == doctest::Approx(r.efficiency.gemm_max).epsilon(1e-8));
  CHECK(back.attn_max == doctest::Approx(r.efficiency.attn_max));
  CHECK(back.source == file);
  const auto again = stepsim::driver::calibrate_records({rec}, co);
  CHECK(stepsim::driver::efficiency_to_json(again.efficiency, again.source) == text);
  CHECK(r.source.find("stepsim calibrate --gpu a100-sxm-80gb") == 0);
}

TEST_CASE("calibrate: bounds are physical and bad names are named") {
  CHECK(stepsim::driver::efficiency_parameter_bounds("gemm_max") == std::pair<double, double>{0.2, 1.0});
  CHECK(stepsim::driver::efficiency_parameter_bounds("hbm_eff").first > 0);
  CHECK_THROWS_WITH_AS((void)stepsim::driver::efficiency_parameter_bounds("gemm_min"), doctest::Contains("--params"),
                       stepsim::ScenarioError);
  stepsim::driver::CalibrateOptions co;
  co.gpu = "b200-180gb";
  co.set_names = {"korthikanti-2022-table5"};
  co.params = {"gemm_max"};
  CHECK_THROWS_WITH_AS(stepsim::driver::calibrate(co), doctest::Contains("--gpu"), stepsim::ScenarioError);
}

TEST_CASE("calibrate: a --records filter that matches no record is an error naming it") {
  stepsim::driver::CalibrateOptions co;
  co.gpu = "a100-sxm-80gb";
  co.set_names = {"korthikanti-2022-table5"};
  co.record_filters = {"gpt-22b", "zzzz"};
  CHECK_THROWS_WITH_AS(stepsim::driver::calibrate(co),
                       "--records: \"zzzz\" matches no record of the validation sets korthikanti-2022-table5",
                       stepsim::ScenarioError);
  co.record_filters = {"gpt-22b"};
  CHECK(stepsim::driver::calibrate(co).records.size() >= 1);
}
