// End-to-end checks of the machine-readable outputs: CSV for pandas with its provenance beside it,
// one JSON shape for one simulated step (run, compare, report, sweep rows), the memory timeline,
// and the gzipped Chrome trace.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.hpp"

using namespace cli;

namespace {

const std::string kExample = std::string(STEPSIM_SOURCE_DIR) + "/scenarios/examples/llama31-8b-tsubame.json";
const std::string kGoldenSweep = std::string(STEPSIM_SOURCE_DIR) + "/tests/golden/sweep-small/results.jsonl";

// Debian's python3 (python3-pandas), not another python3 that PATH may find first.
std::string python() { return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

bool have_pandas() { return std::system((python() + " -c 'import pandas' >/dev/null 2>&1").c_str()) == 0; }

}  // namespace

TEST_CASE("sweep CSV: no comment line, a header, the step fields of the JSON rows, provenance in FILE.meta.json") {
  const std::string dir = empty_dir("csv-out");
  const auto r = run("report " + kGoldenSweep + " --format csv --out " + dir + "/rows.csv");
  CHECK(r.status == 0);
  const std::string csv = slurp(dir + "/rows.csv");
  CHECK(csv.rfind("rank,index,key,status,reason,model,cluster,gpu,gpus,tp,", 0) == 0);
  CHECK(csv.find('#') == std::string::npos);
  CHECK(csv.find(",tokens_per_s,tokens_per_s_per_gpu,") != std::string::npos);
  CHECK(csv.find("_gib") == std::string::npos);  // bytes, as in the JSON rows
  const auto meta = nlohmann::json::parse(slurp(dir + "/rows.meta.json"));
  CHECK(meta["generator"] == "stepsim 0.1.0");
  CHECK(meta["kind"] == "sweep");
  // Every row has a status of simulated, pruned or error and a boolean oom.
  const auto json = nlohmann::json::parse(run("report " + kGoldenSweep + " --format json").out);
  for (const auto& row : json["rows"]) {
    CHECK(row["oom"].is_boolean());
    const auto status = row["status"].get<std::string>();
    CHECK((status == "simulated" || status == "pruned" || status == "error"));
    if (status == "pruned") CHECK(row["oom"] == true);
  }
}

TEST_CASE("pandas.read_csv(path) with no options gives numbers, booleans and strings" * doctest::timeout(120)) {
  if (!have_pandas()) {
    std::cout << "skipped: python3-pandas not installed\n";
    MESSAGE("skipped: python3-pandas not installed");
    return;
  }
  const std::string dir = empty_dir("pandas");
  REQUIRE(run("report " + kGoldenSweep + " --format csv --out " + dir + "/sweep.csv").status == 0);
  REQUIRE(run("report " + kExample + " --engine analytic --format csv --out " + dir + "/run.csv").status == 0);
  REQUIRE(run("compare " + kExample + " --engine analytic --set parallel.pp=2 --set parallel.dp=1 --format csv --out " + dir +
              "/compare.csv").status == 0);
  const std::string script = write_file("dtypes.py", R"(import sys, pandas
from pandas.api.types import is_bool_dtype, is_integer_dtype, is_float_dtype, is_object_dtype
bad = []
for path, ints in ((sys.argv[1], ["rank", "index", "gpus", "tp", "cp", "pp", "dp", "vpp", "micro_batch", "global_batch", "seq_len"]),
                   (sys.argv[2], ["gpus", "tp", "stage", "stage_peak_memory_bytes", "peak_memory_bytes", "gpu_memory_bytes"]),
                   (sys.argv[3], ["gpus", "tp", "pp", "peak_memory_bytes", "gpu_memory_bytes"])):
    df = pandas.read_csv(path)
    for c in ints:
        if not is_integer_dtype(df[c]): bad.append(path + ":" + c + ":" + str(df[c].dtype))
    for c in ["step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "mfu", "bubble_fraction"]:
        if not is_float_dtype(df[c]): bad.append(path + ":" + c + ":" + str(df[c].dtype))
    if not is_bool_dtype(df["oom"]): bad.append(path + ":oom:" + str(df["oom"].dtype))
    for c in [c for c in df.columns if c.startswith("delta_")]:
        if not is_float_dtype(df[c]): bad.append(path + ":" + c + ":" + str(df[c].dtype))
    for c in ["model", "schedule"]:
        if not is_object_dtype(df[c]): bad.append(path + ":" + c + ":" + str(df[c].dtype))
print(" ".join(bad) if bad else "ok")
)");
  FILE* p = popen((python() + " " + script + " " + dir + "/sweep.csv " + dir + "/run.csv " + dir + "/compare.csv 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  std::size_t got = 0;
  while ((got = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, got);
  CHECK(pclose(p) == 0);
  CHECK(out == "ok\n");
}

TEST_CASE("run, compare, report and sweep rows write one JSON shape for one simulated step") {
  const auto run_json = nlohmann::json::parse(run("run " + kExample + " --engine analytic --format json").out);
  const auto compare_json = nlohmann::json::parse(run("compare " + kExample + " --engine analytic --format json").out);
  const auto report_json = nlohmann::json::parse(run("report " + kExample + " --engine analytic --format json").out);
  const auto sweep_json = nlohmann::json::parse(run("report " + kGoldenSweep + " --format json").out);
  const auto& column = compare_json["columns"][0];
  const auto& in_report = report_json["runs"][0]["report"];
  const auto& row = sweep_json["rows"][0];
  for (const char* key : {"model", "cluster", "gpu", "gpus", "tp", "cp", "pp", "dp", "vpp", "micro_batch", "global_batch",
                          "seq_len", "schedule", "recompute", "engine", "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu",
                          "tflops_per_gpu", "mfu", "bubble_fraction", "exposed_comm_fraction", "peak_memory_bytes",
                          "gpu_memory_bytes", "oom", "time_to_train_s", "gpu_hours", "cost_usd", "cost_usd_per_million_tokens"}) {
    CAPTURE(key);
    REQUIRE(run_json.contains(key));
    CHECK(column.at(key) == run_json.at(key));
    CHECK(in_report.at(key) == run_json.at(key));
    CHECK(row.contains(key));
  }
  CHECK(run_json["tokens_per_s_per_gpu"].get<double>() ==
        doctest::Approx(run_json["tokens_per_s"].get<double>() / run_json["gpus"].get<double>()));
  // The resolved layout: dp derived, micro-batches, layers per stage.
  CHECK(run_json["layout"]["label"] == "TP2 CP1 PP1 DP2, 1f1b, mb 1");
  CHECK(run_json["layout"]["micro_batches"] == 512);
  CHECK(run_json["layout"]["stage_layers"] == nlohmann::json::array({32}));
  CHECK(!run_json.contains("memory_timeline"));
}

TEST_CASE("run --format json --memory-timeline: each stage's memory over the step") {
  const auto r = run("run " + kExample + " --engine analytic --format json --memory-timeline --set parallel.pp=2 --set parallel.dp=1");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["memory_timeline"].size() == 2);
  for (const auto& stage : j["memory_timeline"]) {
    CHECK(stage["static_bytes"].get<std::int64_t>() > 0);
    std::int64_t peak = 0;
    for (const auto& p : stage["points"]) peak = std::max(peak, p[1].get<std::int64_t>());
    CHECK(peak == j["stages"][stage["stage"].get<std::size_t>()]["peak_memory_bytes"].get<std::int64_t>());
  }
  check_user_error(run("run " + kExample + " --memory-timeline --out " + tmpdir() + "/never-tl.txt"), "--memory-timeline: goes with --format json",
                   tmpdir() + "/never-tl.txt");
}

TEST_CASE("run --trace FILE.gz writes the same trace gzipped, byte-identical on repeat") {
  const std::string dir = empty_dir("trace-gz");
  const std::string args = "run " + kExample + " --engine analytic --set training.global_batch=16 --format json";
  REQUIRE(run(args + " --trace " + dir + "/t.json").status == 0);
  REQUIRE(run(args + " --trace " + dir + "/t.json.gz").status == 0);
  REQUIRE(run(args + " --trace " + dir + "/u.json.gz").status == 0);
  const std::string gz = slurp(dir + "/t.json.gz");
  REQUIRE(gz.size() > 2);
  CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);
  CHECK(gz == slurp(dir + "/u.json.gz"));
  CHECK(gz.size() < slurp(dir + "/t.json").size());
  CHECK(std::system(("gzip -dc " + dir + "/t.json.gz > " + dir + "/unzipped.json").c_str()) == 0);
  CHECK(slurp(dir + "/unzipped.json") == slurp(dir + "/t.json"));
}

TEST_CASE("LaTeX tables carry a label and a short caption, and a wide table fits the line with tabularx") {
  const auto run_tex = run("report " + kExample + " --engine analytic --format latex");
  REQUIRE(run_tex.status == 0);
  CHECK(run_tex.out.find("\\label{tab:stepsim-metrics}") != std::string::npos);
  CHECK(run_tex.out.find("\\label{tab:stepsim-stages}") != std::string::npos);
  CHECK(run_tex.out.find("\\caption{Step metrics}") != std::string::npos);  // the provenance is in the first comment line
  CHECK(run_tex.out.rfind("% stepsim 0.1.0: ", 0) == 0);
  const auto sweep_tex = run("report " + kGoldenSweep + " --format latex");
  CHECK(sweep_tex.out.find("\\begin{tabularx}{\\linewidth}") != std::string::npos);
  CHECK(sweep_tex.out.find("\\label{tab:stepsim-sweep-ranking}") != std::string::npos);
  CHECK(sweep_tex.out.find("\\end{tabularx}") != std::string::npos);
}

TEST_CASE("report --columns chooses the main table columns in order, and an unknown one is named") {
  const auto csv = run("report " + kGoldenSweep + " --format csv --columns rank,tokens_per_s_per_gpu --columns oom");
  REQUIRE(csv.status == 0);
  CHECK(csv.out.rfind("rank,tokens_per_s_per_gpu,oom\n1,", 0) == 0);
  const auto tex = run("report " + kGoldenSweep + " --format latex --columns rank,GPUs,tokens/s");
  CHECK(tex.out.find("rank & GPUs & tokens/s \\\\") != std::string::npos);
  const auto bad = run("report " + kGoldenSweep + " --format csv --columns rank,speed");
  CHECK(bad.status == 2);
  CHECK(bad.err.rfind("stepsim: error: --columns: the table has no column 'speed' (it has: rank, index, key, status,", 0) == 0);
}

TEST_CASE("validate --format csv and latex") {
  const auto csv = run("validate --set-name fujii-2024-tsubame-h100 --format csv");
  REQUIRE(csv.status == 0);
  CHECK(csv.out.rfind("set,table,record,gpu,predicted_step_time_s,measured_step_time_s,predicted_tflops_per_gpu,"
                      "measured_tflops_per_gpu,predicted_peak_allocated_gib,measured_peak_allocated_gib,flops_formula,error,"
                      "predicted_peak_memory_gib,gpu_memory_gib,predicted_oom\nfujii-2024-tsubame-h100,",
                      0) == 0);
  const auto tex = run("validate --set-name fujii-2024-tsubame-h100 --format latex");
  REQUIRE(tex.status == 0);
  CHECK(tex.out.find("\\label{tab:stepsim-validation}") != std::string::npos);
  CHECK(tex.out.find("\\label{tab:stepsim-validation-summary}") != std::string::npos);
  CHECK(run("validate --gpus --format csv").status == 2);
}

TEST_CASE("compare: differences of percentages in percentage points, of the rest in %") {
  const std::string args = "compare " + kExample + " --engine analytic --set parallel.pp=2 --set parallel.dp=1";
  const auto md = run(args + " --format md");
  REQUIRE(md.status == 0);
  const auto mfu = md.out.substr(md.out.find("| MFU"), md.out.find('\n', md.out.find("| MFU")) - md.out.find("| MFU"));
  CHECK(mfu.find(" pp)") != std::string::npos);
  const auto step = md.out.substr(md.out.find("| step time"), md.out.find('\n', md.out.find("| step time")) - md.out.find("| step time"));
  CHECK(step.find(" %)") != std::string::npos);
  const auto j = nlohmann::json::parse(run(args + " --format json").out);
  const auto& b = j["columns"][1];
  CHECK(b["delta_points"]["mfu"].get<double>() ==
        doctest::Approx(100.0 * (b["mfu"].get<double>() - j["columns"][0]["mfu"].get<double>())));
  CHECK(!b["delta_percent"].contains("mfu"));
  CHECK(b["delta_percent"].contains("step_time_s"));
}

TEST_CASE("compare --format csv and latex: the same comparison for pandas and for a paper") {
  const std::string dir = empty_dir("compare-formats");
  const std::string args = "compare " + kExample + " --engine analytic --set parallel.pp=2 --set parallel.dp=1";
  REQUIRE(run(args + " --format csv --out " + dir + "/c.csv").status == 0);
  const std::string csv = slurp(dir + "/c.csv");
  CHECK(csv.rfind("label,scenario,model,cluster,gpu,gpus,tp,", 0) == 0);
  CHECK(csv.find('#') == std::string::npos);
  CHECK(csv.find(",delta_percent_step_time_s,") != std::string::npos);
  CHECK(csv.find(",delta_points_mfu,") != std::string::npos);
  // One row per column; the first is the reference, its differences empty.
  std::vector<std::string> lines;
  for (std::size_t at = 0, nl = csv.find('\n'); nl != std::string::npos; at = nl + 1, nl = csv.find('\n', at)) lines.push_back(csv.substr(at, nl - at));
  REQUIRE(lines.size() == 3);
  CHECK(lines[1].size() > 3);
  CHECK(lines[1].substr(lines[1].size() - 3) == ",,,");
  // The same differences as the JSON.
  const auto j = nlohmann::json::parse(run(args + " --format json").out);
  const auto points = j["columns"][1]["delta_points"]["mfu"].get<double>();
  CHECK(lines[2].find("," + nlohmann::json(points).dump() + ",") != std::string::npos);
  const auto meta = nlohmann::json::parse(slurp(dir + "/c.meta.json"));
  CHECK(meta["kind"] == "comparison");
  CHECK(meta["description"].get<std::string>().rfind("stepsim 0.1.0: A = ", 0) == 0);
  CHECK(meta["description"].get<std::string>().find("; A: " + kExample + "; B: A + parallel.pp=2, parallel.dp=1") != std::string::npos);
  const auto tex = run(args + " --format latex");
  REQUIRE(tex.status == 0);
  CHECK(tex.out.rfind("% stepsim 0.1.0: A = ", 0) == 0);
  CHECK(tex.out.find("\\label{tab:stepsim-compare}") != std::string::npos);
  CHECK(tex.out.find("\\caption{Step metrics side by side; differences against the first column") != std::string::npos);
  CHECK(tex.out.find("MFU & ") != std::string::npos);
  CHECK(tex.out.find(" pp) \\\\") != std::string::npos);
  CHECK(run(args + " --format yaml").status == 2);
}

TEST_CASE("cost per 1M tokens: the price of the GPUs for the time a million tokens take, with or without a token budget") {
  const auto j = nlohmann::json::parse(
      run("run " + kExample + " --engine analytic --format json --set cost.usd_per_gpu_hour=2 --set training.train_tokens=15T").out);
  // 4 GPUs at 2 USD per GPU-hour cost 8 USD per hour: 8 / 3600 / (tokens/s) x 1e6 per million tokens.
  const double tokens_per_s = j["tokens_per_s"].get<double>();
  const double per_m = j["cost_usd_per_million_tokens"].get<double>();
  CHECK(j["gpus"] == 4);
  CHECK(per_m == doctest::Approx(8.0 / 3600.0 / tokens_per_s * 1e6));
  CHECK(per_m == doctest::Approx(j["cost_usd"].get<double>() / 15e12 * 1e6));  // the cost to train over the budget
  const auto without_budget = nlohmann::json::parse(run("run " + kExample + " --engine analytic --format json --set cost.usd_per_gpu_hour=2").out);
  CHECK(without_budget["cost_usd"].is_null());
  CHECK(without_budget["cost_usd_per_million_tokens"].get<double>() == doctest::Approx(per_m));
  CHECK(nlohmann::json::parse(run("run " + kExample + " --engine analytic --format json").out)["cost_usd_per_million_tokens"].is_null());
  const auto table = run("run " + kExample + " --engine analytic --set cost.usd_per_gpu_hour=2");
  CHECK(table.out.find("  cost per 1M tokens              $0.0") != std::string::npos);
}

TEST_CASE("report compares N scenario files side by side with short labels A, B, C") {
  const std::string a = write_file("n-a.json", slurp(kExample));
  const std::string dir = empty_dir("n-svg");
  const auto r = run("report " + a + " " + a + " " + kExample + " --set parallel.pp=2 --set parallel.dp=1 --engine analytic --format md --svg-dir " + dir);
  REQUIRE(r.status == 0);
  for (const char* label : {"| A (1f1b)", "| B (1f1b)", "| C (1f1b)"}) CHECK_MESSAGE(r.out.find(label) != std::string::npos, label);
  CHECK(std::filesystem::exists(dir + "/gantt_c.svg"));
}

TEST_CASE("compare and report take N --variant columns with short labels") {
  const std::string args = " " + kExample + " --engine analytic --variant 'parallel.pp=2;parallel.dp=1' --variant training.recompute=full";
  const auto c = run("compare" + args);
  REQUIRE(c.status == 0);
  CHECK(c.out.find("A: " + kExample + "\nB: A + parallel.pp=2;parallel.dp=1\nC: A + training.recompute=full\n") != std::string::npos);
  const auto j = nlohmann::json::parse(run("compare" + args + " --format json").out);
  REQUIRE(j["columns"].size() == 3);
  CHECK(j["columns"][1]["label"] == "B");
  CHECK(j["columns"][1]["pp"] == 2);
  CHECK(j["columns"][2]["recompute"] == "full");
  const auto r = run("report" + args + " --format md");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("C (1f1b)") != std::string::npos);
  const auto bad = run("compare" + args.substr(0, args.find(" --variant")) + " --variant ';'");
  CHECK(bad.status == 2);
  CHECK(bad.err.rfind("stepsim: error: --variant: expected key=value overrides separated by ';'", 0) == 0);
}
