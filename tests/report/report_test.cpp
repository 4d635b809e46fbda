// Report writers: tables (Markdown, CSV, LaTeX), SVG plots, the HTML report and the Chrome trace.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "../common/scratch.hpp"

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/driver/simulate.hpp"
#include "stepsim/report/format.hpp"
#include "stepsim/report/html.hpp"
#include "stepsim/report/metrics.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/report/svg.hpp"
#include "stepsim/report/tables.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"

using namespace stepsim;
using namespace stepsim::report;
using namespace stepsim::driver;

namespace {

std::string write_file(const std::string& name, const std::string& text) {
  return test_support::scratch_file("report", name, text);
}

bool have_xmllint() { return std::system("command -v xmllint >/dev/null 2>&1") == 0; }

// Runs `xmllint --noout` on `text`; true when the document is well-formed.
bool well_formed(const std::string& name, const std::string& text) {
  const auto f = write_file(name, text);
  return std::system(("xmllint --noout '" + f + "' 2>'" + f + ".err'").c_str()) == 0;
}

std::size_t count_lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

// A small sweep: three runnable layouts on two GPU counts, one pruned by memory, one out of
// memory in simulation, one error, and a SimGrid refinement of candidate 0.
const char* kSweep =
    R"({"index":0,"key":"tp=8 pp=4","status":"ok","reason":null,"scenario":{},"summary":"s0","model":"llama-3.1-70b","cluster":"dgx-h100","gpu":"h100-sxm-80gb","gpus":128,"tp":8,"cp":1,"pp":4,"dp":4,"vpp":1,"micro_batch":1,"global_batch":1024,"seq_len":8192,"schedule":"1f1b","recompute":"none","paper_total_bytes":60000000000,"stepsim_peak_bytes":52000000000,"gpu_memory_bytes":85899345920,"engine":"analytic","step_time_s":60.0,"tokens_per_s":139810.1,"tflops_per_gpu":480.5,"mfu":0.486,"bubble_fraction":0.09,"exposed_comm_fraction":0.15,"peak_memory_bytes":52000000000,"oom":false,"time_to_train_s":107000.0,"gpu_hours":3804.4,"cost_usd":7608.9}
{"index":1,"key":"tp=8 pp=8","status":"ok","reason":null,"scenario":{},"summary":"s1","model":"llama-3.1-70b","cluster":"dgx-h100","gpu":"h100-sxm-80gb","gpus":128,"tp":8,"cp":1,"pp":8,"dp":2,"vpp":1,"micro_batch":1,"global_batch":1024,"seq_len":8192,"schedule":"1f1b","recompute":"none","paper_total_bytes":40000000000,"stepsim_peak_bytes":36000000000,"gpu_memory_bytes":85899345920,"engine":"analytic","step_time_s":66.0,"tokens_per_s":127100.2,"tflops_per_gpu":436.8,"mfu":0.441,"bubble_fraction":0.12,"exposed_comm_fraction":0.1,"peak_memory_bytes":36000000000,"oom":false,"time_to_train_s":117700.0,"gpu_hours":4184.9,"cost_usd":8369.8}
{"index":2,"key":"tp=8 pp=4 dp=2","status":"ok","reason":null,"scenario":{},"summary":"s2","model":"llama-3.1-70b","cluster":"dgx-h100","gpu":"h100-sxm-80gb","gpus":64,"tp":8,"cp":1,"pp":4,"dp":2,"vpp":2,"micro_batch":1,"global_batch":1024,"seq_len":8192,"schedule":"interleaved","recompute":"selective","paper_total_bytes":60000000000,"stepsim_peak_bytes":55000000000,"gpu_memory_bytes":85899345920,"engine":"analytic","step_time_s":115.0,"tokens_per_s":72944.4,"tflops_per_gpu":501.0,"mfu":0.507,"bubble_fraction":0.05,"exposed_comm_fraction":0.08,"peak_memory_bytes":55000000000,"oom":false,"time_to_train_s":205600.0,"gpu_hours":3655.1,"cost_usd":7310.2}
{"index":3,"key":"tp=4 pp=2","status":"oom","reason":"stepsim peak 120.0 GiB > 80.0 GiB","scenario":{},"summary":"s3","model":"llama-3.1-70b","cluster":"dgx-h100","gpu":"h100-sxm-80gb","gpus":64,"tp":4,"cp":1,"pp":2,"dp":8,"vpp":1,"micro_batch":1,"global_batch":1024,"seq_len":8192,"schedule":"1f1b","recompute":"none","paper_total_bytes":150000000000,"stepsim_peak_bytes":128000000000,"gpu_memory_bytes":85899345920,"engine":null,"step_time_s":null,"tokens_per_s":null,"tflops_per_gpu":null,"mfu":null,"bubble_fraction":null,"exposed_comm_fraction":null,"peak_memory_bytes":null,"oom":null,"time_to_train_s":null,"gpu_hours":null,"cost_usd":null}
{"index":4,"key":"tp=8 pp=2","status":"ok","reason":null,"scenario":{},"summary":"s4","model":"llama-3.1-70b","cluster":"dgx-h100","gpu":"h100-sxm-80gb","gpus":64,"tp":8,"cp":1,"pp":2,"dp":4,"vpp":1,"micro_batch":1,"global_batch":1024,"seq_len":8192,"schedule":"1f1b","recompute":"none","paper_total_bytes":70000000000,"stepsim_peak_bytes":79000000000,"gpu_memory_bytes":85899345920,"engine":"analytic","step_time_s":120.0,"tokens_per_s":69905.1,"tflops_per_gpu":480.0,"mfu":0.485,"bubble_fraction":0.05,"exposed_comm_fraction":0.1,"peak_memory_bytes":90000000000,"oom":true,"time_to_train_s":214500.0,"gpu_hours":3813.3,"cost_usd":7626.7}
{"index":5,"key":"tp=8 cp=2 pp=4","status":"error","reason":"cp_comm: unsupported","scenario":{},"summary":"s5","model":"llama-3.1-70b","cluster":"dgx-h100","gpu":"h100-sxm-80gb","gpus":128,"tp":8,"cp":2,"pp":4,"dp":2,"vpp":1,"micro_batch":1,"global_batch":1024,"seq_len":8192,"schedule":"1f1b","recompute":"none","paper_total_bytes":null,"stepsim_peak_bytes":null,"gpu_memory_bytes":null,"engine":null,"step_time_s":null}
{"index":0,"key":"tp=8 pp=4 engine=simgrid","status":"ok","reason":null,"scenario":{},"summary":"s0","model":"llama-3.1-70b","cluster":"dgx-h100","gpu":"h100-sxm-80gb","gpus":128,"tp":8,"cp":1,"pp":4,"dp":4,"vpp":1,"micro_batch":1,"global_batch":1024,"seq_len":8192,"schedule":"1f1b","recompute":"none","paper_total_bytes":60000000000,"stepsim_peak_bytes":52000000000,"gpu_memory_bytes":85899345920,"engine":"simgrid","step_time_s":62.0,"tokens_per_s":135300.1,"tflops_per_gpu":465.0,"mfu":0.47,"bubble_fraction":0.09,"exposed_comm_fraction":0.16,"peak_memory_bytes":52000000000,"oom":false,"time_to_train_s":110800.0,"gpu_hours":3939.6,"cost_usd":7879.2}
)";

