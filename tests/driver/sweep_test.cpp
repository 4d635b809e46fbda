// Sweeps: sweep-file parsing, "auto" factorizations and constraints, bad sweep files, memory
// pruning, shards, merge, resume after a truncated write.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../common/scratch.hpp"
#include "stepsim/driver/sweep.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/scenarios/sweep.hpp"

namespace sc = stepsim::scenarios;
namespace rs = stepsim::driver;

namespace {

// Llama-2-7B (32 heads, 32 layers, ffn 11008 = 2^8 x 43) on 2 DGX H100 nodes (16 GPUs).
std::string sweep_text(const std::string& axes, const std::string& constraints = "") {
  return R"({"name": "t", "base": {"model": "llama-2-7b", "cluster": {"preset": "dgx-h100", "nodes": 2},
             "training": {"seq_len": 4096, "global_batch": 64}}, "axes": {)" +
         axes + "}" + (constraints.empty() ? "" : ", \"constraints\": {" + constraints + "}") + "}";
}

std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>> layouts(const sc::Enumeration& e) {
  std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>> out;
  for (const auto& c : e.candidates)
    out.emplace_back(c.scenario.parallel.tp, c.scenario.parallel.cp, c.scenario.parallel.pp, c.scenario.parallel.dp);
  return out;
}

std::string error_of(const std::string& text) {
  try {
    (void)sc::enumerate(sc::parse_sweep_text(text, "s.json"));
  } catch (const stepsim::ScenarioError& e) {
    return e.what();
  }
  return "";
}

// Nothing there yet: the sweep creates its output folder.
std::string tmp_dir(const std::string& name) { return test_support::fresh_path("sweep", name).string(); }

using test_support::slurp;

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  std::sort(out.begin(), out.end());
  return out;
}

// 15 candidates on 16 GPUs (tp1 pp1 mb4 does not divide the batch), some out of memory: fast with
// the analytic engine.
std::string small_sweep() {
  return R"({"name": "small", "base": {"model": "llama-2-7b", "cluster": {"preset": "dgx-h100", "nodes": 2},
             "training": {"seq_len": 4096, "global_batch": 32}},
             "axes": {"parallel.tp": [1, 2, 4, 8], "parallel.pp": [1, 2], "training.micro_batch": [1, 4]}})";
}

}  // namespace

TEST_CASE("sweep: tp and pp auto give every factorization of the world size within a node") {
  const auto e = sc::enumerate(sc::parse_sweep_text(sweep_text(R"("parallel.tp": "auto", "parallel.pp": "auto")")));
  using L = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
  const std::vector<L> expected{{1, 1, 1, 16}, {1, 1, 2, 8}, {1, 1, 4, 4}, {1, 1, 8, 2}, {1, 1, 16, 1},
                                {2, 1, 1, 8},  {2, 1, 2, 4}, {2, 1, 4, 2}, {2, 1, 8, 1},  {4, 1, 1, 4},
                                {4, 1, 2, 2},  {4, 1, 4, 1}, {8, 1, 1, 2}, {8, 1, 2, 1}};
  CHECK(layouts(e) == expected);
  CHECK(e.generated == 15);               // tp=16 (pp=1) too
  CHECK(e.excluded_by_constraints == 1);  // tp=16 > 8 GPUs per node
  CHECK(e.invalid == 0);
  CHECK(e.candidates[3].key == "parallel.tp=1 parallel.pp=8");
  CHECK(e.candidates[3].index == 3);
  CHECK(e.candidates[3].scenario_json.find("\"pp\":8") != std::string::npos);
}

TEST_CASE("sweep: max_pp and the TP x CP within a node rule") {
  const auto capped = sc::enumerate(sc::parse_sweep_text(sweep_text(R"("parallel.tp": "auto", "parallel.pp": "auto")", R"("max_pp": 4)")));
  CHECK(capped.candidates.size() == 11);
  for (const auto& c : capped.candidates) CHECK(c.scenario.parallel.pp <= 4);

  // TP x CP with pp = 1: products 1, 2, 4, 8 within a node: 1 + 2 + 3 + 4 pairs.
  const auto tc = sc::enumerate(sc::parse_sweep_text(sweep_text(R"("parallel.tp": "auto", "parallel.cp": "auto")")));
  CHECK(tc.candidates.size() == 10);
  for (const auto& c : tc.candidates) CHECK(c.scenario.parallel.tp * c.scenario.parallel.cp <= 8);
  const auto free = sc::enumerate(
      sc::parse_sweep_text(sweep_text(R"("parallel.tp": "auto", "parallel.cp": "auto")", R"("tp_cp_within_node": false)")));
  CHECK(free.candidates.size() == 15);  // + the 5 pairs of product 16
}

