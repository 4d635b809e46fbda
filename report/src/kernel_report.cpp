#include "stepsim/report/kernel_report.hpp"

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
  if (t.launch_s > t.body_s) return "launch";
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

std::string per_text(const KernelSection& sec) {
  if (sec.per_step) return "once per step";
  if (!sec.layers.empty()) return "layers " + sec.layers + ", each once per micro-batch";
  return sec.count == 1 ? "once per micro-batch" : std::to_string(sec.count) + " times per micro-batch";
}

std::string ms(double s) { return fixed(s * 1e3, 3) + " ms"; }

std::string header(const KernelReport& r) {
  std::ostringstream os;
  os << r.summary << "\n";
  os << "stage " << r.stage << " of " << r.stages << ": the kernels of one rank, priced on " << r.gpu << " under " << r.software
     << " (attention " << r.attention << "); GEMM ceiling " << fixed(r.gemm_rate_flops / 1e12, 1) << " TFLOP/s, HBM "
     << fixed(r.hbm_Bps / 1e9, 0) << " GB/s, launch gap " << fixed(r.launch_s * 1e6, 2) << " us\n";
  return os.str();
}

std::string footer(const KernelReport& r) {
  std::ostringstream os;
  os << "one micro-batch on stage " << r.stage << ": " << ms(r.micro_batch_s) << " of kernels\n";
  os << "one step (" << r.micro_batches << " micro-batches): " << fixed(r.step_s, 4) << " s of kernels\n";
  os << "Kernel time alone: the step graph adds communication, the slowdown of compute beside it "
        "(efficiency.comm_slowdown) and the pipeline's waits (stepsim run).\n";
  return os.str();
}

Table section_table(const KernelSection& sec) {
  Table t;
  t.caption = sec.name + " (" + per_text(sec) + "): " + ms(sec.time_s) + ", " + fixed(sec.flops / 1e9, 1) + " GFLOP, " +
              fixed(sec.bytes / 1e6, 1) + " MB";
  t.columns = {"kernel", "kind", "shape (m x n x k)", "GFLOP", "MB", "time us", "TFLOP/s", "GB/s", "bound"};
  t.right_aligned = {false, false, false, true, true, true, true, true, false};
  for (const KernelRow& row : sec.rows) {
    const Kernel& k = row.kernel;
    const double time_s = row.time.total_s();
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
  r.hbm_Bps = s.cluster.gpu.hbm_Bps * s.cluster.gpu.efficiency.hbm_eff;
  r.launch_s = s.software.kernel_launch_s;
  r.stage = stage;
  r.stages = layout.stages();
  r.micro_batches = s.micro_batches();

  // The stage's layers, grouped by the program they share, in order of first appearance.
  std::vector<const workload::LayerProgram*> programs;
  std::vector<std::vector<std::int64_t>> layers_of;
  bool first = false, last = false;
  for (std::int64_t j = 0; j < layout.chunks_per_stage(); ++j) {
    first = first || layout.is_first(stage, j);
    last = last || layout.is_last(stage, j);
    const std::int64_t begin = layout.first_layer(stage, j);
    for (std::int64_t l = begin; l < begin + layout.layers(stage, j); ++l) {
      const auto* p = prog.layers[static_cast<std::size_t>(l)].get();
      std::size_t i = 0;
      while (i < programs.size() && programs[i] != p) ++i;
      if (i == programs.size()) {
        programs.push_back(p);
        layers_of.emplace_back();
      }
      layers_of[i].push_back(l);
    }
  }
  const auto add = [&](KernelSection sec) {
    if (!sec.rows.empty()) r.sections.push_back(std::move(sec));
  };
  if (first) add(section(model, "embedding forward", prog.embedding_forward.kernels, false, 1));
  for (std::size_t i = 0; i < programs.size(); ++i) {
    const auto n = static_cast<std::int64_t>(layers_of[i].size());
    for (auto [name, kernels] : {std::pair{"layer forward", &programs[i]->forward.kernels},
                                 std::pair{"layer recompute", &programs[i]->recompute},
                                 std::pair{"layer backward", &programs[i]->backward.kernels}}) {
      auto sec = section(model, name, *kernels, false, n);
      sec.layers = ranges(layers_of[i]);
      add(std::move(sec));
    }
  }
  if (last) {
    add(section(model, "output forward", prog.output_forward.kernels, false, 1));
    add(section(model, "output backward", prog.output_backward.kernels, false, 1));
  }
  if (first) add(section(model, "embedding backward", prog.embedding_backward.kernels, false, 1));
  if (s.software.microbatch_host_s > 0) add(section(model, "host", workload::host_pass(), false, 2 * layout.chunks_per_stage()));
  const double params = workload::stage_params(s, stage);
  const double shard = s.parallel.shards_optimizer() ? params / static_cast<double>(s.parallel.shard_group_size()) : params;
  add(section(model, "gradient buffer zeroing", workload::zero_grad_buffer(s, params), true, 1));
  add(section(model, "optimizer step", workload::optimizer_step(s, shard), true, 1));

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

std::string kernel_markdown(const KernelReport& r) {
  std::ostringstream os;
  os << header(r);
  for (const auto& sec : r.sections) os << "\n" << to_markdown(section_table(sec));
  os << "\n" << footer(r);
  return os.str();
}

std::string kernel_csv(const KernelReport& r) {
  Table t;
  t.columns = {"stage", "section",     "layers",    "per",       "count",     "kernel",   "kind",   "m",     "n",
               "k",     "batch",       "flops",     "model_flops", "bytes",   "launch_s", "compute_s", "memory_s", "time_s",
               "bound"};
  for (const auto& sec : r.sections)
    for (const auto& row : sec.rows) {
      const Kernel& k = row.kernel;
      t.rows.push_back({std::to_string(r.stage), sec.name, sec.layers, sec.per_step ? "step" : "micro-batch", std::to_string(sec.count),
                        k.name, kind_name(k.kind), number(k.m), number(k.n), number(k.k), number(k.batch), number(k.flops),
                        number(k.model_flops), number(k.bytes), number(row.time.launch_s), number(row.time.compute_s),
                        number(row.time.memory_s), number(row.time.total_s()), row.bound});
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
                          {"gemm_rate_flops", r.gemm_rate_flops},
                          {"hbm_Bps", r.hbm_Bps},
                          {"launch_s", r.launch_s},
                          {"sections", std::move(sections)},
                          {"micro_batch_s", r.micro_batch_s},
                          {"step_s", r.step_s}};
  return j.dump(2) + "\n";
}

}  // namespace stepsim::report
