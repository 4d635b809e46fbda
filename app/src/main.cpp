// The stepsim command line. Errors become one line on stderr and an exit status:
// 2 for bad input (scenario, arguments), 3 for an internal error or running out of memory.

#include <cstdio>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/support/out_of_memory.hpp"

int main(int argc, char** argv) {
  CLI::App app{"stepsim: simulate one step of 4D-parallel LLM training on a modeled GPU cluster"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(stepsim::app::kVersion));
  stepsim::app::register_commands(app);
  // An unknown first word is named, not answered with CLI11's "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      found = found || sub->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::cerr << "stepsim: error: unknown command '" << argv[1] << "' (expected one of " << known << ")\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "stepsim: error: " << e.what() << "\n";
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
