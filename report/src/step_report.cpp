#include "stepsim/report/step_report.hpp"

#include <algorithm>
#include <limits>
#include <ostream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "stepsim/report/format.hpp"
#include "stepsim/report/memory_report.hpp"
#include "stepsim/report/metrics.hpp"
#include "stepsim/report/sweep_row.hpp"
#include "step_json.hpp"

namespace stepsim::report {

namespace {

using sim::Interval;

std::vector<Interval> merged(std::vector<Interval> v) {
  sim::merge_in_place(v);
  return v;
}

double length(const std::vector<Interval>& v) {
  double s = 0;
  for (const auto& iv : v) s += iv.second - iv.first;
  return s;
}

// Length of `a` not covered by `b` (both merged).
double uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  std::size_t j = 0;
  for (const auto& iv : a) {
    double cur = iv.first;
    while (j < b.size() && b[j].second <= cur) ++j;
    std::size_t k = j;
    while (k < b.size() && b[k].first < iv.second) {
      if (b[k].first > cur) total += b[k].first - cur;
      cur = std::max(cur, b[k].second);
      if (cur >= iv.second) break;
      ++k;
    }
    if (cur < iv.second) total += iv.second - cur;
  }
  return total;
}

// What NCCL ran for a communication op, as codes: the algorithm and protocol of its plan, -1 and
// -1 for point-to-point (send/recv, all-to-all).
std::pair<int, int> nccl_choice(const sim::StepGraph& g, const sim::Op& op) {
  if (op.collective == sim::Collective::SendRecv || op.collective == sim::Collective::AllToAll || op.plan < 0) return {-1, -1};
  const auto p = static_cast<std::size_t>(op.plan);
  return {static_cast<int>(g.plans.algorithm(p)), static_cast<int>(g.plans.protocol(p))};
}

std::string algorithm_name(int code) { return code < 0 ? "p2p" : costmodel::to_string(static_cast<costmodel::NcclAlgorithm>(code)); }
std::string protocol_name(int code) { return code < 0 ? "Simple" : costmodel::to_string(static_cast<costmodel::NcclProtocol>(code)); }

// Adds `code` to a small set kept as a vector.
void note(std::vector<int>& seen, int code) {
  if (std::find(seen.begin(), seen.end(), code) == seen.end()) seen.push_back(code);
}

// Per op label: algorithm/protocol, bus bandwidth, busy and exposed time (mean over devices).
// Labels are few: each op finds its label's accumulator by a linear search, and the collectives,
// algorithms and protocols are kept as codes, named once at the end.
std::vector<CommKindReport> communication_by_kind(const sim::StepGraph& g, const sim::Trace& trace, sim::StepTally& tally) {
  struct Acc {
    CommKindReport row;
    std::vector<int> collectives, algorithms, protocols;
    double bus_bytes = 0, busy_s = 0;
    std::vector<std::vector<Interval>> by_device;
  };
  std::vector<Acc> acc;
  std::size_t last = 0;  // the accumulator of the previous op: consecutive ops often share a label
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const auto& op = g.ops[i];
    if (op.kind != sim::OpKind::Collective && op.kind != sim::OpKind::SendRecv) continue;
    if (last >= acc.size() || acc[last].row.label != op.label) {
      last = 0;
      while (last < acc.size() && acc[last].row.label != op.label) ++last;
      if (last == acc.size()) {
        acc.emplace_back();
        acc.back().row.label = op.label;
        acc.back().by_device.resize(g.devices.size());
      }
    }
    auto& a = acc[last];
    note(a.collectives, static_cast<int>(op.collective));
    const auto [algorithm, protocol] = nccl_choice(g, op);
    note(a.algorithms, algorithm);
    note(a.protocols, protocol);
    ++a.row.ops;
    const double dur_s = trace.ops[i].end_s - trace.ops[i].start_s;
    std::int64_t n = 0;
    if (op.group >= 0 && !g.groups[static_cast<std::size_t>(op.group)].instances.empty())
      n = static_cast<std::int64_t>(g.groups[static_cast<std::size_t>(op.group)].instances.front().size());
    a.bus_bytes += op.message_bytes * op.count * costmodel::bus_bandwidth_factor(op.collective, n);
    a.busy_s += dur_s;
    a.by_device[static_cast<std::size_t>(op.device)].emplace_back(trace.ops[i].start_s, trace.ops[i].end_s);
  }
  // Names sorted and joined by "+".
  const auto join = [](const std::vector<int>& codes, const auto& name) {
    std::set<std::string> names;
    for (const int c : codes) names.insert(name(c));
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : "+") + n;
    return out;
  };
  std::sort(acc.begin(), acc.end(), [](const Acc& x, const Acc& y) { return x.row.label < y.row.label; });
  const double devices = static_cast<double>(std::max<std::size_t>(1, g.devices.size()));
  std::vector<CommKindReport> rows;
  for (auto& a : acc) {
    a.row.collective = join(a.collectives, [](int c) { return workload::to_string(static_cast<sim::Collective>(c)); });
    a.row.algorithm = join(a.algorithms, algorithm_name);
    a.row.protocol = join(a.protocols, protocol_name);
    a.row.bus_bandwidth_Bps = a.busy_s > 0 ? a.bus_bytes / a.busy_s : 0.0;
    double busy = 0, exposed = 0;
    for (std::size_t dv = 0; dv < a.by_device.size(); ++dv) {
      const auto iv = merged(a.by_device[dv]);
      busy += length(iv);
      exposed += uncovered(iv, tally.compute(dv).merged_intervals());
    }
    a.row.time_s = busy / devices;
    a.row.exposed_s = exposed / devices;
    rows.push_back(a.row);
  }
  return rows;
}