TEST_CASE("sweep: candidates the loader rejects are skipped and counted by field") {
  const auto e = sc::enumerate(sc::parse_sweep_text(sweep_text(R"("parallel.tp": [1, 3, 2], "gpus": [16, 12, 24])")));
  // 12 GPUs are not whole nodes of 8; tp=3 does not divide 32 heads; on 24 GPUs, dp = 24 and 12
  // do not divide the global batch of 64.
  CHECK(e.generated == 7);
  CHECK(e.invalid == 5);
  CHECK(e.invalid_by_field.at("gpus") == 1);
  CHECK(e.invalid_by_field.at("parallel.tp") == 2);
  CHECK(e.invalid_by_field.at("training.global_batch") == 2);
  REQUIRE(e.candidates.size() == 2);
  CHECK(e.candidates[0].key == "gpus=16 parallel.tp=1");
  CHECK(e.candidates[1].key == "gpus=16 parallel.tp=2");
  CHECK(e.candidates[1].scenario.cluster.nodes == 2);
  CHECK(sc::enumeration_summary(e) ==
        "generated 7, 0 excluded by constraints, 5 invalid (gpus 1, parallel.tp 2, training.global_batch 2), 2 candidates");
}

TEST_CASE("sweep: bad sweep files name the JSON path") {
  CHECK(error_of("{") .find("s.json: malformed JSON") == 0);
  CHECK(error_of(R"({"base": {}, "axes": {}, "extra": 1})") == "extra: unknown key (expected name, description, base, axes, constraints)");
  CHECK(error_of(R"({"axes": {}})") == "base: is required (a scenario object)");
  CHECK(error_of(sweep_text(R"("parallel.tp": [1, "x"])")) == "axes.parallel.tp[1]: must be a positive integer, got a string");
  CHECK(error_of(sweep_text(R"("parallel.tp": 4)")) == "axes.parallel.tp: must be a list of values or \"auto\", got a number");
  CHECK(error_of(sweep_text(R"("training.micro_batch": "auto")")).find("axes.training.micro_batch: \"auto\" is only allowed") == 0);
  CHECK(error_of(sweep_text(R"("parallel.schedule": ["1f1b", "zigzag"])")).find("axes.parallel.schedule[1]: unknown value \"zigzag\"") == 0);
  CHECK(error_of(sweep_text(R"("model": ["llama-2-7b", "llama-9"])")).find("axes.model[1]: unknown preset \"llama-9\"") == 0);
  CHECK(error_of(sweep_text(R"("training.flavour": [1])")) == "axes.training.flavour[0]: unknown key");
  CHECK(error_of(sweep_text(R"("parallel.tp": [1])", R"("max_pp": 0)")) == "constraints.max_pp: must be a positive integer, got 0");
  CHECK(error_of(R"({"base": {"model": "llama-2-7b", "cluster": {"preset": "dgx-h100", "nodes": 2},
                  "training": {"seq_len": 4096, "global_batch": 64, "flavour": 1}}, "axes": {"parallel.tp": [1]}})") ==
        "base.training.flavour: unknown key");
  CHECK(error_of(sweep_text(R"("parallel.tp": [3])")).find("s.json: the sweep has no valid candidate (1 generated; first reason: parallel.tp: tp=3") == 0);
}

TEST_CASE("sweep: the memory prune writes oom rows with the reason, not simulated") {
  // Llama-3.1-70B on one node without model parallelism cannot fit 80 GB.
  const auto e = sc::enumerate(sc::parse_sweep_text(R"({"base": {"model": "llama-3.1-70b", "cluster": {"preset": "dgx-h100", "nodes": 1},
      "training": {"seq_len": 8192, "global_batch": 8}}, "axes": {"parallel.tp": [1, 8]}})"));
  REQUIRE(e.candidates.size() == 2);
  rs::SimulationCache cache;
  for (const auto rule : {rs::PruneRule::Stepsim, rs::PruneRule::PaperUsableFraction}) {
    const auto row = rs::evaluate_candidate(e.candidates[0], rule, stepsim::sim::EngineKind::Analytic, cache);
    CHECK(row.status == "pruned");
    CHECK(row.oom);
    CHECK(row.engine.empty());
    CHECK(row.reason.find(rule == rs::PruneRule::Stepsim ? "stepsim peak " : "paper estimate ") == 0);
    CHECK(row.reason.find("exceeds") != std::string::npos);
    CHECK(row.line.find("\"status\":\"pruned\"") != std::string::npos);
    CHECK(row.line.find("\"oom\":true") != std::string::npos);
    CHECK(row.line.find("\"step_time_s\":null") != std::string::npos);
    CHECK(row.stepsim_peak_bytes > row.gpu_memory_bytes);
    const auto back = stepsim::report::parse_row(row.line);
    CHECK(back.key == row.key);
    CHECK(back.reason == row.reason);
  }
  CHECK(rs::memory_verdict(e.candidates[0].scenario, rs::PruneRule::Stepsim).fits == false);
}

