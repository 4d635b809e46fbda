#include "stepsim/report/memory_report.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "stepsim/report/format.hpp"
#include "stepsim/report/metrics.hpp"

namespace stepsim::report {

using scenarios::Scenario;

std::string scenario_summary(const Scenario& s) {
  std::ostringstream os;
  os << s.name << ": " << s.model.name << " on " << s.cluster.nodes << " x " << s.cluster.gpus_per_node << " "
     << s.cluster.gpu.name << " (" << s.world_size() << " GPUs" << (s.cluster.preset.empty() ? "" : ", " + s.cluster.preset)
     << "); " << layout_label(layout_of(s)) << ", " << scenarios::to_string(s.parallel.schedule) << ", seq " << s.training.seq_len << ", micro-batch "
     << s.training.micro_batch << ", global batch " << s.training.global_batch << " (" << s.micro_batches()
     << " micro-batches), recompute " << scenarios::to_string(s.training.recompute);
  // How the layers are split when not evenly (scenarios/layout.hpp).
  const auto& p = s.parallel;
  if (!p.pipeline_layout.empty()) os << ", pipeline layout " << p.pipeline_layout;
  if (p.first_stage_layers) os << ", first stage " << *p.first_stage_layers << " layers";
  if (p.last_stage_layers) os << ", last stage " << *p.last_stage_layers << " layers";
  if (p.account_for_embedding_in_pipeline_split) os << ", embedding counted in the split";
  if (p.account_for_loss_in_pipeline_split) os << ", loss counted in the split";
  if (s.training.fp8()) os << ", precision " << scenarios::to_string(s.training.precision);
  return os.str();
}

namespace {

std::string pct(std::int64_t bytes, std::int64_t total) {
  return fixed(100.0 * static_cast<double>(bytes) / static_cast<double>(total), 1);
}

// Stages shown in the table: first, middle, last and the peak (distinct, in order).
std::vector<std::size_t> shown_stages(const memory::StepsimEstimate& est) {
  std::set<std::size_t> idx;
  const std::size_t n = est.stages.size();
  idx.insert(0);
  if (n > 2) idx.insert(n / 2);
  idx.insert(n - 1);
  idx.insert(static_cast<std::size_t>(est.peak_stage));
  return {idx.begin(), idx.end()};
}

// Which stages the table shows and why: "stages 0 (first, peak), 2 (middle), 3 (last) of 4".
std::string shown_stages_text(const memory::StepsimEstimate& est, const std::vector<std::size_t>& shown) {
  const std::size_t n = est.stages.size();
  std::string out = shown.size() == 1 ? "stage " : "stages ";
  for (std::size_t k = 0; k < shown.size(); ++k) {
    const std::size_t i = shown[k];
    std::vector<std::string> roles;
    if (i == 0) roles.emplace_back("first");
    if (n > 2 && i == n / 2) roles.emplace_back("middle");
    if (i == n - 1 && n > 1) roles.emplace_back("last");
    if (static_cast<std::int64_t>(i) == est.peak_stage) roles.emplace_back("peak");
    std::string r;
    for (const auto& role : roles) r += (r.empty() ? "" : ", ") + role;
    out += (k ? ", " : "") + std::to_string(est.stages[i].stage) + " (" + r + ")";
  }
  return out + " of " + std::to_string(n);
}

}  // namespace

std::string memory_table(const Scenario& s, const memory::PaperEstimate& paper, const memory::StepsimEstimate& est) {
  std::ostringstream os;
  const std::int64_t gpu = paper.gpu_memory_bytes;
  const std::string usable = fixed(paper.usable_fraction, 2) + " x GPU memory";
  os << scenario_summary(s) << "\n";
  os << "GPU memory " << gib(gpu, 2) << " GiB; usable fraction (memory.usable_fraction) " << fixed(paper.usable_fraction, 2)
     << ": " << fixed(paper.usable_fraction * static_cast<double>(gpu) / memory::kGiB, 2) << " GiB\n\n";

  os << "paper mode (Fujii et al. 2024 estimator, first pipeline stage)\n";
  os << pad("term", -46) << pad("GiB", 10) << pad("% GPU", 8) << "\n";
  auto row = [&](const std::string& label, std::int64_t bytes) {
    os << pad("  " + label, -46) << pad(gib(bytes), 10) << pad(pct(bytes, gpu), 8) << "\n";
  };
  row("weights (bf16)", paper.weights_bytes);
  row(s.training.grads_in_fp32 ? "gradients (fp32)" : "gradients (bf16)", paper.grads_bytes);
  row("optimizer states", paper.optimizer_bytes);
  row("model states (" + fixed(paper.bytes_per_param, 3) + " bytes/param)", paper.model_states_bytes);
  row("activations: transformer layers", paper.transformer_activation_bytes);
  row("activations: embedding input (8p term)", paper.embedding_activation_bytes);
  row("activations: output layer + loss (p = 1)", paper.output_activation_bytes);
  row("activations", paper.activation_bytes);
  row("total", paper.total_bytes);
  os << "  verdict: " << (paper.under_usable_fraction ? "total <= " : "total > ") << usable << " -> "
     << (paper.under_usable_fraction ? "predicted to fit" : "not predicted safe") << "\n\n";

  const auto stages = shown_stages(est);
  os << "stepsim mode (" << scenarios::to_string(s.parallel.schedule) << " schedule; " << shown_stages_text(est, stages)
     << (stages.size() < est.stages.size() ? ", every stage in --format json" : "") << ")\n";
  os << pad("term", -46);
  for (auto i : stages) os << pad("stage " + std::to_string(est.stages[i].stage), 12) << pad("%", 7);
  os << "\n";
  for (std::size_t t = 0; t < est.stages[0].terms.size(); ++t) {
    os << pad("  " + std::string(est.stages[0].terms[t].label), -46);
    for (auto i : stages) {
      const auto b = est.stages[i].terms[t].bytes;
      os << pad(gib(b), 12) << pad(pct(b, gpu), 7);
    }
    os << "\n";
  }
  os << pad("  total", -46);
  for (auto i : stages) os << pad(gib(est.stages[i].total_bytes), 12) << pad(pct(est.stages[i].total_bytes, gpu), 7);
  os << "\n" << pad("  in-flight forward passes", -46);
  for (auto i : stages) os << pad(std::to_string(est.stages[i].in_flight), 12) << pad("", 7);
  os << "\n  peak: stage " << est.peak_stage << ", " << gib(est.peak_bytes) << " GiB ("
     << pct(est.peak_bytes, gpu) << " % of GPU memory) -> " << (est.fits ? "fits" : "OUT OF MEMORY") << "\n";
  if (est.headroom_bytes > 0)
    os << "  headroom (memory.headroom_gib) " << gib(est.headroom_bytes, 2) << " GiB: the peak is "
       << (est.fits_with_headroom ? "within " : "over ") << gib(est.gpu_memory_bytes - est.headroom_bytes, 2) << " GiB -> "
       << (est.fits_with_headroom ? "kept" : "pruned") << " by sweep --prune stepsim\n";
  return os.str();
}

std::string memory_json(const Scenario& s, const memory::PaperEstimate& paper, const memory::StepsimEstimate& est) {
  nlohmann::ordered_json j;
  j["scenario"] = s.name;
  j["summary"] = scenario_summary(s);
  auto& pj = j["paper"];
  pj["params_first_stage"] = paper.params_first_stage;
  pj["bytes_per_param"] = paper.bytes_per_param;
  pj["weights_bytes"] = paper.weights_bytes;
  pj["grads_bytes"] = paper.grads_bytes;
  pj["optimizer_bytes"] = paper.optimizer_bytes;
  pj["model_states_bytes"] = paper.model_states_bytes;
  pj["transformer_activation_bytes"] = paper.transformer_activation_bytes;
  pj["embedding_activation_bytes"] = paper.embedding_activation_bytes;
  pj["output_activation_bytes"] = paper.output_activation_bytes;
  pj["activation_bytes"] = paper.activation_bytes;
  pj["total_bytes"] = paper.total_bytes;
  pj["gpu_memory_bytes"] = paper.gpu_memory_bytes;
  pj["usable_fraction"] = paper.usable_fraction;
  pj["under_usable_fraction"] = paper.under_usable_fraction;
  auto& sj = j["stepsim"];
  sj["peak_stage"] = est.peak_stage;
  sj["peak_bytes"] = est.peak_bytes;
  sj["gpu_memory_bytes"] = est.gpu_memory_bytes;
  sj["fits"] = est.fits;
  sj["headroom_bytes"] = est.headroom_bytes;
  sj["fits_with_headroom"] = est.fits_with_headroom;
  auto& arr = j["stages"];
  arr = nlohmann::ordered_json::array();
  for (const auto& st : est.stages) {
    nlohmann::ordered_json o;
    o["stage"] = st.stage;
    o["in_flight"] = st.in_flight;
    o["total_bytes"] = st.total_bytes;
    for (const auto& t : st.terms) o[std::string(t.key)] = t.bytes;
    arr.push_back(o);
  }
  return j.dump(2) + "\n";
}

}  // namespace stepsim::report
