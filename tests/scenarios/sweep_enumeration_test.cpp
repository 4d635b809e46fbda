// Sweep enumeration on hostile axes: layout products that overflow are rejected, never divided by.
#include <doctest/doctest.h>

#include <string>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/sweep.hpp"

using namespace stepsim;

namespace {

// The error a sweep with these axes raises (every combination of them is invalid).
std::string enumeration_error(const std::string& axes) {
  const std::string text = R"({"base": {"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 1},
    "training": {"seq_len": 40, "global_batch": 8}}, "axes": )" + axes + "}";
  try {
    (void)scenarios::enumerate(scenarios::parse_sweep_text(text, "sweep.json"));
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("layout axes whose product wraps to zero or overflows give no candidate and no crash") {
  const std::string none = "sweep.json: the sweep has no valid candidate (1 generated;";
  // 2^32 x 2^32 wrapped to 0 and `world % 0` raised SIGFPE.
  CHECK(enumeration_error(R"({"parallel.tp": [4294967296], "parallel.cp": [4294967296]})").rfind(none, 0) == 0);
  // 3 x 2^61 times 3 overflows int64 (undefined behaviour before).
  CHECK(enumeration_error(R"({"parallel.tp": [6917529027641081856], "parallel.cp": [3]})").rfind(none, 0) == 0);
  // "auto" after a huge fixed size divides nothing.
  CHECK(enumeration_error(R"({"parallel.cp": [2305843009213693952], "parallel.tp": "auto"})").find("no valid candidate") != std::string::npos);
}

TEST_CASE("a zip axis sets several fields together, one point per object, crossed with the other axes") {
  const std::string text = R"({"base": {"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 1},
    "training": {"seq_len": 4096, "global_batch": 16, "train_tokens": "1T"}, "parallel": {"tp": 8}},
    "axes": {"zip": [{"cluster.preset": "dgx-h100", "cost.usd_per_gpu_hour": 2.5},
                     {"cluster.preset": "dgx-b200", "cost.usd_per_gpu_hour": 5.0}],
             "training.micro_batch": [1, 2]}})";
  const auto e = scenarios::enumerate(scenarios::parse_sweep_text(text, "sweep.json"));
  REQUIRE(e.candidates.size() == 4);  // 2 points x 2 micro-batch sizes, not 2 x 2 x 2
  const auto& first = e.candidates[0].scenario;
  CHECK(first.cluster.preset == "dgx-h100");
  CHECK(*first.cost.usd_per_gpu_hour == 2.5);
  CHECK(first.training.micro_batch == 1);
  CHECK(e.candidates[1].scenario.training.micro_batch == 2);
  const auto& third = e.candidates[2].scenario;
  CHECK(third.cluster.preset == "dgx-b200");
  CHECK(*third.cost.usd_per_gpu_hour == 5.0);
  CHECK(e.candidates[2].key ==
        R"(zip={"cluster.preset":"dgx-b200","cost.usd_per_gpu_hour":5.0} training.micro_batch=1)");
}

TEST_CASE("a malformed zip is named in the sweep file") {
  const auto err = [](const std::string& axes) { return enumeration_error(axes); };
  CHECK(err(R"({"zip": []})") == "axes.zip: must be a list of objects, each setting several fields together");
  CHECK(err(R"({"zip": [3]})") == "axes.zip[0]: must be an object of field -> value, got a number");
  CHECK(err(R"({"zip": [{"cost.usd_per_gpu_hour": 2}, {"cluster.preset": "dgx-b200"}]})") ==
        "axes.zip[1]: must name the same fields as axes.zip[0]");
  CHECK(err(R"({"zip": [{"parallel.tp": 2}]})") == "axes.zip[0].parallel.tp: cannot be zipped (make it an axis of its own)");
  CHECK(err(R"({"zip": [{"cost.usd_per_gpu_hour": 2}], "cost.usd_per_gpu_hour": [3]})") ==
        "axes.zip[0].cost.usd_per_gpu_hour: is also an axis of its own");
  CHECK(err(R"({"zip": [{"cost.usd_per_gpu_hour": 2}, {"cost.usd_per_gpu_hour": -1}]})").find("axes.zip[1].cost.usd_per_gpu_hour: ") == 0);
}
