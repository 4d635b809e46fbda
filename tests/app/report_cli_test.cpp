// End-to-end checks of `stepsim report`: formats, files, comparisons, sweeps, errors, and the HTML
// report in a headless browser.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli_util.hpp"

namespace {

const std::string kExample = std::string(STEPSIM_SOURCE_DIR) + "/scenarios/examples/llama31-8b-tsubame.json";

const char* kRows =
    R"({"index":0,"key":"a","status":"ok","reason":null,"model":"llama-3.1-8b","cluster":"dgx-h100","gpu":"h100-sxm-80gb","gpus":8,"tp":2,"cp":1,"pp":1,"dp":4,"vpp":1,"micro_batch":1,"global_batch":128,"seq_len":8192,"schedule":"1f1b","recompute":"none","paper_total_bytes":40000000000,"stepsim_peak_bytes":42000000000,"gpu_memory_bytes":85899345920,"engine":"analytic","step_time_s":10.0,"tokens_per_s":104857.6,"tflops_per_gpu":450.0,"mfu":0.455,"bubble_fraction":0.0,"exposed_comm_fraction":0.05,"peak_memory_bytes":42000000000,"oom":false,"time_to_train_s":null,"gpu_hours":null,"cost_usd":null}
{"index":1,"key":"b","status":"ok","reason":null,"model":"llama-3.1-8b","cluster":"dgx-h100","gpu":"h100-sxm-80gb","gpus":16,"tp":2,"cp":1,"pp":1,"dp":8,"vpp":1,"micro_batch":1,"global_batch":128,"seq_len":8192,"schedule":"1f1b","recompute":"none","paper_total_bytes":40000000000,"stepsim_peak_bytes":42000000000,"gpu_memory_bytes":85899345920,"engine":"analytic","step_time_s":5.3,"tokens_per_s":197844.5,"tflops_per_gpu":425.0,"mfu":0.43,"bubble_fraction":0.0,"exposed_comm_fraction":0.09,"peak_memory_bytes":42000000000,"oom":false,"time_to_train_s":null,"gpu_hours":null,"cost_usd":null}
{"index":2,"key":"c","status":"oom","reason":"stepsim peak over GPU memory","model":"llama-3.1-8b","cluster":"dgx-h100","gpu":"h100-sxm-80gb","gpus":8,"tp":1,"cp":1,"pp":1,"dp":8,"vpp":1,"micro_batch":1,"global_batch":128,"seq_len":8192,"schedule":"1f1b","recompute":"none","paper_total_bytes":90000000000,"stepsim_peak_bytes":95000000000,"gpu_memory_bytes":85899345920,"engine":null,"step_time_s":null}
)";

std::string sweep_dir() {
  static const std::string dir = [] {
    const std::string d = cli::tmpdir() + "/sweep-out";
    std::filesystem::create_directories(d);
    cli::write_file("sweep-out/results.jsonl", kRows);
    return d;
  }();
  return dir;
}

bool have(const std::string& tool) { return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0; }

bool xml_ok(const std::string& file) { return std::system(("xmllint --noout '" + file + "'").c_str()) == 0; }

}  // namespace

