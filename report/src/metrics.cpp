#include "stepsim/report/metrics.hpp"

#include <algorithm>

#include "stepsim/report/format.hpp"
#include "stepsim/scenarios/error.hpp"

namespace stepsim::report {

namespace {

// `fixed` with thousands separators in the whole part: 1048.6 -> "1,048.6".
std::string grouped_fixed(double value, int decimals) {
  const std::string text = fixed(value, decimals);
  const std::size_t sign = !text.empty() && text[0] == '-' ? 1 : 0;
  const std::size_t point = std::min(text.find('.'), text.size());
  std::string out = text.substr(0, sign);
  for (std::size_t i = sign; i < point; ++i) {
    if (i > sign && (point - i) % 3 == 0) out.push_back(',');
    out.push_back(text[i]);
  }
  out.append(text, point, std::string::npos);
  return out;
}

std::optional<double> bytes(std::optional<std::int64_t> v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

std::vector<Metric> make_metrics() {
  std::vector<Metric> m;
  m.push_back({"step time", "step s", "step_time_s", Unit::Seconds, 4, 3, true,
               [](const StepReport& r) { return std::optional<double>(r.step_time_s); },
               [](const SweepRow& r) { return r.step_time_s; }});
  m.push_back({"tokens/s", "tokens/s", "tokens_per_s", Unit::Count, 0, 0, true,
               [](const StepReport& r) { return std::optional<double>(r.tokens_per_s); },
               [](const SweepRow& r) { return r.tokens_per_s; }});
  m.push_back({"tokens/s per GPU", "tokens/s/GPU", "tokens_per_s_per_gpu", Unit::Count, 0, 0, true,
               [](const StepReport& r) { return std::optional<double>(r.tokens_per_s_per_gpu); },
               [](const SweepRow& r) { return r.tokens_per_s_per_gpu; }});
  m.push_back({"model TFLOP/s per GPU", "TFLOP/s/GPU", "tflops_per_gpu", Unit::Count, 1, 1, true,
               [](const StepReport& r) { return std::optional<double>(r.tflops_per_gpu); },
               [](const SweepRow& r) { return r.tflops_per_gpu; }});
  m.push_back({"MFU", "MFU %", "mfu", Unit::Percent, 1, 1, true, [](const StepReport& r) { return std::optional<double>(r.mfu); },
               [](const SweepRow& r) { return r.mfu; }});
  m.push_back({"bubble", "bubble %", "bubble_fraction", Unit::Percent, 1, 1, true,
               [](const StepReport& r) { return std::optional<double>(r.bubble_fraction); },
               [](const SweepRow& r) { return r.bubble_fraction; }});
  m.push_back({"exposed communication", "exp. comm %", "exposed_comm_fraction", Unit::Percent, 1, 1, true,
               [](const StepReport& r) { return std::optional<double>(r.exposed_comm_fraction); },
               [](const SweepRow& r) { return r.exposed_comm_fraction; }});
  m.push_back({"peak memory", "peak GiB", "peak_memory_bytes", Unit::GiB, 2, 2, true,
               [](const StepReport& r) { return std::optional<double>(static_cast<double>(r.peak_memory_bytes)); },
               [](const SweepRow& r) { return bytes(r.peak_memory_bytes); }});
  m.push_back({"GPU memory", "GPU GiB", "gpu_memory_bytes", Unit::GiB, 2, 2, false,
               [](const StepReport& r) { return std::optional<double>(static_cast<double>(r.gpu_memory_bytes)); },
               [](const SweepRow& r) { return bytes(r.gpu_memory_bytes); }});
  m.push_back({"time to train", "time to train", "time_to_train_s", Unit::Duration, 0, 0, true,
               [](const StepReport& r) { return r.time_to_train_s; }, [](const SweepRow& r) { return r.time_to_train_s; }});
  m.push_back({"GPU-hours", "GPU-hours", "gpu_hours", Unit::Count, 0, 0, true, [](const StepReport& r) { return r.gpu_hours; },
               [](const SweepRow& r) { return r.gpu_hours; }});
  m.push_back({"cost", "cost USD", "cost_usd", Unit::Usd, 0, 0, true, [](const StepReport& r) { return r.cost_usd; },
               [](const SweepRow& r) { return r.cost_usd; }});
  m.push_back({"cost per 1M tokens", "USD/M tokens", "cost_usd_per_million_tokens", Unit::Usd, 3, 3, true,
               [](const StepReport& r) { return r.cost_usd_per_million_tokens; },
               [](const SweepRow& r) { return r.cost_usd_per_million_tokens; }});
  return m;
}

}  // namespace

const std::vector<Metric>& step_metrics() {
  static const std::vector<Metric> metrics = make_metrics();
  return metrics;
}

const Metric& metric(const std::string& json_key) {
  for (const auto& m : step_metrics())
    if (m.json_key == json_key) return m;
  throw InternalError("no metric with the key '" + json_key + "'");
}

std::string value_text(const Metric& m, double value, int decimals) {
  switch (m.unit) {
    case Unit::Percent: return fixed(100.0 * value, decimals);
    case Unit::GiB: return gib(static_cast<std::int64_t>(value), decimals);
    case Unit::Duration: return human_duration(value);
    case Unit::Usd: return decimals == 0 ? grouped(value) : grouped_fixed(value, decimals);
    default: return decimals == 0 ? grouped(value) : grouped_fixed(value, decimals);
  }
}

std::string value_with_unit(const Metric& m, double value, int decimals) {
  const std::string v = value_text(m, value, decimals);
  switch (m.unit) {
    case Unit::Seconds: return v + " s";
    case Unit::Percent: return v + " %";
    case Unit::GiB: return v + " GiB";
    case Unit::Usd: return "$" + v;
    default: return v;
  }
}

std::string heading(const Metric& m) {
  switch (m.unit) {
    case Unit::Seconds: return m.name + " (s)";
    case Unit::Percent: return m.name + " (%)";
    case Unit::GiB: return m.name + " (GiB)";
    case Unit::Usd: return m.name + " (USD)";
    default: return m.name;
  }
}

Layout layout_of(const scenarios::Scenario& s) {
  const auto& p = s.parallel;
  return {p.tp, p.cp, p.pp, p.dp, p.vpp, scenarios::to_string(p.schedule), s.training.micro_batch,
          scenarios::to_string(s.training.recompute), scenarios::to_string(p.cp_comm_type), p.hierarchical_cp_sizes};
}

Layout layout_of(const SweepRow& r) { return {r.tp, r.cp, r.pp, r.dp, r.vpp, r.schedule, r.micro_batch, r.recompute, r.cp_comm_type,
                                             r.hierarchical_cp_sizes}; }

std::string cp_comm_suffix(const Layout& l) {
  if (l.cp <= 1 || l.cp_comm_type.empty() || l.cp_comm_type == "p2p") return std::string();
  std::string s = " (" + l.cp_comm_type;
  if (l.cp_comm_type == "a2a+p2p")
    for (std::size_t i = 0; i < l.hierarchical_cp_sizes.size(); ++i) s += (i == 0 ? " " : "x") + std::to_string(l.hierarchical_cp_sizes[i]);
  return s + ")";
}

std::string layout_label(const Layout& l, bool training) {
  std::string s = "TP" + std::to_string(l.tp) + " CP" + std::to_string(l.cp) + cp_comm_suffix(l);
  s += " PP" + std::to_string(l.pp) + " DP" + std::to_string(l.dp);
  if (l.vpp > 1) s += " VPP" + std::to_string(l.vpp);
  if (!training) return s;
  s += ", " + l.schedule + ", mb " + std::to_string(l.micro_batch);
  if (!l.recompute.empty() && l.recompute != "none") s += ", recompute " + l.recompute;
  return s;
}

}  // namespace stepsim::report