TEST_CASE("sweep: the stepsim prune keeps memory.headroom_gib free, the paper rule is named after its fraction") {
  CHECK(rs::parse_prune_rule("paper-usable-fraction") == rs::PruneRule::PaperUsableFraction);
  CHECK(rs::parse_prune_rule("paper-80") == rs::PruneRule::PaperUsableFraction);  // the former name
  CHECK(rs::to_string(rs::PruneRule::PaperUsableFraction) == "paper-usable-fraction");
  CHECK_THROWS_WITH_AS((void)rs::parse_prune_rule("paper"), "--prune: unknown rule \"paper\" (expected stepsim or paper-usable-fraction)",
                       stepsim::ScenarioError);
  // Llama-3.1-8B TP8 on one DGX H100 node: its stepsim peak lies below 80 GiB. A headroom 1 MiB
  // short of the free memory keeps it, one 1 MiB over it prunes it (peak <= GPU memory - headroom).
  const auto e = sc::enumerate(sc::parse_sweep_text(R"({"base": {"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 1},
      "training": {"seq_len": 4096, "global_batch": 8}}, "axes": {"parallel.tp": [8]}})"));
  REQUIRE(e.candidates.size() == 1);
  auto s = e.candidates[0].scenario;
  const auto none = rs::memory_verdict(s, rs::PruneRule::Stepsim);
  REQUIRE(none.fits);
  const double free_gib = static_cast<double>(none.gpu_memory_bytes - none.stepsim_peak_bytes) / (1024.0 * 1024 * 1024);
  const double mib = 1.0 / 1024;
  s.memory.headroom_bytes = (free_gib - mib) * 1024.0 * 1024 * 1024;
  CHECK(rs::memory_verdict(s, rs::PruneRule::Stepsim).fits);
  s.memory.headroom_bytes = (free_gib + mib) * 1024.0 * 1024 * 1024;
  const auto pruned = rs::memory_verdict(s, rs::PruneRule::Stepsim);
  CHECK_FALSE(pruned.fits);
  CHECK(pruned.reason.find("GiB of GPU memory less the headroom of ") != std::string::npos);
  // The paper rule does not look at the headroom.
  CHECK(rs::memory_verdict(s, rs::PruneRule::PaperUsableFraction).fits == rs::memory_verdict(e.candidates[0].scenario, rs::PruneRule::PaperUsableFraction).fits);
}

