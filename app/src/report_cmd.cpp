// `stepsim report`: tables and an HTML report with plots, from sweep results or scenarios.

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "commands.hpp"
#include "stepsim/driver/simulate.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"

namespace stepsim::app {

namespace {

struct ReportArgs {
  std::vector<std::string> inputs;
  std::vector<std::string> sets;
  std::vector<std::string> compare_sets;
  std::vector<std::string> variants;
  std::string format = "md";
  std::string out;
  std::string svg_dir;
  std::string engine = "auto";
  std::int64_t top = 20;
  std::vector<std::string> columns;
};

constexpr const char* kInputKind = "results or scenario file";

// Whether the file's first non-blank line is a results row.
bool is_sweep_results(const std::string& file) {
  bool rows = false;
  scenarios::for_each_input_line(file, kInputKind, [&rows](const std::string& line, std::int64_t, bool) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) return true;
    rows = report::looks_like_sweep_results(line);
    return false;
  });
  return rows;
}

// A results file of any size, read as a stream.
report::SweepResultSet read_sweep_results(const std::string& file) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(file, ec);
  report::SweepResultsReader reader(file, ec ? 0 : bytes);
  scenarios::for_each_input_line(file, kInputKind, [&reader](const std::string& line, std::int64_t number, bool terminated) {
    reader.add_line(line, number, terminated);
    return true;
  });
  return reader.finish();
}

std::string short_label(const std::string& letter, const scenarios::Scenario& s) {
  std::string l = letter + " (" + scenarios::to_string(s.parallel.schedule);
  if (s.parallel.vpp > 1) l += ", vpp " + std::to_string(s.parallel.vpp);
  return l + ")";
}

report::ScenarioRun simulate_run(std::string label, scenarios::Scenario s, const std::string& engine) {
  driver::SimulateOptions so;
  so.engine = engine_choice(engine);
  auto simulation = driver::simulate(s, so);
  note_engine("report", simulation.report);
  return report::ScenarioRun{std::move(label), std::move(s), std::move(simulation)};
}

