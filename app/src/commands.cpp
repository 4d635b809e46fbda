#include "commands.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "stepsim/driver/simulate.hpp"
#include "stepsim/memory/estimator.hpp"
#include "stepsim/report/kernel_report.hpp"
#include "stepsim/report/memory_report.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/support/atomic_file.hpp"
#include "stepsim/support/gzip_stream.hpp"
#include "stepsim/support/out_of_memory.hpp"

namespace stepsim::app {

void add_scenario_options(CLI::App& cmd, ScenarioArgs& args) {
  cmd.add_option("scenario", args.file, "scenario JSON file, - for standard input (default: the built-in default scenario)");
  add_set_option(cmd, args.sets, "override a scenario field, e.g. --set parallel.tp=4");
}

std::vector<scenarios::Override> parse_overrides(const std::vector<std::string>& sets) {
  std::vector<scenarios::Override> out;
  for (const auto& s : sets) out.push_back(scenarios::parse_override(s));
  return out;
}

std::vector<scenarios::Override> parse_variant(const std::string& variant) {
  std::vector<std::string> sets;
  std::size_t start = 0;
  while (start <= variant.size()) {
    const auto semi = variant.find(';', start);
    const std::string one = variant.substr(start, semi == std::string::npos ? std::string::npos : semi - start);
    if (one.find_first_not_of(' ') != std::string::npos) sets.push_back(one.substr(one.find_first_not_of(' ')));
    if (semi == std::string::npos) break;
    start = semi + 1;
  }
  if (sets.empty()) throw ScenarioError("--variant", "expected key=value overrides separated by ';', got \"" + variant + "\"");
  return parse_overrides(sets);
}

void add_variant_option(CLI::App& cmd, std::vector<std::string>& variants) {
  cmd.add_option("--variant", variants,
                 "a further column: the scenario with these overrides, ';'-separated (--variant 'parallel.tp=4;parallel.pp=2'); "
                 "repeatable; columns A (the scenario), B, C, ...")
      ->default_str("");
}

void add_set_option(CLI::App& cmd, std::vector<std::string>& sets, const std::string& help) {
  cmd.add_option("--set", sets, help)->take_all()->allow_extra_args(false)->default_str("");
}

void add_format_option(CLI::App& cmd, std::string& format, const std::vector<std::string>& choices, const std::string& help) {
  cmd.add_option("--format", format, help)->check(CLI::IsMember(choices));
}

void add_engine_option(CLI::App& cmd, std::string& engine, bool with_auto) {
  if (with_auto)
    cmd.add_option("--engine", engine, "simgrid, analytic, or auto (simgrid up to 1,024 GPUs)")
        ->check(CLI::IsMember({"auto", "simgrid", "analytic"}));
  else
    cmd.add_option("--engine", engine, "analytic (default, fast) or simgrid")->check(CLI::IsMember({"analytic", "simgrid"}));
}

void add_out_option(CLI::App& cmd, std::string& out, const std::string& help) { cmd.add_option("--out", out, help); }

void note_engine(const std::string& command, const report::StepReport& r) {
  if (!r.engine_reason.empty()) std::cerr << "stepsim " << command << ": --engine auto chose " << r.engine << ": " << r.engine_reason << "\n";
}

std::optional<sim::EngineKind> engine_choice(const std::string& engine) {
  if (engine == "simgrid") return sim::EngineKind::SimGrid;
  if (engine == "analytic") return sim::EngineKind::Analytic;
  return std::nullopt;
}

scenarios::Scenario load_scenario(const std::string& file, const std::vector<scenarios::Override>& overrides) {
  if (file.empty()) return scenarios::load_default_scenario(overrides);
  return scenarios::load_scenario_file(file, overrides);
}

scenarios::Scenario load(const ScenarioArgs& args) { return load_scenario(args.file, parse_overrides(args.sets)); }

void emit(const std::string& text, const std::string& file) { emit_all({Output{file, text}}); }

void emit_all(const std::vector<Output>& outputs) {
  const auto to_stdout = [](const Output& o) { return o.file.empty() || o.file == "-"; };
  std::vector<support::FileText> files;
  for (const auto& o : outputs)
    if (!to_stdout(o)) files.push_back(o.write ? support::FileText(o.file, o.write) : support::FileText(o.file, o.text));
  if (const auto failure = support::write_files_atomically(files)) {
    using Reason = support::WriteFailure::Reason;
    switch (failure->reason) {
      case Reason::NamedTwice: throw ScenarioError(failure->file, "is named for two outputs");
      case Reason::CannotWrite: throw ScenarioError(failure->file, "cannot write the output file");
      case Reason::IsDirectory: throw ScenarioError(failure->file, "is a directory, cannot write the output file");
      case Reason::CannotRename: throw ScenarioError(failure->file, "cannot write the output file: " + failure->detail);
    }
  }
  for (const auto& o : outputs)
    if (to_stdout(o)) {
      if (o.write) o.write(std::cout);
      else std::cout << o.text;
    }
  std::cout.flush();
}

namespace {

void register_memory(CLI::App& app) {
  auto* cmd = app.add_subcommand("memory", "memory per GPU: the paper's estimator and stepsim's per-stage breakdown");
  auto args = std::make_shared<ScenarioArgs>();
  auto format = std::make_shared<std::string>("table");
  auto out = std::make_shared<std::string>();
  add_scenario_options(*cmd, *args);
  add_format_option(*cmd, *format, {"table", "json"}, "table or json");
  add_out_option(*cmd, *out);
  cmd->callback([args, format, out]() {
    const auto s = load(*args);
    const auto paper = memory::paper_estimate(s);
    const auto est = memory::stepsim_estimate(s);
    emit(*format == "json" ? report::memory_json(s, paper, est) : report::memory_table(s, paper, est), *out);
  });
}

void register_kernels(CLI::App& app) {
  auto* cmd = app.add_subcommand("kernels", "the kernels of one rank as the cost model prices them: shape, FLOPs, bytes, time, what bounds it");
  auto args = std::make_shared<ScenarioArgs>();
  auto format = std::make_shared<std::string>("table");
  auto out = std::make_shared<std::string>();
  auto stage = std::make_shared<std::int64_t>(0);
  add_scenario_options(*cmd, *args);
  add_format_option(*cmd, *format, {"table", "md", "csv", "json"}, "table, md, csv or json");
  add_out_option(*cmd, *out);
  cmd->add_option("--stage", *stage, "pipeline stage whose rank is shown (0 is the first)");
  cmd->callback([args, format, out, stage]() {
    const auto s = load(*args);
    const auto r = report::kernel_report(s, *stage);
    emit(*format == "json" ? report::kernel_json(r)
         : *format == "csv" ? report::kernel_csv(r)
         : *format == "md"  ? report::kernel_markdown(r)
                            : report::kernel_text(r),
         *out);
  });
}

void register_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "simulate one training step: time, throughput, MFU, bubble, memory over time, OOM point");
  auto args = std::make_shared<ScenarioArgs>();
  auto format = std::make_shared<std::string>("table");
  auto out = std::make_shared<std::string>();
  auto trace = std::make_shared<std::string>();
  auto engine = std::make_shared<std::string>("auto");
  auto granularity = std::make_shared<std::string>("chunk");
  add_scenario_options(*cmd, *args);
  add_engine_option(*cmd, *engine);
  add_format_option(*cmd, *format, {"table", "json"}, "table or json");
  add_out_option(*cmd, *out, "write the report to this file instead of stdout");
  cmd->add_option("--trace", *trace,
                  "write a Chrome trace-event JSON file, gzipped when it ends in .gz (open in Perfetto; at most " +
                      std::to_string(static_cast<long long>(driver::kMaxTraceEvents)) + " events, estimated before the run)");
  auto timeline = std::make_shared<bool>(false);
  cmd->add_flag("--memory-timeline", *timeline, "with --format json: each stage's memory over the step ([time_s, bytes] points)");
  cmd->add_option("--granularity", *granularity, "ops per pass: chunk (layer groups) or layer")
      ->check(CLI::IsMember({"chunk", "layer"}));
  cmd->callback([=]() {
    if (*timeline && *format != "json") throw ScenarioError("--memory-timeline", "goes with --format json");
    const auto s = load(*args);
    driver::SimulateOptions so;
    so.engine = engine_choice(*engine);
    so.per_layer = *granularity == "layer";
    if (!trace->empty()) driver::check_trace_size(s, so.per_layer);
    const auto sim = driver::simulate(s, so);
    note_engine("run", sim.report);
    const std::string text =
        *format == "json" ? report::report_json(s, sim.report, *timeline ? &sim.timeline : nullptr) : report::report_table(sim.report);
    std::vector<Output> outputs;
    if (!trace->empty())
      outputs.emplace_back(*trace, [&s, &sim, gzip = support::gzip_file_name(*trace)](std::ostream& o) {
        const support::Activity doing("writing the Chrome trace");
        if (!gzip) return report::write_chrome_trace(o, s, sim.step.graph, sim.trace, sim.timeline);
        support::GzipOstream z(o);
        report::write_chrome_trace(z, s, sim.step.graph, sim.trace, sim.timeline);
        z.finish();
      });
    outputs.push_back({*out, text});
    emit_all(outputs);
  });
}

