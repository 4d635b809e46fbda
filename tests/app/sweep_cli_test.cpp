// End-to-end checks of `stepsim sweep`, `stepsim merge` and `stepsim compare`.
#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_util.hpp"

namespace {

// Llama-3.1-8B on 512 H100s: 24 layouts (23 valid: tp1 pp1 mb2 does not divide the batch), tens of milliseconds each with the analytic engine.
const char* kKillSweep = R"({"name": "resume-test", "base": {"model": "llama-3.1-8b", "cluster": {"preset": "dgx-h100", "nodes": 64},
  "training": {"seq_len": 4096, "global_batch": 512}, "cost": {"usd_per_gpu_hour": 2}},
  "axes": {"parallel.tp": [1, 2, 4, 8], "parallel.pp": [1, 2, 4], "training.micro_batch": [1, 2]}})";

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    out.push_back(text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::size_t count_lines(const std::string& file) {
  const auto text = cli::slurp(file);
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::string fresh_dir(const std::string& name) {
  const std::string d = cli::tmpdir() + "/" + name;
  std::filesystem::remove_all(d);
  return d;
}

// Values of every "key": number in a JSON text, in order.
std::vector<double> numbers_after(const std::string& text, const std::string& key) {
  std::vector<double> out;
  const std::string pat = "\"" + key + "\": ";
  for (auto pos = text.find(pat); pos != std::string::npos; pos = text.find(pat, pos + 1))
    out.push_back(std::strtod(text.c_str() + pos + pat.size(), nullptr));
  return out;
}

}  // namespace

TEST_CASE("stepsim sweep: a bad sweep file exits 2 naming the JSON path") {
  const auto bad = cli::write_file("bad-sweep.json", R"({"base": {"model": "llama-2-7b"}, "axes": {"parallel.pp": [1, "two"]}})");
  const auto r = cli::run("sweep " + bad + " --out " + fresh_dir("bad"));
  CHECK(r.status == 2);
  CHECK(r.err == "stepsim: error: axes.parallel.pp[1]: must be a positive integer, got a string\n");
  CHECK_FALSE(std::filesystem::exists(cli::tmpdir() + "/bad/results.jsonl"));

  const auto missing = cli::run("sweep " + cli::tmpdir() + "/no-such-sweep.json");
  CHECK(missing.status == 2);
  CHECK(missing.err.find("cannot open the sweep file") != std::string::npos);

  const auto sweep = cli::write_file("kill-sweep.json", kKillSweep);
  const auto shard = cli::run("sweep " + sweep + " --shard 3/2 --out " + fresh_dir("badshard"));
  CHECK(shard.status == 2);
  CHECK(shard.err.find("--shard: expected I/N with 0 <= I < N") != std::string::npos);
}

TEST_CASE("stepsim sweep: kill -9 and --resume give the rows and the table of an uninterrupted run") {
  const auto sweep = cli::write_file("kill-sweep.json", kKillSweep);
  const auto full_dir = fresh_dir("full");
  const auto full = cli::run("sweep " + sweep + " -j 2 -q --out " + full_dir);
  REQUIRE(full.status == 0);
  CHECK(full.out.find("## Cheapest for the token budget") == std::string::npos);  // no train_tokens
  CHECK(full.out == cli::slurp(full_dir + "/summary.md"));
  CHECK(count_lines(full_dir + "/results.jsonl") == 23);

  const auto dir = fresh_dir("killed");
  const std::string binary = std::string(STEPSIM_BINARY_DIR) + "/app/stepsim";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(binary.c_str(), binary.c_str(), "sweep", sweep.c_str(), "-j", "1", "--out", dir.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Kill it as soon as a few rows are there.
  for (int i = 0; i < 20000 && count_lines(dir + "/results.jsonl") < 3; ++i) ::usleep(200);
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  const auto rows_before = count_lines(dir + "/results.jsonl");
  CHECK(rows_before >= 3);
  MESSAGE("rows before kill -9: " << rows_before);
  CHECK_FALSE(std::filesystem::exists(dir + "/summary.md"));

  const auto resumed = cli::run("sweep " + sweep + " -j 2 --resume --out " + dir);
  REQUIRE(resumed.status == 0);
  CHECK(resumed.err.find("resuming: ") != std::string::npos);
  CHECK(resumed.out == full.out);
  CHECK(cli::slurp(dir + "/summary.md") == cli::slurp(full_dir + "/summary.md"));
  CHECK(sorted_lines(cli::slurp(dir + "/results.jsonl")) == sorted_lines(cli::slurp(full_dir + "/results.jsonl")));

  // Without --resume an existing results file is an error, and it stays untouched.
  const auto again = cli::run("sweep " + sweep + " --out " + dir);
  CHECK(again.status == 2);
  CHECK(again.err.find("already exists (use --resume") != std::string::npos);
}

TEST_CASE("stepsim merge joins shards into the rows of the whole sweep, sorted and deduplicated") {
  const auto sweep = cli::write_file("kill-sweep.json", kKillSweep);
  const auto full_dir = fresh_dir("merge-full");
  REQUIRE(cli::run("sweep " + sweep + " -j 2 -q --out " + full_dir).status == 0);
  const auto dir = fresh_dir("shards");
  REQUIRE(cli::run("sweep " + sweep + " -j 2 -q --shard 0/2 --out " + dir).status == 0);
  REQUIRE(cli::run("sweep " + sweep + " -j 2 -q --shard 1/2 --out " + dir).status == 0);
  CHECK(count_lines(dir + "/results.shard-0-of-2.jsonl") == 12);
  CHECK(count_lines(dir + "/results.shard-1-of-2.jsonl") == 11);
  const auto merged_file = cli::tmpdir() + "/merged.jsonl";
  const auto r = cli::run("merge " + dir + " " + dir + "/results.shard-0-of-2.jsonl --out " + merged_file);
  REQUIRE(r.status == 0);
  const auto merged = cli::slurp(merged_file);
  CHECK(sorted_lines(merged) == sorted_lines(cli::slurp(full_dir + "/results.jsonl")));
  CHECK(merged.rfind("{\"index\":0,", 0) == 0);
  CHECK(cli::run("merge " + cli::tmpdir() + "/nothing-here").status == 2);
}

TEST_CASE("stepsim compare: interleaving shrinks the bubble of the same layout") {
  const auto a = cli::write_file("cmp-1f1b.json", R"({"name": "cmp", "model": "llama-2-7b",
    "cluster": {"preset": "dgx-h100", "nodes": 1},
    "training": {"seq_len": 4096, "global_batch": 8, "train_tokens": 1e12},
    "parallel": {"tp": 2, "pp": 4}, "cost": {"usd_per_gpu_hour": 2.5}})");
  const std::string sets = " --set parallel.schedule=interleaved --set parallel.vpp=2 --engine analytic";
  const auto j = cli::run("compare " + a + sets + " --format json");
  REQUIRE(j.status == 0);
  const auto bubble = numbers_after(j.out, "bubble_fraction");
  REQUIRE(bubble.size() == 3);  // two columns and one delta
  CHECK(bubble[1] < bubble[0]);
  CHECK(bubble[2] < 0);         // the delta in %
  CHECK(j.out.find("\"schedule\": \"interleaved\"") != std::string::npos);
  CHECK(j.out.find("\"cost_usd\": ") != std::string::npos);

  const auto t = cli::run("compare " + a + sets);
  REQUIRE(t.status == 0);
  CHECK(t.out.find("bubble") != std::string::npos);
  CHECK(t.out.find("peak memory stage 3") != std::string::npos);
  CHECK(t.out.find(a + " + parallel.schedule=interleaved, parallel.vpp=2") != std::string::npos);
  CHECK(t.out == cli::run("compare " + a + sets).out);

  const auto md = cli::run("compare " + a + " " + a + " --engine analytic --format md");
  REQUIRE(md.status == 0);
  CHECK(md.out.find("| metric |") == 0);
  CHECK(md.out.find("(+0.0 %)") != std::string::npos);

  const auto bad = cli::run("compare " + a + " --set parallel.vpp=3 --set parallel.schedule=interleaved");
  CHECK(bad.status == 2);
  CHECK(bad.err.find("parallel.vpp") != std::string::npos);
}
