// Side-by-side comparison of step reports.

#include "stepsim/report/compare.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "stepsim/report/format.hpp"

namespace stepsim::report {

namespace {

using OrderedJson = nlohmann::ordered_json;

struct Metric {
  std::string label;
  std::string json_key;
  // The value of a column (nullopt: does not apply), and how it prints.
  std::function<std::optional<double>(const CompareColumn&)> value;
  std::function<std::string(double)> text;
  bool compare = true;  // show the difference against the first column
};

std::string layout(const scenarios::Scenario& s) {
  std::string out = "TP" + std::to_string(s.parallel.tp) + " CP" + std::to_string(s.parallel.cp) + " PP" +
                    std::to_string(s.parallel.pp) + " DP" + std::to_string(s.parallel.dp);
  if (s.parallel.vpp > 1) out += " VPP" + std::to_string(s.parallel.vpp);
  out += ", " + scenarios::to_string(s.parallel.schedule) + ", mb " + std::to_string(s.training.micro_batch);
  if (s.training.recompute != scenarios::Recompute::None) out += ", recompute " + scenarios::to_string(s.training.recompute);
  return out;
}

std::string percent(double fraction) { return fixed(100.0 * fraction, 1) + " %"; }

std::vector<Metric> metrics(const std::vector<CompareColumn>& cols) {
  std::vector<Metric> m;
  const auto gib_text = [](double b) { return gib(static_cast<std::int64_t>(b), 2) + " GiB"; };
  m.push_back({"step time", "step_time_s", [](const CompareColumn& c) { return std::optional<double>(c.report.step_time_s); },
               [](double v) { return fixed(v, 4) + " s"; }});
  m.push_back({"tokens/s", "tokens_per_s", [](const CompareColumn& c) { return std::optional<double>(c.report.tokens_per_s); },
               [](double v) { return fixed(v, 0); }});
  m.push_back({"model TFLOP/s per GPU", "tflops_per_gpu",
               [](const CompareColumn& c) { return std::optional<double>(c.report.tflops_per_gpu); },
               [](double v) { return fixed(v, 1); }});
  m.push_back({"MFU", "mfu", [](const CompareColumn& c) { return std::optional<double>(c.report.mfu); }, percent});
  m.push_back({"bubble", "bubble_fraction", [](const CompareColumn& c) { return std::optional<double>(c.report.bubble_fraction); },
               percent});
  m.push_back({"exposed communication", "exposed_comm_fraction",
               [](const CompareColumn& c) { return std::optional<double>(c.report.exposed_comm_fraction); }, percent});
  m.push_back({"peak memory", "peak_memory_bytes",
               [](const CompareColumn& c) { return std::optional<double>(static_cast<double>(c.report.peak_memory_bytes)); },
               gib_text});
  std::size_t stages = 0;
  for (const auto& c : cols) stages = std::max(stages, c.report.stages.size());
  for (std::size_t i = 0; i < stages; ++i) {
    m.push_back({"  peak memory stage " + std::to_string(i), "",
                 [i](const CompareColumn& c) {
                   return i < c.report.stages.size()
                              ? std::optional<double>(static_cast<double>(c.report.stages[i].peak_memory_bytes))
                              : std::nullopt;
                 },
                 gib_text});
  }
  m.push_back({"GPU memory", "gpu_memory_bytes",
               [](const CompareColumn& c) { return std::optional<double>(static_cast<double>(c.report.gpu_memory_bytes)); },
               gib_text, false});
  m.push_back({"time to train", "time_to_train_s", [](const CompareColumn& c) { return c.report.time_to_train_s; },
               [](double v) { return human_duration(v); }});
  m.push_back({"GPU-hours", "gpu_hours", [](const CompareColumn& c) { return c.report.gpu_hours; },
               [](double v) { return fixed(v, 0); }});
  m.push_back({"cost", "cost_usd", [](const CompareColumn& c) { return c.report.cost_usd; },
               [](double v) { return "$" + fixed(v, 0); }});
  return m;
}

std::string delta_text(double value, double reference) {
  if (reference == 0 && value != 0) return "n/a";
  const double d = percent_difference(value, reference);
  return (d >= 0 ? "+" : "") + fixed(d, 1) + " %";
}

// Cells: first row the labels, then one row per metric (label cell + one per column).
std::vector<std::vector<std::string>> grid(const std::vector<CompareColumn>& cols) {
  std::vector<std::vector<std::string>> g;
  std::vector<std::string> head{""};
  for (const auto& c : cols) head.push_back(c.label);
  g.push_back(head);
  std::vector<std::string> lay{"layout"};
  for (const auto& c : cols) lay.push_back(layout(c.scenario));
  g.push_back(lay);
  std::vector<std::string> gpus{"GPUs"};
  for (const auto& c : cols) gpus.push_back(std::to_string(c.report.gpus) + " " + c.scenario.cluster.gpu.name);
  g.push_back(gpus);
  std::vector<std::string> engine{"engine"};
  for (const auto& c : cols) engine.push_back(c.report.engine);
  g.push_back(engine);
  for (const auto& m : metrics(cols)) {
    std::vector<std::string> row{m.label};
    bool any = false;
    const auto ref = m.value(cols.front());
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const auto v = m.value(cols[i]);
      if (!v) {
        row.push_back("-");
        continue;
      }
      any = true;
      std::string cell = m.text(*v);
      if (i > 0 && m.compare && ref) cell += " (" + delta_text(*v, *ref) + ")";
      row.push_back(cell);
    }
    if (any) g.push_back(row);
  }
  std::vector<std::string> oom{"out of memory"};
  for (const auto& c : cols) {
    if (!c.report.oom) {
      oom.push_back("no");
    } else if (c.report.oom_point) {
      oom.push_back("yes, stage " + std::to_string(c.report.oom_point->stage) + " at " + c.report.oom_point->op);
    } else {
      oom.push_back("yes");
    }
  }
  g.push_back(oom);
  return g;
}

}  // namespace

