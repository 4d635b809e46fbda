// Sweep rows: the memory verdict, one candidate's evaluation, the JSON line and its parsing.

#include "stepsim/results/sweep.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/memory/estimator.hpp"
#include "stepsim/results/format.hpp"
#include "stepsim/results/memory_report.hpp"
#include "stepsim/results/simulate.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/sim/build.hpp"
#include "stepsim/sim/memory_events.hpp"
#include "stepsim/topology/cluster.hpp"

namespace stepsim::results {

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string cluster_key(const scenarios::ClusterSpec& c) {
  std::string k = c.preset + "|" + c.gpu.name + "|" + num(c.gpu.memory_bytes) + "|" + num(c.gpu.peak_bf16_flops) + "|" +
                  num(c.gpu.hbm_Bps) + "|" + num(c.gpu.nvlink_Bps) + "|" + std::to_string(c.gpus_per_node) + "|" +
                  std::to_string(c.nodes) + "|" + num(c.intra_node.bw_Bps) + "|" + num(c.intra_node.latency_s) + "|" +
                  std::to_string(c.inter_node.nics_per_node) + "|" + num(c.inter_node.nic_Bps) + "|" +
                  num(c.inter_node.latency_s) + "|" + scenarios::to_string(c.inter_node.topology) + "|" +
                  num(c.inter_node.oversubscription) + "|" + (c.ideal_network ? "1" : "0");
  return k;
}

std::string gpu_key(const scenarios::GpuSpec& g) {
  const auto& e = g.efficiency;
  return g.name + "|" + num(g.memory_bytes) + "|" + num(g.peak_bf16_flops) + "|" + num(g.hbm_Bps) + "|" + num(g.nvlink_Bps) + "|" +
         num(e.gemm_max) + "|" + num(e.gemm_half_flops) + "|" + num(e.attn_max) + "|" + num(e.attn_half_flops) + "|" +
         num(e.hbm_eff) + "|" + num(e.comm_slowdown) + "|" + e.source;
}

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
      v.reason = "paper estimate " + gib(paper.total_bytes, 2) + " GiB exceeds " + fixed(paper.usable_fraction, 2) + " x " +
                 gib(paper.gpu_memory_bytes, 2) + " GiB = " + fixed(usable / memory::kGiB, 2) + " GiB";
    }
  } else {
    v.fits = est.fits;
    if (!v.fits)
      v.reason = "stepsim peak " + gib(est.peak_bytes, 2) + " GiB (stage " + std::to_string(est.peak_stage) + ") exceeds " +
                 gib(est.gpu_memory_bytes, 2) + " GiB of GPU memory";
  }
  return v;
}

struct Simulator::Cache {
  std::map<std::string, std::unique_ptr<topology::Cluster>> clusters;
  std::map<std::string, std::unique_ptr<costmodel::ComputeModel>> compute;
};

Simulator::Simulator() : cache_(std::make_unique<Cache>()) {}
Simulator::~Simulator() = default;

StepReport Simulator::simulate(const scenarios::Scenario& s, sim::EngineKind engine) {
  auto& cl = cache_->clusters[cluster_key(s.cluster)];
  if (!cl) cl = std::make_unique<topology::Cluster>(s.cluster);
  auto& cm = cache_->compute[gpu_key(s.cluster.gpu)];
  if (!cm) cm = std::make_unique<costmodel::ComputeModel>(s.cluster.gpu);
  sim::BuildOptions bo;
  bo.comm = s.comm;
  if (engine == sim::EngineKind::SimGrid) check_simgrid_gpus(s);
  check_graph_size(s, bo.per_layer);
  const auto step = sim::build_step(s, *cl, *cm, bo);
  if (engine == sim::EngineKind::SimGrid) check_simgrid_size(step.graph);
  const auto trace = sim::run(engine, step.graph, *cl);
  const auto timeline = sim::memory_timeline(step.graph, trace, s.memory.fragmentation_fraction);
  return make_report(s, step, trace, timeline);
}