ReportOptions opts(ReportFormat f) {
  ReportOptions o;
  o.version = "0.1.0";
  o.format = f;
  return o;
}

std::vector<ScenarioRun> tsubame_run(const std::vector<scenarios::Override>& ov = {}) {
  auto s = scenarios::load_scenario_file(std::string(STEPSIM_SOURCE_DIR) + "/scenarios/examples/llama31-8b-tsubame.json", ov);
  SimulateOptions so;
  so.engine = sim::EngineKind::Analytic;
  auto simulation = simulate(s, so);
  std::vector<ScenarioRun> runs;
  runs.push_back(ScenarioRun{s.name, s, std::move(simulation)});
  return runs;
}

std::vector<ScenarioRun> schedule_pair() {
  std::vector<ScenarioRun> runs;
  SimulateOptions so;
  so.engine = sim::EngineKind::Analytic;
  const std::vector<std::vector<scenarios::Override>> sets = {
      {}, {{"parallel.schedule", "interleaved"}, {"parallel.vpp", "2"}}};
  const char* labels[] = {"A (1f1b)", "B (interleaved, vpp 2)"};
  for (std::size_t i = 0; i < 2; ++i) {
    auto s = scenarios::load_scenario_text(scenarios::default_scenario_text(), sets[i], "<default scenario>");
    auto simulation = simulate(s, so);
    runs.push_back(ScenarioRun{labels[i], s, std::move(simulation)});
  }
  return runs;
}

Table sample_table() {
  Table t;
  t.caption = "Layouts_with 100% fits & more";
  t.columns = {"layout", "tokens/s", "note"};
  t.right_aligned = {false, true, false};
  t.rows = {{"TP8 PP4", "133207", "a, \"quoted\" | piped"}, {"TP4 PP8", "99", "$x_1$ #2 {y}"}};
  return t;
}

}  // namespace

TEST_CASE("LaTeX tables have booktabs rules and escape special characters") {
  const auto tex = to_latex(sample_table());
  CHECK(count_of(tex, "\\toprule") == 1);
  CHECK(count_of(tex, "\\midrule") == 1);
  CHECK(count_of(tex, "\\bottomrule") == 1);
  CHECK(tex.find("\\begin{tabular}{lrl}") != std::string::npos);
  CHECK(tex.find("\\caption{Layouts\\_with 100\\% fits \\& more}") != std::string::npos);
  CHECK(tex.find("\\$x\\_1\\$ \\#2 \\{y\\}") != std::string::npos);
  CHECK(tex.find("TP8 PP4 & 133207 & a, \"quoted\" \\textbar{} piped \\\\") != std::string::npos);
  CHECK(latex_escape("a\\b~c^d") == "a\\textbackslash{}b\\textasciitilde{}c\\textasciicircum{}d");
}

TEST_CASE("CSV has a header line and one line per row, quoting where needed") {
  const auto csv = to_csv(sample_table());
  CHECK(count_lines(csv) == 3);
  CHECK(csv.rfind("layout,tokens/s,note\n", 0) == 0);
  CHECK(csv.find("TP8 PP4,133207,\"a, \"\"quoted\"\" | piped\"\n") != std::string::npos);
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("x\ny") == "\"x\ny\"");
}

TEST_CASE("Markdown tables: caption, header, alignment row, one line per row, equal pipes") {
  const auto md = to_markdown(sample_table());
  CHECK(md.rfind("**Layouts_with 100% fits & more**\n\n", 0) == 0);
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(md);
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '|') lines.push_back(line);
  REQUIRE(lines.size() == 4);
  // Escaped pipes inside cells do not count as separators.
  auto separators = [](const std::string& l) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < l.size(); ++i)
      if (l[i] == '|' && (i == 0 || l[i - 1] != '\\')) ++n;
    return n;
  };
  for (const auto& l : lines) CHECK(separators(l) == 4);
  CHECK(lines[1] == "| ------- | -------: | -------------------- |");
  for (const auto& l : lines) CHECK(l.size() == lines[0].size());
  CHECK(lines[2].find("a, \"quoted\" \\| piped") != std::string::npos);
}

TEST_CASE("xml_escape escapes markup characters") {
  CHECK(xml_escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST_CASE("axis ticks are nice numbers, short numbers are compact") {
  auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] != doctest::Approx(b[i])) return false;
    return true;
  };
  CHECK(same(axis_ticks(0, 62.97, false), {0, 20, 40, 60}));
  CHECK(same(axis_ticks(0, 1.3, false), {0, 0.5, 1.0}));
  CHECK(same(axis_ticks(3, 9, false), {3, 4, 5, 6, 7, 8, 9}));
  CHECK(axis_ticks(10, 10000, true) == std::vector<double>{10, 100, 1000, 10000});
  CHECK(axis_ticks(10, 100, true) == std::vector<double>{10, 20, 50, 100});
  CHECK(axis_ticks(5e4, 2e6, true) == std::vector<double>{5e4, 1e5, 2e5, 5e5, 1e6, 2e6});  // 1.6 decades
  CHECK(short_number(133207) == "133.21k");
  CHECK(short_number(2500000) == "2.5M");
  CHECK(short_number(64) == "64");
  CHECK(short_number(0.25) == "0.25");
  CHECK(short_number(0) == "0");
}

TEST_CASE("sweep results: detection, parsing, refined rows, ranking") {
  CHECK(looks_like_sweep_results(kSweep));
  CHECK_FALSE(looks_like_sweep_results(scenarios::default_scenario_text()));
  CHECK_FALSE(looks_like_sweep_results(R"({"name": "x", "model": "llama-3.1-8b"})"));
  const auto s = parse_sweep_results(kSweep, "/some/dir/results.jsonl");
  CHECK(s.source == "results.jsonl");
  REQUIRE(s.rows.size() == 6);
  CHECK(s.rows[0].engine == "simgrid");  // the refinement replaced the analytic row
  CHECK(s.rows[0].step_time_s == doctest::Approx(62.0));
  CHECK_FALSE(s.rows[3].simulated());
  CHECK(s.rows[4].oom);
  const auto order = ranked_rows(s);
  // Runnable by tokens/s, then simulated but out of memory (4), pruned (3), error (5).
  CHECK(order == std::vector<std::size_t>{0, 1, 2, 4, 3, 5});
  auto swapped = s;
  std::swap(swapped.rows[0].tokens_per_s, swapped.rows[2].tokens_per_s);
  CHECK(ranked_rows(swapped) == std::vector<std::size_t>{2, 1, 0, 4, 3, 5});
}

