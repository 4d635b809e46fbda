#include "stepsim/report/kernel_report.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "stepsim/report/format.hpp"
#include "stepsim/report/memory_report.hpp"
#include "stepsim/report/tables.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/workload/params.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::report {

using scenarios::Scenario;
using workload::Kernel;
using workload::KernelKind;

namespace {

const char* kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::Gemm: return "gemm";
    case KernelKind::Attention: return "attention";
    case KernelKind::Memory: return "memory";
    case KernelKind::Host: return "host";
  }
  return "?";
}

std::string bound_of(const Kernel& k, const costmodel::KernelTime& t) {
  if (k.kind == KernelKind::Host) return "host";
  if (t.compute_s > 0 && t.compute_s >= t.memory_s) return k.kind == KernelKind::Gemm ? "matmul" : "attention";
  return "HBM";
}

// "0-19, 40-59" from sorted layer indices.
std::string ranges(const std::vector<std::int64_t>& layers) {
  std::string out;
  for (std::size_t i = 0; i < layers.size();) {
    std::size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(layers[i]) + (j > i ? "-" + std::to_string(layers[j]) : "");
    i = j + 1;
  }
  return out;
}

KernelSection section(const costmodel::ComputeModel& model, std::string name, const std::vector<Kernel>& kernels, bool per_step,
                      std::int64_t count) {
  KernelSection sec;
  sec.name = std::move(name);
  sec.per_step = per_step;
  sec.count = count;
  for (const Kernel& k : kernels) {
    KernelRow row{k, model.breakdown(k), {}};
    row.bound = bound_of(k, row.time);
    sec.time_s += row.time.total_s();
    sec.flops += k.flops;
    sec.bytes += k.bytes;
    sec.rows.push_back(std::move(row));
  }
  return sec;
}

// A dimension of a shape: the integer when it is one.
std::string dim(double v) { return v == std::floor(v) && std::fabs(v) < 1e15 ? fixed(v, 0) : significant(v, 6); }

std::string shape_text(const Kernel& k) {
  if (k.kind != KernelKind::Gemm && k.kind != KernelKind::Attention) return "";
  std::string s = dim(k.m) + " x " + dim(k.n) + " x " + dim(k.k);
  if (k.batch != 1) s += " (x " + dim(k.batch) + ")";
  return s;
}

std::string ms(double s) { return fixed(s * 1e3, 3) + " ms"; }

// "layers 0-19, each once per micro-batch: 3.062 ms per layer, x 20 = 61.240 ms per micro-batch".
std::string per_text(const KernelSection& sec) {
  const std::string one = ms(sec.time_s);
  if (sec.per_step) return "once per step: " + one;
  const std::string total = ", x " + std::to_string(sec.count) + " = " + ms(static_cast<double>(sec.count) * sec.time_s) + " per micro-batch";
  if (!sec.layers.empty()) {
    if (sec.count == 1) return "layer " + sec.layers + ", once per micro-batch: " + one;
    return "layers " + sec.layers + ", each once per micro-batch: " + one + " per layer" + total;
  }
  if (sec.count == 1) return "once per micro-batch: " + one;
  return std::to_string(sec.count) + " passes per micro-batch: " + one + " per pass" + total;
}

std::string header(const KernelReport& r) {
  std::ostringstream os;
  os << r.summary << "\n";
  os << "stage " << r.stage << " of " << r.stages << ": the kernels of one rank, priced on " << r.gpu << " under " << r.software
     << " (attention " << r.attention << "); GEMM ceiling " << fixed(r.gemm_rate_flops / 1e12, 1) << " TFLOP/s";
  if (r.gemm_fp8_rate_flops > 0) os << " (FP8 " << fixed(r.gemm_fp8_rate_flops / 1e12, 1) << ")";
  if (r.gemm_k_overhead > 0) os << " at full waves, each tile paying " << fixed(r.gemm_k_overhead, 0) << " more elements of K";
  os << ", HBM " << fixed(r.hbm_Bps / 1e9, 0) << " GB/s\n";
  os << "kernel us: a kernel's own time, as a profiler shows it, and TFLOP/s and GB/s over it; the step adds the stack's launch gap of "
     << fixed(r.launch_s * 1e6, 2) << " us before each kernel (in the section times)\n";
  return os.str();
}