// The category of a span: its stream ("compute", "tp", "cp", "pp", "dp").
const char* trace_category(sim::Stream stream) {
  switch (stream) {
    case sim::Stream::Compute: return "compute";
    case sim::Stream::TpComm: return "tp";
    case sim::Stream::CpComm: return "cp";
    case sim::Stream::PpComm: return "pp";
    case sim::Stream::DpComm: return "dp";
  }
  return "other";
}

// A span's name: the op's label with its micro-batch and chunk ("fwd mb3 c1").
std::string trace_name(const sim::Op& op) {
  std::string name = op.label;
  if (op.micro_batch >= 0) name += " mb" + std::to_string(op.micro_batch);
  if (op.chunk >= 0) name += " c" + std::to_string(op.chunk);
  return name;
}

// The op on the receiving device that a pipeline send feeds (its first successor there), or -1.
std::int64_t flow_target(const sim::StepGraph& g, std::size_t op) {
  const auto& o = g.ops[op];
  if (o.kind != sim::OpKind::SendRecv || o.peer_device < 0) return -1;
  for (const auto next : g.successors(static_cast<std::int32_t>(op))) {
    const auto& n = g.ops[static_cast<std::size_t>(next)];
    if (n.device == o.peer_device && n.kind != sim::OpKind::Delay) return next;
  }
  return -1;
}

}  // namespace

StepReport make_report(const scenarios::Scenario& s, const sim::BuiltStep& step, const sim::Trace& trace,
                       const memory::Timeline& timeline, bool communication_rows) {
  thread_local sim::StepTally tally;  // its storage kept from one report to the next
  tally.add_trace(step.graph, trace);
  return make_report(s, step, trace, tally, timeline, communication_rows);
}

