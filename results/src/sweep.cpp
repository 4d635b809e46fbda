// Sweep rows: the memory verdict, one candidate's evaluation, the JSON line and its parsing.

#include "stepsim/results/sweep.hpp"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/memory/estimator.hpp"
#include "stepsim/results/format.hpp"
#include "stepsim/results/memory_report.hpp"
#include "stepsim/scenarios/error.hpp"
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
  return g.name + "|" + num(g.memory_bytes) + "|" + num(g.peak_bf16_flops) + "|" + num(g.hbm_Bps) + "|" + num(g.nvlink_Bps);
}

template <typename T>
OrderedJson opt(const std::optional<T>& v) {
  return v ? OrderedJson(*v) : OrderedJson(nullptr);
}

std::string str_field(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

template <typename T = double>
std::optional<T> num_field(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it != j.end() && it->is_number()) return it->get<T>();
  return std::nullopt;
}

std::int64_t int_field(const Json& j, const char* key, std::int64_t def = 0) {
  return num_field<std::int64_t>(j, key).value_or(def);
}

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
  if (!cm) cm = std::make_unique<costmodel::ComputeModel>(s.cluster.gpu, costmodel::ComputeModel::calibrated(s.cluster.gpu));
  sim::BuildOptions bo;
  const auto step = sim::build_step(s, *cl, *cm, bo);
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
  }
  if (!j.is_object()) throw ScenarioError(origin, "a results row must be a JSON object");
  if (!j.contains("status") || !j["status"].is_string())
    throw ScenarioError(origin, "a results row needs a \"status\" string (ok, oom or error)");
  SweepRow r;
  r.status = j["status"].get<std::string>();
  if (r.status != "ok" && r.status != "oom" && r.status != "error")
    throw ScenarioError(origin + ".status", "unknown status '" + r.status + "' (ok, oom or error)");
  r.index = int_field(j, "index", missing_index);
  r.key = str_field(j, "key");
  r.reason = str_field(j, "reason");
  r.summary = str_field(j, "summary");
  r.model = str_field(j, "model");
  r.cluster = str_field(j, "cluster");
  r.gpu = str_field(j, "gpu");
  r.gpus = int_field(j, "gpus");
  r.tp = int_field(j, "tp", 1);
  r.cp = int_field(j, "cp", 1);
  r.pp = int_field(j, "pp", 1);
  r.dp = int_field(j, "dp", 1);
  r.vpp = int_field(j, "vpp", 1);
  r.micro_batch = int_field(j, "micro_batch", 1);
  r.global_batch = int_field(j, "global_batch");
  r.seq_len = int_field(j, "seq_len");
  r.schedule = str_field(j, "schedule");
  r.recompute = str_field(j, "recompute");
  r.paper_total_bytes = num_field<std::int64_t>(j, "paper_total_bytes");
  r.stepsim_peak_bytes = num_field<std::int64_t>(j, "stepsim_peak_bytes");
  r.gpu_memory_bytes = num_field<std::int64_t>(j, "gpu_memory_bytes");
  r.engine = str_field(j, "engine");
  r.step_time_s = num_field(j, "step_time_s");
  r.tokens_per_s = num_field(j, "tokens_per_s");
  r.tflops_per_gpu = num_field(j, "tflops_per_gpu");
  r.mfu = num_field(j, "mfu");
  r.bubble_fraction = num_field(j, "bubble_fraction");
  r.exposed_comm_fraction = num_field(j, "exposed_comm_fraction");
  r.peak_memory_bytes = num_field<std::int64_t>(j, "peak_memory_bytes");
  r.oom = j.contains("oom") && j["oom"].is_boolean() && j["oom"].get<bool>();
  r.time_to_train_s = num_field(j, "time_to_train_s");
  r.gpu_hours = num_field(j, "gpu_hours");
  r.cost_usd = num_field(j, "cost_usd");
  r.line = line;
  return r;
}

RowFile read_rows(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ScenarioError(file, "cannot open the results file");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  RowFile out;
  std::size_t pos = 0;
  std::int64_t line_no = 0;
  while (pos < text.size()) {
    ++line_no;
    const auto nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      out.truncated_tail = true;  // no newline: the write was cut short
      break;
    }
    const std::string line = text.substr(pos, nl - pos);
    const bool last = nl + 1 >= text.size();
    if (!line.empty()) {
      try {
        const std::string where = file + ":" + std::to_string(line_no);
        auto row = parse_row(line, where, -1);
        if (row.index < 0 || row.key.empty()) throw ScenarioError(where, "not a sweep row (needs index, key and status)");
        out.rows.push_back(std::move(row));
      } catch (const ScenarioError&) {
        if (!last) throw;
        out.truncated_tail = true;
        break;
      }
    }
    pos = nl + 1;
    out.good_bytes = pos;
  }
  return out;
}

}  // namespace stepsim::results
