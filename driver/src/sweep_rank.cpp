// Sweep rankings (Markdown) and the merging of results files.

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
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

std::string money(double usd) { return "$" + report::grouped(usd); }

// What a ranking table shows beyond the step: time to train, GPU-hours and cost (with a token
// budget); the cost per 1M tokens (with a price).
struct Extras {
  bool train = false, price = false;
};

// A ranking table: one row per layout, the figures of the metric registry.
report::Table ranking_table(Extras extras) {
  report::Table t;
  t.columns = {"model", "cluster", "GPUs", "layout", "step time", "tokens/s", "TFLOP/s/GPU", "MFU", "bubble", "exposed comm",
               "peak GiB", "engine"};
  t.right_aligned = {false, false, true, false, true, true, true, true, true, true, true, false};
  if (extras.train) {
    t.columns.insert(t.columns.end(), {"time to train", "GPU-hours", "cost"});
    t.right_aligned.insert(t.right_aligned.end(), {true, true, true});
  }
  if (extras.price) {
    t.columns.emplace_back("$/M tokens");
    t.right_aligned.push_back(true);
  }
  return t;
}

void add_row(report::Table& t, const SweepRow& r) {
  const auto value = [&r](const char* key, bool with_unit) {
    const auto& m = report::metric(key);
    const double v = m.of_row(r).value_or(0);
    return with_unit ? report::value_with_unit(m, v, m.row_decimals) : report::value_text(m, v, m.row_decimals);
  };
  std::vector<std::string> row{r.model, r.cluster, report::grouped(static_cast<double>(r.gpus)), report::layout_label(report::layout_of(r), true),
                               value("step_time_s", true), value("tokens_per_s", false), value("tflops_per_gpu", false),
                               value("mfu", true), value("bubble_fraction", true), value("exposed_comm_fraction", true),
                               value("peak_memory_bytes", false), r.engine};
  if (std::find(t.columns.begin(), t.columns.end(), "time to train") != t.columns.end()) {
    row.push_back(r.time_to_train_s ? report::human_duration(*r.time_to_train_s) : std::string("-"));
    row.push_back(r.gpu_hours ? report::grouped(*r.gpu_hours) : std::string("-"));
    row.push_back(r.cost_usd ? money(*r.cost_usd) : std::string("-"));
  }
  if (t.columns.back() == "$/M tokens") row.push_back(r.cost_usd_per_million_tokens ? value("cost_usd_per_million_tokens", true) : "-");
  t.rows.push_back(std::move(row));
}

std::string table_markdown(const report::Table& t) { return report::to_markdown(t, report::MarkdownStyle::Compact); }

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

struct Ranking::State {
  std::int64_t per_cluster = 3;
  std::int64_t ok = 0, oom = 0, error = 0, timeline_oom = 0, refined = 0;
  std::optional<SweepRow> pending;  // the row of the current candidate (a refined row may replace it)
  std::map<std::tuple<std::string, std::int64_t, std::string>, std::vector<SweepRow>> best;  // fastest per cluster
  std::map<std::string, SweepRow> fastest;   // per model
  std::map<std::pair<std::string, std::string>, SweepRow> fastest_on_cluster;  // per model and cluster, any GPU count
  std::map<std::string, SweepRow> cheapest;  // per model
  Extras extras;
  bool any_fits = false;

  static bool same_candidate(const SweepRow& a, const SweepRow& b) {
    return a.sweep == b.sweep && a.index == b.index && base_key(a.key) == base_key(b.key);
  }

  static bool is_refined(const SweepRow& r) { return r.engine == "simgrid" || base_key(r.key) != r.key; }

  void count(const SweepRow& r) {
    if (r.status == "simulated") {
      ++ok;
      if (r.oom) ++timeline_oom;
    } else if (r.status == "pruned") {
      ++oom;
    } else {
      ++error;
    }
  }

  // The candidate's row (its refined one when there is one) enters the tables.
  void rank(const SweepRow& r) {
    if (r.status != "simulated" || r.oom || !r.simulated()) return;
    any_fits = true;
    if (r.time_to_train_s) extras.train = true;
    if (r.cost_usd_per_million_tokens) extras.price = true;
    auto& group = best[{r.model, r.gpus, r.cluster}];
    group.insert(std::upper_bound(group.begin(), group.end(), r, faster), r);
    if (static_cast<std::int64_t>(group.size()) > per_cluster) group.pop_back();
    auto f = fastest.find(r.model);
    if (f == fastest.end() || faster(r, f->second)) fastest.insert_or_assign(r.model, r);
    auto on = fastest_on_cluster.find({r.model, r.cluster});
    if (on == fastest_on_cluster.end() || faster(r, on->second)) fastest_on_cluster.insert_or_assign({r.model, r.cluster}, r);
    if (r.cost_usd) {
      auto c = cheapest.find(r.model);
      if (c == cheapest.end() || *r.cost_usd < *c->second.cost_usd || (*r.cost_usd == *c->second.cost_usd && r.key < c->second.key))
        cheapest.insert_or_assign(r.model, r);
    }
  }

