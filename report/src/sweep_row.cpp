// Sweep rows: the JSON line and its parsing.

#include "stepsim/report/sweep_row.hpp"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "step_json.hpp"
#include "stepsim/report/memory_report.hpp"
#include "stepsim/scenarios/error.hpp"

namespace stepsim::report {

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

template <typename T>
OrderedJson opt(const std::optional<T>& v) {
  return v ? OrderedJson(*v) : OrderedJson(nullptr);
}

// The fields of one results row. Null or absent values keep their defaults; a value of the wrong
// type or out of range is a ScenarioError naming "<origin>.<key>".
class RowReader {
 public:
  RowReader(const Json& j, std::string origin) : j_(j), origin_(std::move(origin)) {}

  std::string str(const char* key) const {
    const Json* v = find(key);
    if (v == nullptr) return std::string();
    if (!v->is_string()) fail(key, std::string("must be a string, got ") + type_name(*v));
    return v->get<std::string>();
  }

  // A finite number >= 0.
  std::optional<double> number(const char* key) const {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number()) fail(key, std::string("must be a number, got ") + type_name(*v));
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < 0) fail(key, "must be a finite number >= 0, got " + v->dump());
    return x;
  }

  // An integer >= lo (a float with an integral value counts).
  std::optional<std::int64_t> integer(const char* key, std::int64_t lo) const {
    const Json* v = find(key);
    if (v == nullptr) return std::nullopt;
    std::int64_t x = 0;
    if (v->is_number_unsigned()) {
      if (v->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(key, "is out of range: " + v->dump());
      x = static_cast<std::int64_t>(v->get<std::uint64_t>());
    } else if (v->is_number_integer()) {
      x = v->get<std::int64_t>();
    } else if (v->is_number_float() && std::isfinite(v->get<double>()) && std::floor(v->get<double>()) == v->get<double>() &&
               std::fabs(v->get<double>()) < 9e15) {
      x = static_cast<std::int64_t>(v->get<double>());
    } else {
      fail(key, std::string("must be an integer, got ") + (v->is_number() ? v->dump() : type_name(*v)));
    }
    if (x < lo) fail(key, "must be at least " + std::to_string(lo) + ", got " + std::to_string(x));
    return x;
  }

  bool flag(const char* key) const {
    const Json* v = find(key);
    if (v == nullptr) return false;
    if (!v->is_boolean()) fail(key, std::string("must be true, false or null, got ") + type_name(*v));
    return v->get<bool>();
  }

 private:
  const Json* find(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  [[noreturn]] void fail(const char* key, const std::string& reason) const { throw ScenarioError(origin_ + "." + key, reason); }
  static const char* type_name(const Json& j) {
    if (j.is_object()) return "an object";
    if (j.is_array()) return "an array";
    if (j.is_string()) return "a string";
    if (j.is_boolean()) return "a boolean";
    if (j.is_number()) return "a number";
    return "a value";
  }

  const Json& j_;
  std::string origin_;
};

}  // namespace

void describe_scenario(SweepRow& r, const scenarios::Scenario& s) {
  r.summary = scenario_summary(s);
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
  r.cp_comm_type = scenarios::to_string(s.parallel.cp_comm_type);
  r.hierarchical_cp_sizes = s.parallel.hierarchical_cp_sizes;
}

void set_step_figures(SweepRow& r, const StepReport& rep) {
  r.status = "simulated";
  r.engine = rep.engine;
  r.step_time_s = rep.step_time_s;
  r.tokens_per_s = rep.tokens_per_s;
  r.tokens_per_s_per_gpu = rep.tokens_per_s_per_gpu;
  r.tflops_per_gpu = rep.tflops_per_gpu;
  r.mfu = rep.mfu;
  r.bubble_fraction = rep.bubble_fraction;
  r.exposed_comm_fraction = rep.exposed_comm_fraction;
  r.peak_memory_bytes = rep.peak_memory_bytes;
  r.gpu_memory_bytes = rep.gpu_memory_bytes;
  r.oom = rep.oom;
  r.time_to_train_s = rep.time_to_train_s;
  r.gpu_hours = rep.gpu_hours;
  r.cost_usd = rep.cost_usd;
  r.cost_usd_per_million_tokens = rep.cost_usd_per_million_tokens;
}

SweepRow step_row(const scenarios::Scenario& s, const StepReport& rep) {
  SweepRow r;
  describe_scenario(r, s);
  set_step_figures(r, rep);
  return r;
}

