// The command line as a user meets it: help with defaults, one-line errors for bad arguments,
// standard input, the automatic engine's choice, numbers with units and separators.
#include <doctest/doctest.h>

#include <string>

#include "cli_util.hpp"

using namespace cli;

namespace {

const std::string kPp4 = std::string(STEPSIM_SOURCE_DIR) + "/scenarios/examples/llama31-8b-dgx-h100-pp4.json";

}  // namespace

TEST_CASE("--help shows the defaults of the options that have one") {
  const auto run_help = run("run --help");
  CHECK(run_help.status == 0);
  CHECK(run_help.out.find("=auto\n") != std::string::npos);   // --engine
  CHECK(run_help.out.find("=[]") == std::string::npos);      // no empty default for --set
  CHECK(run_help.out.find("=table\n") != std::string::npos);  // --format
  CHECK(run_help.out.find("=chunk\n") != std::string::npos);  // --granularity
  const auto report_help = run("report --help");
  CHECK(report_help.out.find("=20 ") != std::string::npos);  // --top
  CHECK(report_help.out.find("=md\n") != std::string::npos);
  const auto sweep_help = run("sweep --help");
  CHECK(sweep_help.out.find("=stepsim\n") != std::string::npos);  // --prune
}

TEST_CASE("bad command-line arguments: one line FIELD: reason, exit status 2") {
  struct Case {
    std::string args, expect;
  };
  const Case cases[] = {
      {"run --format yaml", "stepsim: error: --format: 'yaml' is not one of table, json\n"},
      {"run --engine fast", "stepsim: error: --engine: 'fast' is not one of auto, simgrid, analytic\n"},
      {"run a.json b.json", "stepsim: error: b.json: unexpected argument (see stepsim run --help)\n"},
      {"report --top many", "stepsim: error: --top: 'many' is not a valid value (see stepsim report --help)\n"},
      {"run --out", "stepsim: error: --out: needs a value (see stepsim run --help)\n"},
      {"sweep", "stepsim: error: sweep: is required (see stepsim sweep --help)\n"},
      {"validate --params gemm_max", "stepsim: error: --params: needs --cross-validate\n"},
      {"validate --gpus --cross-validate", "stepsim: error: --gpus: cannot be combined with --cross-validate\n"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto r = run(c.args);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err == c.expect);
  }
}

TEST_CASE("validate and calibrate name validation sets with --set-name (calibrate keeps --sets)") {
  CHECK(run("validate --help").out.find("--set-name") != std::string::npos);
  const auto calibrate = run("calibrate --help").out;
  CHECK(calibrate.find("--set-name") != std::string::npos);
  const auto unknown = run("calibrate --gpu h100-sxm-80gb --set-name no-such-set --params none");
  const auto alias = run("calibrate --gpu h100-sxm-80gb --sets no-such-set --params none");
  CHECK(unknown.status == 2);
  CHECK(unknown.err.find("no-such-set") != std::string::npos);
  CHECK(alias.status == unknown.status);
  CHECK(alias.err == unknown.err);
}

TEST_CASE("run - reads the scenario from standard input, with comments") {
  const std::string file = write_file("stdin-scenario.json", "// from stdin\n" + slurp(kPp4));
  const auto piped = run("run - --engine analytic --format json", "cat " + file + " | ");
  const auto named = run("run " + kPp4 + " --engine analytic --format json");
  CHECK(piped.status == 0);
  CHECK(piped.out == named.out);
  const auto bad = run("run - --engine analytic", "echo '{' | ");
  CHECK(bad.status == 2);
  CHECK(bad.err.find("<stdin>: malformed JSON") != std::string::npos);
}

TEST_CASE("--engine auto says which engine it chose and why, a named engine says nothing") {
  const auto chosen = run("run " + kPp4);
  CHECK(chosen.status == 0);
  CHECK(chosen.err == "stepsim run: --engine auto chose simgrid: 8 GPUs, at most 1,024 (engine.auto_simgrid_max_gpus)\n");
  const auto beyond = run("run " + kPp4 + " --set engine.auto_simgrid_max_gpus=4");
  CHECK(beyond.err == "stepsim run: --engine auto chose analytic: 8 GPUs, more than 4 (engine.auto_simgrid_max_gpus)\n");
  CHECK(run("run " + kPp4 + " --engine analytic").err.empty());
}

TEST_CASE("the run table prints units and thousands separators") {
  const auto r = run("run --engine analytic --set training.train_tokens=15T --set cost.usd_per_gpu_hour=2");
  CHECK(r.status == 0);
  CHECK(r.out.find("GiB of 80.00 GiB (stage") != std::string::npos);
  CHECK(r.out.find("time to train 15 T tokens") != std::string::npos);
  CHECK(r.out.find(" GPU-hours, $") != std::string::npos);
  // tokens/s (six digits on this scenario) has a separator.
  const auto line = r.out.substr(r.out.find("  tokens/s"), r.out.find('\n', r.out.find("  tokens/s")) - r.out.find("  tokens/s"));
  CHECK(line.find(',') != std::string::npos);
}

TEST_CASE("the default scenario's name follows --set cluster.nodes") {
  const auto r = run("memory --set cluster.nodes=4 --format json");
  CHECK(r.status == 0);
  CHECK(r.out.find("llama31-70b-dgx-h100-32") != std::string::npos);
}