SweepRow evaluate_candidate(const scenarios::Candidate& c, PruneRule rule, sim::EngineKind engine, Simulator& simulator,
                            bool refined) {
  const auto& s = c.scenario;
  SweepRow r;
  r.index = c.index;
  r.key = refined ? c.key + " engine=" + sim::to_string(engine) : c.key;
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
      const auto rep = simulator.simulate(s, engine);
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

  OrderedJson j;
  j["index"] = r.index;
  j["key"] = r.key;
  j["status"] = r.status;
  j["reason"] = r.reason.empty() ? OrderedJson(nullptr) : OrderedJson(r.reason);
  j["scenario"] = OrderedJson::parse(c.scenario_json);
  j["summary"] = r.summary;
  j["model"] = r.model;
  j["cluster"] = r.cluster;
  j["gpu"] = r.gpu;
  j["gpus"] = r.gpus;
  j["tp"] = r.tp;
  j["cp"] = r.cp;
  j["pp"] = r.pp;
  j["dp"] = r.dp;
  j["vpp"] = r.vpp;
  j["micro_batch"] = r.micro_batch;
  j["global_batch"] = r.global_batch;
  j["seq_len"] = r.seq_len;
  j["schedule"] = r.schedule;
  j["recompute"] = r.recompute;
  j["paper_total_bytes"] = opt(r.paper_total_bytes);
  j["stepsim_peak_bytes"] = opt(r.stepsim_peak_bytes);
  j["gpu_memory_bytes"] = opt(r.gpu_memory_bytes);
  j["engine"] = r.engine.empty() ? OrderedJson(nullptr) : OrderedJson(r.engine);
  j["step_time_s"] = opt(r.step_time_s);
  j["tokens_per_s"] = opt(r.tokens_per_s);
  j["tflops_per_gpu"] = opt(r.tflops_per_gpu);
  j["mfu"] = opt(r.mfu);
  j["bubble_fraction"] = opt(r.bubble_fraction);
  j["exposed_comm_fraction"] = opt(r.exposed_comm_fraction);
  j["peak_memory_bytes"] = opt(r.peak_memory_bytes);
  j["oom"] = r.simulated() ? OrderedJson(r.oom) : OrderedJson(nullptr);
  j["time_to_train_s"] = opt(r.time_to_train_s);
  j["gpu_hours"] = opt(r.gpu_hours);
  j["cost_usd"] = opt(r.cost_usd);
  r.line = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  return r;
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
    throw ScenarioError(origin, "a results row needs a \"status\" string (ok, oom or error)");
  SweepRow r;
  r.status = j["status"].get<std::string>();
  if (r.status != "ok" && r.status != "oom" && r.status != "error")
    throw ScenarioError(origin + ".status", "unknown status '" + r.status + "' (ok, oom or error)");
  const RowReader f(j, origin);
  r.index = f.integer("index", 0).value_or(missing_index);
  r.key = f.str("key");
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
  r.paper_total_bytes = f.integer("paper_total_bytes", 0);
  r.stepsim_peak_bytes = f.integer("stepsim_peak_bytes", 0);
  r.gpu_memory_bytes = f.integer("gpu_memory_bytes", 0);
  r.engine = f.str("engine");
  r.step_time_s = f.number("step_time_s");
  r.tokens_per_s = f.number("tokens_per_s");
  r.tflops_per_gpu = f.number("tflops_per_gpu");
  r.mfu = f.number("mfu");
  r.bubble_fraction = f.number("bubble_fraction");
  r.exposed_comm_fraction = f.number("exposed_comm_fraction");
  r.peak_memory_bytes = f.integer("peak_memory_bytes", 0);
  r.oom = f.flag("oom");
  r.time_to_train_s = f.number("time_to_train_s");
  r.gpu_hours = f.number("gpu_hours");
  r.cost_usd = f.number("cost_usd");
  r.line = line;
  return r;
}

RowFile read_rows(const std::string& file) {
  const std::string text = scenarios::read_input_file(file, "results file");
  RowFile out;
  std::size_t pos = 0;
  std::int64_t line_no = 0;
  while (pos < text.size()) {
    ++line_no;
    const auto nl = text.find('\n', pos);
    const bool terminated = nl != std::string::npos;
    const std::string line = text.substr(pos, terminated ? nl - pos : std::string::npos);
    const std::string where = file + ":" + std::to_string(line_no);
    if (line.find_first_not_of(" \t\r") != std::string::npos) {
      try {
        auto row = parse_row(line, where, -1);
        if (row.index < 0 || row.key.empty()) throw ScenarioError(where, "not a sweep row (needs index, key and status)");
        out.rows.push_back(std::move(row));
        if (!terminated) out.missing_newline = true;
      } catch (const ScenarioError&) {
        // Only a last line without its newline is a write that was cut short.
        if (terminated) throw;
        out.truncated_tail = true;
        out.truncated_line = line_no;
        break;
      }
    }
    pos = terminated ? nl + 1 : text.size();
    out.good_bytes = pos;
  }
  return out;
}

}  // namespace stepsim::results