const std::vector<std::string>& step_fields() {
  static const std::vector<std::string> fields = [] {
    OrderedJson j;
    detail::put_step_fields(j, SweepRow{});
    std::vector<std::string> keys;
    for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
    return keys;
  }();
  return fields;
}

void detail::put_step_fields(OrderedJson& j, const SweepRow& r) {
  j["model"] = r.model;
  j["cluster"] = r.cluster;
  j["gpu"] = r.gpu;
  j["gpus"] = r.gpus;
  j["tp"] = r.tp;
  j["cp"] = r.cp;
  j["cp_comm_type"] = r.cp_comm_type;
  j["hierarchical_cp_sizes"] = r.hierarchical_cp_sizes.empty() ? OrderedJson(nullptr) : OrderedJson(r.hierarchical_cp_sizes);
  j["pp"] = r.pp;
  j["dp"] = r.dp;
  j["vpp"] = r.vpp;
  j["micro_batch"] = r.micro_batch;
  j["global_batch"] = r.global_batch;
  j["seq_len"] = r.seq_len;
  j["schedule"] = r.schedule;
  j["recompute"] = r.recompute;
  j["engine"] = r.engine.empty() ? OrderedJson(nullptr) : OrderedJson(r.engine);
  j["step_time_s"] = opt(r.step_time_s);
  j["tokens_per_s"] = opt(r.tokens_per_s);
  j["tokens_per_s_per_gpu"] = opt(r.tokens_per_s_per_gpu);
  j["tflops_per_gpu"] = opt(r.tflops_per_gpu);
  j["mfu"] = opt(r.mfu);
  j["bubble_fraction"] = opt(r.bubble_fraction);
  j["exposed_comm_fraction"] = opt(r.exposed_comm_fraction);
  j["peak_memory_bytes"] = opt(r.peak_memory_bytes);
  j["gpu_memory_bytes"] = opt(r.gpu_memory_bytes);
  j["oom"] = r.oom;
  j["time_to_train_s"] = opt(r.time_to_train_s);
  j["gpu_hours"] = opt(r.gpu_hours);
  j["cost_usd"] = opt(r.cost_usd);
  j["cost_usd_per_million_tokens"] = opt(r.cost_usd_per_million_tokens);
}