std::string footer(const KernelReport& r) {
  std::ostringstream os;
  os << "one micro-batch on stage " << r.stage << ": " << ms(r.micro_batch_s) << " of kernels\n";
  os << "one step (" << r.micro_batches << " micro-batches): " << (r.step_s < 1 ? ms(r.step_s) : fixed(r.step_s, 4) + " s")
     << " of kernels\n";
  using scenarios::CpCommType;
  if (r.cp > 1 && (r.cp_comm_type == CpCommType::P2P || r.cp_comm_type == CpCommType::A2AP2P))
    os << "With the CP ring an attention row stands for the kernels of all its steps (a profile shows one per step).\n";
  if (r.cp > 1 && r.cp_comm_type == CpCommType::AllGather)
    os << "With all-gather CP an attention row stands for the kernels of the rank's two query chunks.\n";
  os << "Kernel time alone: the step graph adds communication, the slowdown of compute beside it "
        "(efficiency.comm_slowdown) and the pipeline's waits (stepsim run).\n";
  return os.str();
}

Table section_table(const KernelSection& sec) {
  Table t;
  t.caption = sec.name + " (" + per_text(sec) + "; " + fixed(sec.flops / 1e9, 1) + " GFLOP, " + fixed(sec.bytes / 1e6, 1) + " MB" +
              (sec.count > 1 ? " each)" : ")");
  t.columns = {"kernel", "kind", "shape (m x n x k)", "GFLOP", "MB", "kernel us", "TFLOP/s", "GB/s", "bound"};
  t.right_aligned = {false, false, false, true, true, true, true, true, false};
  for (const KernelRow& row : sec.rows) {
    const Kernel& k = row.kernel;
    const double time_s = row.time.body_s;
    t.rows.push_back({k.name, kind_name(k.kind), shape_text(k), k.flops > 0 ? fixed(k.flops / 1e9, 2) : "-", fixed(k.bytes / 1e6, 2),
                      fixed(time_s * 1e6, 1), k.flops > 0 && time_s > 0 ? fixed(k.flops / time_s / 1e12, 1) : "-",
                      k.bytes > 0 && time_s > 0 ? fixed(k.bytes / time_s / 1e9, 0) : "-", row.bound});
  }
  return t;
}

// A number as JSON writes it (shortest round trip).
std::string number(double v) { return nlohmann::json(v).dump(); }

}  // namespace

