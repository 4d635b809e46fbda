// Sweep rankings (Markdown) and the merging of results files.

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "stepsim/driver/sweep.hpp"
#include "stepsim/report/format.hpp"
#include "stepsim/report/metrics.hpp"
#include "stepsim/report/tables.hpp"
#include "stepsim/scenarios/error.hpp"

namespace stepsim::driver {

namespace {

std::string money(double usd) {
  // Thousands separators keep large costs readable; fixed digits keep it deterministic.
  std::string digits = report::fixed(usd, 0);
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (n > 0 && n % 3 == 0 && *it != '-') out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++n;
  }
  return "$" + out;
}

// A ranking table: one row per layout, the figures of the metric registry.
report::Table ranking_table(bool with_train) {
  report::Table t;
  t.columns = {"model", "cluster", "GPUs", "layout", "step time", "tokens/s", "TFLOP/s/GPU", "MFU", "bubble", "exposed comm",
               "peak GiB", "engine"};
  t.right_aligned = {false, false, true, false, true, true, true, true, true, true, true, false};
  if (with_train) {
    t.columns.insert(t.columns.end(), {"time to train", "GPU-hours", "cost"});
    t.right_aligned.insert(t.right_aligned.end(), {true, true, true});
  }
  return t;
}

void add_row(report::Table& t, const SweepRow& r) {
  const auto value = [&r](const char* key, bool with_unit) {
    const auto& m = report::metric(key);
    const double v = m.of_row(r).value_or(0);
    return with_unit ? report::value_with_unit(m, v, m.row_decimals) : report::value_text(m, v, m.row_decimals);
  };
  std::vector<std::string> row{r.model, r.cluster, std::to_string(r.gpus), report::layout_label(report::layout_of(r), true),
                               value("step_time_s", true), value("tokens_per_s", false), value("tflops_per_gpu", false),
                               value("mfu", true), value("bubble_fraction", true), value("exposed_comm_fraction", true),
                               value("peak_memory_bytes", false), r.engine};
  if (t.columns.size() > row.size()) {
    row.push_back(r.time_to_train_s ? report::human_duration(*r.time_to_train_s) : std::string("-"));
    row.push_back(r.gpu_hours ? report::fixed(*r.gpu_hours, 0) : std::string("-"));
    row.push_back(r.cost_usd ? money(*r.cost_usd) : std::string("-"));
  }
  t.rows.push_back(std::move(row));
}

std::string markdown(const report::Table& t) { return report::to_markdown(t, report::MarkdownStyle::Compact); }

}  // namespace

std::string base_key(const std::string& key) {
  const std::string suffix = " engine=simgrid";
  if (key.size() > suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0)
    return key.substr(0, key.size() - suffix.size());
  return key;
}

bool faster(const SweepRow& a, const SweepRow& b) {
  const double ta = a.tokens_per_s.value_or(0), tb = b.tokens_per_s.value_or(0);
  if (ta != tb) return ta > tb;
  return a.key < b.key;
}

