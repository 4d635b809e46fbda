#pragma once
// The metric registry: every step figure that a run table, the JSON, `compare`, a sweep row and
// the md/csv/latex writers show is declared once here, with its name, JSON key, unit and number
// format. And the one layout label ("TP8 CP1 PP4 DP4 VPP2").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/report/step_report.hpp"
#include "stepsim/report/sweep_row.hpp"
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::report {

// How a metric's value prints.
enum class Unit : std::uint8_t {
  Seconds,   // "0.1234 s"
  Count,     // a plain number ("64,908"; thousands separated when whole); the unit is in the name (tokens/s, TFLOP/s)
  Percent,   // a fraction shown as "39.6 %"
  GiB,       // bytes shown as "60.00 GiB"
  Duration,  // seconds shown as "178.3 days" (human_duration)
  Usd,       // "$85,591"
};

struct Metric {
  std::string name;        // "step time", as rows of the run and compare tables
  std::string short_name;  // "step s", a column heading of the sweep tables (unit included)
  std::string json_key;    // "step_time_s"
  Unit unit = Unit::Count;
  int decimals = 0;        // in the run and compare tables
  int row_decimals = 0;    // in the sweep tables (one row per candidate)
  bool compare = true;     // `compare` shows its difference against the first column
  std::optional<double> (*of_report)(const StepReport&) = nullptr;
  std::optional<double> (*of_row)(const SweepRow&) = nullptr;
};

// The step metrics, in the order every table shows them: step time, tokens/s, tokens/s per GPU, TFLOP/s per GPU,
// MFU, bubble, exposed communication, peak memory, GPU memory, time to train, GPU-hours, cost,
// cost per 1M tokens.
[[nodiscard]] const std::vector<Metric>& step_metrics();
// The metric with this JSON key; throws InternalError when there is none.
[[nodiscard]] const Metric& metric(const std::string& json_key);

// The number alone with the metric's decimals (a percentage scaled to 100, bytes in GiB; whole
// numbers and dollars with thousands separators: for reading, not for machines).
[[nodiscard]] std::string value_text(const Metric& m, double value, int decimals);
// The value with its unit: "0.1234 s", "39.6 %", "60.00 GiB", "178.3 days", "$85,591".
[[nodiscard]] std::string value_with_unit(const Metric& m, double value, int decimals);
// A table heading: the name with its unit in parentheses ("step time (s)", "MFU (%)").
[[nodiscard]] std::string heading(const Metric& m);

// A parallel layout and how a training step runs on it.
struct Layout {
  std::int64_t tp = 1, cp = 1, pp = 1, dp = 1, vpp = 1;
  std::string schedule;
  std::int64_t micro_batch = 1;
  std::string recompute;
  std::string cp_comm_type;  // how CP shares K and V (empty or "p2p": the ring)
  std::vector<std::int64_t> hierarchical_cp_sizes;  // a2a+p2p: all-to-all group and ring sizes
};
[[nodiscard]] Layout layout_of(const scenarios::Scenario& s);
[[nodiscard]] Layout layout_of(const SweepRow& r);
// "TP8 CP1 PP4 DP4" (" VPP2" when interleaved; "CP4 (a2a)", "CP8 (a2a+p2p 2x4)" when CP does not
// use the p2p ring alone);
// with `training`, then ", 1f1b, mb 1" and ", recompute selective" when recomputing.
[[nodiscard]] std::string layout_label(const Layout& l, bool training = false);
// " (a2a)", " (a2a+p2p 2x4)": how CP shares keys and values when not by the p2p ring alone; empty
// for the ring and without CP.
[[nodiscard]] std::string cp_comm_suffix(const Layout& l);

}  // namespace stepsim::report
