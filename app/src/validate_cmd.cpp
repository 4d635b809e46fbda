// stepsim validate and stepsim calibrate: the model against published measurements, and the fit
// of a GPU type's efficiency parameters to them.

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "stepsim/driver/efficiency_file.hpp"
#include "stepsim/driver/calibrate.hpp"
#include "stepsim/driver/validate.hpp"
#include "stepsim/report/validation_report.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"

namespace stepsim::app {

namespace {

std::vector<std::string> split_commas(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::stringstream ss(item);
    std::string part;
    while (std::getline(ss, part, ','))
      if (!part.empty()) out.push_back(part);
  }
  return out;
}

void register_validate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "validate", "predicted vs published step time and TFLOP/s per GPU: error per case; MAPE, max error, Spearman "
                  "rank correlation and the measured top 5 among the predicted top 8 per set and per table");
  auto sets = std::make_shared<std::vector<std::string>>();
  auto overrides = std::make_shared<std::vector<std::string>>();
  auto params = std::make_shared<std::vector<std::string>>();
  auto gpus = std::make_shared<bool>(false);
  auto cross = std::make_shared<bool>(false);
  auto o = std::make_shared<OutputArgs>();
  o->engine = "analytic";
  cmd->add_option("--set-name", *sets, "validation set to run (repeatable or comma-separated; default: all of them)");
  add_set_option(*cmd, *overrides, "override a field of every record's scenario, e.g. --set training.attention=unfused");
  add_format_option(*cmd, o->format, {"table", "json", "md", "latex", "csv"}, "table, json, md, latex or csv (the records; latex and csv without --gpus or --cross-validate)");
  add_engine_option(*cmd, o->engine, false);
  add_out_option(*cmd, o->out);
  auto* gpus_flag = cmd->add_flag("--gpus", *gpus, "list which GPUs have measured records and which efficiencies are derived");
  auto* cross_flag = cmd->add_flag(
      "--cross-validate", *cross,
      "leave one table out per GPU: refit the GPU's parameters on its other records (as calibrate), predict the table; "
      "analytic engine");
  cmd->add_option("--params", *params,
                  "parameters fitted by --cross-validate on every GPU, comma-separated (calibrate's names; default: each GPU's own, "
                  "those its efficiency file lists as \"fitted\")")
      ->needs(cross_flag);
  gpus_flag->excludes(cross_flag);
  cmd->callback([=]() {
    driver::ValidateOptions vo;
    vo.set_names = split_commas(*sets);
    vo.engine = engine_choice(o->engine).value_or(sim::EngineKind::Analytic);
    vo.overrides = parse_overrides(*overrides);
    std::string text;
    if ((o->format == "latex" || o->format == "csv") && (*gpus || *cross))
      throw ScenarioError("--format", o->format + " writes the records of validate, not --gpus or --cross-validate");
    if (*gpus) {
      const auto g = driver::gpu_coverage(vo.set_names);
      text = o->format == "json" ? report::gpu_coverage_json(g)
             : o->format == "md" ? report::gpu_coverage_markdown(g)
                                 : report::gpu_coverage_table(g);
    } else if (*cross) {
      if (vo.engine != sim::EngineKind::Analytic)
        throw ScenarioError("--engine", "--cross-validate fits with the analytic engine (as calibrate)");
      driver::CrossValidateOptions co;
      co.validate = vo;
      if (!params->empty()) co.params = split_commas(*params);
      const auto r = driver::cross_validate(co);
      text = o->format == "json" ? report::cross_validation_json(r)
             : o->format == "md" ? report::cross_validation_markdown(r)
                                 : report::cross_validation_table(r);
    } else {
      const auto result = driver::validate(vo);
      text = o->format == "json"    ? report::validation_json(result)
             : o->format == "md"    ? report::validation_markdown(result)
             : o->format == "latex" ? report::validation_latex(result)
             : o->format == "csv"   ? report::validation_csv(result)
                                    : report::validation_table(result);
    }
    emit(text, o->out);
  });
}

void register_calibrate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "calibrate", "fit efficiency parameters of one GPU type to the validation sets and write its efficiency file");
  auto gpu = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  auto records = std::make_shared<std::vector<std::string>>();
  auto params = std::make_shared<std::vector<std::string>>();
  auto overrides = std::make_shared<std::vector<std::string>>();
  auto base = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  cmd->add_option("--gpu", *gpu, "GPU preset whose efficiency is fitted (e.g. a100-sxm-80gb)")->required();
  cmd->add_option("--set-name,--sets", *sets, "validation sets to fit on (repeatable or comma-separated; default: all of them)");
  cmd->add_option("--records", *records, "use only records whose name contains one of these, comma-separated");
  cmd->add_option("--params", *params,
                  "parameters to fit, comma-separated: gemm_max, gemm_fp8_max, attn_max, hbm_eff, comm_slowdown (none: write the "
                  "start point)");
  cmd->add_option("--base", *base, "start from this GPU's embedded efficiency (its fractions, applied to this GPU's own ceilings)");
  add_set_option(*cmd, *overrides, "override a field of every record's scenario");
  add_out_option(*cmd, *out, "write the efficiency JSON to this file instead of stdout");
  cmd->callback([=]() {
    driver::CalibrateOptions co;
    co.gpu = *gpu;
    co.set_names = split_commas(*sets);
    co.record_filters = split_commas(*records);
    co.params = split_commas(*params);
    if (co.params.size() == 1 && co.params[0] == "none") co.params.clear();
    co.overrides = parse_overrides(*overrides);
    co.base_gpu = *base;
    const auto r = driver::calibrate(co);
    emit(driver::efficiency_to_json(r.efficiency, r.source), *out);
  });
}

}  // namespace

void register_validate(CLI::App& app) {
  register_validate_command(app);
  register_calibrate_command(app);
}

}  // namespace stepsim::app
