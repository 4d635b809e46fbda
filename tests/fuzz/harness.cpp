#include "harness.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <unistd.h>

#include "stepsim/driver/sweep.hpp"
#include "stepsim/report/report.hpp"

#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/scenarios/sweep.hpp"

namespace stepsim::fuzz {

namespace {

// Larger enumerations are the sweep's own business (bounded by its candidate limit), not the parser's.
constexpr double kMaxFuzzCombinations = 2000;

}  // namespace

void scenario_text(const std::string& text) {
  try {
    (void)scenarios::load_scenario_text(text, {}, "<fuzz>");
  } catch (const ScenarioError&) {
  }
}

void sweep_text(const std::string& text) {
  try {
    const auto spec = scenarios::parse_sweep_text(text, "<fuzz>");
    double combinations = 1;
    for (const auto& axis : spec.axes) combinations *= axis.automatic ? 8.0 : static_cast<double>(axis.values_json.size());
    if (combinations <= kMaxFuzzCombinations) (void)scenarios::enumerate(spec);
  } catch (const ScenarioError&) {
  }
}

void set_lines(const std::string& text) {
  try {
    std::vector<scenarios::Override> overrides;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) overrides.push_back(scenarios::parse_override(line));
    (void)scenarios::load_scenario_text(scenarios::default_scenario_text(), overrides, "<fuzz>");
  } catch (const ScenarioError&) {
  }
}

void results_rows(const std::string& text) {
  try {
    report::SweepResultsReader reader("<fuzz>");
    for (const auto& line : report::row_lines(text)) reader.add_line(line.text, line.number, line.terminated);
    report::ReportOptions options;
    options.format = report::ReportFormat::Markdown;
    (void)report::sweep_report(reader.finish(), options);
  } catch (const ScenarioError&) {
  }
  // The file twice: every row is repeated, runs of a few rows each are merged.
  static const std::string file = (std::filesystem::temp_directory_path() / ("stepsim-fuzz-rows." + std::to_string(::getpid()))).string();
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
  }
  try {
    driver::Ranking ranking;
    driver::SortOptions o;
    o.chunk_bytes = 4096;
    o.check_coverage = true;
    std::ostringstream sink;
    (void)driver::sort_rows({file, file}, sink, [&ranking](const driver::SweepRow& r) { ranking.add(r); }, o);
    (void)ranking.markdown({"# fuzz"});
  } catch (const ScenarioError&) {
  }
}

Harness harness_named(const std::string& name) {
  if (name == "scenario") return &scenario_text;
  if (name == "sweep") return &sweep_text;
  if (name == "set") return &set_lines;
  if (name == "rows") return &results_rows;
  return nullptr;
}

}  // namespace stepsim::fuzz