KernelReport kernel_report(const Scenario& s, std::int64_t stage) {
  const auto prog = workload::step_program(s);
  const auto& layout = prog.layout;
  if (stage < 0 || stage >= layout.stages())
    throw ScenarioError("--stage", "stage " + std::to_string(stage) + " does not exist (the pipeline has stages 0 to " +
                                       std::to_string(layout.stages() - 1) + ")");
  const costmodel::ComputeModel model(s.cluster.gpu, s.software);
  KernelReport r;
  r.summary = scenario_summary(s);
  r.gpu = s.cluster.gpu.name;
  r.software = s.software.name;
  r.attention = s.training.attention == scenarios::Attention::Unfused ? std::string("unfused") : s.software.attention_curves.implementation;
  if (r.attention.empty()) r.attention = "at the matmul ceiling";
  Kernel probe;
  probe.kind = KernelKind::Gemm;
  r.gemm_rate_flops = model.gemm_rate_flops(probe);
  if (s.training.fp8()) {
    probe.fp8 = true;
    r.gemm_fp8_rate_flops = model.gemm_rate_flops(probe);
  }
  r.gemm_k_overhead = s.cluster.gpu.gemm_k_overhead;
  r.hbm_Bps = s.cluster.gpu.hbm_Bps * s.cluster.gpu.efficiency.hbm_eff;
  r.launch_s = s.software.kernel_launch_s;
  r.cp = s.parallel.cp;
  r.cp_comm_type = s.parallel.cp_comm_type;
  r.stage = stage;
  r.stages = layout.stages();
  r.micro_batches = s.micro_batches();

  // The stage's layers, grouped by the kernels they run (layers whose programs differ only in
  // memory share a group), in order of first appearance.
  struct Group {
    const workload::LayerProgram* program;
    std::vector<std::int64_t> layers;
  };
  std::vector<Group> groups;
  const auto same_kernels = [](const workload::LayerProgram& a, const workload::LayerProgram& b) {
    return a.forward.kernels == b.forward.kernels && a.recompute == b.recompute && a.backward.kernels == b.backward.kernels;
  };
  bool first = false, last = false;
  for (std::int64_t j = 0; j < layout.chunks_per_stage(); ++j) {
    first = first || layout.is_first(stage, j);
    last = last || layout.is_last(stage, j);
    const std::int64_t begin = layout.first_layer(stage, j);
    for (std::int64_t l = begin; l < begin + layout.layers(stage, j); ++l) {
      const auto* p = prog.layers[static_cast<std::size_t>(l)].get();
      auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.program == p || same_kernels(*x.program, *p); });
      if (g == groups.end()) g = groups.insert(groups.end(), Group{p, {}});
      g->layers.push_back(l);
    }
  }
  for (auto& g : groups) std::sort(g.layers.begin(), g.layers.end());
  const auto add = [&](std::string name, const std::vector<Kernel>& kernels, bool per_step, std::int64_t count, std::string layers = {}) {
    if (kernels.empty()) return;
    auto sec = section(model, std::move(name), kernels, per_step, count);
    sec.layers = std::move(layers);
    r.sections.push_back(std::move(sec));
  };
  // In the order a micro-batch runs them: forward, loss, backward.
  if (first) add("embedding forward", prog.embedding_forward.kernels, false, 1);
  for (const auto& g : groups)
    add("layer forward", g.program->forward.kernels, false, static_cast<std::int64_t>(g.layers.size()), ranges(g.layers));
  if (last) {
    add("output forward", prog.output_forward.kernels, false, 1);
    add("output backward", prog.output_backward.kernels, false, 1);
  }
  for (auto g = groups.rbegin(); g != groups.rend(); ++g) {
    const auto n = static_cast<std::int64_t>(g->layers.size());
    add("layer recompute", g->program->recompute, false, n, ranges(g->layers));
    add("layer backward", g->program->backward.kernels, false, n, ranges(g->layers));
  }
  if (first) add("embedding backward", prog.embedding_backward.kernels, false, 1);
  if (s.software.microbatch_host_s > 0) add("host", workload::host_pass(), false, 2 * layout.chunks_per_stage());
  const double params = workload::stage_params(s, stage);
  const double shard = s.parallel.shards_optimizer() ? params / static_cast<double>(s.parallel.shard_group_size()) : params;
  add("gradient buffer zeroing", workload::zero_grad_buffer(s, params), true, 1);
  add("optimizer step", workload::optimizer_step(s, shard), true, 1);

  double per_step = 0;
  for (const auto& sec : r.sections) (sec.per_step ? per_step : r.micro_batch_s) += static_cast<double>(sec.count) * sec.time_s;
  r.step_s = static_cast<double>(r.micro_batches) * r.micro_batch_s + per_step;
  return r;
}

std::string kernel_text(const KernelReport& r) {
  std::ostringstream os;
  os << header(r);
  for (const auto& sec : r.sections) {
    const Table t = section_table(sec);
    os << "\n" << t.caption << "\n";
    std::vector<std::size_t> width(t.columns.size());
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      width[c] = t.columns[c].size();
      for (const auto& row : t.rows) width[c] = std::max(width[c], row[c].size());
    }
    const auto line = [&](const std::vector<std::string>& cells) {
      std::string out;
      for (std::size_t c = 0; c < cells.size(); ++c) {
        const int w = static_cast<int>(width[c]);
        out += "  " + pad(cells[c], t.right_aligned[c] ? w : -w);
      }
      while (!out.empty() && out.back() == ' ') out.pop_back();
      return out + "\n";
    };
    os << line(t.columns);
    for (const auto& row : t.rows) os << line(row);
  }
  os << "\n" << footer(r);
  return os.str();
}

// Each line of `text` a paragraph of its own (Markdown joins adjacent lines).
std::string paragraphs(const std::string& text) {
  std::string out;
  for (const char c : text) out += c == '\n' ? std::string("\n\n") : std::string(1, c);
  return out;
}