TEST_CASE("stepsim report on the default scenario writes a self-contained HTML report and SVG files") {
  const std::string html = cli::tmpdir() + "/default.html";
  const std::string svgs = cli::tmpdir() + "/default-svg";
  const auto r = cli::run("report --format html --out " + html + " --svg-dir " + svgs);
  CHECK(r.status == 0);
  CHECK(r.out.empty());
  const auto text = cli::slurp(html);
  CHECK(text.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(text.find("llama31-70b-dgx-h100-128") != std::string::npos);
  CHECK(text.find("<script") == std::string::npos);
  CHECK(text.find("<link") == std::string::npos);
  CHECK(std::filesystem::exists(svgs + "/memory.svg"));
  CHECK(std::filesystem::exists(svgs + "/gantt.svg"));
  CHECK_FALSE(std::filesystem::exists(html + ".tmp"));
  if (!have("xmllint")) {
    MESSAGE("skipped: xmllint not installed");
    return;
  }
  CHECK(xml_ok(html));
  CHECK(xml_ok(svgs + "/memory.svg"));
  CHECK(xml_ok(svgs + "/gantt.svg"));
}

TEST_CASE("stepsim report formats: md, csv, latex, json, byte-identical on repeat") {
  for (const char* f : {"md", "csv", "latex", "json", "html"}) {
    CAPTURE(f);
    const auto a = cli::run("report " + kExample + " --engine analytic --format " + f);
    const auto b = cli::run("report " + kExample + " --engine analytic --format " + f);
    CHECK(a.status == 0);
    CHECK(a.out == b.out);
    if (std::string(f) != "csv") CHECK(a.out.find("0.1.0") != std::string::npos);  // CSV: in FILE.meta.json
  }
  const auto md = cli::run("report " + kExample + " --engine analytic");
  CHECK(md.out.rfind("stepsim 0.1.0: llama31-8b-tsubame:", 0) == 0);
  CHECK(md.out.find("| step time (s)") != std::string::npos);
  const auto tex = cli::run("report " + kExample + " --engine analytic --format latex");
  CHECK(tex.out.find("\\toprule") != std::string::npos);
  CHECK(tex.out.find("MFU (\\%)") != std::string::npos);
}

TEST_CASE("stepsim report compares 1F1B with interleaved: --compare-set or two files") {
  const auto r = cli::run("report --engine analytic --compare-set parallel.schedule=interleaved --compare-set parallel.vpp=2");
  CHECK(r.status == 0);
  CHECK(r.out.find("A (1f1b)") != std::string::npos);
  CHECK(r.out.find("B (interleaved, vpp 2)") != std::string::npos);
  const auto b = cli::write_file("interleaved.json",
                                 R"({"name": "il", "model": "llama-3.1-70b", "cluster": {"preset": "dgx-h100", "nodes": 16},
  "training": {"seq_len": 8192, "global_batch": 1024}, "parallel": {"tp": 8, "pp": 4, "vpp": 2, "schedule": "interleaved"}})");
  const auto a = cli::write_file("onefoneb.json",
                                 R"({"name": "1f1b", "model": "llama-3.1-70b", "cluster": {"preset": "dgx-h100", "nodes": 16},
  "training": {"seq_len": 8192, "global_batch": 1024}, "parallel": {"tp": 8, "pp": 4}})");
  const std::string svgs = cli::tmpdir() + "/pair-svg";
  const auto two = cli::run("report " + a + " " + b + " --engine analytic --format html --svg-dir " + svgs);
  CHECK(two.status == 0);
  CHECK(two.out.find("stepsim comparison report") != std::string::npos);
  CHECK(std::filesystem::exists(svgs + "/gantt_a.svg"));
  CHECK(std::filesystem::exists(svgs + "/gantt_b.svg"));
}

TEST_CASE("stepsim report reads sweep results from a file or an output directory") {
  const auto dir = sweep_dir();
  const auto a = cli::run("report " + dir + " --format csv");
  const auto b = cli::run("report " + dir + "/results.jsonl --format csv");
  CHECK(a.status == 0);
  CHECK(a.out == b.out);
  CHECK(a.out.rfind("rank,index,key,status,", 0) == 0);  // no comment line before the header
  CHECK(std::count(a.out.begin(), a.out.end(), '\n') == 1 + 3);
  CHECK(a.out.find("\n1,1,b,simulated,") != std::string::npos);  // 16 GPUs first: more tokens/s
  const std::string svgs = cli::tmpdir() + "/sweep-svg";
  const auto h = cli::run("report " + dir + " --format html --svg-dir " + svgs);
  CHECK(h.status == 0);
  CHECK(h.out.find("stepsim sweep report") != std::string::npos);
  for (const char* f : {"throughput.svg", "tflops_per_gpu.svg", "pareto.svg"}) CHECK(std::filesystem::exists(svgs + "/" + f));
}