  // Counts: one per candidate (ok, oom or error, from its analytic row), and the refined rows.
  void add(const SweepRow& r) {
    if (pending && is_refined(r) && same_candidate(*pending, r)) {  // a refined row after its analytic row
      ++refined;
      pending = r;
      return;
    }
    if (pending) rank(*pending);
    if (is_refined(r)) {
      // The refined row replaced its analytic row, which was simulated and fit (that is why it
      // was refined).
      ++refined;
      ++ok;
    } else {
      count(r);
    }
    pending = r;
  }
};

Ranking::Ranking(std::int64_t per_cluster) : state_(std::make_unique<State>()) { state_->per_cluster = per_cluster; }
Ranking::~Ranking() = default;

void Ranking::add(const SweepRow& row) { state_->add(row); }

std::string Ranking::markdown(const std::vector<std::string>& header_lines) {
  auto& st = *state_;
  if (st.pending) {
    st.rank(*st.pending);
    st.pending.reset();
  }
  std::string out;
  for (const auto& h : header_lines) out += h + "\n";
  out += "Rows: " + std::to_string(st.ok + st.oom + st.error) + " (" + std::to_string(st.ok) + " simulated, of which " +
         std::to_string(st.timeline_oom) + " run out of memory in the timeline; " + std::to_string(st.oom) +
         " pruned by the memory estimate; " + std::to_string(st.error) + " errors); " + std::to_string(st.refined) +
         " refined with simgrid.\n\n";
  if (!st.any_fits) {
    out += "No simulated candidate fits in memory.\n";
    return out;
  }

  auto best = ranking_table(st.extras);
  for (const auto& [group, rows] : st.best)
    for (const auto& r : rows) add_row(best, r);
  out += "## Best layouts per cluster\n\n" + table_markdown(best);

  // One row per model and cluster: its fastest layout at any GPU count (a procurement comparison:
  // each cluster with its own price).
  auto per_cluster = ranking_table(st.extras);
  for (const auto& [group, r] : st.fastest_on_cluster) add_row(per_cluster, r);
  out += "\n## Best layout per cluster (any GPU count)\n\n" + table_markdown(per_cluster);

  const auto by = [](const std::map<std::string, SweepRow>& m, const auto& order) {
    std::vector<SweepRow> v;
    for (const auto& [model, r] : m) v.push_back(r);
    std::sort(v.begin(), v.end(), order);
    return v;
  };
  auto fastest = ranking_table(st.extras);
  for (const auto& r : by(st.fastest, faster)) add_row(fastest, r);
  out += "\n## Fastest that fits\n\n" + table_markdown(fastest);

  if (!st.cheapest.empty()) {
    auto cheapest = ranking_table({true, st.extras.price});
    for (const auto& r : by(st.cheapest, [](const SweepRow& a, const SweepRow& b) {
           if (*a.cost_usd != *b.cost_usd) return *a.cost_usd < *b.cost_usd;
           return a.key < b.key;
         }))
      add_row(cheapest, r);
    out += "\n## Cheapest for the token budget\n\n" + table_markdown(cheapest);
  }
  return out;
}

std::string ranking_markdown(const std::vector<SweepRow>& rows, const std::vector<std::string>& header_lines,
                             std::int64_t per_cluster) {
  std::vector<const SweepRow*> sorted;
  for (const auto& r : rows) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [](const SweepRow* a, const SweepRow* b) {
    return std::forward_as_tuple(a->sweep, a->index, base_key(a->key), a->engine == "simgrid" || base_key(a->key) != a->key) <
           std::forward_as_tuple(b->sweep, b->index, base_key(b->key), b->engine == "simgrid" || base_key(b->key) != b->key);
  });
  Ranking ranking(per_cluster);
  for (const auto* r : sorted) ranking.add(*r);
  return ranking.markdown(header_lines);
}

}  // namespace stepsim::driver
