#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stepsim/report/validation_report.hpp"

namespace {

using stepsim::report::ValidationCase;

ValidationCase tflops_case(const std::string& name, const std::string& table, double measured, double predicted) {
  ValidationCase c;
  c.name = name;
  c.table = table;
  c.gpu = "a100-sxm-40gb";
  c.measured_tflops_per_gpu = measured;
  c.predicted_tflops_per_gpu = predicted;
  c.predicted_step_time_s = 1;
  c.error = predicted / measured - 1.0;
  return c;
}

}  // namespace

TEST_CASE("Spearman: ranks with ties averaged, against a hand-computed case") {
  using stepsim::report::spearman_rank_correlation;
  // x ranks 1, 2.5, 2.5, 4; y ranks 1, 3, 2, 4; deviations from 2.5: (-1.5, 0, 0, 1.5) and
  // (-1.5, 0.5, -0.5, 1.5): sum xy = 4.5, sum xx = 4.5, sum yy = 5 -> 4.5 / sqrt(22.5) = 3 / sqrt(10).
  const auto rho = spearman_rank_correlation({1, 2, 2, 3}, {10, 30, 20, 40});
  REQUIRE(rho);
  CHECK(*rho == doctest::Approx(3.0 / std::sqrt(10.0)).epsilon(1e-12));
  // Ranks only: any monotone map of a side leaves it unchanged; a reversed order gives -1.
  CHECK(*spearman_rank_correlation({1, 4, 4, 9}, {0.1, 0.9, 0.5, 7}) == doctest::Approx(*rho).epsilon(1e-12));
  CHECK(*spearman_rank_correlation({1, 2, 3}, {30, 20, 10}) == doctest::Approx(-1.0));
  // Both sides with ties: x ranks 1.5, 1.5, 3; y ranks 1, 2.5, 2.5: deviations (-0.5, -0.5, 1) and
  // (-1, 0.5, 0.5): sum xy = 0.75, sum xx = 1.5, sum yy = 1.5 -> 0.5.
  CHECK(*spearman_rank_correlation({5, 5, 7}, {1, 2, 2}) == doctest::Approx(0.5));
  // Undefined: fewer than two values, a constant side, different sizes.
  CHECK_FALSE(spearman_rank_correlation({1}, {2}));
  CHECK_FALSE(spearman_rank_correlation({1, 2, 3}, {4, 4, 4}));
  CHECK_FALSE(spearman_rank_correlation({1, 2}, {1, 2, 3}));
}

TEST_CASE("the measured top 5 among the predicted top 8: a hand-computed case, step times ranked shortest first") {
  using stepsim::report::top_overlap;
  // Measured top 3 of 6: positions 5, 4, 3. Predicted top 4: 0, 1, 2, 5 -> only 5 of them: 1.
  CHECK(top_overlap({1, 2, 3, 4, 5, 6}, {9, 8, 7, 1, 2, 6.5}, 3, 4) == 1);
  CHECK(top_overlap({1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}, 3, 4) == 3);
  // Ties go to the earlier position: measured top 1 of {7, 7} is position 0; predicted top 1 of {5, 5} too.
  CHECK(top_overlap({7, 7}, {5, 5}, 1, 1) == 1);
  CHECK(top_overlap({7, 7}, {4, 5}, 1, 1) == 0);
  CHECK_THROWS(static_cast<void>(top_overlap({1, 2}, {1}, 1, 1)));

  // Nine TFLOP/s records, measured 1..9 (top 5: m5..m9); predicted puts m1, m2, m3 on top, then m9
  // ... m4: the predicted top 8 holds m9 ... m5 all but m4, so 5 of 5.
  std::vector<ValidationCase> cases;
  const double predicted[] = {100, 99, 98, 1, 5, 6, 7, 8, 9};
  for (int i = 0; i < 9; ++i) cases.push_back(tflops_case("m" + std::to_string(i + 1), "t", i + 1, predicted[i]));
  auto s = stepsim::report::validation_stats(cases);
  REQUIRE(s.top_measured_in_top_predicted);
  CHECK(*s.top_measured_in_top_predicted == 5);
  // Predicted m5 last of all: it falls out of the top 8.
  cases[4].predicted_tflops_per_gpu = 0.5;
  CHECK(*stepsim::report::validation_stats(cases).top_measured_in_top_predicted == 4);
  // As step times the shortest are the fastest. Measured 1 ... 9 s (m1 ... m9), predicted the same
  // but m1 at 100 s: the measured top 5 is m1 ... m5, the predicted top 8 m2 ... m9, so 4 of 5 (read
  // the other way round, the largest first, it would be 5 of 5).
  for (std::size_t i = 0; i < cases.size(); ++i) {
    cases[i].measured_step_time_s = static_cast<double>(i + 1);
    cases[i].predicted_step_time_s = i == 0 ? 100.0 : static_cast<double>(i + 1);
  }
  CHECK(*stepsim::report::validation_stats(cases).top_measured_in_top_predicted == 4);
  // A group that mixes step times and TFLOP/s has no ranking check.
  cases[8].measured_step_time_s.reset();
  CHECK_FALSE(stepsim::report::validation_stats(cases).top_measured_in_top_predicted);
  cases[8].measured_step_time_s = 9.0;
  // Eight records or fewer: every record is in the predicted top 8, so there is nothing to check.
  cases.pop_back();
  CHECK_FALSE(stepsim::report::validation_stats(cases).top_measured_in_top_predicted);
}

