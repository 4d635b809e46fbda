#include "commands.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "stepsim/memory/estimator.hpp"
#include "stepsim/results/memory_report.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"

namespace stepsim::app {

void add_scenario_options(CLI::App& cmd, ScenarioArgs& args) {
  cmd.add_option("scenario", args.file, "scenario JSON file (default: the built-in default scenario)");
  cmd.add_option("--set", args.sets, "override a scenario field, e.g. --set parallel.tp=4")->take_all()->allow_extra_args(false);
}

scenarios::Scenario load(const ScenarioArgs& args) {
  std::vector<scenarios::Override> overrides;
  for (const auto& s : args.sets) overrides.push_back(scenarios::parse_override(s));
  if (args.file.empty()) return scenarios::load_scenario_text(scenarios::default_scenario_text(), overrides, "<default scenario>");
  return scenarios::load_scenario_file(args.file, overrides);
}

void emit(const std::string& text, const std::string& file) {
  if (file.empty() || file == "-") {
    std::cout << text;
    std::cout.flush();
    return;
  }
  const std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw ScenarioError(file, "cannot write the output file");
    out << text;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw ScenarioError(file, "cannot write the output file");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw ScenarioError(file, "cannot write the output file: " + ec.message());
  }
}

namespace {

void register_memory(CLI::App& app) {
  auto* cmd = app.add_subcommand("memory", "memory per GPU: the paper's estimator and stepsim's per-stage breakdown");
  auto args = std::make_shared<ScenarioArgs>();
  auto format = std::make_shared<std::string>("table");
  auto out = std::make_shared<std::string>();
  add_scenario_options(*cmd, *args);
  cmd->add_option("--format", *format, "table or json")->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--out", *out, "write to this file instead of stdout");
  cmd->callback([args, format, out]() {
    const auto s = load(*args);
    const auto paper = memory::paper_estimate(s);
    const auto est = memory::stepsim_estimate(s);
    emit(*format == "json" ? results::memory_json(s, paper, est) : results::memory_table(s, paper, est), *out);
  });
}

}  // namespace

void register_commands(CLI::App& app) {
  register_memory(app);
}

}  // namespace stepsim::app
