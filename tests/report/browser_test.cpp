// The HTML reports in a real headless browser (Debian's chromium): every chart renders (not
// blank), no text leaves its chart or runs into other text, and no chart is wider than its block.
// The long step of the check is Llama 3.1 405B on 16 stages with 256 micro-batches.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "../common/scratch.hpp"

#include "stepsim/driver/simulate.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/scenarios/load.hpp"

using namespace stepsim;
using namespace stepsim::report;

namespace {

constexpr const char* kChromium = "/usr/bin/chromium";

using test_support::slurp;

ReportOptions html_options() {
  ReportOptions o;
  o.version = "test";
  o.format = ReportFormat::Html;
  return o;
}

// Measures every <svg> of the page once it has loaded and writes the result, as JSON, into a
// <pre id="stepsim-check"> that --dump-dom prints: the chart's size, the texts whose box leaves
// the chart, pairs of texts whose boxes overlap by more than a pixel each way, the fraction of
// non-white pixels of the chart drawn on a canvas, and blocks that hold a chart wider than themselves.
constexpr const char* kCheckScript = R"JS(
<script>
(async () => {
  const charts = [];
  for (const svg of document.querySelectorAll('svg')) {
    const r = svg.getBoundingClientRect();
    const first = svg.querySelector('text');
    const res = {title: first ? first.textContent : '', width: r.width, height: r.height, outside: [], overlaps: [], ink: 0};
    const boxes = [];
    for (const t of svg.querySelectorAll('text')) {
      const b = t.getBoundingClientRect();
      if (b.width === 0) continue;
      if (b.left < r.left - 0.5 || b.right > r.right + 0.5 || b.top < r.top - 0.5 || b.bottom > r.bottom + 0.5)
        res.outside.push(t.textContent);
      boxes.push([b, t.textContent]);
    }
    for (let a = 0; a < boxes.length; ++a)
      for (let c = a + 1; c < boxes.length; ++c) {
        const p = boxes[a][0], q = boxes[c][0];
        const ox = Math.min(p.right, q.right) - Math.max(p.left, q.left);
        const oy = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
        if (ox > 1 && oy > 1) res.overlaps.push(boxes[a][1] + ' | ' + boxes[c][1]);
      }
    const w = Math.round(svg.viewBox.baseVal.width), h = Math.round(svg.viewBox.baseVal.height);
    const img = new Image();
    await new Promise((ok, fail) => {
      img.onload = ok;
      img.onerror = fail;
      img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(new XMLSerializer().serializeToString(svg));
    });
    const canvas = document.createElement('canvas');
    canvas.width = w;
    canvas.height = h;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const d = ctx.getImageData(0, 0, w, h).data;
    let ink = 0;
    for (let k = 0; k < d.length; k += 4)
      if (d[k] < 240 || d[k + 1] < 240 || d[k + 2] < 240) ++ink;
    res.ink = ink / (w * h);
    charts.push(res);
  }
  const wide = [];
  for (const b of document.querySelectorAll('div.block'))
    if (b.querySelector('svg') && b.scrollWidth > b.clientWidth + 1) wide.push(b.scrollWidth + ' > ' + b.clientWidth);
  const pre = document.createElement('pre');
  pre.id = 'stepsim-check';
  pre.textContent = JSON.stringify({charts: charts, wide_blocks: wide});
  document.body.appendChild(pre);
})();
</script>
)JS";