TEST_CASE("validation figures per set and per table: MAPE, max |error|, Spearman") {
  stepsim::report::ValidationSetResult set;
  set.name = "s";
  // Table g8: errors +10 %, -20 %, +5 %; measured order 100 < 150 < 200, predicted 110 > 120 < 210.
  set.records = {tflops_case("a", "g8", 100, 110), tflops_case("b", "g8", 150, 120), tflops_case("c", "g8", 200, 210),
                 tflops_case("d", "g16", 100, 100)};
  stepsim::report::summarize(set);
  CHECK(set.stats.records == 4);
  CHECK(set.stats.mape == doctest::Approx((0.1 + 0.2 + 0.05 + 0) / 4));
  CHECK(set.stats.max_abs_error == doctest::Approx(0.2));
  REQUIRE(set.tables.size() == 2);
  CHECK(set.tables[0].name == "g8");  // order of first appearance
  CHECK(set.tables[0].stats.records == 3);
  CHECK(set.tables[0].stats.mape == doctest::Approx(0.35 / 3));
  // Ranks measured 1, 2, 3; predicted 1, 2, 3 (110 < 120 < 210): 1.
  REQUIRE(set.tables[0].stats.spearman);
  CHECK(*set.tables[0].stats.spearman == doctest::Approx(1.0));
  CHECK(set.tables[1].name == "g16");
  CHECK_FALSE(set.tables[1].stats.spearman);  // one record

  // A group that mixes step-time and TFLOP/s comparisons has no rank correlation.
  auto step = tflops_case("e", "g8", 100, 90);
  step.measured_step_time_s = 2.0;
  step.predicted_step_time_s = 2.2;
  CHECK(stepsim::report::compared_values(step) == std::pair<double, double>{2.0, 2.2});
  CHECK_FALSE(stepsim::report::validation_stats({tflops_case("a", "t", 1, 2), tflops_case("b", "t", 2, 3), step}).spearman);

  stepsim::report::ValidationReport r;
  r.engine = "analytic";
  set.skipped.push_back({"fp8-row", "g8", "FP8 is not modelled yet"});
  r.sets.push_back(set);
  const auto j = nlohmann::json::parse(stepsim::report::validation_json(r));
  CHECK(j["sets"][0]["max_abs_error"].get<double>() == doctest::Approx(0.2));
  CHECK(j["sets"][0]["tables"][1]["spearman"].is_null());
  CHECK(j["sets"][0]["top5_measured_in_top8_predicted"].is_null());  // four records
  CHECK(j["sets"][0]["skipped"][0]["reason"] == "FP8 is not modelled yet");
  const auto md = stepsim::report::validation_markdown(r);
  CHECK(md.find("| s | fp8-row | FP8 is not modelled yet |") != std::string::npos);
  CHECK(md.find("| s | g8 | 3 | 11.7 % | 20.0 % | 1.000 |") != std::string::npos);
  CHECK(stepsim::report::validation_table(r).find("skipped fp8-row: FP8 is not modelled yet") != std::string::npos);
}
