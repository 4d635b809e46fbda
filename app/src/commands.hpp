#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "stepsim/report/step_report.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/support/atomic_file.hpp"

namespace stepsim::app {

inline constexpr const char* kVersion = STEPSIM_VERSION;  // project(VERSION) of CMakeLists.txt

// Declares the subcommands on `app`: only the family that declares `only` when `only` names one
// of command_names() (the command line's first word: start-up then builds one command's options,
// not all), else every family.
void register_commands(CLI::App& app, std::string_view only = {});
// Every subcommand's name, in the order of `stepsim --help`.
[[nodiscard]] std::vector<std::string> command_names();

// Command families defined in their own files (app/src/<family>_cmd.cpp).
void register_validate(CLI::App& app);
void register_sweep(CLI::App& app);
void register_report(CLI::App& app);
void register_params(CLI::App& app);
void register_import(CLI::App& app);

// Options shared by commands that read one scenario.
struct ScenarioArgs {
  std::string file;                  // empty: the built-in default scenario
  std::vector<std::string> sets;     // --set key=value
};
void add_scenario_options(CLI::App& cmd, ScenarioArgs& args);
[[nodiscard]] scenarios::Scenario load(const ScenarioArgs& args);
// A scenario file ("-": standard input) or, for an empty name, the built-in default, with overrides.
[[nodiscard]] scenarios::Scenario load_scenario(const std::string& file, const std::vector<scenarios::Override>& overrides);

// "--set key=value" strings as overrides (ScenarioError on a malformed one).
[[nodiscard]] std::vector<scenarios::Override> parse_overrides(const std::vector<std::string>& sets);

// Options several commands share: --format with its choices (the first help word lists them),
// --engine (simgrid, analytic and, when `with_auto`, auto) and --out.
// The --format, --engine and --out values of a command.
struct OutputArgs {
  std::string format = "table";
  std::string engine = "auto";
  std::string out;
};

// A variant: overrides separated by ';' ("parallel.tp=4;parallel.pp=2"); ScenarioError("--variant", ...)
// when it holds none.
[[nodiscard]] std::vector<scenarios::Override> parse_variant(const std::string& variant);
// --variant, repeatable: each a further column of a comparison.
void add_variant_option(CLI::App& cmd, std::vector<std::string>& variants);

// --set, repeatable, taking every following value.
void add_set_option(CLI::App& cmd, std::vector<std::string>& sets, const std::string& help);
void add_format_option(CLI::App& cmd, std::string& format, const std::vector<std::string>& choices, const std::string& help);
void add_engine_option(CLI::App& cmd, std::string& engine, bool with_auto = true);
void add_out_option(CLI::App& cmd, std::string& out, const std::string& help = "write to this file instead of stdout");
// The engine of an --engine value: nullopt for "auto" (driver::simulate chooses).
[[nodiscard]] std::optional<sim::EngineKind> engine_choice(const std::string& engine);

// One line on stderr saying which engine `--engine auto` chose for a run and why (nothing when
// --engine named it).
void note_engine(const std::string& command, const report::StepReport& r);

// Writes `text` to stdout, or to `file` through a temporary file and a rename (no partial file).
void emit(const std::string& text, const std::string& file);

// One output of a command: `text` for `file` (empty or "-": stdout), or, when `write` is set,
// what it streams (a large output such as the Chrome trace, never held in memory).
struct Output {
  Output(std::string file_name, std::string content) : file(std::move(file_name)), text(std::move(content)) {}
  Output(std::string file_name, support::ContentWriter writer) : file(std::move(file_name)), write(std::move(writer)) {}
  std::string file;
  std::string text;
  support::ContentWriter write;
};

// Writes several outputs all or nothing: every file goes to a temporary file next to it, and
// only when every one of them is written are they renamed onto their targets; on any failure the
// temporary files are removed and a ScenarioError names the file that failed. Text for stdout is
// printed after the files are in place.
void emit_all(const std::vector<Output>& outputs);
// The provenance of a CSV written to `out` goes beside it (results.csv -> results.meta.json);
// nothing when `out` is stdout or `meta_json` is empty.
void add_csv_meta(std::vector<Output>& outputs, const std::string& out, const std::string& meta_json);

}  // namespace stepsim::app
