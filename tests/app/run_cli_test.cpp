// `stepsim run` end to end: the JSON contract, determinism, the OOM point, the Chrome trace.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

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
  const auto f = write_file("huge.json", R"({"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 4096},
    "training": {"seq_len": 4096, "global_batch": 4096}, "parallel": {"tp": 8}})");
  const std::string out = tmpdir() + "/huge-out.json";
  const auto r = run("run " + f + " --engine simgrid --out " + out);
  CHECK(r.status == 2);
  CHECK(r.err.find("--engine") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("stepsim run and memory: bad input exits 2 with one line naming the field or file, and writes nothing") {
  const auto dir = empty_dir("run-bad");
  std::string overflow = kSmall;
  overflow.replace(overflow.find("4096"), 4, "1e400");
  const auto overflow_file = write_file("overflow.json", overflow);
  const std::string one_gpu = " --set parallel.tp=1 --set parallel.pp=1 --set cluster.nodes=1 --set cluster.gpus_per_node=1"
                              " --set model.heads=1 --set model.kv_heads=1";
  struct Case { std::string args; std::string expect; };
  const Case cases[] = {
      {"run --set training.seq_len=1e400", "stepsim: error: training.seq_len: the value 1e400 is out of range (--set)"},
      {"run " + overflow_file, "stepsim: error: training.seq_len: unreadable JSON: number overflow parsing '1e400' (" + overflow_file + ")"},
      {"run /dev/zero", "stepsim: error: /dev/zero: is not a regular file (expected a scenario file)"},
      {"run " + dir, "stepsim: error: " + dir + ": is a directory, not a scenario file"},
      {"run --engine analytic" + one_gpu + " --set model.hidden=1048576 --set model.ffn_hidden=4194304"
       " --set training.seq_len=67108864 --set training.micro_batch=1048576 --set training.global_batch=67108864",
       "stepsim: error: training.micro_batch: absurdly large: the activations of one layer and one micro-batch would take "},
      {"run --engine analytic --granularity layer --set model.layers=2000 --set training.global_batch=4096 --set parallel.pp=1"
       " --set cluster.nodes=1",
       "stepsim: error: training.global_batch: the step graph of 4,096 micro-batches would need 40,968,192 ops (limit 20,000,000); "
       "use fewer micro-batches or --granularity chunk"},
      {"run --engine analytic --set training.global_batch=16777216",
       "stepsim: error: training.global_batch: the step graph of 4,194,304 micro-batches would need 117,440,512 ops"},
      // DP 8,192 rings on 2 stages of 512 chunks: over 20 M SimGrid flows even one per class of flows that move alike.
      {"run --engine simgrid --set model=llama-3.1-8b --set model.layers=1024 --set cluster.nodes=2048 --set parallel.tp=1"
       " --set parallel.pp=2 --set parallel.schedule=interleaved --set parallel.vpp=512 --set training.global_batch=16384"
       " --set training.seq_len=4096",
       "stepsim: error: --engine: the simgrid engine would replay "},
      // 500,000 micro-batches: 14,000,000 ops, within the graph limit; its trace would not be.
      {"run --engine analytic --set training.global_batch=2000000",
       "stepsim: error: --trace: the Chrome trace of this step would hold about 36,000,028 events (limit 5,000,000); use fewer "
       "micro-batches (a larger training.micro_batch) or run without --trace"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto r = run(c.args + " --out " + dir + "/out.txt --trace " + dir + "/trace.json");
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind(c.expect, 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(files_starting(dir, "").empty());
  }
  const auto m = run("memory" + one_gpu + " --set model.hidden=1048576 --set model.ffn_hidden=4194304"
                     " --set training.seq_len=67108864 --set training.micro_batch=1048576 --set training.global_batch=67108864"
                     " --out " + dir + "/mem.txt");
  CHECK(m.status == 2);
  CHECK(m.err.rfind("stepsim: error: training.micro_batch: absurdly large", 0) == 0);
  CHECK(files_starting(dir, "").empty());
}

TEST_CASE("stepsim run writes the trace and the report together or not at all") {
  const auto dir = empty_dir("run-pair");
  const auto f = write_file("pair.json", kSmall);
  const auto bad = run("run " + f + " --engine analytic --trace " + dir + "/t.json --out " + dir + "/no-such-dir/x");
  CHECK(bad.status == 2);
  CHECK(bad.err == "stepsim: error: " + dir + "/no-such-dir/x: cannot write the output file\n");
  CHECK(files_starting(dir, "").empty());
  std::filesystem::create_directories(dir + "/a-dir");
  const auto onto_dir = run("run " + f + " --engine analytic --trace " + dir + "/t.json --out " + dir + "/a-dir");
  CHECK(onto_dir.status == 2);
  CHECK(onto_dir.err.find("a-dir: is a directory") != std::string::npos);
  CHECK(files_starting(dir, "") == std::vector<std::string>{"a-dir"});
  CHECK(files_starting(dir + "/a-dir", "").empty());
  const auto good = run("run " + f + " --engine analytic --trace " + dir + "/t.json --out " + dir + "/r.txt");
  CHECK(good.status == 0);
  CHECK(files_starting(dir, "") == std::vector<std::string>{"a-dir", "r.txt", "t.json"});
}

TEST_CASE("stepsim run --set cluster.gpu.hbm_TBps keeps the cluster preset's other GPU fields") {
  const auto r = run("memory --set cluster.gpu.hbm_TBps=3");
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("GPU memory 80.00 GiB") != std::string::npos);
  const auto j = run("run --engine analytic --format json --set cluster.gpu.hbm_TBps=3");
  CHECK(j.status == 0);
}

TEST_CASE("stepsim run --out: devices and symlinks are written through, never replaced") {
  const auto r = run("run --engine analytic --format json --out /dev/null");
  CHECK(r.status == 0);
  CHECK(std::filesystem::is_character_file("/dev/null"));
  const auto dir = empty_dir("out-link");
  const std::string real = dir + "/real.json", link = dir + "/link.json";
  write_file("out-link/real.json", "old");
  std::filesystem::create_symlink(real, link);
  REQUIRE(run("run --engine analytic --format json --out " + link).status == 0);
  CHECK(std::filesystem::is_symlink(link));
  CHECK(slurp(real).find("\"step_time_s\"") != std::string::npos);
  const auto to_stdout = run("run --engine analytic --format json --out -");
  CHECK(to_stdout.status == 0);
  CHECK(to_stdout.out.find("\"step_time_s\"") != std::string::npos);
}

TEST_CASE("over the memory budget: refused before the run, exit 2, one line with the estimate and the budget") {
  const auto dir = empty_dir("budget");
  const std::string wide = " --engine analytic --set model=llama-3.1-8b --set cluster.nodes=524288 --set parallel.tp=8"
                           " --set parallel.pp=1 --set training.seq_len=4096 --set training.global_batch=524288";
  struct Case { std::string args; std::string expect; };
  const Case cases[] = {
      // 714,285 micro-batches of the default scenario: 19,999,980 ops, within the graph limit.
      {"run --engine analytic --set training.global_batch=2857140",
       "stepsim: error: --memory-budget-gib: this run would take about 6.6 GiB of memory (128 GPUs, 19,999,980 ops), over the "
       "budget of 4.0 GiB; use fewer micro-batches (a larger training.micro_batch) or fewer GPUs, or raise --memory-budget-gib\n"},
      // 4,194,304 GPUs and 19,702,016 ops at once (30,784 layers; per micro-batch and layer a forward and
      // its TP op, a backward and its two TP ops).
      {"run" + wide.substr(0, wide.find(" --set training.global_batch")) + " --granularity layer --set model.layers=30784"
       " --set training.global_batch=67108864",
       "stepsim: error: --memory-budget-gib: this run would take about 8.7 GiB of memory (4,194,304 GPUs, 19,702,016 ops), over "
       "the budget of 4.0 GiB; use fewer micro-batches (a larger training.micro_batch), --granularity chunk or fewer GPUs, or "
       "raise --memory-budget-gib\n"},
      {"run" + wide + " --memory-budget-gib 1",
       "stepsim: error: --memory-budget-gib: this run would take about 2.3 GiB of memory (4,194,304 GPUs, 7 ops), over the "
       "budget of 1.0 GiB; "},
      {"run --granularity layer --engine analytic --memory-budget-gib 0.01",
       "stepsim: error: --memory-budget-gib: this run would take about 73.3 MiB of memory (128 GPUs, 104,448 ops), over the budget "
       "of 10.2 MiB; use fewer micro-batches (a larger training.micro_batch), --granularity chunk or fewer GPUs, or raise "
       "--memory-budget-gib\n"},
      {"report --memory-budget-gib 0.01", "stepsim: error: --memory-budget-gib: this run would take about "},
      {"compare --set parallel.vpp=2 --set parallel.schedule=interleaved --memory-budget-gib 0.01",
       "stepsim: error: --memory-budget-gib: this run would take about "},
      {"run --memory-budget-gib 0", "stepsim: error: --memory-budget-gib: must be a number of GiB above 0 and at most 1,000,000\n"},
      {"run --memory-budget-gib -1", "stepsim: error: --memory-budget-gib: must be a number of GiB above 0 and at most 1,000,000\n"},
      {"run --memory-budget-gib 1e7", "stepsim: error: --memory-budget-gib: must be a number of GiB above 0 and at most 1,000,000\n"},
      {"run --memory-budget-gib lots", "stepsim: error: --memory-budget-gib: 'lots' is not a valid value (see stepsim run --help)\n"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto r = run(c.args + " --out " + dir + "/out.txt");
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind(c.expect, 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(files_starting(dir, "").empty());
  }
  // Raised, the same layer-granularity run goes through.
  CHECK(run("run --granularity layer --engine analytic --memory-budget-gib 1 --format json").status == 0);
}

TEST_CASE("stepsim sweep: a candidate over the memory budget is an error row with the reason, not a crash") {
  const auto dir = empty_dir("budget-sweep");
  const auto r = run("sweep " + std::string(STEPSIM_SOURCE_DIR) + "/tests/golden/sweep-small.json -j 2 -q --memory-budget-gib 0.01 --out " + dir);
  CHECK(r.status == 0);
  const std::string rows = slurp(dir + "/results.jsonl");
  std::size_t simulated = 0, refused = 0;
  std::istringstream in(rows);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["status"] == "pruned") continue;
    ++simulated;
    if (j["status"] == "error" && j["reason"].get<std::string>().rfind("--memory-budget-gib: this run would take about ", 0) == 0) ++refused;
  }
  CHECK(simulated > 0);
  CHECK(refused == simulated);
}

#if defined(STEPSIM_SANITIZED)
constexpr bool kSanitized = true;  // the sanitizers' shadow memory does not fit under an address-space limit
#else
constexpr bool kSanitized = false;
#endif

TEST_CASE("running out of memory: exit status 3 and one line saying what was being done" * doctest::skip(kSanitized)) {
  // 1.1 M ops need about 250 MB; under a 200 MB address-space limit the allocation fails.
  const auto dir = empty_dir("oom");
  const auto r = run("run --engine analytic --set training.global_batch=163840 --out " + dir + "/out.txt --trace " + dir + "/t.json",
                     "ulimit -v 200000; ");
  CHECK(r.status == 3);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("stepsim: error: out of memory while simulating the step of llama31-70b-dgx-h100-128 (128 GPUs, about 1,146,880 "
                    "ops); make the run smaller (",
                    0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(files_starting(dir, "").empty());
}

TEST_CASE("stepsim run --trace: streamed to stdout with -, through devices and symlinks") {
  const auto f = write_file("trace-small.json", kSmall);
  const auto to_file = run("run " + f + " --engine analytic --trace " + tmpdir() + "/trace-small-out.json --out /dev/null");
  REQUIRE(to_file.status == 0);
  const std::string expected = slurp(tmpdir() + "/trace-small-out.json");
  const auto to_stdout = run("run " + f + " --engine analytic --trace - --out /dev/null");
  CHECK(to_stdout.status == 0);
  CHECK(to_stdout.out == expected);
  const auto dir = empty_dir("trace-link");
  const std::string real = dir + "/real.json", link = dir + "/link.json";
  write_file("trace-link/real.json", "old");
  std::filesystem::create_symlink(real, link);
  REQUIRE(run("run " + f + " --engine analytic --trace " + link + " --out /dev/null").status == 0);
  CHECK(std::filesystem::is_symlink(link));
  CHECK(slurp(real) == expected);
  CHECK(run("run " + f + " --engine analytic --trace /dev/null").status == 0);
  CHECK(std::filesystem::is_character_file("/dev/null"));
}
