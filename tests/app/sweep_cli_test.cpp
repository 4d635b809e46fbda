// End-to-end checks of `stepsim sweep`, `stepsim merge` and `stepsim compare`.
#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
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
  CHECK(std::count(again.err.begin(), again.err.end(), '\n') == 1);  // the error alone, no info line before it

  // Too many candidates: refused before any work, one line.
  const auto many = cli::run("sweep " + sweep + " --max-candidates 10 --out " + fresh_dir("many"));
  CHECK(many.status == 2);
  CHECK(many.err == "stepsim: error: --max-candidates: the sweep has more than 10 candidates; narrow the axes, split it with --shard I/N, "
                    "or raise --max-candidates\n");
  CHECK_FALSE(std::filesystem::exists(cli::tmpdir() + "/many"));
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
  // Short column labels, and a legend.
  CHECK(t.out.find("\nA: " + a + "\nB: A + parallel.schedule=interleaved, parallel.vpp=2\n") != std::string::npos);
  CHECK(t.out.find("\nlayout   ") != std::string::npos);
  CHECK(t.out == cli::run("compare " + a + sets).out);

  const auto md = cli::run("compare " + a + " " + a + " --engine analytic --format md");
  REQUIRE(md.status == 0);
  CHECK(md.out.find("| metric |") == 0);
  CHECK(md.out.find("(+0.0 %)") != std::string::npos);

  const auto bad = cli::run("compare " + a + " --set parallel.vpp=3 --set parallel.schedule=interleaved");
  CHECK(bad.status == 2);
  CHECK(bad.err.find("parallel.vpp") != std::string::npos);
}

TEST_CASE("stepsim merge: a file without rows or with a bad complete line exits 2, a cut-off last line warns") {
  const auto dir = cli::empty_dir("merge-bad");
  const std::string row0 = R"({"index":0,"key":"a","status":"ok"})", row1 = R"({"index":1,"key":"b","status":"ok"})";
  const auto garbage = cli::write_file("merge-bad/garbage.jsonl", "garbage\n");
  const auto middle = cli::write_file("merge-bad/middle.jsonl", row0 + "\nnot a row\n" + row1 + "\n");
  const auto last = cli::write_file("merge-bad/last.jsonl", row0 + "\n{\"status\": \"ok\"}\n");
  const auto empty = cli::write_file("merge-bad/empty.jsonl", "");
  struct Case { std::string file; std::string expect; };
  const Case cases[] = {
      {garbage, garbage + ":1: malformed JSON line"},
      {middle, middle + ":2: malformed JSON line"},
      {last, last + ":2: not a sweep row (needs index, key and status)"},
      {empty, empty + ": no results rows in the input"},
      {"/dev/zero", "/dev/zero: is not a regular file (expected a results file)"},
  };
  const auto out_dir = cli::empty_dir("merge-bad-out");
  for (const auto& c : cases) {
    CAPTURE(c.file);
    const auto r = cli::run("merge " + c.file + " --out " + out_dir + "/m.jsonl --summary " + out_dir + "/s.md");
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("stepsim: error: " + c.expect, 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(cli::files_starting(out_dir, "").empty());
  }
  const auto cut = cli::write_file("merge-bad/cut.jsonl", row0 + "\n" + row1 + "\n{\"index\":2,\"ke");
  const auto r = cli::run("merge " + cut);
  CHECK(r.status == 0);
  CHECK(r.out == row0 + "\n" + row1 + "\n");
  CHECK(r.err == "stepsim merge: warning: " + cut + ":3: ignored a last line without newline that is not a row (a write cut short)\n");
}

TEST_CASE("stepsim merge writes the summary and the rows together or not at all") {
  const auto dir = cli::empty_dir("merge-pair");
  const auto rows = cli::write_file("merge-pair-rows.jsonl", R"({"index":0,"key":"a","status":"ok"})" "\n");
  const auto r = cli::run("merge " + rows + " --summary " + dir + "/s.md --out " + dir + "/no-such-dir/m.jsonl");
  CHECK(r.status == 2);
  CHECK(r.err == "stepsim: error: " + dir + "/no-such-dir/m.jsonl: cannot write the output file\n");
  CHECK(cli::files_starting(dir, "").empty());
  CHECK(cli::run("merge " + rows + " --summary " + dir + "/s.md --out " + dir + "/m.jsonl").status == 0);
  CHECK(cli::files_starting(dir, "") == std::vector<std::string>{"m.jsonl", "s.md"});
}

TEST_CASE("stepsim sweep: -j below 1 and an axis naming no field exit 2 with a clear message") {
  const auto sweep = cli::write_file("kill-sweep.json", kKillSweep);
  const auto zero = cli::run("sweep " + sweep + " -j 0 --out " + fresh_dir("j0"));
  CHECK(zero.status == 2);
  CHECK(zero.err == "stepsim: error: -j: must be at least 1, got 0\n");
  CHECK_FALSE(std::filesystem::exists(cli::tmpdir() + "/j0"));
  const auto foo = cli::write_file("foo-sweep.json", R"({"base": {"model": "llama-2-7b", "cluster": {"preset": "dgx-h100", "nodes": 2},
    "training": {"seq_len": 4096, "global_batch": 64}}, "axes": {"foo.bar": [1, 2]}})");
  const auto r = cli::run("sweep " + foo + " --out " + fresh_dir("foo"));
  CHECK(r.status == 2);
  CHECK(r.err == "stepsim: error: axes.foo.bar: unknown key (\"foo\" is not a scenario field)\n");
  const auto dir = cli::run("sweep " + cli::tmpdir() + " --out " + fresh_dir("dir"));
  CHECK(dir.status == 2);
  CHECK(dir.err == "stepsim: error: " + cli::tmpdir() + ": is a directory, not a sweep file\n");
}

TEST_CASE("stepsim sweep: results.jsonl is byte-identical whatever -j") {
  const auto sweep = cli::write_file("kill-sweep.json", kKillSweep);
  const auto one = fresh_dir("j-one");
  const auto three = fresh_dir("j-three");
  REQUIRE(cli::run("sweep " + sweep + " -j 1 -q --out " + one).status == 0);
  REQUIRE(cli::run("sweep " + sweep + " -j 3 -q --out " + three).status == 0);
  const auto rows = cli::slurp(one + "/results.jsonl");
  CHECK(rows == cli::slurp(three + "/results.jsonl"));
  CHECK(rows.rfind("{\"index\":0,", 0) == 0);
  CHECK(cli::files_starting(three, "") == std::vector<std::string>{"results.jsonl", "summary.md"});
}

TEST_CASE("stepsim sweep: a second writer into the same --out is refused while the first runs") {
  const auto dir = cli::empty_dir("sweep-locked");
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);  // stands for a sweep that is running
  const auto sweep = std::string(STEPSIM_SOURCE_DIR) + "/tests/golden/sweep-small.json";
  const auto r = cli::run("sweep " + sweep + " -j 1 -q --out " + dir);
  CHECK(r.status == 2);
  CHECK(r.err == "stepsim: error: " + dir + ": another stepsim sweep is writing into this directory; wait for it or use another --out\n");
  CHECK(cli::files_starting(dir, "results").empty());
  ::close(fd);
  CHECK(cli::run("sweep " + sweep + " -j 1 -q --out " + dir).status == 0);
}