StepReport make_report(const scenarios::Scenario& s, const sim::BuiltStep& step, const sim::Trace& trace, sim::StepTally& tally,
                       const memory::Timeline& timeline, bool communication_rows) {
  const auto& g = step.graph;
  StepReport r;
  r.scenario = s.name;
  r.summary = scenario_summary(s);
  r.engine = sim::to_string(trace.engine);
  r.efficiency_kind = scenarios::to_string(s.cluster.gpu.efficiency.kind);
  r.efficiency_source = s.cluster.gpu.efficiency.source;
  r.software = s.software.name;
  r.attention_kernel = s.training.attention == scenarios::Attention::Unfused ? std::string("unfused")
                                                                            : s.software.attention_curves.implementation;
  r.gpus = s.world_size();
  r.ops = static_cast<std::int64_t>(g.op_count());
  r.step_time_s = trace.makespan_s;
  r.tokens_per_step = static_cast<double>(s.training.global_batch) * static_cast<double>(s.training.seq_len);
  r.tokens_per_s = r.step_time_s > 0 ? r.tokens_per_step / r.step_time_s : 0;
  r.tokens_per_s_per_gpu = r.gpus > 0 ? r.tokens_per_s / static_cast<double>(r.gpus) : 0;
  r.model_flops = step.work.model_flops;
  if (r.step_time_s > 0) {
    r.tflops_per_gpu = r.model_flops / (r.step_time_s * static_cast<double>(r.gpus)) / 1e12;
    r.mfu = r.tflops_per_gpu * 1e12 / s.cluster.gpu.peak_bf16_flops;
    if (s.training.fp8() && s.cluster.gpu.peak_fp8_flops > 0) r.mfu_fp8 = r.tflops_per_gpu * 1e12 / s.cluster.gpu.peak_fp8_flops;
  }
  r.gpu_memory_bytes = static_cast<std::int64_t>(s.cluster.gpu.memory_bytes);

  // Each device's communication over all its streams, from the tally: merged as the ops came
  // while they came in order of their starts, else sorted and merged here.
  double idle_sum = 0, exposed_sum = 0;
  for (std::size_t dv = 0; dv < g.devices.size(); ++dv) {
    StageReport st;
    st.stage = g.devices[dv].stage;
    const auto& cm = tally.compute(dv).merged_intervals();
    const auto& co = tally.comm(dv).merged_intervals();
    st.compute_s = length(cm);
    st.exposed_comm_s = uncovered(co, cm);
    st.idle_s = std::max(0.0, r.step_time_s - st.compute_s - st.exposed_comm_s);
    const auto& mt = timeline.devices[dv];
    st.peak_memory_bytes = mt.peak_bytes;
    st.peak_memory_time_s = mt.peak_time_s;
    if (st.peak_memory_bytes > r.peak_memory_bytes) {
      r.peak_memory_bytes = st.peak_memory_bytes;
      r.peak_stage = st.stage;
    }
    idle_sum += st.idle_s;
    exposed_sum += st.exposed_comm_s;
    r.stages.push_back(st);
  }
  if (communication_rows) {
    g.require_every_op_stored("the report's communication rows");
    if (trace.ops.size() != g.ops.size()) throw InternalError("the report's communication rows need the trace of every op");
    r.communication = communication_by_kind(g, trace, tally);
  }
  if (r.step_time_s > 0 && !g.devices.empty()) {
    r.bubble_fraction = idle_sum / static_cast<double>(g.devices.size()) / r.step_time_s;
    r.exposed_comm_fraction = exposed_sum / static_cast<double>(g.devices.size()) / r.step_time_s;
  }
  if (timeline.oom) {
    r.oom = true;
    OomReport o;
    const auto& dev = g.devices[static_cast<std::size_t>(timeline.oom->device)];
    o.stage = dev.stage;
    o.gpu = dev.gpu;
    o.ranks = dev.multiplicity;
    o.time_s = timeline.oom->time_s;
    o.op = timeline.oom->op >= 0 ? g.describe(timeline.oom->op) : "static memory";
    o.bytes_over = timeline.oom->bytes_over;
    r.oom_point = o;
  } else {
    // Static memory alone can exceed the GPU before any op runs.
    for (const auto& dev : g.devices)
      if (dev.static_bytes > dev.capacity_bytes) {
        r.oom = true;
        r.oom_point = OomReport{dev.stage, dev.gpu, dev.multiplicity, 0.0, "static memory (weights, gradients, optimizer, buffers)",
                                dev.static_bytes - dev.capacity_bytes};
        break;
      }
  }
  if (s.training.train_tokens && r.tokens_per_s > 0) {
    r.train_tokens = *s.training.train_tokens;
    r.time_to_train_s = *s.training.train_tokens / r.tokens_per_s;
    r.gpu_hours = *r.time_to_train_s * static_cast<double>(r.gpus) / 3600.0;
    if (s.cost.usd_per_gpu_hour) r.cost_usd = *r.gpu_hours * *s.cost.usd_per_gpu_hour;
  }
  // Cost per token needs no token budget: the price of the GPUs for the time one token takes.
  if (s.cost.usd_per_gpu_hour && r.tokens_per_s > 0)
    r.cost_usd_per_million_tokens = *s.cost.usd_per_gpu_hour * static_cast<double>(r.gpus) / 3600.0 / r.tokens_per_s * 1e6;
  return r;
}