std::string detail::csv_cell(const OrderedJson& v) {
  if (v.is_null()) return std::string();
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

void detail::add_json_row(Table& t, const OrderedJson& row) {
  if (t.rows.empty() && t.columns.empty()) {
    for (auto it = row.begin(); it != row.end(); ++it) t.columns.push_back(it.key());
    t.right_aligned.assign(t.columns.size(), false);
  }
  std::vector<std::string> cells;
  cells.reserve(t.columns.size());
  for (const auto& c : t.columns) cells.push_back(csv_cell(row.at(c)));
  t.rows.push_back(std::move(cells));
}

Table detail::rows_table(const std::vector<OrderedJson>& rows) {
  Table t;
  for (const auto& j : rows) add_json_row(t, j);
  return t;
}

std::string row_line(const SweepRow& r, const std::string& scenario_json) {
  OrderedJson j;
  j["index"] = r.index;
  j["key"] = r.key;
  j["sweep"] = r.sweep.empty() ? OrderedJson(nullptr) : OrderedJson(r.sweep);
  j["sweep_candidates"] = r.sweep_candidates > 0 ? OrderedJson(r.sweep_candidates) : OrderedJson(nullptr);
  j["status"] = r.status;
  j["reason"] = r.reason.empty() ? OrderedJson(nullptr) : OrderedJson(r.reason);
  j["scenario"] = OrderedJson::parse(scenario_json);
  j["summary"] = r.summary;
  j["paper_total_bytes"] = opt(r.paper_total_bytes);
  j["stepsim_peak_bytes"] = opt(r.stepsim_peak_bytes);
  detail::put_step_fields(j, r);
  j["analytic_step_time_s"] = opt(r.analytic_step_time_s);
  j["analytic_tokens_per_s"] = opt(r.analytic_tokens_per_s);
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

SweepRow parse_row(const std::string& line, const std::string& origin, std::int64_t missing_index) {
  Json j;
  try {
    j = Json::parse(line);
  } catch (const Json::parse_error& e) {
    throw ScenarioError(origin, std::string("malformed JSON line: ") + e.what());
  } catch (const Json::exception& e) {
    // Valid syntax that nlohmann cannot hold: a number beyond double (1e400).
    std::string what = e.what();
    const auto pos = what.find("] ");
    throw ScenarioError(origin, "unreadable JSON line: " + (pos == std::string::npos ? what : what.substr(pos + 2)));
  }
  if (!j.is_object()) throw ScenarioError(origin, "a results row must be a JSON object");
  if (!j.contains("status") || !j["status"].is_string())
    throw ScenarioError(origin, "a results row needs a \"status\" string (simulated, pruned or error)");
  SweepRow r;
  r.status = j["status"].get<std::string>();
  if (r.status == "ok") r.status = "simulated";  // the names of older files
  if (r.status == "oom") r.status = "pruned";
  if (r.status != "simulated" && r.status != "pruned" && r.status != "error")
    throw ScenarioError(origin + ".status", "unknown status '" + r.status + "' (simulated, pruned or error)");
  const RowReader f(j, origin);
  r.index = f.integer("index", 0).value_or(missing_index);
  r.key = f.str("key");
  r.sweep = f.str("sweep");
  r.sweep_candidates = f.integer("sweep_candidates", 1).value_or(0);
  r.reason = f.str("reason");
  r.summary = f.str("summary");
  r.model = f.str("model");
  r.cluster = f.str("cluster");
  r.gpu = f.str("gpu");
  r.gpus = f.integer("gpus", 1).value_or(0);
  r.tp = f.integer("tp", 1).value_or(1);
  r.cp = f.integer("cp", 1).value_or(1);
  r.pp = f.integer("pp", 1).value_or(1);
  r.dp = f.integer("dp", 1).value_or(1);
  r.vpp = f.integer("vpp", 1).value_or(1);
  r.micro_batch = f.integer("micro_batch", 1).value_or(1);
  r.global_batch = f.integer("global_batch", 1).value_or(0);
  r.seq_len = f.integer("seq_len", 1).value_or(0);
  r.schedule = f.str("schedule");
  r.recompute = f.str("recompute");
  if (const std::string t = f.str("cp_comm_type"); !t.empty()) r.cp_comm_type = t;
  if (const auto it = j.find("hierarchical_cp_sizes"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) throw ScenarioError(origin + ".hierarchical_cp_sizes", "must be a list of sizes");
    for (const auto& v : *it) {
      if (!v.is_number_integer()) throw ScenarioError(origin + ".hierarchical_cp_sizes", "must be a list of integer sizes");
      r.hierarchical_cp_sizes.push_back(v.get<std::int64_t>());
    }
  }
  r.paper_total_bytes = f.integer("paper_total_bytes", 0);
  r.stepsim_peak_bytes = f.integer("stepsim_peak_bytes", 0);
  r.gpu_memory_bytes = f.integer("gpu_memory_bytes", 0);
  r.engine = f.str("engine");
  r.step_time_s = f.number("step_time_s");
  r.tokens_per_s = f.number("tokens_per_s");
  r.tokens_per_s_per_gpu = f.number("tokens_per_s_per_gpu");
  if (!r.tokens_per_s_per_gpu && r.tokens_per_s && r.gpus > 0) r.tokens_per_s_per_gpu = *r.tokens_per_s / static_cast<double>(r.gpus);
  r.tflops_per_gpu = f.number("tflops_per_gpu");
  r.mfu = f.number("mfu");
  r.bubble_fraction = f.number("bubble_fraction");
  r.exposed_comm_fraction = f.number("exposed_comm_fraction");
  r.peak_memory_bytes = f.integer("peak_memory_bytes", 0);
  r.oom = f.flag("oom") || r.status == "pruned";  // older files: null on pruned rows
  r.time_to_train_s = f.number("time_to_train_s");
  r.gpu_hours = f.number("gpu_hours");
  r.cost_usd = f.number("cost_usd");
  r.cost_usd_per_million_tokens = f.number("cost_usd_per_million_tokens");
  r.analytic_step_time_s = f.number("analytic_step_time_s");
  r.analytic_tokens_per_s = f.number("analytic_tokens_per_s");
  r.line = line;
  return r;
}

std::vector<RowLine> row_lines(const std::string& text) {
  std::vector<RowLine> out;
  std::size_t pos = 0;
  std::int64_t number = 0;
  while (pos < text.size()) {
    ++number;
    const auto nl = text.find('\n', pos);
    RowLine line{text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos), number, pos, nl != std::string::npos};
    pos = line.terminated ? nl + 1 : text.size();
    if (line.text.find_first_not_of(" \t\r") != std::string::npos) out.push_back(std::move(line));
  }
  return out;
}

}  // namespace stepsim::report
