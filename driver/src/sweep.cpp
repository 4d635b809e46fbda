// Sweep rows: the memory verdict, one candidate's evaluation, reading a results file.

#include "stepsim/driver/sweep.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "stepsim/driver/simulate.hpp"
#include "stepsim/memory/estimator.hpp"
#include "stepsim/report/format.hpp"
#include "stepsim/report/memory_report.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/support/out_of_memory.hpp"

namespace stepsim::driver {

PruneRule parse_prune_rule(const std::string& text) {
  if (text == "paper-usable-fraction" || text == "paper-80") return PruneRule::PaperUsableFraction;
  if (text == "stepsim") return PruneRule::Stepsim;
  throw ScenarioError("--prune", "unknown rule \"" + text + "\" (expected stepsim or paper-usable-fraction)");
}

std::string to_string(PruneRule rule) { return rule == PruneRule::PaperUsableFraction ? "paper-usable-fraction" : "stepsim"; }

std::string describe(PruneRule rule) {
  return to_string(rule) + (rule == PruneRule::PaperUsableFraction ? " (paper estimate <= memory.usable_fraction x GPU memory)"
                                                                   : " (stepsim peak <= GPU memory - memory.headroom_gib)");
}

MemoryVerdict memory_verdict(const scenarios::Scenario& s, PruneRule rule) {
  const auto paper = memory::paper_estimate(s);
  const auto est = memory::stepsim_estimate(s);
  MemoryVerdict v;
  v.paper_total_bytes = paper.total_bytes;
  v.stepsim_peak_bytes = est.peak_bytes;
  v.gpu_memory_bytes = est.gpu_memory_bytes;
  if (rule == PruneRule::PaperUsableFraction) {
    v.fits = paper.under_usable_fraction;
    if (!v.fits) {
      const double usable = paper.usable_fraction * static_cast<double>(paper.gpu_memory_bytes);
      v.reason = "paper estimate " + report::gib(paper.total_bytes, 2) + " GiB exceeds " + report::fixed(paper.usable_fraction, 2) + " x " +
                 report::gib(paper.gpu_memory_bytes, 2) + " GiB = " + report::fixed(usable / memory::kGiB, 2) + " GiB";
    }
  } else {
    v.fits = est.fits_with_headroom;
    if (!v.fits)
      v.reason = "stepsim peak " + report::gib(est.peak_bytes, 2) + " GiB (stage " + std::to_string(est.peak_stage) + ") exceeds " +
                 report::gib(est.gpu_memory_bytes, 2) + " GiB of GPU memory" +
                 (est.headroom_bytes > 0 ? " less the headroom of " + report::gib(est.headroom_bytes, 2) + " GiB" : "");
  }
  return v;
}

std::string sweep_fingerprint(const scenarios::SweepSpec& spec, PruneRule rule, const std::string& version) {
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : spec.axes) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& v : a.values_json) values.push_back(nlohmann::json::parse(v));
    axes.push_back({{"name", a.name}, {"auto", a.automatic}, {"values", values}});
  }
  const auto& c = spec.constraints;
  const auto limit = [](const std::optional<std::int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  const nlohmann::json canonical{{"stepsim", version},
                                 {"base", nlohmann::json::parse(spec.base_json)},
                                 {"axes", axes},
                                 {"constraints",
                                  {{"tp_cp_within_node", c.tp_cp_within_node},
                                   {"max_tp", limit(c.max_tp)},
                                   {"max_cp", limit(c.max_cp)},
                                   {"max_pp", limit(c.max_pp)},
                                   {"max_dp", limit(c.max_dp)},
                                   {"powers_of_two", c.powers_of_two}}},
                                 {"prune", to_string(rule)}};
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a, 64 bits
  for (const char ch : canonical.dump()) {
    h ^= static_cast<unsigned char>(ch);
    h *= 1099511628211ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

namespace {

// The fields of a row that describe the candidate.
SweepRow described(const scenarios::Candidate& c, const SweepStamp& stamp) {
  if (!c.loaded) throw InternalError("sweep: candidate " + std::to_string(c.index) + " was enumerated without its scenario");
  const auto& s = c.scenario;
  SweepRow r;
  r.index = c.index;
  r.key = c.key;
  r.sweep = stamp.fingerprint;
  r.sweep_candidates = stamp.candidates;
  report::describe_scenario(r, s);
  return r;
}

}  // namespace

SweepRow failed_row(const scenarios::Candidate& c, const std::string& reason, const SweepStamp& stamp) {
  SweepRow r = described(c, stamp);
  r.status = "error";
  r.reason = reason;
  r.line = report::row_line(r, c.scenario_json);
  return r;
}

SweepRow evaluate_candidate(const scenarios::Candidate& c, PruneRule rule, sim::EngineKind engine, SimulationCache& cache,
                            bool refined, const SweepStamp& stamp) {
  const auto& s = c.scenario;
  SweepRow r = described(c, stamp);
  const auto v = memory_verdict(s, rule);
  r.paper_total_bytes = v.paper_total_bytes;
  r.stepsim_peak_bytes = v.stepsim_peak_bytes;
  r.gpu_memory_bytes = v.gpu_memory_bytes;
  if (!v.fits && !refined) {
    r.status = "pruned";
    r.reason = v.reason;
    r.oom = true;
  } else {
    r.engine = sim::to_string(engine);
    try {
      SimulateOptions so;
      so.engine = engine;
      so.cache = &cache;
      so.communication_rows = false;  // set_step_figures reads neither these
      so.timeline_points = false;     // nor these
      so.compact_graph = true;        // nor the graph
      report::set_step_figures(r, simulate(s, so).report);
      if (refined) {
        // The analytic figures that chose the candidate for refinement, beside the refined ones.
        so.engine = sim::EngineKind::Analytic;
        const auto analytic = simulate(s, so).report;
        r.analytic_step_time_s = analytic.step_time_s;
        r.analytic_tokens_per_s = analytic.tokens_per_s;
      }
    } catch (const std::bad_alloc&) {
      const auto activity = support::current_activity();
      r.status = "error";
      r.reason = "out of memory" + (activity.empty() ? std::string() : " while " + activity);
    } catch (const std::exception& e) {
      r.status = "error";
      r.reason = e.what();
    }
  }

  r.line = report::row_line(r, c.scenario_json);
  return r;
}

RowScan scan_rows(const std::string& file, const std::function<void(SweepRow&&, std::int64_t line)>& visit) {
  RowScan out;
  std::uint64_t offset = 0;
  scenarios::for_each_input_line(file, "results file", [&](const std::string& line, std::int64_t number, bool terminated) {
    const std::uint64_t start = offset;
    offset += line.size() + (terminated ? 1 : 0);
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      out.good_bytes = offset;
      return true;
    }
    const std::string where = file + ":" + std::to_string(number);
    SweepRow row;
    try {
      row = report::parse_row(line, where, -1);
      if (row.index < 0 || row.key.empty()) throw ScenarioError(where, "not a sweep row (needs index, key and status)");
    } catch (const ScenarioError&) {
      // Only a last line without its newline is a write that was cut short.
      if (terminated) throw;
      out.truncated_tail = true;
      out.truncated_line = number;
      out.good_bytes = start;
      return false;
    }
    if (!terminated) out.missing_newline = true;
    out.good_bytes = offset;
    ++out.rows;
    visit(std::move(row), number);
    return true;
  });
  return out;
}

RowFile read_rows(const std::string& file) {
  RowFile out;
  static_cast<RowScan&>(out) = scan_rows(file, [&out](SweepRow&& r, std::int64_t) { out.rows.push_back(std::move(r)); });
  return out;
}

}  // namespace stepsim::driver
