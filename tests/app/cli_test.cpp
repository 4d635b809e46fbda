// End-to-end checks of the stepsim executable: exit statuses, messages, files, determinism.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "cli_util.hpp"

using namespace cli;

namespace {

const std::string kExample = std::string(STEPSIM_SOURCE_DIR) + "/scenarios/examples/llama31-8b-tsubame.json";

}  // namespace

TEST_CASE("stepsim memory prints the breakdown and the verdict") {
  const auto r = run("memory " + kExample);
  CHECK(r.status == 0);
  CHECK(r.out.find("67.517") != std::string::npos);
  CHECK(r.out.find("usable fraction (memory.usable_fraction) 0.80: 75.20 GiB") != std::string::npos);  // 0.8 x 94 GiB
  CHECK(r.out.find("verdict: total <= 0.80 x GPU memory -> predicted to fit") != std::string::npos);
  CHECK(r.out.find("peak: stage 0") != std::string::npos);
  CHECK(r.out.find("headroom") == std::string::npos);  // none by default
}

TEST_CASE("stepsim memory names the stages its table shows, and the headroom of the stepsim prune rule") {
  // PP4: stages 0 (first and peak), 2 (middle), 3 (last); stage 1 only in the JSON.
  const auto pp4 = run("memory --set parallel.tp=1 --set parallel.pp=4 --set parallel.dp=1 " + kExample);
  REQUIRE(pp4.status == 0);
  CHECK(pp4.out.find("stepsim mode (1f1b schedule; stages 0 (first, peak), 2 (middle), 3 (last) of 4, every stage in --format json)") !=
        std::string::npos);
  const auto one = run("memory " + kExample);
  CHECK(one.out.find("stepsim mode (1f1b schedule; stage 0 (first, peak) of 1)") != std::string::npos);
  // 94 GiB less a 30 GiB headroom leaves 64 GiB: the peak is over it and `sweep --prune stepsim` prunes the layout.
  const auto tight = run("memory " + kExample + " --set memory.headroom_gib=30");
  CHECK(tight.out.find("headroom (memory.headroom_gib) 30.00 GiB: the peak is over 64.00 GiB -> pruned by sweep --prune stepsim") !=
        std::string::npos);
  const auto loose = run("memory " + kExample + " --set memory.headroom_gib=2 --format json");
  CHECK(loose.out.find("\"headroom_bytes\": 2147483648") != std::string::npos);
  CHECK(loose.out.find("\"fits_with_headroom\": true") != std::string::npos);
}

TEST_CASE("stepsim memory --format json has the contract keys and is byte-identical on repeat") {
  const auto a = run("memory " + kExample + " --format json");
  const auto b = run("memory " + kExample + " --format json");
  CHECK(a.status == 0);
  CHECK(a.out == b.out);
  for (const char* key : {"\"model_states_bytes\": 48181592064", "\"activation_bytes\": 24314380288", "\"total_bytes\"",
                          "\"gpu_memory_bytes\"", "\"under_usable_fraction\": true", "\"stages\"", "\"stage\": 0",
                          "\"weights_bytes\"", "\"activations_bytes\""})
    CHECK_MESSAGE(a.out.find(key) != std::string::npos, key);
}

TEST_CASE("stepsim kernels: one rank's kernels, a stage that does not exist is an input error, no partial file") {
  const auto r = run("kernels " + kExample + " --format csv");
  CHECK(r.status == 0);
  CHECK(r.out.rfind("stage,section,layers,per,count,runs_per_step,kernel,", 0) == 0);
  // 32 layers, each run once per micro-batch: 32 x 512 micro-batches per step.
  CHECK(r.out.find(",layer forward,0-31,micro-batch,32,16384,qkv.fprop,gemm,") != std::string::npos);
  CHECK(r.out == run("kernels " + kExample + " --format csv").out);
  const std::string out = tmpdir() + "/kernels-bad.json";
  std::filesystem::remove(out);
  const auto bad = run("kernels " + kExample + " --stage 1 --format json --out " + out);
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--stage: stage 1 does not exist (the pipeline has stages 0 to 0)") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
  CHECK(run("kernels --format xml").status == 2);
}

TEST_CASE("the default scenario runs without a file") {
  const auto r = run("memory");
  CHECK(r.status == 0);
  CHECK(r.out.find("llama-3.1-70b") != std::string::npos);
}

TEST_CASE("bad input: exit status 2, one line naming the field, no output file") {
  const std::string out = tmpdir() + "/never.json";
  struct Case { std::string args; std::string expect; };
  const Case cases[] = {
      {"memory " + write_file("bad.json", "{\"model\": "), "malformed JSON"},
      {"memory " + kExample + " --set parallel.tp=3", "parallel.tp"},
      {"memory " + kExample + " --set model=llama-9", "unknown preset"},
      {"memory " + kExample + " --set software=nemo-99.99", "software: unknown preset \"nemo-99.99\""},
      {"memory " + kExample + " --set parallel.dp=4", "parallel.dp"},
      {"memory /nonexistent.json", "cannot open"},
      {"memory " + kExample + " --format yaml", "format"},
      {"nosuchcommand", "unknown command 'nosuchcommand'"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    cli::check_user_error(run(c.args + " --out " + out), c.expect, out);
  }
}

TEST_CASE("--out writes the file") {
  const std::string out = tmpdir() + "/mem.json";
  const auto r = run("memory " + kExample + " --format json --out " + out);
  CHECK(r.status == 0);
  CHECK(slurp(out).find("\"paper\"") != std::string::npos);
}

TEST_CASE("stepsim calibrate: --records that matches no record exits 2 naming the filter") {
  const std::string out = tmpdir() + "/never-eff.json";
  const auto r = run("calibrate --gpu a100-sxm-80gb --records zzzz --out " + out);
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("stepsim: error: --records: \"zzzz\" matches no record of the validation sets ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("stepsim validate --gpus lists every GPU preset, --params needs --cross-validate") {
  const auto gpus = run("validate --gpus --set-name fujii-2024-tsubame-h100");
  CHECK(gpus.status == 0);
  CHECK(gpus.out.find("| h100-sxm-94gb  |               12 | fujii-2024-tsubame-h100 |") != std::string::npos);
  CHECK(gpus.out.find("derived, no measured record") != std::string::npos);
  const auto params = run("validate --params gemm_max");
  CHECK(params.status == 2);
  CHECK(params.err.find("--params: needs --cross-validate") != std::string::npos);
  const auto engine = run("validate --cross-validate --engine simgrid --set-name mtnlg-530b");
  CHECK(engine.status == 2);
  CHECK(engine.err == "stepsim: error: --engine: --cross-validate fits with the analytic engine (as calibrate)\n");
}

TEST_CASE("an unknown command and a negative --refine are named in one line, exit 2") {
  const auto unknown = run("frobnicate");
  CHECK(unknown.status == 2);
  CHECK(unknown.err.rfind("stepsim: error: unknown command 'frobnicate' (expected one of memory, run,", 0) == 0);
  CHECK(std::count(unknown.err.begin(), unknown.err.end(), '\n') == 1);
  const auto refine = run("sweep " + std::string(STEPSIM_SOURCE_DIR) + "/tests/golden/sweep-small.json --refine -1");
  CHECK(refine.status == 2);
  CHECK(refine.err == "stepsim: error: --refine: must be a whole number >= 0, got -1\n");
}
