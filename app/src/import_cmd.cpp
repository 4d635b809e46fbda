// `stepsim import hf CONFIG.json` and `stepsim import megatron [ARGS...]`: a scenario (or model)
// file from what users already have, with a warning for every setting stepsim does not model.

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/import.hpp"
#include "stepsim/scenarios/load.hpp"

namespace stepsim::app {

namespace {

void print_warnings(const std::string& command, const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::cerr << "stepsim import " << command << ": warning: " << w << "\n";
}

}  // namespace

void register_import(CLI::App& app) {
  auto* cmd = app.add_subcommand("import", "a scenario from a Hugging Face config.json or a Megatron-LM command line");
  cmd->require_subcommand(1);

  auto* hf = cmd->add_subcommand("hf", "a Hugging Face config.json as a stepsim model object (print it, or --out FILE)");
  auto hf_file = std::make_shared<std::string>();
  auto hf_out = std::make_shared<std::string>();
  hf->add_option("config", *hf_file, "config.json of a Llama, Mistral, Qwen2, Qwen3, Gemma, Gemma 3, OLMo 2, GPT-2 or GPT-NeoX model")->required();
  add_out_option(*hf, *hf_out);
  hf->callback([hf_file, hf_out]() {
    const auto imported = scenarios::model_from_hf_config(scenarios::read_input_file(*hf_file, "Hugging Face config"), *hf_file);
    print_warnings("hf", imported.warnings);
    emit(imported.json + "\n", *hf_out);
  });

  auto* mg = cmd->add_subcommand("megatron", "a Megatron-LM pretrain_gpt.py command line as a scenario file: stepsim import megatron "
                                             "[--cluster P] [--nodes N] [--args-file F] [-- --num-layers 32 ...]");
  struct Args {
    std::vector<std::string> args;
    std::string args_file;
    std::string cluster = "dgx-h100";
    std::int64_t nodes = 0;
    std::string out;
  };
  auto a = std::make_shared<Args>();
  mg->add_option("args", a->args, "the arguments of pretrain_gpt.py, after --");
  mg->add_option("--args-file", a->args_file, "a file holding the arguments (a launch script's argument list)");
  mg->add_option("--cluster", a->cluster, "cluster preset of the run (default: dgx-h100)");
  mg->add_option("--nodes", a->nodes, "nodes of the run (default: the fewest that hold TP x CP x PP, with a warning)");
  add_out_option(*mg, a->out);
  mg->callback([a]() {
    std::vector<std::string> args;
    if (!a->args_file.empty()) args = scenarios::split_arguments(scenarios::read_input_file(a->args_file, "arguments file"));
    args.insert(args.end(), a->args.begin(), a->args.end());
    if (args.empty()) throw ScenarioError("import megatron", "no arguments (give them after --, or --args-file FILE)");
    scenarios::MegatronImportOptions o;
    o.cluster = a->cluster;
    if (a->nodes < 0) throw ScenarioError("--nodes", "must be at least 1, got " + std::to_string(a->nodes));
    if (a->nodes > 0) o.nodes = a->nodes;
    const auto imported = scenarios::scenario_from_megatron_args(args, o);
    // The scenario must load: a layout that does not fit the model is an error here, not later.
    (void)scenarios::load_scenario_text(imported.json, {}, "import megatron");
    print_warnings("megatron", imported.warnings);
    emit(imported.json + "\n", a->out);
  });
}

}  // namespace stepsim::app
