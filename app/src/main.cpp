// The stepsim command line. Errors become one line on stderr and an exit status:
// 2 for bad input (scenario, arguments), 3 for an internal error or running out of memory.

#include <cstdio>
#include <iostream>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/support/heap.hpp"
#include "stepsim/support/out_of_memory.hpp"

namespace {

// Text after `prefix` in `text`, or nullopt.
std::optional<std::string> after(const std::string& text, const std::string& prefix) {
  if (text.rfind(prefix, 0) != 0) return std::nullopt;
  return text.substr(prefix.size());
}

// CLI11's message of a command-line error as the usual one line "FIELD: reason".
std::string cli_error_line(const CLI::ParseError& e, const std::string& command) {
  const std::string what = e.what();
  const std::string help = " (see stepsim " + (command.empty() ? std::string() : command + " ") + "--help)";
  if (const auto rest = after(what, "The following argument was not expected: "))
    return *rest + ": unexpected argument" + help;
  if (const auto rest = after(what, "The following arguments were not expected: "))
    return *rest + ": unexpected arguments" + help;
  if (const auto rest = after(what, "Could not convert: ")) {
    const auto eq = rest->find(" = ");
    if (eq != std::string::npos) return rest->substr(0, eq) + ": '" + rest->substr(eq + 3) + "' is not a valid value" + help;
  }
  const auto colon = what.find(": ");
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr && colon != std::string::npos) {
    // IsMember: "--format: x not in {table,json}".
    std::string reason = what.substr(colon + 2);
    const auto not_in = reason.find(" not in {");
    if (not_in != std::string::npos && reason.back() == '}') {
      std::string choices = reason.substr(not_in + 9, reason.size() - not_in - 10);
      for (std::size_t c = choices.find(','); c != std::string::npos; c = choices.find(',', c + 2)) choices.replace(c, 1, ", ");
      reason = "'" + reason.substr(0, not_in) + "' is not one of " + choices;
    }
    return what.substr(0, colon) + ": " + reason;
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && colon != std::string::npos)
    return what.substr(0, colon) + ": needs a value" + help;
  if (const auto pos = what.find(" is required"); dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && pos != std::string::npos)
    return what.substr(0, pos) + ": is required" + help;
  if (const auto pos = what.find(" requires "); dynamic_cast<const CLI::RequiresError*>(&e) != nullptr && pos != std::string::npos)
    return what.substr(0, pos) + ": needs " + what.substr(pos + 10);
  if (const auto pos = what.find(" excludes "); dynamic_cast<const CLI::ExcludesError*>(&e) != nullptr && pos != std::string::npos)
    return what.substr(0, pos) + ": cannot be combined with " + what.substr(pos + 10);
  return what + help;
}

}  // namespace

int main(int argc, char** argv) {
  stepsim::support::reserve_huge_page_heap(stepsim::support::kDefaultHeapPadBytes);
  CLI::App app{"stepsim: simulate one step of 4D-parallel LLM training on a modeled GPU cluster"};
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", std::string(stepsim::app::kVersion));
  // An unknown first word is named, not answered with CLI11's "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const auto& name : stepsim::app::command_names()) {
      found = found || name == argv[1];
      known += (known.empty() ? "" : ", ") + name;
    }
    if (!found) {
      std::cerr << "stepsim: error: unknown command '" << argv[1] << "' (expected one of " << known << ")\n";
      return 2;
    }
  }
  stepsim::app::register_commands(app, argc > 1 ? std::string_view(argv[1]) : std::string_view());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string command;
    for (const auto* sub : app.get_subcommands()) command = sub->get_name();
    std::cerr << "stepsim: error: " << cli_error_line(e, command) << "\n";
    return 2;
  } catch (const stepsim::ScenarioError& e) {
    std::cerr << "stepsim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    stepsim::support::report_out_of_memory("stepsim: error: ");
    return stepsim::support::kOutOfMemoryExitCode;
  } catch (const stepsim::InternalError& e) {
    std::cerr << "stepsim: internal error: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "stepsim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