void run_report(const ReportArgs& a) {
  report::ReportOptions options;
  options.version = kVersion;
  options.format = report::parse_report_format(a.format);
  if (a.top < 0) throw ScenarioError("--top", "must be at least 0 (0: all rows), got " + std::to_string(a.top));
  options.top = static_cast<std::size_t>(a.top);
  for (const auto& c : a.columns) {
    std::size_t start = 0;
    while (start <= c.size()) {
      const auto comma = c.find(',', start);
      const std::string name = c.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!name.empty()) options.columns.push_back(name);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }

  report::ReportOutput output;
  std::string sweep_file;
  if (a.inputs.size() == 1) {
    std::string file = a.inputs.front();
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) {
      const auto inside = (std::filesystem::path(file) / "results.jsonl").string();
      if (!std::filesystem::is_regular_file(inside, ec))
        throw ScenarioError(file, "a directory given as RESULTS must hold results.jsonl (the output of stepsim sweep)");
      file = inside;
    }
    if (is_sweep_results(file)) sweep_file = file;
  } else {
    for (const auto& f : a.inputs) {
      std::error_code ec;
      if (std::filesystem::is_directory(f, ec) || is_sweep_results(f))
        throw ScenarioError(f, "several inputs compare scenario files; sweep results take one input");
    }
  }

  if (!sweep_file.empty()) {
    if (!a.sets.empty()) throw ScenarioError("--set", "applies to scenario files, not to sweep results");
    if (!a.compare_sets.empty()) throw ScenarioError("--compare-set", "applies to scenario files, not to sweep results");
    if (!a.variants.empty()) throw ScenarioError("--variant", "applies to scenario files, not to sweep results");
    const auto sweep = read_sweep_results(sweep_file);
    if (sweep.truncated_line > 0)
      std::cerr << "stepsim report: warning: " << sweep_file << ":" << sweep.truncated_line
                << ": ignored a last line without newline that is not a row (a write cut short)\n";
    output = report::sweep_report(sweep, options);
  } else {
    if (!a.variants.empty() && (a.inputs.size() >= 2 || !a.compare_sets.empty()))
      throw ScenarioError("--variant", "applies to one scenario (or the default), without --compare-set or further files");
    if (a.variants.size() > 25) throw ScenarioError("--variant", "at most 25 variants (columns B to Z)");
    if (a.inputs.size() >= 2 && !a.compare_sets.empty())
      throw ScenarioError("--compare-set", "give either several scenario files or one scenario with --compare-set");
    const auto base = parse_overrides(a.sets);
    const auto load_one = load_scenario;
    std::vector<scenarios::Scenario> scenarios_in;
    if (a.inputs.size() >= 2) {
      for (const auto& f : a.inputs) scenarios_in.push_back(load_one(f, base));
    } else {
      const std::string file = a.inputs.empty() ? std::string() : a.inputs.front();
      scenarios_in.push_back(load_one(file, base));
      if (!a.compare_sets.empty()) {
        auto ov = base;
        for (const auto& o : parse_overrides(a.compare_sets)) ov.push_back(o);
        scenarios_in.push_back(load_one(file, ov));
      }
      for (const auto& v : a.variants) {
        auto ov = base;
        for (const auto& o : parse_variant(v)) ov.push_back(o);
        scenarios_in.push_back(load_one(file, ov));
      }
    }
    std::vector<report::ScenarioRun> runs;
    if (scenarios_in.size() == 1) {
      runs.push_back(simulate_run(scenarios_in[0].name, scenarios_in[0], a.engine));
    } else {
      // Short labels A, B, C, ... (at most 26 inputs).
      for (std::size_t i = 0; i < scenarios_in.size(); ++i)
        runs.push_back(simulate_run(short_label(std::string(1, static_cast<char>('A' + i)), scenarios_in[i]), scenarios_in[i], a.engine));
    }
    output = report::scenario_report(runs, options);
  }

  std::vector<Output> outputs;
  bool created_dir = false;
  if (!a.svg_dir.empty()) {
    std::error_code ec;
    created_dir = !std::filesystem::exists(a.svg_dir, ec);
    std::filesystem::create_directories(a.svg_dir, ec);
    if (ec || !std::filesystem::is_directory(a.svg_dir, ec))
      throw ScenarioError("--svg-dir", "cannot create the directory " + a.svg_dir);
    for (auto& f : output.svgs) outputs.push_back({(std::filesystem::path(a.svg_dir) / f.name).string(), std::move(f.text)});
  }
  outputs.push_back({a.out, std::move(output.text)});
  add_csv_meta(outputs, a.out, output.meta_json);
  try {
    emit_all(outputs);
  } catch (const ScenarioError&) {
    std::error_code ec;
    if (created_dir) std::filesystem::remove(a.svg_dir, ec);  // only when still empty
    throw;
  }
}

}  // namespace

void register_report(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report", "tables (md, csv, latex, json) and an HTML report with plots, from sweep results or scenarios");
  auto a = std::make_shared<ReportArgs>();
  cmd->add_option("results", a->inputs,
                  "sweep results (results.jsonl or the sweep's output directory), or scenario files, compared side by side "
                  "when several (default: the built-in default scenario)")
      ->expected(0, 26);
  add_format_option(*cmd, a->format, {"md", "csv", "latex", "html", "json"}, "md, csv, latex, html or json");
  add_out_option(*cmd, a->out, "write the report to this file instead of stdout");
  cmd->add_option("--svg-dir", a->svg_dir, "also write every plot as an SVG file into this directory");
  add_set_option(*cmd, a->sets, "override a scenario field, e.g. --set parallel.tp=4");
  cmd->add_option("--compare-set", a->compare_sets,
                  "compare the scenario with a copy that has this override, e.g. --compare-set parallel.schedule=interleaved")
      ->take_all()
      ->allow_extra_args(false);
  add_variant_option(*cmd, a->variants);
  add_engine_option(*cmd, a->engine);
  cmd->add_option("--top", a->top, "sweep rows in the md, latex and html tables (0: all)");
  cmd->add_option("--columns", a->columns, "md, csv, latex: the main table's columns, in this order (comma-separated headings)")
      ->default_str("");
  cmd->callback([a]() { run_report(*a); });
}

}  // namespace stepsim::app