// --memory-budget-gib on every command that simulates: the budget of each simulation of the
// process (sweep workers inherit it).
void add_memory_budget_option(CLI::App& app) {
  for (const char* name : {"run", "report", "compare", "sweep"}) {
    const auto found = app.get_subcommands([&](const CLI::App* sub) { return sub->get_name() == name; });
    if (found.empty()) continue;  // not registered (register_commands' `only`)
    auto* cmd = found.front();
    cmd->add_option_function<double>(
           "--memory-budget-gib",
           [](double gib) {
             if (!(gib > 0) || gib > 1e6)
               throw ScenarioError("--memory-budget-gib", "must be a number of GiB above 0 and at most 1,000,000");
             driver::set_memory_budget_bytes(static_cast<std::int64_t>(gib * static_cast<double>(std::int64_t{1} << 30)));
           },
           "memory one simulation may take, in GiB (default " + std::to_string(driver::kDefaultMemoryBudgetBytes >> 30) +
               "): a larger run is refused before it starts")
        ->trigger_on_parse();
  }
}

}  // namespace

namespace {

struct CommandFamily {
  std::vector<std::string_view> names;  // the subcommands that `add` declares
  void (*add)(CLI::App&);
};

const std::vector<CommandFamily>& command_families() {
  static const std::vector<CommandFamily> families = {
      {{"memory"}, register_memory},
      {{"run"}, register_run},
      {{"kernels"}, register_kernels},
      {{"report"}, register_report},
      {{"sweep", "merge", "compare"}, register_sweep},
      {{"validate", "calibrate"}, register_validate},
      {{"params"}, register_params},
      {{"import"}, register_import},
  };
  return families;
}

}  // namespace

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  for (const auto& family : command_families())
    for (const auto name : family.names) names.emplace_back(name);
  return names;
}

void register_commands(CLI::App& app, std::string_view only) {
  const auto& families = command_families();
  const auto named = std::find_if(families.begin(), families.end(), [&](const CommandFamily& f) {
    return std::find(f.names.begin(), f.names.end(), only) != f.names.end();
  });
  if (named != families.end()) {
    named->add(app);
  } else {
    for (const auto& family : families) family.add(app);
  }
  add_memory_budget_option(app);
}

void add_csv_meta(std::vector<Output>& outputs, const std::string& out, const std::string& meta_json) {
  if (!meta_json.empty() && !out.empty() && out != "-")
    outputs.emplace_back(std::filesystem::path(out).replace_extension(".meta.json").string(), meta_json);
}

}  // namespace stepsim::app