TEST_CASE("stepsim report: bad input exits 2 with one line naming the problem, no output file") {
  const std::string out = cli::tmpdir() + "/never.md";
  std::filesystem::create_directories(cli::tmpdir() + "/empty-dir");
  const auto bad_rows = cli::write_file("bad.jsonl", std::string(R"({"index":0,"status":"ok"})") + "\n{\"index\": 1,\n");
  struct Case { std::string args; std::string expect; };
  const Case cases[] = {
      {"report /nonexistent.json", "/nonexistent.json: cannot open"},
      {"report " + cli::tmpdir() + "/empty-dir", "must hold results.jsonl"},
      {"report " + bad_rows, "bad.jsonl:2: malformed JSON line"},
      {"report " + kExample + " --format yaml", "format"},
      {"report " + sweep_dir() + " --set parallel.tp=2", "--set: applies to scenario files"},
      {"report " + kExample + " " + kExample + " --compare-set parallel.vpp=2", "--compare-set: give either"},
      {"report " + sweep_dir() + " " + kExample, "sweep results take one input"},
      {"report " + kExample + " --set parallel.tp=3", "parallel.tp"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    cli::check_user_error(cli::run(c.args + " --out " + out), c.expect, out);
  }
}

// One headless Chromium screenshot of `page` into `shot`, with a new profile each time. The shared
// memory flag keeps Chromium off a small /dev/shm (a container's 64 MB), where it can stall.
static bool screenshot(const std::string& dir, const std::string& page, const std::string& shot, int attempt) {
  const std::string profile = dir + "/profile-" + std::to_string(attempt);
  std::filesystem::remove_all(profile);
  std::filesystem::create_directories(profile);
  std::filesystem::remove(shot);
  const std::string cmd =
      "timeout -k 5 45 /usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-quic "
      "--no-first-run --disable-background-networking --disable-component-update --disable-sync --user-data-dir='" +
      profile + "' --screenshot='" + shot + "' --window-size=1200,1600 'file://" + page + "' >>'" + dir + "/log' 2>&1";
  return std::system(cmd.c_str()) == 0 && std::filesystem::exists(shot);
}

TEST_CASE("the HTML report renders in a headless browser") {
  if (!std::filesystem::exists("/usr/bin/chromium")) {
    MESSAGE("skipped: chromium not installed");
    std::cout << "skipped: chromium not installed\n";
    return;
  }
  const std::string dir = cli::tmpdir() + "/browser";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string html = dir + "/report.html";
  const auto r = cli::run("report --engine analytic --compare-set parallel.schedule=interleaved --compare-set parallel.vpp=2 "
                          "--format html --out " + html);
  REQUIRE(r.status == 0);
  const std::string shot = dir + "/shot.png";
  bool rendered = false;
  for (int attempt = 0; attempt < 2 && !rendered; ++attempt) rendered = screenshot(dir, html, shot, attempt);
  if (!rendered) {
    // A browser that cannot render a one-line page either is the machine's problem, not the report's.
    const auto control = cli::write_file("browser/control.html", "<!DOCTYPE html><html><body><p>control</p></body></html>\n");
    if (!screenshot(dir, control, dir + "/control.png", 2)) {
      MESSAGE("skipped: chromium does not render a one-line page here either\n" << cli::slurp(dir + "/log"));
      std::cout << "skipped: chromium does not render a one-line page here\n";
      return;
    }
  }
  CHECK_MESSAGE(rendered, cli::slurp(dir + "/log"));
  REQUIRE(std::filesystem::exists(shot));
  const auto png = cli::slurp(shot);
  CHECK(png.rfind("\x89PNG\r\n\x1a\n", 0) == 0);
  // A blank 1200 x 1600 page compresses to a few kB; the report's tables and charts do not.
  CHECK(png.size() > 30000);
}

TEST_CASE("stepsim report: rows of the wrong type, --top below 0 and numbers beyond double exit 2, writing nothing") {
  const auto dir = cli::empty_dir("report-bad");
  const std::string out = dir + "/never.md";
  const std::string good = R"({"index":0,"key":"a","status":"ok"})";
  struct Case { std::string args; std::string expect; };
  const auto index_x = cli::write_file("index-x.jsonl", R"({"index":"x","key":"a","status":"ok"})" "\n");
  const auto time_abc = cli::write_file("time-abc.jsonl", good + "\n" + R"({"index":1,"key":"b","status":"ok","step_time_s":"abc"})" "\n");
  const auto gpus_neg = cli::write_file("gpus-neg.jsonl", R"({"index":0,"key":"a","status":"ok","gpus":-5})" "\n");
  const auto huge = cli::write_file("huge.jsonl", good + "\n" + R"({"index":1,"key":"b","status":"ok","mfu":1e400})" "\n");
  const Case cases[] = {
      {"report " + index_x, index_x + ":1.index: must be an integer, got a string"},
      {"report " + time_abc, time_abc + ":2.step_time_s: must be a number, got a string"},
      {"report " + gpus_neg, gpus_neg + ":1.gpus: must be at least 1, got -5"},
      {"report " + huge, huge + ":2: unreadable JSON line: number overflow parsing '1e400'"},
      {"report " + sweep_dir() + " --top -1", "--top: must be at least 0 (0: all rows), got -1"},
      {"report /dev/zero", "/dev/zero: is not a regular file (expected a results or scenario file)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto r = cli::run(c.args + " --out " + out + " --svg-dir " + dir + "/svg");
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "stepsim: error: " + c.expect + "\n");
    CHECK(cli::files_starting(dir, "").empty());
  }
}

TEST_CASE("stepsim report: an unwritable --out leaves no SVG file behind") {
  const auto dir = cli::empty_dir("report-svg");
  const auto r = cli::run("report " + sweep_dir() + " --format html --svg-dir " + dir + "/svg --out " + dir + "/no-such-dir/r.html");
  CHECK(r.status == 2);
  CHECK(r.err == "stepsim: error: " + dir + "/no-such-dir/r.html: cannot write the output file\n");
  CHECK(cli::files_starting(dir, "").empty());  // the directory it created is gone too
  std::filesystem::create_directories(dir + "/svg");
  const auto again = cli::run("report " + sweep_dir() + " --svg-dir " + dir + "/svg --out " + dir + "/no-such-dir/r.md");
  CHECK(again.status == 2);
  CHECK(cli::files_starting(dir + "/svg", "").empty());
  const auto ok = cli::run("report " + sweep_dir() + " --svg-dir " + dir + "/svg --out " + dir + "/r.md");
  CHECK(ok.status == 0);
  CHECK(cli::files_starting(dir + "/svg", "") == std::vector<std::string>{"pareto.svg", "tflops_per_gpu.svg", "throughput.svg"});
}

TEST_CASE("stepsim report: a cut-off last line is ignored with a warning, line order does not matter") {
  const std::string rows = kRows;
  const auto cut = cli::write_file("cut.jsonl", rows.substr(0, rows.size() - 30));
  const auto r = cli::run("report " + cut + " --format csv");
  CHECK(r.status == 0);
  CHECK(r.err == "stepsim report: warning: " + cut + ":3: ignored a last line without newline that is not a row (a write cut short)\n");
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1 + 2);  // the header and two rows
  // The rows in reverse order: the same report, byte for byte.
  std::vector<std::string> lines;
  for (std::size_t pos = 0; pos < rows.size();) {
    const auto nl = rows.find('\n', pos);
    lines.push_back(rows.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::string reversed;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) reversed += *it + "\n";
  const auto dir = cli::empty_dir("report-rev");
  cli::write_file("report-rev/results.jsonl", reversed);
  for (const char* format : {"md", "csv", "json", "html"}) {
    CAPTURE(format);
    const auto a = cli::run("report " + sweep_dir() + " --format " + format);
    const auto b = cli::run("report " + dir + " --format " + format);
    CHECK(a.status == 0);
    CHECK(a.out == b.out);
  }
}