TEST_CASE("sweep: parse_row keeps nulls empty, a results file needs an index and a key per row") {
  const auto r = stepsim::report::parse_row(R"({"status":"oom","tp":8,"paper_total_bytes":1000,"step_time_s":null,"oom":null})", "x", 7);
  CHECK(r.index == 7);
  CHECK(r.key.empty());
  CHECK(r.tp == 8);
  CHECK(r.pp == 1);
  CHECK(r.paper_total_bytes == 1000);
  CHECK_FALSE(r.gpu_memory_bytes.has_value());
  CHECK_FALSE(r.simulated());
  CHECK(r.status == "pruned");  // the name older files gave it
  CHECK(r.oom);
  CHECK(stepsim::report::parse_row(R"({"status":"ok"})").status == "simulated");
  CHECK_THROWS_WITH_AS(stepsim::report::parse_row("[1]", "f:3"), "f:3: a results row must be a JSON object", stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(stepsim::report::parse_row(R"({"status":"done"})", "f:4"), "f:4.status: unknown status 'done' (simulated, pruned or error)",
                       stepsim::ScenarioError);

  const auto dir = tmp_dir("keyless");
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/results.jsonl";
  std::ofstream(file, std::ios::binary) << R"({"index":0,"status":"ok"})" << "\n" << R"({"index":1,"key":"a","status":"ok"})" << "\n";
  CHECK_THROWS_WITH_AS(rs::read_rows(file), (file + ":1: not a sweep row (needs index, key and status)").c_str(),
                       stepsim::ScenarioError);
}

TEST_CASE("sweep: a candidate enumerated by its JSON alone is not evaluated until its scenario is loaded") {
  std::vector<sc::Candidate> json_only;
  (void)sc::for_each_candidate(
      sc::parse_sweep_text(small_sweep()),
      [&json_only](sc::Candidate&& c) {
        json_only.push_back(std::move(c));
        return true;
      },
      true, sc::CandidateLoad::JsonOnly);
  REQUIRE(json_only.size() > 5);
  auto c = json_only[5];
  CHECK_FALSE(c.loaded);
  rs::SimulationCache cache;
  CHECK_THROWS_AS(rs::evaluate_candidate(c, rs::PruneRule::Stepsim, stepsim::sim::EngineKind::Analytic, cache), stepsim::InternalError);
  c.scenario = sc::load_scenario_text(c.scenario_json);
  c.loaded = true;
  const auto e = sc::enumerate(sc::parse_sweep_text(small_sweep()));
  CHECK(rs::evaluate_candidate(c, rs::PruneRule::Stepsim, stepsim::sim::EngineKind::Analytic, cache).line ==
        rs::evaluate_candidate(e.candidates[5], rs::PruneRule::Stepsim, stepsim::sim::EngineKind::Analytic, cache).line);
}

TEST_CASE("sweep: a row holds the contract keys in order") {
  const auto e = sc::enumerate(sc::parse_sweep_text(small_sweep()));
  rs::SimulationCache cache;
  const auto row = rs::evaluate_candidate(e.candidates[5], rs::PruneRule::Stepsim, stepsim::sim::EngineKind::Analytic, cache);
  REQUIRE(row.status == "simulated");
  std::size_t at = 0;
  for (const char* key : {"index", "key", "status", "reason", "scenario", "summary", "paper_total_bytes", "stepsim_peak_bytes",
                          "model", "cluster", "gpu", "gpus", "tp", "cp", "pp", "dp", "vpp", "micro_batch", "global_batch",
                          "seq_len", "schedule", "recompute", "engine", "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu",
                          "tflops_per_gpu", "mfu", "bubble_fraction", "exposed_comm_fraction", "peak_memory_bytes",
                          "gpu_memory_bytes", "oom", "time_to_train_s", "gpu_hours", "cost_usd", "cost_usd_per_million_tokens"}) {
    const auto pos = row.line.find("\"" + std::string(key) + "\":", at);
    CHECK_MESSAGE(pos != std::string::npos, key);
    if (pos != std::string::npos) at = pos;
  }
  CHECK(row.line.find('\n') == std::string::npos);
  CHECK(row.engine == "analytic");
  CHECK(row.step_time_s > 0);
}

TEST_CASE("sweep: shards partition the candidates and merge joins them, one row per key") {
  const auto spec = sc::parse_sweep_text(small_sweep());
  const auto all = sc::enumerate(spec);
  const auto dir = tmp_dir("shards");
  std::set<std::string> keys;
  std::size_t rows = 0;
  for (std::int64_t i = 0; i < 3; ++i) {
    rs::SweepOptions o;
    o.out_dir = dir;
    o.shard_index = i;
    o.shard_count = 3;
    o.jobs = 2;
    o.quiet = true;
    const auto out = rs::run_sweep(spec, o);
    CHECK(out.results_file == dir + "/results.shard-" + std::to_string(i) + "-of-3.jsonl");
    for (const auto& r : rs::read_rows(out.results_file).rows) {
      CHECK(r.index % 3 == i);
      keys.insert(r.key);
      ++rows;
    }
  }
  CHECK(rows == all.candidates.size());
  CHECK(keys.size() == all.candidates.size());

  const auto merged = rs::merge_rows({dir, dir + "/results.shard-1-of-3.jsonl"});  // shard 1 twice
  REQUIRE(merged.size() == all.candidates.size());
  for (std::size_t i = 0; i < merged.size(); ++i) {
    CHECK(merged[i].index == static_cast<std::int64_t>(i));
    CHECK(merged[i].key == all.candidates[i].key);
  }
}

TEST_CASE("sweep: resume after a cut-off write gives the same rows and the same summary") {
  const auto spec = sc::parse_sweep_text(small_sweep());
  rs::SweepOptions o;
  o.quiet = true;
  o.jobs = 2;
  o.out_dir = tmp_dir("full");
  const auto full = rs::run_sweep(spec, o);
  const std::string full_rows = slurp(full.results_file);
  CHECK(full.evaluated == 15);

  // A sweep killed after 5 rows and in the middle of the 6th.
  o.out_dir = tmp_dir("cut");
  std::filesystem::create_directories(o.out_dir);
  std::size_t pos = 0;
  for (int i = 0; i < 5; ++i) pos = full_rows.find('\n', pos) + 1;
  const std::string cut = full_rows.substr(0, pos + 40);
  std::ofstream(o.out_dir + "/results.jsonl", std::ios::binary) << cut;

  o.resume = false;
  CHECK_THROWS_WITH_AS(rs::run_sweep(spec, o), doctest::Contains("already exists (use --resume"), stepsim::ScenarioError);
  o.resume = true;
  const auto resumed = rs::run_sweep(spec, o);
  CHECK(resumed.already_done == 5);
  CHECK(resumed.evaluated == 10);
  CHECK(sorted_lines(slurp(resumed.results_file)) == sorted_lines(full_rows));
  CHECK(slurp(resumed.summary_file) == slurp(full.summary_file));
  CHECK(resumed.table == full.table);

  // Nothing left: a second resume writes nothing and keeps the table.
  const auto again = rs::run_sweep(spec, o);
  CHECK(again.evaluated == 0);
  CHECK(again.table == full.table);
}

TEST_CASE("sweep: the ranking names the fastest layout that fits, per cluster and overall") {
  const auto spec = sc::parse_sweep_text(small_sweep());
  rs::SweepOptions o;
  o.quiet = true;
  o.out_dir = tmp_dir("rank");
  const auto out = rs::run_sweep(spec, o);
  CHECK(out.table.find("# Sweep small") == 0);
  CHECK(out.table.find("## Best layouts per cluster") != std::string::npos);
  CHECK(out.table.find("## Fastest that fits") != std::string::npos);
  CHECK(out.table.find("Cheapest") == std::string::npos);  // no cost in the base
  const auto rows = rs::read_rows(out.results_file).rows;
  const rs::SweepRow* best = nullptr;
  for (const auto& r : rows)
    if (r.status == "simulated" && !r.oom && (best == nullptr || r.tokens_per_s > best->tokens_per_s)) best = &r;
  REQUIRE(best != nullptr);
  const auto fastest = out.table.substr(out.table.find("## Fastest that fits"));
  const std::string lay = "TP" + std::to_string(best->tp) + " CP1 PP" + std::to_string(best->pp) + " DP" + std::to_string(best->dp);
  CHECK(fastest.find(lay) != std::string::npos);
  // One cluster in this sweep: its best layout at any GPU count is the fastest overall.
  const auto per_cluster = out.table.substr(out.table.find("## Best layout per cluster (any GPU count)"));
  CHECK(per_cluster.substr(0, per_cluster.find("## Fastest")).find(lay) != std::string::npos);
}

TEST_CASE("sweep: an axis naming a field the schema lacks names the axis, not the base") {
  CHECK(error_of(sweep_text(R"("foo.bar": [1, 2])")) == "axes.foo.bar: unknown key (\"foo\" is not a scenario field)");
  CHECK(error_of(sweep_text(R"("training.flavour.x": [1])")) ==
        "axes.training.flavour.x: unknown key (\"training.flavour\" is not a scenario field)");
  CHECK(error_of(R"({"base": {"model": "llama-2-7b", "cluster": {"preset": "dgx-h100", "nodes": 2},
                  "training": {"seq_len": 1e400, "global_batch": 64}}, "axes": {}})")
            .rfind("base.training.seq_len: unreadable JSON: number overflow parsing '1e400' (s.json)", 0) == 0);
}