std::string report_table(const StepReport& r) {
  std::ostringstream os;
  os << r.summary << "\n";
  os << "engine " << r.engine << ", " << r.ops << " ops\n";
  os << "efficiency " << r.efficiency_kind << ": " << r.efficiency_source << "\n";
  os << "software " << r.software << ", attention " << (r.attention_kernel.empty() ? std::string("at the matmul ceiling") : r.attention_kernel)
     << "\n\n";
  auto row = [&](const std::string& k, const std::string& v) { os << pad("  " + k, -34) << v << "\n"; };
  // The step metrics of the registry up to the memory, which has a line of its own.
  for (const auto& m : step_metrics()) {
    if (m.json_key == "peak_memory_bytes") break;
    row(m.json_key == "bubble_fraction" ? m.name + " (idle / step time)" : m.name,
        value_with_unit(m, *m.of_report(r), m.decimals));
    if (m.json_key == "mfu" && r.mfu_fp8) row("MFU (FP8 peak)", fixed(100.0 * *r.mfu_fp8, 1) + " %");
  }
  row("peak memory", gib(r.peak_memory_bytes, 2) + " GiB of " + gib(r.gpu_memory_bytes, 2) + " GiB (stage " +
                         std::to_string(r.peak_stage) + ")");
  if (r.oom && r.oom_point) {
    const auto& o = *r.oom_point;
    const std::string ranks = o.ranks > 1 ? "rank " + std::to_string(o.gpu) + " and the other " + std::to_string(o.ranks - 1) +
                                                " ranks of the stage, all alike"
                                          : "rank " + std::to_string(o.gpu);
    row("OUT OF MEMORY", "stage " + std::to_string(o.stage) + " (" + ranks + ") at " + fixed(o.time_s, 4) +
                             " s, " + o.op + ", " + gib(o.bytes_over, 2) + " GiB over; the step is not runnable");
  } else {
    row("out of memory", "no");
  }
  if (r.time_to_train_s) {
    row("time to train " + token_count(*r.train_tokens) + " tokens", human_duration(*r.time_to_train_s) + ", " +
                                                                     grouped(*r.gpu_hours) + " GPU-hours" +
                                                                     (r.cost_usd ? ", $" + grouped(*r.cost_usd) : ""));
  }
  if (r.cost_usd_per_million_tokens) {
    const auto& m = metric("cost_usd_per_million_tokens");
    row(m.name, value_with_unit(m, *r.cost_usd_per_million_tokens, m.decimals));
  }
  os << "\n" << pad("stage", 7) << pad("compute s", 12) << pad("exposed comm s", 16) << pad("idle s", 10)
     << pad("peak GiB", 11) << "\n";
  for (const auto& st : r.stages)
    os << pad(std::to_string(st.stage), 7) << " " << pad(fixed(st.compute_s, 4), 11) << " " << pad(fixed(st.exposed_comm_s, 4), 15)
       << " " << pad(fixed(st.idle_s, 4), 9) << " " << pad(gib(st.peak_memory_bytes, 2), 10) << "\n";
  if (!r.communication.empty()) {
    os << "\n" << pad("communication", -18) << pad("collective", -26) << pad("algorithm", -11) << pad("protocol", -14) << pad("ops", 8)
       << pad("busbw GB/s", 12) << pad("busy s", 10) << pad("exposed s", 11) << "\n";
    for (const auto& c : r.communication)
      os << pad(c.label, -18) << pad(c.collective, -26) << pad(c.algorithm, -11) << pad(c.protocol, -14) << pad(std::to_string(c.ops), 8)
         << pad(fixed(c.bus_bandwidth_Bps / 1e9, 1), 12) << pad(fixed(c.time_s, 4), 10) << pad(fixed(c.exposed_s, 4), 11) << "\n";
  }
  os << "\nFLOPs: Megatron's num_floating_point_operations (model FLOPs, no recomputation, causal attention s/(2h));"
        " MFU against the dense BF16 peak" << (r.mfu_fp8 ? " (as NVIDIA reports FP8 runs), beside it against the dense FP8 peak" : "")
     << ".\n";
  return os.str();
}