TEST_CASE("sweep results: bad lines name the file and line") {
  try {
    (void)parse_sweep_results("{\"status\":\"ok\",\"index\":0}\n{\"status\": \n", "r.jsonl");
    FAIL("no exception");
  } catch (const ScenarioError& e) {
    CHECK(std::string(e.what()).rfind("r.jsonl:2: malformed JSON line", 0) == 0);
  }
  try {
    (void)parse_sweep_results("{\"status\":\"maybe\"}\n", "r.jsonl");
    FAIL("no exception");
  } catch (const ScenarioError& e) {
    CHECK(std::string(e.what()) == "r.jsonl:1.status: unknown status 'maybe' (simulated, pruned or error)");
  }
  CHECK_THROWS_AS(parse_sweep_results("\n\n", "empty.jsonl"), ScenarioError);
  CHECK_THROWS_WITH_AS((void)parse_report_format("yaml"), "--format: unknown format 'yaml' (md, csv, latex, html or json)",
                       ScenarioError);
}

TEST_CASE("sweep results: the order of the lines does not change the report") {
  std::vector<std::string> lines;
  std::istringstream in(kSweep);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string reversed;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) reversed += *it + "\n";
  const auto a = parse_sweep_results(kSweep, "results.jsonl");
  const auto b = parse_sweep_results(reversed, "results.jsonl");
  REQUIRE(b.rows.size() == 6);
  CHECK(b.rows[0].engine == "simgrid");  // the refinement still replaces the analytic row
  for (const auto f : {ReportFormat::Markdown, ReportFormat::Csv, ReportFormat::Latex, ReportFormat::Json, ReportFormat::Html}) {
    const auto ra = sweep_report(a, opts(f));
    const auto rb = sweep_report(b, opts(f));
    CHECK(ra.text == rb.text);
    REQUIRE(ra.svgs.size() == rb.svgs.size());
    for (std::size_t i = 0; i < ra.svgs.size(); ++i) CHECK(ra.svgs[i].text == rb.svgs[i].text);
  }
}

TEST_CASE("sweep results: wrong types are errors, a cut-off last line is ignored and noted") {
  CHECK_THROWS_WITH_AS(parse_sweep_results("{\"status\":\"ok\",\"index\":\"x\"}\n", "r.jsonl"),
                       "r.jsonl:1.index: must be an integer, got a string", ScenarioError);
  CHECK_THROWS_WITH_AS(parse_sweep_results("{\"status\":\"ok\",\"step_time_s\":\"abc\"}\n", "r.jsonl"),
                       "r.jsonl:1.step_time_s: must be a number, got a string", ScenarioError);
  CHECK_THROWS_WITH_AS(parse_sweep_results("{\"status\":\"ok\",\"gpus\":-5}\n", "r.jsonl"), "r.jsonl:1.gpus: must be at least 1, got -5",
                       ScenarioError);
  CHECK_THROWS_WITH_AS(parse_sweep_results("{\"status\":\"ok\",\"mfu\":1e400}\n", "r.jsonl"),
                       "r.jsonl:1: unreadable JSON line: number overflow parsing '1e400'", ScenarioError);
  const std::string text = kSweep;
  const auto cut = parse_sweep_results(text.substr(0, text.size() - 40), "r.jsonl");  // the refined row cut off
  CHECK(cut.truncated_line == 7);
  REQUIRE(cut.rows.size() == 6);
  CHECK(cut.rows[0].engine == "analytic");
  CHECK(parse_sweep_results(kSweep, "r.jsonl").truncated_line == 0);
  // A cut-off line is only forgiven at the end and after a row.
  CHECK_THROWS_AS(parse_sweep_results("{\"status\":", "r.jsonl"), ScenarioError);
}

TEST_CASE("sweep results: many rows in any order, refined twice, in CSV blocks and streamed JSON") {
  // 9,000 candidates (more than two of the CSV writer's blocks of rows) of two sweeps, the lines
  // in a scrambled order; candidate 7 of sweep "a" refined twice (the last refinement is kept),
  // candidate 8 of sweep "b" has a second analytic row (the first is kept).
  const auto line = [](const std::string& sweep, std::int64_t index, const std::string& engine, double tokens_per_s) {
    nlohmann::ordered_json j;
    j["index"] = index;
    j["key"] = "k" + std::to_string(index) + (engine == "simgrid" ? " engine=simgrid" : "");
    j["sweep"] = sweep;
    j["status"] = "simulated";
    j["gpus"] = 8;
    j["engine"] = engine;
    j["step_time_s"] = 1e6 / tokens_per_s;
    j["tokens_per_s"] = tokens_per_s;
    j["oom"] = false;
    return j.dump();
  };
  std::vector<std::string> lines;
  constexpr std::int64_t kPerSweep = 4500;
  for (const std::string sweep : {"a", "b"})
    for (std::int64_t i = 0; i < kPerSweep; ++i) lines.push_back(line(sweep, i, "analytic", 1000.0 + static_cast<double>((i * 7919) % 4500)));
  lines.push_back(line("a", 7, "simgrid", 50.0));
  lines.push_back(line("a", 7, "simgrid", 60.0));
  lines.push_back(line("b", 8, "analytic", 70.0));
  // A scramble with long permutation cycles: line i goes to place (i x 4099) mod n (4099 is prime).
  std::vector<std::string> scrambled(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) scrambled[(i * 4099) % lines.size()] = lines[i];
  REQUIRE(std::set<std::string>(scrambled.begin(), scrambled.end()).size() == lines.size());
  std::string text;
  for (const auto& l : scrambled) text += l + "\n";
  const auto s = parse_sweep_results(text, "results.jsonl");
  REQUIRE(s.rows.size() == 2 * kPerSweep);
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    CHECK(s.rows[i].sweep == (i < kPerSweep ? "a" : "b"));
    CHECK(s.rows[i].index == static_cast<std::int64_t>(i % kPerSweep));
  }
  // Told the file's size (or a wrong one), the reader sizes its array of rows ahead: the same rows.
  for (const std::uintmax_t bytes : {std::uintmax_t{text.size()}, std::uintmax_t{100}, std::uintmax_t{text.size() * 3}}) {
    SweepResultsReader reader("results.jsonl", bytes);
    std::int64_t number = 0;
    for (const auto& l : scrambled) reader.add_line(l, ++number, true);
    const auto sized = reader.finish();
    REQUIRE(sized.rows.size() == s.rows.size());
    for (std::size_t i = 0; i < s.rows.size(); i += 97) CHECK(sized.rows[i].key == s.rows[i].key);
  }
  // Of two refinements with the same key, the one later in the file.
  const auto at = [&scrambled](const std::string& l) { return std::find(scrambled.begin(), scrambled.end(), l) - scrambled.begin(); };
  const double refined = at(lines[2 * kPerSweep]) > at(lines[2 * kPerSweep + 1]) ? 50.0 : 60.0;
  CHECK(s.rows[7].engine == "simgrid");
  CHECK(s.rows[7].tokens_per_s == doctest::Approx(refined));
  CHECK(s.rows[kPerSweep + 8].tokens_per_s == doctest::Approx(1000.0 + (8 * 7919) % 4500));

  // CSV: one header line, then every row once in rank order across the writer's blocks.
  const auto csv = sweep_report(s, opts(ReportFormat::Csv)).text;
  CHECK(count_lines(csv) == 1 + s.rows.size());
  CHECK(count_of(csv, "rank,index,key,") == 1);
  std::istringstream in(csv);
  std::string row;
  std::getline(in, row);
  for (std::size_t rank = 1; std::getline(in, row); ++rank) CHECK(row.rfind(std::to_string(rank) + ",", 0) == 0);
  auto some = opts(ReportFormat::Csv);
  some.columns = {"rank", "tokens_per_s"};
  const auto picked = sweep_report(s, some).text;
  CHECK(count_lines(picked) == 1 + s.rows.size());
  CHECK(picked.rfind("rank,tokens_per_s\n1,5499.0\n", 0) == 0);

  // JSON: the document, row by row, is what nlohmann writes for the whole of it.
  const auto json = sweep_report(s, opts(ReportFormat::Json)).text;
  const auto doc = nlohmann::ordered_json::parse(json);
  CHECK(json == doc.dump(2) + "\n");
  REQUIRE(doc["rows"].size() == s.rows.size());
  CHECK(doc["rows"][0]["rank"] == 1);
  CHECK(doc["rows"].back()["tokens_per_s"] == refined);
}