TEST_CASE("sweep: parse_row rejects values of the wrong type or range, naming the field") {
  CHECK_THROWS_WITH_AS(stepsim::report::parse_row(R"({"status":"ok","index":"x"})", "f:1"), "f:1.index: must be an integer, got a string",
                       stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(stepsim::report::parse_row(R"({"status":"ok","step_time_s":"abc"})", "f:1"),
                       "f:1.step_time_s: must be a number, got a string", stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(stepsim::report::parse_row(R"({"status":"ok","gpus":-5})", "f:1"), "f:1.gpus: must be at least 1, got -5",
                       stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(stepsim::report::parse_row(R"({"status":"ok","tp":2.5})", "f:1"), "f:1.tp: must be an integer, got 2.5",
                       stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(stepsim::report::parse_row(R"({"status":"ok","mfu":-0.5})", "f:1"), "f:1.mfu: must be a finite number >= 0, got -0.5",
                       stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(stepsim::report::parse_row(R"({"status":"ok","oom":"no"})", "f:1"), "f:1.oom: must be true, false or null, got a string",
                       stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(stepsim::report::parse_row(R"({"status":"ok","key":7})", "f:1"), "f:1.key: must be a string, got a number",
                       stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(stepsim::report::parse_row(R"({"status":"ok","gpus":1e400})", "f:1"),
                       "f:1: unreadable JSON line: number overflow parsing '1e400'", stepsim::ScenarioError);
  // Integral floats are integers; nulls stay empty.
  const auto r = stepsim::report::parse_row(R"({"status":"ok","gpus":16.0,"step_time_s":null,"paper_total_bytes":1e10})", "f:1");
  CHECK(r.gpus == 16);
  CHECK(r.paper_total_bytes == 10000000000);
  CHECK_FALSE(r.step_time_s.has_value());
}

TEST_CASE("sweep: a results file's bad lines are errors, except a cut-off last line, which is noted") {
  const auto dir = tmp_dir("lines");
  std::filesystem::create_directories(dir);
  const std::string row0 = R"({"index":0,"key":"a","status":"ok"})", row1 = R"({"index":1,"key":"b","status":"ok"})";
  auto file = [&](const std::string& name, const std::string& text) {
    const std::string f = dir + "/" + name;
    std::ofstream(f, std::ios::binary) << text;
    return f;
  };
  // A complete line that is not a row is an error, last or not.
  const auto bad_last = file("bad-last.jsonl", row0 + "\ngarbage\n");
  const std::string last_line = bad_last + ":2: malformed JSON line";
  CHECK_THROWS_WITH_AS(rs::read_rows(bad_last), doctest::Contains(last_line.c_str()), stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(rs::merge_rows({bad_last}), doctest::Contains(last_line.c_str()), stepsim::ScenarioError);
  const auto bad_first = file("bad-first.jsonl", "garbage\n" + row0 + "\n");
  const std::string first_line = bad_first + ":1: malformed JSON line";
  CHECK_THROWS_WITH_AS(rs::merge_rows({bad_first}), doctest::Contains(first_line.c_str()), stepsim::ScenarioError);
  // A cut-off last line is dropped with a warning.
  const auto cut = file("cut.jsonl", row0 + "\n" + row1 + "\n{\"index\":2,\"ke");
  const auto rf = rs::read_rows(cut);
  CHECK(rf.rows.size() == 2);
  CHECK(rf.truncated_tail);
  CHECK(rf.truncated_line == 3);
  std::vector<std::string> warnings;
  CHECK(rs::merge_rows({cut}, &warnings).size() == 2);
  CHECK(warnings == std::vector<std::string>{cut + ":3: ignored a last line without newline that is not a row (a write cut short)"});
  // A last row without its newline is a row.
  const auto unterminated = file("unterminated.jsonl", row0 + "\n" + row1);
  const auto ru = rs::read_rows(unterminated);
  CHECK(ru.rows.size() == 2);
  CHECK(ru.missing_newline);
  CHECK_FALSE(ru.truncated_tail);
  // No row at all.
  CHECK_THROWS_WITH_AS(rs::merge_rows({file("garbage.jsonl", "garbage")}), doctest::Contains("holds no results row"),
                       stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(rs::merge_rows({file("empty.jsonl", "")}), doctest::Contains("no results rows in the input"),
                       stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS(rs::merge_rows({"/dev/zero"}), "/dev/zero: is not a regular file (expected a results file)",
                       stepsim::ScenarioError);
}

TEST_CASE("sweep: the finished results file is in candidate order whatever the number of workers") {
  const auto spec = sc::parse_sweep_text(small_sweep());
  rs::SweepOptions o;
  o.quiet = true;
  o.jobs = 1;
  o.out_dir = tmp_dir("order-1");
  const auto one = rs::run_sweep(spec, o);
  o.jobs = 4;
  o.out_dir = tmp_dir("order-4");
  const auto four = rs::run_sweep(spec, o);
  const auto text = slurp(one.results_file);
  CHECK(text == slurp(four.results_file));
  CHECK(slurp(one.summary_file) == slurp(four.summary_file));
  const auto rows = rs::read_rows(one.results_file).rows;
  REQUIRE(rows.size() == 15);
  for (std::size_t i = 0; i < rows.size(); ++i) CHECK(rows[i].index == static_cast<std::int64_t>(i));
  CHECK_FALSE(std::filesystem::exists(one.results_file + ".tmp"));

  o.jobs = 0;
  o.out_dir = tmp_dir("order-0");
  CHECK_THROWS_WITH_AS(rs::run_sweep(spec, o), "-j: must be at least 1, got 0", stepsim::ScenarioError);
}

TEST_CASE("sweep: resume after a last row without newline keeps one row per line") {
  const auto spec = sc::parse_sweep_text(small_sweep());
  rs::SweepOptions o;
  o.quiet = true;
  o.out_dir = tmp_dir("nl-full");
  const auto full = rs::run_sweep(spec, o);
  const std::string full_rows = slurp(full.results_file);
  o.out_dir = tmp_dir("nl-cut");
  std::filesystem::create_directories(o.out_dir);
  std::size_t pos = 0;
  for (int i = 0; i < 3; ++i) pos = full_rows.find('\n', pos) + 1;
  std::ofstream(o.out_dir + "/results.jsonl", std::ios::binary) << full_rows.substr(0, pos - 1);  // 3 rows, no final newline
  o.resume = true;
  const auto resumed = rs::run_sweep(spec, o);
  CHECK(resumed.already_done == 3);
  CHECK(slurp(resumed.results_file) == full_rows);
}

TEST_CASE("sweep: a row and a run of the same scenario give identical figures") {
  // Candidates with TP, PP and several micro-batches; the row is read back from its JSON line as
  // `stepsim report` reads it, the run loads the candidate's scenario object as `stepsim run` would.
  const auto e = sc::enumerate(sc::parse_sweep_text(small_sweep()));
  rs::SimulationCache cache;
  std::size_t compared = 0;
  for (const auto& c : e.candidates) {
    if (c.scenario.parallel.tp < 2 || c.scenario.parallel.pp < 2) continue;
    for (const auto engine : {stepsim::sim::EngineKind::Analytic, stepsim::sim::EngineKind::SimGrid}) {
      const bool refined = engine == stepsim::sim::EngineKind::SimGrid;
      if (refined && compared > 0) continue;  // one SimGrid comparison keeps the test short
      const auto row = stepsim::report::parse_row(
          rs::evaluate_candidate(c, rs::PruneRule::Stepsim, engine, cache, refined).line);
      REQUIRE(row.status == "simulated");
      rs::SimulateOptions so;
      so.engine = engine;
      const auto run = rs::simulate(sc::load_scenario_text(c.scenario_json, {}, "candidate"), so).report;
      CAPTURE(c.key);
      CHECK(row.engine == run.engine);
      CHECK(row.step_time_s == run.step_time_s);
      CHECK(row.tokens_per_s == run.tokens_per_s);
      CHECK(row.tflops_per_gpu == run.tflops_per_gpu);
      CHECK(row.mfu == run.mfu);
      CHECK(row.bubble_fraction == run.bubble_fraction);
      CHECK(row.exposed_comm_fraction == run.exposed_comm_fraction);
      CHECK(row.peak_memory_bytes == run.peak_memory_bytes);
      CHECK(row.oom == run.oom);
      CHECK(row.summary == run.summary);
    }
    ++compared;
  }
  CHECK(compared >= 2);
}

namespace {

std::string with_base_field(const std::string& from, const std::string& to) {
  std::string text = small_sweep();
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

rs::SweepOptions quiet_options(const std::string& dir) {
  rs::SweepOptions o;
  o.quiet = true;
  o.jobs = 2;
  o.out_dir = tmp_dir(dir);
  return o;
}

}  // namespace

TEST_CASE("sweep: --resume refuses the rows of another sweep (an edited base, another prune rule)") {
  auto o = quiet_options("fingerprint");
  const auto first = rs::run_sweep(sc::parse_sweep_text(small_sweep()), o);
  CHECK(first.fingerprint.size() == 16);
  o.resume = true;
  const auto edited = sc::parse_sweep_text(with_base_field("\"seq_len\": 4096", "\"seq_len\": 2048"));
  const std::string expected = "was written by another sweep (fingerprint " + first.fingerprint;
  CHECK_THROWS_WITH_AS(rs::run_sweep(edited, o), doctest::Contains(expected.c_str()), stepsim::ScenarioError);
  o.prune = rs::PruneRule::PaperUsableFraction;
  CHECK_THROWS_WITH_AS(rs::run_sweep(sc::parse_sweep_text(small_sweep()), o), doctest::Contains("was written by another sweep"),
                       stepsim::ScenarioError);
  o.prune = rs::PruneRule::Stepsim;
  o.version = "other";
  CHECK_THROWS_WITH_AS(rs::run_sweep(sc::parse_sweep_text(small_sweep()), o), doctest::Contains("stepsim version differ"),
                       stepsim::ScenarioError);
  // The same sweep resumes: nothing left to do.
  o.version.clear();
  CHECK(rs::run_sweep(sc::parse_sweep_text(small_sweep()), o).evaluated == 0);
}

TEST_CASE("sweep: merging sweeps that differ only in their base cluster keeps every row") {
  std::vector<std::string> files;
  std::set<std::string> fingerprints;
  for (const char* preset : {"dgx-h100", "dgx-a100", "dgx-h200"}) {
    const auto spec = sc::parse_sweep_text(with_base_field("\"dgx-h100\"", std::string("\"") + preset + "\""));
    const auto out = rs::run_sweep(spec, quiet_options(std::string("cluster-") + preset));
    files.push_back(out.results_file);
    fingerprints.insert(out.fingerprint);
  }
  CHECK(fingerprints.size() == 3);
  std::vector<std::string> warnings;
  const auto merged = rs::merge_rows(files, &warnings);
  CHECK(merged.size() == 45);
  CHECK(warnings.empty());
  std::set<std::string> gpus;
  for (const auto& r : merged) gpus.insert(r.gpu);
  CHECK(gpus.size() == 3);
}

TEST_CASE("sweep: merge notes a missing shard and repeated rows, and refuses two different rows of one candidate") {
  const auto spec = sc::parse_sweep_text(small_sweep());
  std::vector<std::string> shards;
  auto o = quiet_options("shards-missing");
  for (std::int64_t i = 0; i < 3; ++i) {
    o.shard_index = i;
    o.shard_count = 3;
    shards.push_back(rs::run_sweep(spec, o).results_file);
  }
  std::vector<std::string> warnings;
  CHECK(rs::merge_rows({shards[0], shards[2]}, &warnings).size() == 10);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find(": 5 of 15 candidates have no row (first missing: 1, 4, 7, 10, 13); is a shard missing?") != std::string::npos);

  warnings.clear();
  CHECK(rs::merge_rows({shards[0], shards[1], shards[2], shards[1]}, &warnings).size() == 15);
  CHECK(warnings == std::vector<std::string>{"dropped 5 rows that repeat another row exactly (the same results given twice?)"});

  const auto dir = tmp_dir("conflict");
  std::filesystem::create_directories(dir);
  const std::string a = dir + "/a.jsonl", b = dir + "/b.jsonl";
  std::ofstream(a) << R"({"index":0,"key":"k","sweep":"f","status":"ok","step_time_s":1.0})" << "\n";
  std::ofstream(b) << R"({"index":0,"key":"k","sweep":"f","status":"ok","step_time_s":2.0})" << "\n";
  CHECK_THROWS_WITH_AS(rs::merge_rows({a, b}), (b + ":1: conflicts with " + a + ":1: two different rows for candidate 0 (k) of one sweep").c_str(),
                       stepsim::ScenarioError);
}

TEST_CASE("sweep: after --refine each candidate has one row, the refined ones from SimGrid") {
  auto o = quiet_options("refine");
  o.refine = 2;
  const auto out = rs::run_sweep(sc::parse_sweep_text(small_sweep()), o);
  const auto rows = rs::read_rows(out.results_file).rows;
  REQUIRE(rows.size() == 15);
  std::int64_t simgrid = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows[i].index == static_cast<std::int64_t>(i));
    if (rows[i].engine == "simgrid") ++simgrid;
  }
  CHECK(simgrid == 2);
  CHECK(out.table.find("2 refined with simgrid") != std::string::npos);
  // A resume refines nothing more and keeps the same rows.
  o.resume = true;
  const auto again = rs::run_sweep(sc::parse_sweep_text(small_sweep()), o);
  CHECK(again.evaluated == 0);
  CHECK(again.table == out.table);
}

TEST_CASE("sweep: sorting in runs on disk gives the rows of sorting in memory") {
  const auto out = rs::run_sweep(sc::parse_sweep_text(small_sweep()), quiet_options("runs"));
  // The rows in reverse order, each twice: many runs of a few rows each.
  auto rows = rs::read_rows(out.results_file).rows;
  std::reverse(rows.begin(), rows.end());
  const std::string shuffled = out.results_file + ".reversed";
  {
    std::ofstream f(shuffled);
    for (const auto& r : rows) f << r.line << "\n" << r.line << "\n";
  }
  std::ostringstream in_memory, on_disk;
  const auto a = rs::sort_rows({shuffled}, in_memory);
  rs::SortOptions small;
  small.chunk_bytes = 3000;
  small.run_dir = tmp_dir("runs-tmp");
  std::filesystem::create_directories(small.run_dir);
  std::vector<std::int64_t> seen;
  const auto b = rs::sort_rows({shuffled}, on_disk, [&seen](const rs::SweepRow& r) { seen.push_back(r.index); }, small);
  CHECK(in_memory.str() == slurp(out.results_file));
  CHECK(on_disk.str() == in_memory.str());
  CHECK(a.duplicates == 15);
  CHECK(b.duplicates == 15);
  CHECK(seen.size() == 15);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(std::filesystem::is_empty(small.run_dir));  // the runs are removed
}

TEST_CASE("sweep: --max-candidates bounds the candidates and the combinations before any work") {
  auto o = quiet_options("max");
  o.max_candidates = 5;
  CHECK_THROWS_WITH_AS(rs::run_sweep(sc::parse_sweep_text(small_sweep()), o),
                       "--max-candidates: the sweep has more than 5 candidates; narrow the axes, split it with --shard I/N, or raise --max-candidates",
                       stepsim::ScenarioError);
  CHECK_FALSE(std::filesystem::exists(o.out_dir));
  std::string prices;
  for (int i = 1; i <= 600; ++i) prices += (i > 1 ? ", " : "") + std::to_string(i);
  const auto wide = sc::parse_sweep_text(R"({"base": {"model": "llama-2-7b", "cluster": {"preset": "dgx-h100", "nodes": 2},
             "training": {"seq_len": 4096, "global_batch": 32}}, "axes": {"cost.usd_per_gpu_hour": [)" + prices + "]}}");
  CHECK_THROWS_WITH_AS(rs::run_sweep(wide, o),
                       "axes: make 600 combinations, more than 100 x --max-candidates (5) per process; narrow the axes, split the sweep "
                       "with --shard, or raise --max-candidates",
                       stepsim::ScenarioError);
  o.shard_count = 2;
  o.max_candidates = 7;  // 15 candidates: 8 in shard 0, 7 in shard 1
  CHECK_THROWS_WITH_AS(rs::run_sweep(sc::parse_sweep_text(small_sweep()), o), doctest::Contains("in this shard"), stepsim::ScenarioError);
}

TEST_CASE("sweep: lazy enumeration visits the candidates of enumerate(), and stops when asked") {
  const auto spec = sc::parse_sweep_text(small_sweep());
  const auto all = sc::enumerate(spec);
  std::vector<std::string> keys;
  const auto counts = sc::for_each_candidate(spec, [&keys](sc::Candidate&& c) {
    keys.push_back(c.key);
    return true;
  });
  REQUIRE(keys.size() == all.candidates.size());
  for (std::size_t i = 0; i < keys.size(); ++i) CHECK(keys[i] == all.candidates[i].key);
  CHECK(counts.valid == 15);
  CHECK(counts.complete);
  const auto some = sc::count_candidates(spec, 4);
  CHECK(some.valid == 4);
  CHECK_FALSE(some.complete);
}