std::string report_json(const scenarios::Scenario& s, const StepReport& r, const memory::Timeline* timeline) {
  nlohmann::ordered_json j;
  j["scenario"] = r.scenario;
  j["summary"] = r.summary;
  detail::put_step_fields(j, step_row(s, r));
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (std::int64_t st = 0; st < s.parallel.pp; ++st) layers.push_back(scenarios::stage_layers(s, st));
  j["layout"] = {{"label", layout_label(layout_of(s), true)},
                 {"micro_batches", s.micro_batches()},
                 {"sequence_parallel", s.parallel.sequence_parallel},
                 {"sharding", scenarios::to_string(s.parallel.sharding)},
                 {"stage_layers", layers}};
  j["efficiency"] = {{"kind", r.efficiency_kind}, {"source", r.efficiency_source}};
  j["software"] = {{"name", r.software}, {"attention", r.attention_kernel}};
  j["ops"] = r.ops;
  j["model_flops"] = r.model_flops;
  j["flops_formula"] = "megatron num_floating_point_operations (causal s/(2h))";
  if (r.mfu_fp8) j["mfu_fp8"] = *r.mfu_fp8;
  j["peak_stage"] = r.peak_stage;
  if (r.oom_point) {
    const auto& o = *r.oom_point;
    j["oom_point"] = {{"stage", o.stage}, {"gpu", o.gpu}, {"ranks", o.ranks}, {"time_s", o.time_s}, {"op", o.op},
                      {"bytes_over", o.bytes_over}};
  } else {
    j["oom_point"] = nullptr;
  }
  auto& st = j["stages"];
  st = nlohmann::ordered_json::array();
  for (const auto& sr : r.stages) {
    nlohmann::ordered_json o;
    o["stage"] = sr.stage;
    o["peak_memory_bytes"] = sr.peak_memory_bytes;
    o["peak_memory_time_s"] = sr.peak_memory_time_s;
    o["compute_s"] = sr.compute_s;
    o["exposed_comm_s"] = sr.exposed_comm_s;
    o["idle_s"] = sr.idle_s;
    st.push_back(o);
  }
  auto& comm = j["communication"];
  comm = nlohmann::ordered_json::array();
  for (const auto& c : r.communication)
    comm.push_back({{"label", c.label}, {"collective", c.collective}, {"algorithm", c.algorithm}, {"protocol", c.protocol},
                    {"ops", c.ops}, {"bus_bandwidth_Bps", c.bus_bandwidth_Bps}, {"time_s", c.time_s}, {"exposed_s", c.exposed_s}});
  j["train_tokens"] = r.train_tokens ? nlohmann::ordered_json(*r.train_tokens) : nlohmann::ordered_json(nullptr);
  if (timeline != nullptr) {
    auto& tl = j["memory_timeline"];
    tl = nlohmann::ordered_json::array();
    for (std::size_t dv = 0; dv < timeline->devices.size() && dv < r.stages.size(); ++dv) {
      const auto& d = timeline->devices[dv];
      nlohmann::ordered_json points = nlohmann::ordered_json::array();
      for (const auto& p : d.points) points.push_back({p.time_s, p.bytes});
      tl.push_back({{"stage", r.stages[dv].stage}, {"static_bytes", d.static_bytes}, {"capacity_bytes", d.capacity_bytes},
                    {"points", points}});
    }
  }
  return j.dump(2) + "\n";
}

