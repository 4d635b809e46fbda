// `stepsim run` end to end: the JSON contract, determinism, the OOM point, the Chrome trace.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"

using namespace cli;

namespace {

const std::string kSmall = R"({"name": "small", "model": "llama-3.1-8b",
  "cluster": {"preset": "tsubame4", "nodes": 2},
  "training": {"seq_len": 4096, "global_batch": 32},
  "parallel": {"tp": 2, "pp": 2}})";

}  // namespace

TEST_CASE("stepsim run --format json has the contract keys, on both engines, byte-identical on repeat") {
  const auto f = write_file("small.json", kSmall);
  for (const std::string engine : {"simgrid", "analytic"}) {
    CAPTURE(engine);
    const auto a = run("run " + f + " --engine " + engine + " --format json");
    const auto b = run("run " + f + " --engine " + engine + " --format json");
    REQUIRE(a.status == 0);
    CHECK(a.out == b.out);
    const auto j = nlohmann::json::parse(a.out);
    for (const char* k : {"step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "bubble_fraction", "peak_memory_bytes", "oom",
                          "oom_point", "engine", "stages"})
      CHECK_MESSAGE(j.contains(k), k);
    CHECK(j["engine"] == engine);
    CHECK(j["oom"] == false);
    CHECK(j["oom_point"].is_null());
    CHECK(j["step_time_s"].get<double>() > 0);
    CHECK(j["mfu"].get<double>() > 0.05);
    CHECK(j["mfu"].get<double>() < 1.0);
    REQUIRE(j["stages"].size() == 2);
    for (const auto& st : j["stages"])
      for (const char* k : {"stage", "peak_memory_bytes", "compute_s", "exposed_comm_s", "idle_s"}) CHECK_MESSAGE(st.contains(k), k);
  }
}

TEST_CASE("an out-of-memory layout reports where and when, and still finishes the step") {
  // Llama-3.1-8B, TP8 on one DGX H100 node, 32k tokens, micro-batch 4: activations overflow 80 GiB.
  const auto f = write_file("oom.json", R"({"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 1},
    "training": {"seq_len": 32768, "global_batch": 8, "micro_batch": 4}, "parallel": {"tp": 8}})");
  const auto r = run("run " + f + " --engine analytic --format json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["oom"] == true);
  REQUIRE(j["oom_point"].is_object());
  CHECK(j["oom_point"]["stage"] == 0);
  CHECK(j["oom_point"]["op"].get<std::string>().find("micro-batch 0") != std::string::npos);
  CHECK(j["oom_point"]["bytes_over"].get<std::int64_t>() > 0);
  CHECK(j["step_time_s"].get<double>() > 0);
  const auto t = run("run " + f + " --engine analytic");
  CHECK(t.out.find("OUT OF MEMORY") != std::string::npos);
  CHECK(t.out.find("not runnable") != std::string::npos);
}

TEST_CASE("--trace writes Chrome trace-event JSON with spans per stream and memory counters") {
  const auto f = write_file("small2.json", kSmall);
  const std::string trace = tmpdir() + "/trace.json";
  const auto r = run("run " + f + " --engine analytic --trace " + trace);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(slurp(trace));
  REQUIRE(j.contains("traceEvents"));
  int spans = 0, counters = 0, names = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++spans;
      CHECK(e["dur"].get<double>() >= 0);
    }
    if (e["ph"] == "C") ++counters;
    if (e["ph"] == "M") ++names;
  }
  CHECK(spans > 100);
  CHECK(counters > 10);
  CHECK(names == 2 * (1 + 5));
}

TEST_CASE("simgrid beyond its size limit is a clear user error") {
  const auto f = write_file("huge.json", R"({"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 1024},
    "training": {"seq_len": 4096, "global_batch": 1024}, "parallel": {"tp": 8}})");
  const std::string out = tmpdir() + "/huge-out.json";
  const auto r = run("run " + f + " --engine simgrid --out " + out);
  CHECK(r.status == 2);
  CHECK(r.err.find("--engine") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
}
