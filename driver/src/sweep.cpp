// Sweep rows: the memory verdict, one candidate's evaluation, reading a results file.

#include "stepsim/driver/sweep.hpp"

#include "stepsim/driver/simulate.hpp"
#include "stepsim/memory/estimator.hpp"
#include "stepsim/report/format.hpp"
#include "stepsim/report/memory_report.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"

namespace stepsim::driver {

PruneRule parse_prune_rule(const std::string& text) {
  if (text == "paper-80") return PruneRule::Paper80;
  if (text == "stepsim") return PruneRule::Stepsim;
  throw ScenarioError("--prune", "unknown rule \"" + text + "\" (expected paper-80 or stepsim)");
}

std::string to_string(PruneRule rule) { return rule == PruneRule::Paper80 ? "paper-80" : "stepsim"; }

MemoryVerdict memory_verdict(const scenarios::Scenario& s, PruneRule rule) {
  const auto paper = memory::paper_estimate(s);
  const auto est = memory::stepsim_estimate(s);
  MemoryVerdict v;
  v.paper_total_bytes = paper.total_bytes;
  v.stepsim_peak_bytes = est.peak_bytes;
  v.gpu_memory_bytes = est.gpu_memory_bytes;
  if (rule == PruneRule::Paper80) {
    v.fits = paper.under_usable_fraction;
    if (!v.fits) {
      const double usable = paper.usable_fraction * static_cast<double>(paper.gpu_memory_bytes);
      v.reason = "paper estimate " + report::gib(paper.total_bytes, 2) + " GiB exceeds " + report::fixed(paper.usable_fraction, 2) + " x " +
                 report::gib(paper.gpu_memory_bytes, 2) + " GiB = " + report::fixed(usable / memory::kGiB, 2) + " GiB";
    }
  } else {
    v.fits = est.fits;
    if (!v.fits)
      v.reason = "stepsim peak " + report::gib(est.peak_bytes, 2) + " GiB (stage " + std::to_string(est.peak_stage) + ") exceeds " +
                 report::gib(est.gpu_memory_bytes, 2) + " GiB of GPU memory";
  }
  return v;
}

SweepRow evaluate_candidate(const scenarios::Candidate& c, PruneRule rule, sim::EngineKind engine, SimulationCache& cache,
                            bool refined) {
  const auto& s = c.scenario;
  SweepRow r;
  r.index = c.index;
  r.key = refined ? c.key + " engine=" + sim::to_string(engine) : c.key;
  r.summary = report::scenario_summary(s);
  r.model = s.model.name;
  r.cluster = s.cluster.preset.empty() ? "custom" : s.cluster.preset;
  r.gpu = s.cluster.gpu.name;
  r.gpus = s.world_size();
  r.tp = s.parallel.tp;
  r.cp = s.parallel.cp;
  r.pp = s.parallel.pp;
  r.dp = s.parallel.dp;
  r.vpp = s.parallel.vpp;
  r.micro_batch = s.training.micro_batch;
  r.global_batch = s.training.global_batch;
  r.seq_len = s.training.seq_len;
  r.schedule = scenarios::to_string(s.parallel.schedule);
  r.recompute = scenarios::to_string(s.training.recompute);

  const auto v = memory_verdict(s, rule);
  r.paper_total_bytes = v.paper_total_bytes;
  r.stepsim_peak_bytes = v.stepsim_peak_bytes;
  r.gpu_memory_bytes = v.gpu_memory_bytes;
  if (!v.fits && !refined) {
    r.status = "oom";
    r.reason = v.reason;
  } else {
    r.engine = sim::to_string(engine);
    try {
      SimulateOptions so;
      so.engine = engine;
      so.cache = &cache;
      const auto rep = simulate(s, so).report;
      r.status = "ok";
      r.step_time_s = rep.step_time_s;
      r.tokens_per_s = rep.tokens_per_s;
      r.tflops_per_gpu = rep.tflops_per_gpu;
      r.mfu = rep.mfu;
      r.bubble_fraction = rep.bubble_fraction;
      r.exposed_comm_fraction = rep.exposed_comm_fraction;
      r.peak_memory_bytes = rep.peak_memory_bytes;
      r.oom = rep.oom;
      r.time_to_train_s = rep.time_to_train_s;
      r.gpu_hours = rep.gpu_hours;
      r.cost_usd = rep.cost_usd;
    } catch (const std::exception& e) {
      r.status = "error";
      r.reason = e.what();
    }
  }

  r.line = report::row_line(r, c.scenario_json);
  return r;
}

RowFile read_rows(const std::string& file) {
  const std::string text = scenarios::read_input_file(file, "results file");
  RowFile out;
  out.good_bytes = text.size();
  for (const auto& line : report::row_lines(text)) {
    const std::string where = file + ":" + std::to_string(line.number);
    try {
      auto row = report::parse_row(line.text, where, -1);
      if (row.index < 0 || row.key.empty()) throw ScenarioError(where, "not a sweep row (needs index, key and status)");
      out.rows.push_back(std::move(row));
      if (!line.terminated) out.missing_newline = true;
    } catch (const ScenarioError&) {
      // Only a last line without its newline is a write that was cut short.
      if (line.terminated) throw;
      out.truncated_tail = true;
      out.truncated_line = line.number;
      out.good_bytes = line.start;
    }
  }
  return out;
}

}  // namespace stepsim::driver
