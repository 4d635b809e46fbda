// `stepsim params`: the scenario parameters as the table of scenarios/params.hpp declares them.
// `--format md` prints the field reference of scenarios/README.md (a test keeps the two equal).

#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "stepsim/report/params_report.hpp"

namespace stepsim::app {

void register_params(CLI::App& app) {
  auto* cmd = app.add_subcommand("params", "the scenario parameters: key, unit, default, range, description, source");
  auto format = std::make_shared<std::string>("md");
  cmd->add_option("--format", *format, "md, csv or json")->check(CLI::IsMember({"md", "csv", "json"}));
  cmd->callback([format]() {
    if (*format == "json") std::cout << report::parameter_json();
    else if (*format == "csv") std::cout << report::to_csv(report::parameter_table());
    else std::cout << report::to_markdown(report::parameter_table());
  });
}

}  // namespace stepsim::app