TEST_CASE("sweep report tables: md, csv, latex, json, deterministic") {
  const auto s = parse_sweep_results(kSweep, "results.jsonl");
  const auto md = sweep_report(s, opts(ReportFormat::Markdown)).text;
  CHECK(md.rfind("stepsim 0.1.0: sweep results.jsonl: 6 candidates, 3 runnable, 2 out of memory (1 pruned by the memory "
                 "estimate, 1 in simulation), 1 errors; model llama-3.1-70b; cluster dgx-h100; 64-128 GPUs\n",
                 0) == 0);
  CHECK(md.find("**All 6 candidates by tokens/s**") != std::string::npos);
  CHECK(md.find("| out of memory: pruned by the memory estimate |          1 |") != std::string::npos);
  CHECK(md.find("| OOM (estimate)") != std::string::npos);
  CHECK(md.find(" 135,300 |") != std::string::npos);
  CHECK(md == sweep_report(s, opts(ReportFormat::Markdown)).text);

  auto top2 = opts(ReportFormat::Markdown);
  top2.top = 2;
  const auto md2 = sweep_report(s, top2).text;
  CHECK(md2.find("**Top 2 of 6 candidates by tokens/s**") != std::string::npos);
  CHECK(md2.find("72944") == std::string::npos);

  const auto csv = sweep_report(s, opts(ReportFormat::Csv)).text;
  CHECK(csv.rfind("rank,index,key,status,reason,model,", 0) == 0);  // the header first, no comment line
  CHECK(count_lines(csv) == 1 + 6);
  CHECK(csv.find("\n1,0,tp=8 pp=4 engine=simgrid,simulated,,llama-3.1-70b,dgx-h100,h100-sxm-80gb,128,8,1,p2p,,4,4,1,1,1024,8192,1f1b,"
                 "none,simgrid,62.0,135300.1,") != std::string::npos);
  CHECK(sweep_report(s, opts(ReportFormat::Csv)).meta_json.find("\"generator\": \"stepsim 0.1.0\"") != std::string::npos);

  const auto tex = sweep_report(s, opts(ReportFormat::Latex)).text;
  CHECK(count_of(tex, "\\toprule") == 2);
  CHECK(count_of(tex, "\\bottomrule") == 2);
  CHECK(tex.find("MFU \\%") != std::string::npos);
  CHECK(tex.find("\\caption{All 6 candidates by tokens/s}") != std::string::npos);  // the provenance: the first comment line
  CHECK(tex.rfind("% stepsim 0.1.0: sweep results.jsonl", 0) == 0);

  const auto json = sweep_report(s, opts(ReportFormat::Json)).text;
  CHECK(json.find("\"stepsim_version\": \"0.1.0\"") != std::string::npos);
  CHECK(json.find("\"oom_pruned\": 1") != std::string::npos);
  CHECK(json == sweep_report(s, opts(ReportFormat::Json)).text);
}