double percent_difference(double value, double reference) {
  if (reference == 0) return value == 0 ? 0.0 : std::nan("");
  return 100.0 * (value - reference) / reference;
}

std::string compare_table(const std::vector<CompareColumn>& columns) {
  if (columns.empty()) return "";
  const auto g = grid(columns);
  std::vector<std::size_t> width(g.front().size(), 0);
  for (const auto& row : g)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string out;
  for (std::size_t c = 0; c < columns.size(); ++c)
    out += columns[c].label + ": " + columns[c].report.summary + "\n";
  out += "\n";
  for (const auto& row : g) {
    std::string line = pad(row[0], -static_cast<int>(width[0]));
    for (std::size_t i = 1; i < row.size(); ++i) line += "   " + pad(row[i], static_cast<int>(width[i]));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  out += "\nDifferences in % are against the first column.\n";
  return out;
}

std::string compare_markdown(const std::vector<CompareColumn>& columns) {
  if (columns.empty()) return "";
  const auto g = grid(columns);
  std::string out = "| metric |";
  for (std::size_t i = 1; i < g[0].size(); ++i) out += " " + g[0][i] + " |";
  out += "\n| --- |";
  for (std::size_t i = 1; i < g[0].size(); ++i) out += " ---: |";
  out += "\n";
  for (std::size_t r = 1; r < g.size(); ++r) {
    std::string label = g[r][0];
    const auto first = label.find_first_not_of(' ');
    label = first == std::string::npos ? label : label.substr(first);
    out += "| " + label + " |";
    for (std::size_t i = 1; i < g[r].size(); ++i) out += " " + g[r][i] + " |";
    out += "\n";
  }
  out += "\nDifferences in % are against the first column.\n";
  return out;
}

std::string compare_json(const std::vector<CompareColumn>& columns) {
  OrderedJson root;
  root["columns"] = OrderedJson::array();
  const auto ms = metrics(columns);
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const auto& c = columns[i];
    OrderedJson j;
    j["label"] = c.label;
    j["scenario"] = c.report.scenario;
    j["summary"] = c.report.summary;
    j["engine"] = c.report.engine;
    j["gpus"] = c.report.gpus;
    j["tp"] = c.scenario.parallel.tp;
    j["cp"] = c.scenario.parallel.cp;
    j["pp"] = c.scenario.parallel.pp;
    j["dp"] = c.scenario.parallel.dp;
    j["vpp"] = c.scenario.parallel.vpp;
    j["schedule"] = scenarios::to_string(c.scenario.parallel.schedule);
    OrderedJson delta = OrderedJson::object();
    for (const auto& m : ms) {
      if (m.json_key.empty()) continue;
      const auto v = m.value(c);
      j[m.json_key] = v ? OrderedJson(*v) : OrderedJson(nullptr);
      if (i > 0 && m.compare) {
        const auto ref = m.value(columns.front());
        const double d = v && ref ? percent_difference(*v, *ref) : std::nan("");
        delta[m.json_key] = std::isfinite(d) ? OrderedJson(d) : OrderedJson(nullptr);
      }
    }
    OrderedJson stages = OrderedJson::array();
    for (const auto& st : c.report.stages) stages.push_back({{"stage", st.stage}, {"peak_memory_bytes", st.peak_memory_bytes}});
    j["stages"] = stages;
    j["oom"] = c.report.oom;
    if (c.report.oom_point)
      j["oom_point"] = {{"stage", c.report.oom_point->stage}, {"op", c.report.oom_point->op}, {"bytes_over", c.report.oom_point->bytes_over}};
    else
      j["oom_point"] = nullptr;
    j["delta_percent"] = i > 0 ? delta : OrderedJson(nullptr);
    root["columns"].push_back(j);
  }
  return root.dump(2) + "\n";
}

}  // namespace stepsim::report