std::string kernel_markdown(const KernelReport& r) {
  std::ostringstream os;
  os << paragraphs(header(r));
  for (const auto& sec : r.sections) os << to_markdown(section_table(sec)) << "\n";
  os << paragraphs(footer(r));
  return os.str();
}

std::string kernel_csv(const KernelReport& r) {
  Table t;
  t.columns = {"stage", "section", "layers", "per", "count", "runs_per_step", "kernel", "kind", "m", "n", "k", "batch", "flops",
               "model_flops", "bytes", "launch_s", "compute_s", "memory_s", "kernel_s", "time_s", "bound"};
  for (const auto& sec : r.sections) {
    const std::int64_t runs = sec.per_step ? sec.count : sec.count * r.micro_batches;
    for (const auto& row : sec.rows) {
      const Kernel& k = row.kernel;
      const bool shaped = k.kind == KernelKind::Gemm || k.kind == KernelKind::Attention;
      const auto dim_cell = [&](double v) { return shaped ? number(v) : std::string(); };
      t.rows.push_back({std::to_string(r.stage), sec.name, sec.layers, sec.per_step ? "step" : "micro-batch", std::to_string(sec.count),
                        std::to_string(runs), k.name, kind_name(k.kind), dim_cell(k.m), dim_cell(k.n), dim_cell(k.k), dim_cell(k.batch),
                        number(k.flops), number(k.model_flops), number(k.bytes), number(row.time.launch_s), number(row.time.compute_s),
                        number(row.time.memory_s), number(row.time.body_s), number(row.time.total_s()), row.bound});
    }
  }
  return to_csv(t);
}

std::string kernel_json(const KernelReport& r) {
  using nlohmann::ordered_json;
  ordered_json sections = ordered_json::array();
  for (const auto& sec : r.sections) {
    ordered_json kernels = ordered_json::array();
    for (const auto& row : sec.rows) {
      const Kernel& k = row.kernel;
      ordered_json jk = {{"name", k.name}, {"kind", kind_name(k.kind)}};
      if (k.kind == KernelKind::Gemm || k.kind == KernelKind::Attention)
        jk.update(ordered_json{{"m", k.m}, {"n", k.n}, {"k", k.k}, {"batch", k.batch}});
      jk.update(ordered_json{{"flops", k.flops},
                             {"model_flops", k.model_flops},
                             {"bytes", k.bytes},
                             {"launch_s", row.time.launch_s},
                             {"compute_s", row.time.compute_s},
                             {"memory_s", row.time.memory_s},
                             {"kernel_s", row.time.body_s},
                             {"time_s", row.time.total_s()},
                             {"bound", row.bound}});
      kernels.push_back(std::move(jk));
    }
    sections.push_back(ordered_json{{"name", sec.name},
                                    {"layers", sec.layers.empty() ? ordered_json(nullptr) : ordered_json(sec.layers)},
                                    {"per", sec.per_step ? "step" : "micro-batch"},
                                    {"count", sec.count},
                                    {"time_s", sec.time_s},
                                    {"flops", sec.flops},
                                    {"bytes", sec.bytes},
                                    {"kernels", std::move(kernels)}});
  }
  const ordered_json j = {{"summary", r.summary},
                          {"stage", r.stage},
                          {"stages", r.stages},
                          {"micro_batches", r.micro_batches},
                          {"gpu", r.gpu},
                          {"software", r.software},
                          {"attention", r.attention},
                          {"cp", r.cp},
                          {"cp_comm_type", scenarios::to_string(r.cp_comm_type)},
                          {"gemm_rate_flops", r.gemm_rate_flops},
                          {"gemm_fp8_rate_flops", r.gemm_fp8_rate_flops > 0 ? ordered_json(r.gemm_fp8_rate_flops) : ordered_json(nullptr)},
                          {"gemm_k_overhead", r.gemm_k_overhead},
                          {"hbm_Bps", r.hbm_Bps},
                          {"launch_s", r.launch_s},
                          {"sections", std::move(sections)},
                          {"micro_batch_s", r.micro_batch_s},
                          {"step_s", r.step_s}};
  return j.dump(2) + "\n";
}

}  // namespace stepsim::report
