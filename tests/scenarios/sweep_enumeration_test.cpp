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