std::string ranking_markdown(const std::vector<SweepRow>& rows, const std::vector<std::string>& header_lines,
                             std::int64_t per_cluster) {
  std::string out;
  for (const auto& h : header_lines) out += h + "\n";

  // Counts over the analytic (or only) row of each candidate.
  std::int64_t ok = 0, oom = 0, error = 0, timeline_oom = 0, refined = 0;
  std::map<std::string, SweepRow> best_of;  // base key -> row used in rankings (refined wins)
  for (const auto& r : rows) {
    const bool is_refined = base_key(r.key) != r.key;
    if (is_refined) {
      ++refined;
    } else if (r.status == "ok") {
      ++ok;
      if (r.oom) ++timeline_oom;
    } else if (r.status == "oom") {
      ++oom;
    } else {
      ++error;
    }
    if (r.status != "ok") continue;
    auto it = best_of.find(base_key(r.key));
    if (it == best_of.end() || is_refined) best_of[base_key(r.key)] = r;
  }
  out += "Rows: " + std::to_string(ok + oom + error) + " (" + std::to_string(ok) + " simulated, of which " +
         std::to_string(timeline_oom) + " run out of memory in the timeline; " + std::to_string(oom) +
         " pruned by the memory estimate; " + std::to_string(error) + " errors); " + std::to_string(refined) +
         " refined with simgrid.\n\n";

  std::vector<SweepRow> fits;
  for (const auto& [k, r] : best_of)
    if (!r.oom) fits.push_back(r);
  std::sort(fits.begin(), fits.end(), faster);
  const bool with_train = std::any_of(fits.begin(), fits.end(), [](const SweepRow& r) { return r.time_to_train_s.has_value(); });
  const bool with_cost = std::any_of(fits.begin(), fits.end(), [](const SweepRow& r) { return r.cost_usd.has_value(); });

  if (fits.empty()) {
    out += "No simulated candidate fits in memory.\n";
    return out;
  }

  auto best = ranking_table(with_train);
  std::map<std::tuple<std::string, std::int64_t, std::string>, std::int64_t> shown;
  std::vector<SweepRow> per;
  for (const auto& r : fits) {
    auto& n = shown[{r.model, r.gpus, r.cluster}];
    if (n++ < per_cluster) per.push_back(r);
  }
  std::stable_sort(per.begin(), per.end(), [](const SweepRow& a, const SweepRow& b) {
    return std::tie(a.model, a.gpus, a.cluster) < std::tie(b.model, b.gpus, b.cluster);
  });
  for (const auto& r : per) add_row(best, r);
  out += "## Best layouts per cluster\n\n" + markdown(best);

  auto fastest = ranking_table(with_train);
  std::set<std::string> models;
  for (const auto& r : fits)
    if (models.insert(r.model).second) add_row(fastest, r);
  out += "\n## Fastest that fits\n\n" + markdown(fastest);

  if (with_cost) {
    std::vector<SweepRow> costed;
    for (const auto& r : fits)
      if (r.cost_usd) costed.push_back(r);
    std::sort(costed.begin(), costed.end(), [](const SweepRow& a, const SweepRow& b) {
      if (*a.cost_usd != *b.cost_usd) return *a.cost_usd < *b.cost_usd;
      return a.key < b.key;
    });
    auto cheapest = ranking_table(true);
    std::set<std::string> cheap_models;
    for (const auto& r : costed)
      if (cheap_models.insert(r.model).second) add_row(cheapest, r);
    out += "\n## Cheapest for the token budget\n\n" + markdown(cheapest);
  }
  return out;
}

std::vector<SweepRow> merge_rows(const std::vector<std::string>& inputs, std::vector<std::string>* warnings) {
  std::vector<std::string> files;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(in, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : std::filesystem::directory_iterator(in, ec)) {
        const auto name = entry.path().filename().string();
        if (entry.is_regular_file() && name.rfind("results", 0) == 0 && name.size() > 6 &&
            name.compare(name.size() - 6, 6, ".jsonl") == 0)
          found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) throw ScenarioError(in, "holds no results*.jsonl file");
      files.insert(files.end(), found.begin(), found.end());
    } else if (std::filesystem::exists(in, ec)) {
      files.push_back(in);
    } else {
      throw ScenarioError(in, "no such file or directory");
    }
  }
  std::vector<SweepRow> out;
  std::set<std::string> keys;
  for (const auto& f : files) {
    auto rf = read_rows(f);
    if (rf.truncated_tail) {
      if (rf.rows.empty()) throw ScenarioError(f, "holds no results row (its only line is not a row)");
      if (warnings != nullptr)
        warnings->push_back(f + ":" + std::to_string(rf.truncated_line) +
                            ": ignored a last line without newline that is not a row (a write cut short)");
    }
    for (auto& r : rf.rows)
      if (keys.insert(r.key).second) out.push_back(std::move(r));
  }
  if (out.empty()) throw ScenarioError(inputs.size() == 1 ? inputs.front() : std::string("merge"), "no results rows in the input");
  std::stable_sort(out.begin(), out.end(), [](const SweepRow& a, const SweepRow& b) {
    return a.index != b.index ? a.index < b.index : a.key < b.key;
  });
  return out;
}

}  // namespace stepsim::driver