void write_chrome_trace(std::ostream& out, const scenarios::Scenario& s, const sim::StepGraph& g, const sim::Trace& trace,
                        const memory::Timeline& timeline) {
  // The document is {"traceEvents":[...],"displayTimeUnit":"ms","otherData":{...}}, written one
  // event at a time: compact JSON of an event does not depend on what surrounds it. Process ids
  // start at 1 (Perfetto treats pid 0 as the kernel's).
  bool first = true;
  const auto event = [&out, &first](const nlohmann::ordered_json& e) {
    out << (first ? "" : ",") << e.dump();
    first = false;
  };
  const auto pid = [](std::int64_t device) { return device + 1; };
  g.require_every_op_stored("a Chrome trace");
  out << "{\"traceEvents\":[";
  for (std::size_t dv = 0; dv < g.devices.size(); ++dv) {
    const auto& dev = g.devices[dv];
    const auto p = pid(static_cast<std::int64_t>(dv));
    event({{"ph", "M"}, {"cat", "__metadata"}, {"pid", p}, {"name", "process_name"},
           {"args", {{"name", "stage " + std::to_string(dev.stage) + " (rank " + std::to_string(dev.gpu) + ", x" +
                                  std::to_string(dev.multiplicity) + ")"}}}});
    for (int k = 0; k < sim::kNumStreams; ++k)
      event({{"ph", "M"}, {"cat", "__metadata"}, {"pid", p}, {"tid", k}, {"name", "thread_name"},
             {"args", {{"name", std::string(sim::to_string(static_cast<sim::Stream>(k)))}}}});
  }
  // Spans and counters are most of a trace: their text is put together here, with nlohmann's
  // formatting of each number and string, as dumping the event objects would give it.
  std::string text;
  const auto value = [&text](const auto& v) { text += nlohmann::json(v).dump(); };
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const auto& op = g.ops[i];
    if (op.kind == sim::OpKind::Delay) continue;
    text.assign(first ? "" : ",");
    first = false;
    text += R"({"ph":"X","cat":)";
    value(trace_category(op.stream));
    text += R"(,"pid":)" + std::to_string(pid(op.device)) + R"(,"tid":)" + std::to_string(static_cast<int>(op.stream)) + R"(,"name":)";
    value(trace_name(op));
    text += R"(,"ts":)";
    value(trace.ops[i].start_s * 1e6);
    text += R"(,"dur":)";
    value((trace.ops[i].end_s - trace.ops[i].start_s) * 1e6);
    bool args = false;
    const auto arg = [&](const char* key, const auto& v) {
      text += args ? "," : R"(,"args":{)";
      args = true;
      text += key;
      value(v);
    };
    if (op.micro_batch >= 0) arg(R"("micro_batch":)", op.micro_batch);
    if (op.chunk >= 0) arg(R"("chunk":)", op.chunk);
    if (op.layer >= 0) arg(R"("layer":)", op.layer);
    if (const double flops = g.op_flops(i); flops > 0) arg(R"("flops":)", flops);
    if (op.bytes() > 0) arg(R"("bytes":)", op.bytes());
    if (op.kind == sim::OpKind::Collective || op.kind == sim::OpKind::SendRecv) {
      const auto [algorithm, protocol] = nccl_choice(g, op);
      arg(R"("algorithm":)", algorithm_name(algorithm));
      arg(R"("protocol":)", protocol_name(protocol));
    }
    text += args ? "}}" : "}";
    out << text;
  }
  // A flow arrow from each pipeline send to the op that receives it on the next stage.
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    const auto to = flow_target(g, i);
    if (to < 0) continue;
    const auto& op = g.ops[i];
    const auto& dst = g.ops[static_cast<std::size_t>(to)];
    const std::string name = trace_name(op);
    event({{"ph", "s"}, {"cat", "pp"}, {"id", i}, {"pid", pid(op.device)}, {"tid", static_cast<int>(op.stream)},
           {"name", name}, {"ts", trace.ops[i].start_s * 1e6}});
    event({{"ph", "f"}, {"bp", "e"}, {"cat", "pp"}, {"id", i}, {"pid", pid(dst.device)}, {"tid", static_cast<int>(dst.stream)},
           {"name", name}, {"ts", trace.ops[static_cast<std::size_t>(to)].start_s * 1e6}});
  }
  for (std::size_t dv = 0; dv < timeline.devices.size(); ++dv)
    for (const auto& pt : timeline.devices[dv].points) {
      text.assign(first ? "" : ",");
      first = false;
      text += R"({"ph":"C","cat":"memory","pid":)" + std::to_string(pid(static_cast<std::int64_t>(dv))) + R"(,"name":"memory GiB","ts":)";
      value(pt.time_s * 1e6);
      text += R"(,"args":{"GiB":)";
      value(static_cast<double>(pt.bytes) / (1024.0 * 1024.0 * 1024.0));
      text += "}}";
      out << text;
    }
  const nlohmann::ordered_json other{{"scenario", s.name}, {"generator", "stepsim"}};
  out << "],\"displayTimeUnit\":\"ms\",\"otherData\":" << other.dump() << "}\n";
}

std::int64_t chrome_trace_events(const sim::StepGraph& g, const memory::Timeline& timeline) {
  g.require_every_op_stored("a Chrome trace");
  std::int64_t n = static_cast<std::int64_t>(g.devices.size()) * (1 + sim::kNumStreams);
  for (const auto& op : g.ops) n += op.kind == sim::OpKind::Delay ? 0 : 1;
  for (std::size_t i = 0; i < g.ops.size(); ++i) n += flow_target(g, i) >= 0 ? 2 : 0;
  for (const auto& d : timeline.devices) n += static_cast<std::int64_t>(d.points.size());
  return n;
}

}  // namespace stepsim::report