TEST_CASE("sweep plots: throughput per GPU count and the Pareto front") {
  const auto s = parse_sweep_results(kSweep, "results.jsonl");
  const auto out = sweep_report(s, opts(ReportFormat::Html));
  REQUIRE(out.svgs.size() == 3);
  CHECK(out.svgs[0].name == "throughput.svg");
  CHECK(out.svgs[1].name == "tflops_per_gpu.svg");
  CHECK(out.svgs[2].name == "pareto.svg");
  const auto& thr = out.svgs[0].text;
  CHECK(thr.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(count_of(thr, "<polyline") == 2);  // one series: llama-3.1-70b on dgx-h100, and its ideal scaling
  CHECK(count_of(thr, "<circle") == 2 + 1);  // GPU counts 64 and 128, plus the legend marker
  CHECK(thr.find("llama-3.1-70b on dgx-h100") != std::string::npos);
  const auto& par = out.svgs[2].text;
  CHECK(par.find("Time to train vs cost") != std::string::npos);
  // Runnable rows: (7879, 30.8 h), (8370, 32.7 h), (7310, 57.1 h): the front is 7310 and 7879.
  CHECK(count_of(par, "stroke=\"#000000\" stroke-width=\"1.5\"/>") == 2 + 1);  // front points + legend
  CHECK(par.find("64 GPUs TP8 CP1 PP4 DP2 VPP2, interleaved, mb 1, recompute selective") != std::string::npos);
  CHECK(par.find("128 GPUs TP8 CP1 PP4 DP4, ") != std::string::npos);
  CHECK(par.find("128 GPUs TP8 CP1 PP8 DP2") == std::string::npos);
  CHECK(out.text.find("<h2>Throughput vs GPU count</h2>") != std::string::npos);
  CHECK(out.text.find("<h2>Time vs cost</h2>") != std::string::npos);
  CHECK(count_of(out.text, "<svg ") == 3);
  CHECK(out.text.find("<script") == std::string::npos);
  CHECK(out.text.find("http://") == out.text.find("http://www.w3.org"));
}

TEST_CASE("scenario report: summary table, memory plot, Gantt chart, deterministic") {
  const auto runs = tsubame_run();
  const auto md = scenario_report(runs, opts(ReportFormat::Markdown)).text;
  CHECK(md.rfind("stepsim 0.1.0: llama31-8b-tsubame: llama-3.1-8b on 1 x 4 h100-sxm-94gb", 0) == 0);
  CHECK(md.find("| step time (s)") != std::string::npos);
  CHECK(md.find("| out of memory             |") != std::string::npos);
  CHECK(md == scenario_report(tsubame_run(), opts(ReportFormat::Markdown)).text);
  const auto csv = scenario_report(runs, opts(ReportFormat::Csv)).text;
  const std::size_t stages = runs[0].simulation.report.stages.size();
  CHECK(csv.rfind("label,model,cluster,gpu,gpus,tp,", 0) == 0);
  CHECK(csv.find("\nllama31-8b-tsubame,llama-3.1-8b,") != std::string::npos);
  CHECK(count_lines(csv) == 1 + stages);  // the header, one row per stage
  const auto json = scenario_report(runs, opts(ReportFormat::Json)).text;
  CHECK(json.find("\"kind\": \"scenario\"") != std::string::npos);
  CHECK(json.find("\"step_time_s\"") != std::string::npos);

  const auto out = scenario_report(runs, opts(ReportFormat::Html));
  // 256 micro-batches: the whole step, then three zoomed windows.
  REQUIRE(out.svgs.size() == 5);
  CHECK(out.svgs[0].name == "memory.svg");
  CHECK(out.svgs[1].name == "gantt.svg");
  CHECK(out.svgs[2].name == "gantt_warmup.svg");
  CHECK(out.svgs[3].name == "gantt_steadystate.svg");
  CHECK(out.svgs[4].name == "gantt_cooldown.svg");
  CHECK(out.text.find("<h2>Pipeline schedule, zoomed</h2>") != std::string::npos);
  CHECK(out.svgs[0].text.find("GPU memory 94.0 GiB") != std::string::npos);
  CHECK(out.svgs[0].text.find("OOM:") == std::string::npos);
  CHECK(out.svgs[1].text.find(">stage 0</text>") != std::string::npos);
  CHECK(out.svgs[1].text.find("fill=\"#4c9be8\"") != std::string::npos);  // forward
  CHECK(out.svgs[1].text.find("fill=\"#f28e2b\"") != std::string::npos);  // backward
  CHECK(out.text.find("<h2>Memory over time</h2>") != std::string::npos);
  CHECK(out.text.find("<h2>Pipeline schedule</h2>") != std::string::npos);
  CHECK(out.text == scenario_report(tsubame_run(), opts(ReportFormat::Html)).text);
}

TEST_CASE("memory plot marks the OOM point") {
  const auto runs = tsubame_run({{"training.micro_batch", "4"}});
  REQUIRE(runs[0].simulation.report.oom);
  const auto plot = memory_plot(runs[0].simulation.step.graph, runs[0].simulation.timeline,
                                runs[0].simulation.report.step_time_s, "t");
  // Every device whose timeline goes above its capacity is marked, in device order.
  const auto& tl = runs[0].simulation.timeline;
  std::vector<std::size_t> expected;
  for (std::size_t d = 0; d < tl.devices.size(); ++d) {
    bool over = tl.devices[d].static_bytes > tl.devices[d].capacity_bytes;
    for (const auto& p : tl.devices[d].points) over = over || p.bytes > tl.devices[d].capacity_bytes;
    if (over) expected.push_back(d);
  }
  REQUIRE(!expected.empty());
  REQUIRE(plot.over_capacity.size() == expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    CHECK(plot.over_capacity[k].series == expected[k]);
    CHECK(plot.over_capacity[k].bytes > plot.capacity_bytes);
    CHECK(plot.over_capacity[k].peak_over_bytes ==
          tl.devices[expected[k]].peak_bytes - tl.devices[expected[k]].capacity_bytes);
  }
  CHECK(plot.over_capacity.front().time_s == doctest::Approx(tl.oom->time_s));
  const auto svg = memory_svg(plot);
  CHECK(svg.find("Out of memory (OOM) on ") != std::string::npos);
  CHECK(svg.find("stage 0 at ") != std::string::npos);
  CHECK(count_of(svg, "r=\"6\" fill=\"none\"") == expected.size());
}

TEST_CASE("memory plot: every stage over capacity circled, beyond ten stages a ramp and direct labels") {
  MemoryPlot p;
  p.title = "twelve stages";
  p.step_time_s = 10;
  p.capacity_bytes = 80LL << 30;
  for (int i = 0; i < 12; ++i) {
    MemorySeries s;
    s.label = "stage " + std::to_string(i);
    s.static_bytes = 40LL << 30;
    // Stages 0, 1 and 2 go 1 GiB over capacity at 2, 3 and 4 s.
    const std::int64_t peak = i < 3 ? (81LL << 30) : ((60LL + i) << 30);
    s.points = {{1.0, 50LL << 30}, {2.0 + i, peak}, {9.0, 40LL << 30}};
    p.series.push_back(std::move(s));
    if (i < 3) p.over_capacity.push_back({static_cast<std::size_t>(i), 2.0 + i, 81LL << 30, 1LL << 30});
  }
  const auto svg = memory_svg(p);
  CHECK(count_of(svg, "r=\"6\" fill=\"none\"") == 3);
  CHECK(svg.find("Out of memory (OOM) on 3 of 12 stages: stage 0 at 2.000 s (peak +1.00 GiB)") != std::string::npos);
  CHECK(svg.find(">stage 2 (OOM)</text>") != std::string::npos);
  CHECK(svg.find(">stage 3 (OOM)</text>") == std::string::npos);
  // The first and the last of twelve take the two ends of the ramp; each label appears twice
  // (legend and the right edge).
  CHECK(series_colour(0, 12) == "#441a7a");
  CHECK(series_colour(11, 12) == "#c82a2a");
  CHECK(series_colour(0, 10) == "#0072b2");
  CHECK(count_of(svg, ">stage 11</text>") == 2);
  CHECK(count_of(svg, "stroke=\"" + series_colour(5, 12) + "\" stroke-width=\"1.5\"/>") == 1);
}

TEST_CASE("text widths and word wrap") {
  CHECK(text_width_px("ab", 10) == doctest::Approx(12.2));
  CHECK(text_width_px("ab", 10, true) == doctest::Approx(13.42));
  CHECK(text_width_px("W 1", 10) == doctest::Approx(9.2 + 3.2 + 6.4));
  // "aaa bbb" = 6 x 6.1 + 3.2 = 39.8 px fits 45 px; with " ccc" it is 61.3.
  CHECK(wrap_text("aaa bbb ccc", 10, 45) == std::vector<std::string>{"aaa bbb", "ccc"});
  CHECK(wrap_text("", 10, 45) == std::vector<std::string>{""});
  CHECK(wrap_text("unbreakable", 10, 5) == std::vector<std::string>{"unbreakable"});
}

TEST_CASE("Gantt chart: zoomed windows for a long step, numbered micro-batches") {
  GanttPlot p;
  p.title = "long";
  p.rows.push_back({"stage 0", {}});
  for (int i = 0; i < 200; ++i)
    p.rows[0].bars.push_back({0.01 * i, 0.01 * (i + 1), GanttCategory::Forward, i});
  p.makespan_s = 2.0;
  // A 0.01 s bar is 0.01 / 2 x 864 = 4.3 px wide in the whole step: windows of 0.01 x 864 / 16 =
  // 0.54 s at the start, the middle and the end.
  const auto w = gantt_zoom_windows(p, 960);
  REQUIRE(w.size() == 3);
  CHECK(w[0].name == "warm-up");
  CHECK(w[0].start_s == 0);
  CHECK(w[0].end_s == doctest::Approx(0.54));
  CHECK(w[1].start_s == doctest::Approx(0.73));
  CHECK(w[1].end_s == doctest::Approx(1.27));
  CHECK(w[2].start_s == doctest::Approx(1.46));
  CHECK(w[2].end_s == doctest::Approx(2.0));
  const auto whole = gantt_svg(p, 960);
  CHECK(count_of(whole, "font-size=\"9\"") == 0);  // 4.3 px: no room for a number
  const auto first = gantt_window_svg(p, w[0], 960);
  CHECK(first.find("long: warm-up, 0.000 to 0.540 s") != std::string::npos);
  // In the window a bar is 16 px wide: 54 bars (micro-batches 0 to 53), one number in each.
  CHECK(count_of(first, "fill=\"#4c9be8\"/>") == 54 + 1);
  CHECK(count_of(first, "font-size=\"9\"") == 54);
  CHECK(first.find(">53</text>") != std::string::npos);
  CHECK(first.find(">54</text>") == std::string::npos);
  // A short step is legible whole.
  GanttPlot s = p;
  s.rows[0].bars.resize(8);
  s.makespan_s = 0.08;
  CHECK(gantt_zoom_windows(s, 960).empty());
  // Gradient reductions and the optimizer for 1 s after the last pass (sharded gradients): the
  // cool-down still ends with the last pass, 2.0 s, not with the step at 3.0 s.
  GanttPlot tail = p;
  tail.rows[0].bars.push_back({2.0, 2.9, GanttCategory::DpComm, -1});
  tail.rows[0].bars.push_back({2.9, 3.0, GanttCategory::Optimizer, -1});
  tail.makespan_s = 3.0;
  const auto wt = gantt_zoom_windows(tail, 960);
  REQUIRE(wt.size() == 3);
  CHECK(wt[1].start_s == doctest::Approx(1.23));
  CHECK(wt[2].name == "cool-down");
  CHECK(wt[2].start_s == doctest::Approx(1.46));
  CHECK(wt[2].end_s == doctest::Approx(2.0));
  // The last 54 passes (146 to 199): the same chart as the step's without the tail.
  const auto last = gantt_window_svg(tail, wt[2], 960);
  CHECK(count_of(last, "fill=\"#4c9be8\"/>") == 54 + 1);
  CHECK(last == gantt_window_svg(p, w[2], 960));
}

TEST_CASE("throughput on log-log axes with the ideal-scaling line, and one global Pareto front") {
  const auto s = parse_sweep_results(kSweep, "results.jsonl");
  const auto thr = sweep_report(s, opts(ReportFormat::Html)).svgs[0].text;
  CHECK(thr.find("ideal (linear) scaling from the smallest GPU count") != std::string::npos);
  // Two polylines: the ideal line (dashed, first) and the data, both from the 64-GPU point.
  auto points = [&](std::size_t nth) {
    std::size_t at = 0;
    for (std::size_t k = 0; k <= nth; ++k) at = thr.find("points=\"", at) + 8;
    std::istringstream in(thr.substr(at, thr.find('"', at) - at));
    std::vector<std::pair<double, double>> out;
    double x = 0, y = 0;
    char comma = 0;
    while (in >> x >> comma >> y) out.emplace_back(x, y);
    return out;
  };
  const auto ideal = points(0), data = points(1);
  REQUIRE(ideal.size() == 2);
  REQUIRE(data.size() == 2);
  CHECK(thr.find("stroke-dasharray=\"4 3\" stroke-opacity=\"0.8\" points=") != std::string::npos);
  CHECK(ideal[0] == data[0]);
  // Log y from 50k to 200k (1, 2, 5 x 10^k around the data) over 340 px: ideal 2 x 72944.4 =
  // 145888.8 sits 340 / log10(4) x log10(145888.8 / 135300.1) = 18.48 px above the best 128-GPU
  // row (135300.1, SimGrid).
  CHECK(data[1].second - ideal[1].second == doctest::Approx(18.48).epsilon(0.01));
  // Log x: 64 and 128 GPUs, one doubling apart.
  CHECK(ideal[1].first == data[1].first);
  // Per GPU, ideal scaling keeps the 64-GPU rate: a flat line.
  const auto per_gpu = sweep_report(s, opts(ReportFormat::Html)).svgs[1].text;
  CHECK(per_gpu.find("ideal scaling: the per-GPU rate of the smallest GPU count") != std::string::npos);

  // Candidate 1 (cost 8370, 32.7 h) on another cluster: dominated by candidate 0 (7879, 30.8 h)
  // of the first, so one global front keeps 7310 and 7879 only.
  std::string two = kSweep;
  const std::string from = R"({"index":1,"key":"tp=8 pp=8","status":"ok","reason":null,"scenario":{},"summary":"s1","model":"llama-3.1-70b","cluster":"dgx-h100")";
  const auto at = two.find(from);
  REQUIRE(at != std::string::npos);
  two.replace(at + from.size() - 9, 9, "dgx-b200\"");
  const auto par = sweep_report(parse_sweep_results(two, "two.jsonl"), opts(ReportFormat::Html)).svgs[2].text;
  CHECK(par.find("llama-3.1-70b on dgx-b200") != std::string::npos);
  CHECK(count_of(par, "stroke=\"#000000\" stroke-width=\"1.5\"/>") == 2 + 1);  // front points + legend
  CHECK(par.find("1: 64 GPUs TP8 CP1 PP4 DP2 VPP2, interleaved, mb 1, recompute selective") != std::string::npos);
  CHECK(par.find("2: 128 GPUs TP8 CP1 PP4 DP4, ") != std::string::npos);
  CHECK(par.find("3: ") == std::string::npos);
}

TEST_CASE("Gantt chart rows and merged bars") {
  GanttPlot p;
  p.title = "t <&>";
  p.makespan_s = 10;
  p.rows = {{"stage 0",
             {{0, 1, GanttCategory::Forward}, {1, 2, GanttCategory::Forward}, {3, 4, GanttCategory::Backward},
              {0.5, 3, GanttCategory::Comm}, {2.5, 5, GanttCategory::Comm}, {9, 10, GanttCategory::Optimizer}}},
            {"stage 1", {{4, 6, GanttCategory::DpComm}}}};
  const auto svg = gantt_svg(p, 960);
  CHECK(svg.find("t &lt;&amp;&gt;") != std::string::npos);
  // Touching forward bars merge into one; overlapping comm bars merge into one.
  CHECK(count_of(svg, "fill=\"#4c9be8\"/>") == 1 + 1);  // bar + legend
  CHECK(count_of(svg, "fill=\"#e15759\"/>") == 1 + 1);
  CHECK(count_of(svg, "fill=\"#76b7b2\"/>") == 1 + 1);
  CHECK(count_of(svg, ">stage 1</text>") == 1);
  // A shared time axis twice as long halves the width of every bar.
  CHECK(gantt_svg(p, 960, 20) != svg);
}

TEST_CASE("comparison report: two columns and two Gantt charts on one time axis") {
  const auto runs = schedule_pair();
  const auto md = scenario_report(runs, opts(ReportFormat::Markdown)).text;
  CHECK(md.find("| metric                    |") != std::string::npos);
  CHECK(md.find("A (1f1b)") != std::string::npos);
  CHECK(md.find("B (interleaved, vpp 2)") != std::string::npos);
  CHECK(md.find("| schedule                  |") != std::string::npos);
  const auto out = scenario_report(runs, opts(ReportFormat::Html));
  std::vector<std::string> names;
  for (const auto& f : out.svgs) names.push_back(f.name);
  // 256 micro-batches: the zoomed windows follow, the same window of both runs side by side.
  CHECK(names == std::vector<std::string>{"memory_a.svg", "memory_b.svg", "gantt_a.svg", "gantt_b.svg", "gantt_a_warmup.svg",
                                          "gantt_b_warmup.svg", "gantt_a_steadystate.svg", "gantt_b_steadystate.svg",
                                          "gantt_a_cooldown.svg", "gantt_b_cooldown.svg"});
  CHECK(count_of(out.text, "<div class=\"row\">") == 3);
  CHECK(out.svgs[2].text.find("A (1f1b): 1f1b pipeline") != std::string::npos);
  CHECK(out.svgs[3].text.find("B (interleaved, vpp 2): interleaved pipeline") != std::string::npos);
}

TEST_CASE("every SVG and the HTML reports are well-formed XML (xmllint)") {
  if (!have_xmllint()) {
    MESSAGE("skipped: xmllint not installed");
    return;
  }
  const auto sweep = sweep_report(parse_sweep_results(kSweep, "results.jsonl"), opts(ReportFormat::Html));
  const auto scenario = scenario_report(tsubame_run({{"training.micro_batch", "4"}}), opts(ReportFormat::Html));
  const auto pair = scenario_report(schedule_pair(), opts(ReportFormat::Html));
  int n = 0;
  for (const auto* o : {&sweep, &scenario, &pair}) {
    CHECK_MESSAGE(well_formed("report" + std::to_string(n) + ".html", o->text), "report " << n);
    for (const auto& f : o->svgs) CHECK_MESSAGE(well_formed(std::to_string(n) + "_" + f.name, f.text), f.name);
    ++n;
  }
  // An empty sweep chart still renders.
  XYChart empty;
  empty.title = "none";
  empty.log_x = empty.log_y = true;
  CHECK(well_formed("empty.svg", svg_document(xy_svg(empty))));
  CHECK(well_formed("doc.html", html_document("a & b", "<c>", {{"h", "n", {"<p>x</p>"}, true}}, "f")));
}

TEST_CASE("one layout label for scenarios and sweep rows, the metric registry formats every metric") {
  const auto s = scenarios::load_scenario_text(scenarios::default_scenario_text(),
                                               {{"parallel.schedule", "interleaved"}, {"parallel.vpp", "2"}}, "<default>");
  const auto l = layout_of(s);
  CHECK(layout_label(l) == "TP" + std::to_string(l.tp) + " CP" + std::to_string(l.cp) + " PP" + std::to_string(l.pp) + " DP" +
                               std::to_string(l.dp) + " VPP2");
  CHECK(layout_label(l, true) == layout_label(l) + ", interleaved, mb " + std::to_string(l.micro_batch) +
                                     (l.recompute == "none" ? "" : ", recompute " + l.recompute));
  SweepRow r;
  r.tp = 8, r.pp = 4, r.dp = 2, r.schedule = "1f1b", r.micro_batch = 2, r.recompute = "none";
  CHECK(layout_label(layout_of(r), true) == "TP8 CP1 PP4 DP2, 1f1b, mb 2");
  // The CP communication type shows beside CP when it is not the ring, and a row keeps it (rows of
  // older files, without it, read as the ring).
  const auto gathered = scenarios::load_scenario_text(scenarios::default_scenario_text(),
                                                 {{"parallel.cp", "2"}, {"parallel.cp_comm_type", "all_gather"}}, "<default>");
  CHECK(layout_label(layout_of(gathered)) == "TP8 CP2 (all_gather) PP4 DP" + std::to_string(gathered.parallel.dp));
  SweepRow described;
  described.status = "pruned";
  describe_scenario(described, gathered);
  const std::string line = row_line(described, "{}");
  CHECK(line.find("\"cp_comm_type\":\"all_gather\"") != std::string::npos);
  CHECK(parse_row(line).cp_comm_type == "all_gather");
  SweepRow ring;
  ring.status = "pruned";
  describe_scenario(ring, s);
  CHECK(row_line(ring, "{}").find("\"cp_comm_type\":\"p2p\",\"hierarchical_cp_sizes\":null") != std::string::npos);
  CHECK(parse_row(row_line(ring, "{}")).cp_comm_type == "p2p");
  CHECK(parse_row(R"({"status": "pruned", "gpus": 8, "global_batch": 8, "seq_len": 8})").cp_comm_type == "p2p");  // an older file's row
  SweepRow hier;
  hier.status = "pruned", hier.gpus = 8, hier.cp = 8, hier.schedule = "1f1b", hier.cp_comm_type = "a2a+p2p", hier.hierarchical_cp_sizes = {2, 4};
  CHECK(layout_label(layout_of(hier)) == "TP1 CP8 (a2a+p2p 2x4) PP1 DP1");
  describe_scenario(hier, scenarios::load_scenario_text(scenarios::default_scenario_text(),
                                                        {{"parallel.cp", "2"}, {"parallel.cp_comm_type", "a2a+p2p"},
                                                         {"parallel.hierarchical_cp_sizes", "[1, 2]"}},
                                                        "<default>"));
  CHECK(parse_row(row_line(hier, "{}")).hierarchical_cp_sizes == std::vector<std::int64_t>{1, 2});

  std::set<std::string> keys;
  for (const auto& m : step_metrics()) {
    CHECK(keys.insert(m.json_key).second);
    CHECK(&metric(m.json_key) == &m);
  }
  CHECK(value_with_unit(metric("step_time_s"), 1.23456, 4) == "1.2346 s");
  CHECK(value_with_unit(metric("mfu"), 0.396, 1) == "39.6 %");
  CHECK(value_with_unit(metric("peak_memory_bytes"), 64.0 * 1024 * 1024 * 1024, 2) == "64.00 GiB");
  CHECK(value_with_unit(metric("cost_usd"), 14161905.4, 0) == "$14,161,905");
  CHECK(value_with_unit(metric("tokens_per_s"), 122292.4, 0) == "122,292");
  CHECK(value_with_unit(metric("tflops_per_gpu"), 1429.26, 1) == "1,429.3");
  CHECK(value_with_unit(metric("tflops_per_gpu"), -1429.26, 1) == "-1,429.3");
  CHECK(value_with_unit(metric("tflops_per_gpu"), 429.26, 1) == "429.3");
  CHECK(value_with_unit(metric("cost_usd_per_million_tokens"), 1234567.891, 3) == "$1,234,567.891");
  CHECK(value_with_unit(metric("gpu_memory_bytes"), 80.0 * 1024 * 1024 * 1024, 2) == "80.00 GiB");
  CHECK(token_count(15e12) == "15 T");
  CHECK(token_count(1.5e12) == "1.5 T");
  CHECK(token_count(300e9) == "300 B");
  CHECK(token_count(2.5e6) == "2.5 M");
  CHECK(token_count(8192) == "8.192 K");
  CHECK(token_count(512) == "512");
  CHECK(heading(metric("bubble_fraction")) == "bubble (%)");
  CHECK_THROWS_AS((void)metric("nope"), InternalError);
}

TEST_CASE("Chrome trace: pids from 1, a category on every event, names with micro-batch and chunk, a flow per pipeline send") {
  const auto runs = tsubame_run({{"parallel.pp", "2"}, {"parallel.dp", "1"}, {"parallel.schedule", "interleaved"},
                                 {"parallel.vpp", "2"}, {"training.global_batch", "8"}});
  const auto& sim = runs[0].simulation;
  std::ostringstream out;
  write_chrome_trace(out, runs[0].scenario, sim.step.graph, sim.trace, sim.timeline);
  const auto doc = nlohmann::json::parse(out.str());
  CHECK(static_cast<std::int64_t>(doc["traceEvents"].size()) == chrome_trace_events(sim.step.graph, sim.timeline));
  CHECK(static_cast<double>(doc["traceEvents"].size()) <= estimated_trace_events(runs[0].scenario, false));
  std::map<std::int64_t, std::vector<nlohmann::json>> flows;
  std::set<std::string> names;
  for (const auto& e : doc["traceEvents"]) {
    CHECK(e["pid"].get<std::int64_t>() >= 1);
    CHECK(e["pid"].get<std::int64_t>() <= static_cast<std::int64_t>(sim.step.graph.devices.size()));
    REQUIRE(e.contains("cat"));
    CHECK(!e["cat"].get<std::string>().empty());
    if (e["ph"] == "s" || e["ph"] == "f") flows[e["id"].get<std::int64_t>()].push_back(e);
    if (e["ph"] == "X") names.insert(e["name"].get<std::string>());
  }
  // Micro-batch 3 of the second chunk, forward, on some stage.
  CHECK(names.count("fwd mb3 c1") == 1);
  // Every send with a receiver: 2 (stages) x 2 (chunks) x 8 micro-batches x 2 (forward and backward)
  // minus the sends that leave the last virtual stage forward or the first backward: (2 x 2 - 1) x 8 x 2.
  CHECK(flows.size() == 48);
  for (const auto& [id, pair] : flows) {
    REQUIRE(pair.size() == 2);
    CHECK(pair[0]["ph"] == "s");
    CHECK(pair[1]["ph"] == "f");
    CHECK(pair[0]["cat"] == "pp");
    CHECK(pair[0]["pid"] != pair[1]["pid"]);                 // to the other stage
    CHECK(pair[1]["ts"].get<double>() >= pair[0]["ts"].get<double>());  // received after it is sent
  }
}

TEST_CASE("the streamed Chrome trace is the compact JSON of the whole document, event count as counted") {
  const auto runs = tsubame_run();
  const auto& sim = runs[0].simulation;
  std::ostringstream out;
  write_chrome_trace(out, runs[0].scenario, sim.step.graph, sim.trace, sim.timeline);
  const std::string text = out.str();
  // Written event by event, the text is what dumping the parsed document in one piece gives.
  const auto doc = nlohmann::ordered_json::parse(text);
  CHECK(doc.dump() + "\n" == text);
  REQUIRE(doc["traceEvents"].is_array());
  CHECK(static_cast<std::int64_t>(doc["traceEvents"].size()) == chrome_trace_events(sim.step.graph, sim.timeline));
  std::int64_t spans = 0, counters = 0, names = 0;
  for (const auto& e : doc["traceEvents"]) {
    spans += e["ph"] == "X" ? 1 : 0;
    counters += e["ph"] == "C" ? 1 : 0;
    names += e["ph"] == "M" ? 1 : 0;
  }
  std::int64_t delays = 0, points = 0;
  for (const auto& op : sim.step.graph.ops) delays += op.kind == sim::OpKind::Delay ? 1 : 0;
  for (const auto& d : sim.timeline.devices) points += static_cast<std::int64_t>(d.points.size());
  CHECK(spans == static_cast<std::int64_t>(sim.step.graph.ops.size()) - delays);
  CHECK(counters == points);
  CHECK(names == static_cast<std::int64_t>(sim.step.graph.devices.size()) * (1 + sim::kNumStreams));
  CHECK(doc["displayTimeUnit"] == "ms");
  CHECK(doc["otherData"]["scenario"] == runs[0].scenario.name);
  // The estimate made before the run bounds what was written.
  CHECK(static_cast<double>(chrome_trace_events(sim.step.graph, sim.timeline)) <= estimated_trace_events(runs[0].scenario, false));
}

TEST_CASE("the communication section: NCCL's choice, bus bandwidth and exposed time per op label, in the trace too") {
  const auto runs = tsubame_run();
  const auto& sim = runs[0].simulation;
  const auto& r = sim.report;
  REQUIRE_FALSE(r.communication.empty());
  const auto& g = sim.step.graph;
  for (const auto& row : r.communication) {
    CAPTURE(row.label);
    // Recomputed from the ops of the label: S x count x busbw factor over their time.
    double bus_bytes = 0, busy_s = 0;
    std::int64_t ops = 0;
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
      const auto& op = g.ops[i];
      if (op.label != row.label || (op.kind != sim::OpKind::Collective && op.kind != sim::OpKind::SendRecv)) continue;
      ++ops;
      const auto n = static_cast<std::int64_t>(g.groups[static_cast<std::size_t>(op.group)].instances.front().size());
      bus_bytes += op.message_bytes * op.count * costmodel::bus_bandwidth_factor(op.collective, n);
      busy_s += sim.trace.ops[i].end_s - sim.trace.ops[i].start_s;
      if (op.kind == sim::OpKind::Collective && op.collective != sim::Collective::AllToAll)
        CHECK(row.algorithm.find(costmodel::to_string(g.plans[static_cast<std::size_t>(op.plan)].algorithm)) != std::string::npos);
    }
    CHECK(ops == row.ops);
    CHECK(row.bus_bandwidth_Bps == doctest::Approx(busy_s > 0 ? bus_bytes / busy_s : 0.0));
    CHECK(row.exposed_s <= row.time_s + 1e-12);
    CHECK(row.exposed_s >= 0.0);
  }
  // TP collectives inside one node: below the NVLink bandwidth a ring gets (NVLink x nvlink_efficiency).
  const auto tp = std::find_if(r.communication.begin(), r.communication.end(), [](const auto& c) { return c.label.rfind("tp.", 0) == 0; });
  REQUIRE(tp != r.communication.end());
  CHECK(tp->bus_bandwidth_Bps > 0.0);
  CHECK(tp->bus_bandwidth_Bps < runs[0].scenario.cluster.intra_node.bw_Bps * runs[0].scenario.comm.nvlink_efficiency);
  const auto json = nlohmann::json::parse(report_json(runs[0].scenario, r));
  CHECK(json["communication"].size() == r.communication.size());
  CHECK(report_table(r).find("busbw GB/s") != std::string::npos);
  std::ostringstream trace;
  write_chrome_trace(trace, runs[0].scenario, g, sim.trace, sim.timeline);
  CHECK(trace.str().find(R"("algorithm":"ring","protocol":)") != std::string::npos);
}
