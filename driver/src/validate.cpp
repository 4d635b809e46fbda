#include "stepsim/driver/validate.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "stepsim/driver/calibrate.hpp"
#include "stepsim/driver/simulate.hpp"
#include "stepsim/memory/estimator.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/sim/build.hpp"
#include "stepsim/sim/cost.hpp"

namespace stepsim::driver {

namespace {

std::string record_context(const ValidationRecord& record) {
  return "validation set " + record.set + ", record " + record.name;
}

std::vector<std::string> requested_sets(const std::vector<std::string>& names) {
  return names.empty() ? validation_set_names() : names;
}

// A memory record: stepsim's peak of the last pipeline stage (the rank the measurement is of) without
// the terms torch's allocator does not count (CUDA context, NCCL and userbuffers, allocated outside it)
// or counts as reserved, not allocated (fragmentation), against the measured peak allocated bytes.
ValidationCase validate_memory_record(const ValidationRecord& record, const scenarios::Scenario& s) {
  const auto est = memory::stepsim_estimate(s);
  const auto& last = est.stages.back();
  std::int64_t allocated = last.total_bytes;
  for (const auto& t : last.terms)
    if (t.key == "cuda_context_bytes" || t.key == "nccl_buffers_bytes" || t.key == "tp_overlap_buffers_bytes" || t.key == "fragmentation_bytes")
      allocated -= t.bytes;
  ValidationCase c;
  c.name = record.name;
  c.table = record.table;
  c.gpu = s.cluster.gpu.name;
  c.flops_formula = costmodel::to_string(record.flops_formula);
  c.measured_peak_allocated_gib = record.peak_allocated_gib;
  c.predicted_peak_allocated_gib = static_cast<double>(allocated) / memory::kGiB;
  c.error = c.predicted_peak_allocated_gib / *record.peak_allocated_gib - 1.0;
  return c;
}

// A timed record's case, from the predicted step time of its scenario.
ValidationCase timed_case(const ValidationRecord& record, const scenarios::Scenario& s, double step_time_s) {
  ValidationCase c;
  c.name = record.name;
  c.table = record.table;
  c.gpu = s.cluster.gpu.name;
  c.measured_step_time_s = record.step_time_s;
  c.measured_tflops_per_gpu = record.tflops_per_gpu;
  c.flops_formula = costmodel::to_string(record.flops_formula);
  c.predicted_step_time_s = step_time_s;
  const double flops = costmodel::model_flops(s, record.flops_formula);
  c.predicted_tflops_per_gpu = flops / (c.predicted_step_time_s * static_cast<double>(s.world_size())) / 1e12;
  if (record.step_time_s)
    c.error = c.predicted_step_time_s / *record.step_time_s - 1.0;
  else if (record.tflops_per_gpu)
    c.error = c.predicted_tflops_per_gpu / *record.tflops_per_gpu - 1.0;
  return c;
}

}  // namespace

ValidationCase validate_record(const ValidationRecord& record, const ValidateOptions& options) {
  if (record.skipped()) throw InternalError("validate_record: record " + record.name + " is skipped");
  const auto s = scenarios::load_scenario_text(record.scenario_json, options.overrides, record_context(record));
  if (record.measures_memory()) return validate_memory_record(record, s);
  SimulateOptions so;
  so.engine = options.engine;
  if (options.efficiency && s.cluster.gpu.name == options.efficiency_gpu) so.efficiency = options.efficiency;
  const auto sim = simulate(s, so);
  auto c = timed_case(record, s, sim.report.step_time_s);
  c.predicted_peak_memory_gib = static_cast<double>(sim.report.peak_memory_bytes) / memory::kGiB;
  c.gpu_memory_gib = static_cast<double>(sim.report.gpu_memory_bytes) / memory::kGiB;
  c.predicted_oom = sim.report.oom;
  return c;
}

// What simulate() builds before it prices (its build options for a validation record: one op per
// pass and chunk, the scenario's communication settings).
struct RecordPricer::Prepared {
  ValidationRecord record;
  scenarios::Scenario scenario;
  const topology::Cluster* cluster = nullptr;  // in models_, shared by the records on one cluster
  sim::StepGraph graph;
};

RecordPricer::RecordPricer(const std::vector<ValidationRecord>& records, const std::vector<scenarios::Override>& overrides)
    : models_(std::make_unique<SimulationCache>()) {
  for (const auto& rec : records) {
    if (rec.skipped() || rec.measures_memory())
      throw InternalError("RecordPricer: record " + rec.name + " is skipped or measures memory");
    auto p = std::make_unique<Prepared>();
    p->record = rec;
    p->scenario = scenarios::load_scenario_text(rec.scenario_json, overrides, record_context(rec));
    p->cluster = &models_->cluster(p->scenario.cluster);
    sim::BuildOptions bo;
    bo.comm = p->scenario.comm;
    p->graph = sim::build_step_graph(p->scenario, *p->cluster, bo).graph;
    records_.push_back(std::move(p));
  }
}

RecordPricer::~RecordPricer() = default;

std::vector<ValidationCase> RecordPricer::price(const costmodel::Efficiency& efficiency) {
  std::vector<ValidationCase> cases;
  cases.reserve(records_.size());
  for (auto& p : records_) {
    auto gpu = p->scenario.cluster.gpu;
    gpu.efficiency = efficiency;
    const costmodel::ComputeModel compute(gpu, p->scenario.software);
    sim::cost_step(p->graph, *p->cluster, compute, p->scenario.comm);
    const auto trace = sim::run(sim::EngineKind::Analytic, p->graph, *p->cluster);
    cases.push_back(timed_case(p->record, p->scenario, trace.makespan_s));
  }
  return cases;
}

ValidationSetResult validate_set(const std::string& name, const std::vector<ValidationRecord>& records,
                                 const ValidateOptions& options) {
  ValidationSetResult set;
  set.name = name;
  for (const auto& rec : records) {
    if (rec.skipped()) {
      set.skipped.push_back({rec.name, rec.table, rec.skip_reason});
      continue;
    }
    try {
      set.records.push_back(validate_record(rec, options));
    } catch (const ScenarioError& e) {
      if (e.path() != "--engine") throw;
      // A record beyond the chosen engine's limits: listed with the engine's reason, not dropped.
      const std::string what = e.what();
      set.skipped.push_back({rec.name, rec.table, what.substr(e.path().size() + 2)});
    }
  }
  report::summarize(set);
  return set;
}

ValidationReport validate(const ValidateOptions& options) {
  ValidationReport r;
  r.engine = sim::to_string(options.engine);
  for (const auto& o : options.overrides) r.overrides.push_back(o.path + "=" + o.value);
  for (const auto& name : requested_sets(options.set_names))
    r.sets.push_back(validate_set(name, validation_records(name), options));
  return r;
}

CrossValidationReport cross_validate_records(const std::vector<ValidationRecord>& records,
                                             const CrossValidateOptions& options) {
  for (const auto& p : options.params) (void)efficiency_parameter_bounds(p);  // names checked first
  ValidateOptions vo = options.validate;
  vo.engine = sim::EngineKind::Analytic;
  vo.efficiency.reset();
  vo.efficiency_gpu.clear();

  CrossValidationReport r;
  r.engine = sim::to_string(vo.engine);
  for (const auto& o : vo.overrides) r.overrides.push_back(o.path + "=" + o.value);

  // Every simulated record with its GPU and its table's key ("set/table"); the sets in order of
  // first appearance.
  struct Item {
    ValidationRecord record;
    std::string gpu;
    std::string key;
    std::vector<std::string> fitted;  // the parameters the record's efficiency lists as fitted
  };
  std::vector<Item> items;
  std::vector<std::string> names;
  for (const auto& rec : records) {
    if (rec.skipped() || rec.measures_memory()) continue;
    const auto s = scenarios::load_scenario_text(rec.scenario_json, vo.overrides, record_context(rec));
    items.push_back({rec, s.cluster.gpu.name, rec.set + "/" + rec.table, s.cluster.gpu.efficiency.fitted});
    if (std::find(names.begin(), names.end(), rec.set) == names.end()) names.push_back(rec.set);
  }

  std::vector<std::optional<ValidationCase>> committed(items.size()), fitted(items.size()), cross(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) committed[i] = validate_record(items[i].record, vo);
  // Per GPU, the parameters to fit; the report's columns are their union, in calibrate's order.
  std::map<std::string, std::vector<std::string>> gpu_params;
  for (const auto& it : items)
    if (!gpu_params.count(it.gpu)) gpu_params[it.gpu] = options.params.empty() ? it.fitted : options.params;
  for (const auto& name : efficiency_parameter_names())
    for (const auto& [gpu, ps] : gpu_params)
      if (std::find(ps.begin(), ps.end(), name) != ps.end()) {
        r.params.push_back(name);
        break;
      }
  for (const auto& entry : gpu_params) {
    // Named references, not a structured binding: the fit_on lambda captures them.
    const std::string& gpu = entry.first;
    const std::vector<std::string>& params = entry.second;
    std::vector<std::string> keys;  // the GPU's tables, in order of first appearance
    for (const auto& it : items)
      if (it.gpu == gpu && std::find(keys.begin(), keys.end(), it.key) == keys.end()) keys.push_back(it.key);
    if (params.empty()) {
      for (const auto& key : keys) r.not_cross_validated.push_back(key + ": the efficiency of " + gpu + " lists no fitted parameter");
      continue;
    }
    if (std::none_of(items.begin(), items.end(), [&](const Item& it) { return it.gpu == gpu && it.record.fit; })) {
      for (const auto& key : keys) r.not_cross_validated.push_back(key + ": no record on " + gpu + " is fitted on (its sets say fit false)");
      continue;
    }
    CalibrateOptions co;
    co.gpu = gpu;
    co.params = params;
    co.overrides = vo.overrides;
    auto fit_on = [&](const std::string& left_out) {
      std::vector<ValidationRecord> training;
      for (const auto& it : items)
        if (it.gpu == gpu && it.key != left_out && it.record.fit) training.push_back(it.record);
      const auto result = calibrate_records(training, co);
      report::CrossValidationFit f{gpu, left_out, training.size(), {}};
      for (const auto& p : r.params)
        f.values.push_back(std::find(co.params.begin(), co.params.end(), p) != co.params.end()
                               ? get_efficiency_parameter(result.efficiency, p)
                               : std::numeric_limits<double>::quiet_NaN());
      r.fits.push_back(std::move(f));
      ValidateOptions po = vo;
      po.efficiency = result.efficiency;
      po.efficiency_gpu = gpu;
      return po;
    };
    const auto all = fit_on("");
    for (std::size_t i = 0; i < items.size(); ++i)
      if (items[i].gpu == gpu) fitted[i] = validate_record(items[i].record, all);
    for (const auto& key : keys) {
      std::size_t others = 0, fitted_others = 0;
      for (const auto& it : items)
        if (it.gpu == gpu && it.key != key) {
          ++others;
          fitted_others += it.record.fit ? 1 : 0;
        }
      if (fitted_others == 0) {
        r.not_cross_validated.push_back(key + (others == 0 ? ": no other record runs on " + gpu
                                                            : ": the other records on " + gpu + " are not fitted on (their sets say fit false)"));
        continue;
      }
      const auto fold = fit_on(key);
      for (std::size_t i = 0; i < items.size(); ++i)
        if (items[i].gpu == gpu && items[i].key == key) cross[i] = validate_record(items[i].record, fold);
    }
  }

  auto assemble = [&](const std::vector<std::optional<ValidationCase>>& cases) {
    ValidationReport out;
    out.engine = r.engine;
    out.overrides = r.overrides;
    for (const auto& name : names) {
      ValidationSetResult set;
      set.name = name;
      for (std::size_t i = 0; i < items.size(); ++i)
        if (items[i].record.set == name && cases[i]) set.records.push_back(*cases[i]);
      report::summarize(set);
      out.sets.push_back(std::move(set));
    }
    return out;
  };
  r.committed = assemble(committed);
  r.fitted = assemble(fitted);
  r.cross_validated = assemble(cross);
  return r;
}

CrossValidationReport cross_validate(const CrossValidateOptions& options) {
  std::vector<ValidationRecord> records;
  for (const auto& name : requested_sets(options.validate.set_names))
    for (auto& rec : validation_records(name)) records.push_back(std::move(rec));
  return cross_validate_records(records, options);
}

std::vector<GpuCoverage> gpu_coverage(const std::vector<std::string>& set_names) {
  std::map<std::string, GpuCoverage> by_gpu;
  for (const auto& name : scenarios::gpu_preset_names()) {
    const auto gpu = scenarios::gpu_preset(name);
    GpuCoverage g;
    g.gpu = name;
    g.efficiency_kind = scenarios::to_string(gpu.efficiency.kind);
    g.efficiency_fit = gpu.efficiency.fit;
    by_gpu.emplace(name, std::move(g));
  }
  for (const auto& name : requested_sets(set_names))
    for (const auto& rec : validation_records(name)) {
      if (rec.skipped() || rec.measures_memory()) continue;
      const auto s = scenarios::load_scenario_text(rec.scenario_json, {}, record_context(rec));
      auto it = by_gpu.find(s.cluster.gpu.name);
      if (it == by_gpu.end()) continue;  // a GPU defined inline in the record, not a preset
      ++it->second.records;
      auto& sets = it->second.sets;
      if (std::find(sets.begin(), sets.end(), name) == sets.end()) sets.push_back(name);
    }
  std::vector<GpuCoverage> out;
  for (auto& [name, g] : by_gpu) out.push_back(std::move(g));
  return out;
}

}  // namespace stepsim::driver