// The page with the check script, rendered by chromium; the parsed measurements.
nlohmann::json measure(const std::string& name, const std::string& html) {
  const std::string dir = test_support::scratch_dir("browser").string();
  std::string text = html;
  const auto body_end = text.rfind("</body>");
  REQUIRE(body_end != std::string::npos);
  text.insert(body_end, kCheckScript);
  const std::string page = test_support::scratch_file("browser", name + ".html", text);
  std::filesystem::create_directories(dir + "/profile-" + name);
  const std::string cmd = std::string("timeout 120 ") + kChromium +
                          " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
                          " --disable-component-update --disable-sync --user-data-dir='" + dir + "/profile-" + name +
                          "' --window-size=1280,1000 --virtual-time-budget=30000 --dump-dom 'file://" + page + "' >'" + dir +
                          "/" + name + ".dom' 2>'" + dir + "/" + name + ".log'";
  const int status = std::system(cmd.c_str());
  REQUIRE_MESSAGE(status == 0, slurp(dir + "/" + name + ".log"));
  const auto dom = slurp(dir + "/" + name + ".dom");
  const std::string open = "<pre id=\"stepsim-check\">";
  const auto a = dom.find(open);
  REQUIRE_MESSAGE(a != std::string::npos, "no measurements in the page: " << slurp(dir + "/" + name + ".log"));
  const auto b = dom.find("</pre>", a);
  REQUIRE(b != std::string::npos);
  std::string json = dom.substr(a + open.size(), b - a - open.size());
  // The DOM serializer escapes &, < and > in text.
  for (const auto& [entity, ch] : {std::pair<std::string, std::string>{"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}})
    for (auto p = json.find(entity); p != std::string::npos; p = json.find(entity, p + ch.size())) json.replace(p, entity.size(), ch);
  return nlohmann::json::parse(json);
}

void check_charts(const nlohmann::json& m, std::size_t expected_charts) {
  CHECK(m.at("charts").size() == expected_charts);
  for (const auto& c : m.at("charts")) {
    CAPTURE(c.at("title").get<std::string>());
    CHECK(c.at("width").get<double>() > 100);
    CHECK(c.at("height").get<double>() > 100);
    // Axes, grid and data: a blank chart has only its white background.
    CHECK(c.at("ink").get<double>() > 0.01);
    CHECK_MESSAGE(c.at("outside").empty(), c.at("outside").dump());
    CHECK_MESSAGE(c.at("overlaps").empty(), c.at("overlaps").dump());
  }
  CHECK_MESSAGE(m.at("wide_blocks").empty(), m.at("wide_blocks").dump());
}

ScenarioRun llama405b(const std::string& label, const std::vector<scenarios::Override>& extra = {}) {
  // 1,024 GPUs: TP8 PP16 DP8, so each data-parallel rank takes 2048 / 8 = 256 micro-batches.
  std::vector<scenarios::Override> ov = {{"cluster.nodes", "128"}};
  ov.insert(ov.end(), extra.begin(), extra.end());
  auto s = scenarios::load_scenario_file(std::string(STEPSIM_SOURCE_DIR) + "/scenarios/examples/llama31-405b/meta-h100-8192gpu-tp8-pp16-vp8.json", ov);
  driver::SimulateOptions so;
  so.engine = sim::EngineKind::Analytic;
  auto sim = driver::simulate(s, so);
  return ScenarioRun{label, s, std::move(sim)};
}

bool have_chromium() {
  if (std::filesystem::exists(kChromium)) return true;
  MESSAGE("skipped: chromium not installed");
  std::cout << "skipped: chromium not installed\n";
  return false;
}

}  // namespace

TEST_CASE("browser: the report of a 405B step on 16 stages with 256 micro-batches is legible") {
  std::vector<ScenarioRun> runs;
  runs.push_back(llama405b("405B"));
  REQUIRE(runs[0].simulation.step.graph.devices.size() == 16);
  const auto out = scenario_report(runs, html_options());
  // Memory, the whole step and three zoomed windows in which micro-batches carry their numbers.
  REQUIRE(out.svgs.size() == 5);
  CHECK(out.svgs[2].name == "gantt_warmup.svg");
  CHECK(out.svgs[3].name == "gantt_steadystate.svg");
  CHECK(out.svgs[4].name == "gantt_cooldown.svg");
  CHECK(out.svgs[2].text.find(">255</text>") == std::string::npos);
  CHECK(out.svgs[2].text.find("font-size=\"9\" text-anchor=\"middle\" fill=\"#1a1a1a\">0</text>") != std::string::npos);
  CHECK(out.svgs[4].text.find("font-size=\"9\" text-anchor=\"middle\" fill=\"#1a1a1a\">255</text>") != std::string::npos);
  if (!have_chromium()) return;
  check_charts(measure("llama405b", out.text), 5);
}

TEST_CASE("browser: a comparison with stages out of memory, side by side, is legible") {
  std::vector<ScenarioRun> runs;
  runs.push_back(llama405b("A (16 stages, 256 micro-batches)"));
  runs.push_back(llama405b("B (micro-batch 4, 64 micro-batches)", {{"training.micro_batch", "4"}}));
  REQUIRE(runs[1].simulation.report.oom);
  const auto out = scenario_report(runs, html_options());
  if (!have_chromium()) return;
  check_charts(measure("compare405b", out.text), out.svgs.size());
}

TEST_CASE("browser: the sweep report (throughput, TFLOP/s per GPU, Pareto front) is legible") {
  const auto sweep = parse_sweep_results(slurp(std::string(STEPSIM_SOURCE_DIR) + "/tests/golden/sweep-small/results.jsonl"),
                                         "results.jsonl");
  const auto out = sweep_report(sweep, html_options());
  if (!have_chromium()) return;
  check_charts(measure("sweep", out.text), 3);
}
