#include "stepsim/report/svg.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "stepsim/report/format.hpp"
#include "stepsim/report/tables.hpp"
#include "stepsim/scenarios/names.hpp"

namespace stepsim::report {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr const char* kFont = "font-family=\"sans-serif\"";

// Series colours (colour-blind friendly, fixed order).
const char* series_colour(std::size_t i) {
  static const char* kColours[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9",
                                   "#d55e00", "#f0e442", "#000000", "#999999", "#882255"};
  return kColours[i % (sizeof kColours / sizeof kColours[0])];
}

const char* category_colour(GanttCategory c) {
  switch (c) {
    case GanttCategory::Forward: return "#4c9be8";
    case GanttCategory::Backward: return "#f28e2b";
    case GanttCategory::Recompute: return "#b07aa1";
    case GanttCategory::Optimizer: return "#59a14f";
    case GanttCategory::Other: return "#9c755f";
    case GanttCategory::Comm: return "#e15759";
    case GanttCategory::DpComm: return "#76b7b2";
  }
  return "#000000";
}

std::string num(double v) { return fixed(v, 2); }

std::string text_el(double x, double y, const std::string& text, const std::string& extra = "", int size = 12) {
  std::ostringstream os;
  os << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" " << kFont << " font-size=\"" << size << "\"";
  if (!extra.empty()) os << " " << extra;
  os << ">" << xml_escape(text) << "</text>\n";
  return os.str();
}

std::string svg_open(int width, int height) {
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << width << "\" height=\"" << height
     << "\" viewBox=\"0 0 " << width << " " << height << "\">\n";
  os << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"#ffffff\"/>\n";
  return os.str();
}

// Maps data values to pixels along one axis.
struct Scale {
  double lo = 0, hi = 1, px_lo = 0, px_hi = 1;
  bool log = false;
  double operator()(double v) const {
    if (log) {
      const double l = std::log10(std::max(v, 1e-300));
      return px_lo + (l - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (px_hi - px_lo);
    }
    return px_lo + (v - lo) / (hi - lo) * (px_hi - px_lo);
  }
};

int tick_decimals(const std::vector<double>& ticks) {
  if (ticks.size() < 2) return 2;
  const double step = std::abs(ticks[1] - ticks[0]);
  if (step <= 0) return 2;
  return std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)), 0, 6);
}

// Horizontal axis with ticks, grid lines and a label.
std::string x_axis(const Scale& sx, double y_top, double y_bottom, const std::string& label, bool compact,
                   const std::vector<double>& fixed_ticks = {}) {
  std::ostringstream os;
  const auto ticks = fixed_ticks.empty() ? axis_ticks(sx.lo, sx.hi, sx.log) : fixed_ticks;
  const int dec = tick_decimals(ticks);
  for (double t : ticks) {
    const double x = sx(t);
    os << "<line x1=\"" << num(x) << "\" y1=\"" << num(y_top) << "\" x2=\"" << num(x) << "\" y2=\"" << num(y_bottom)
       << "\" stroke=\"#e0e0e0\" stroke-width=\"1\"/>\n";
    os << text_el(x, y_bottom + 15, compact || sx.log ? short_number(t) : fixed(t, dec), "text-anchor=\"middle\"", 11);
  }
  os << "<line x1=\"" << num(sx.px_lo) << "\" y1=\"" << num(y_bottom) << "\" x2=\"" << num(sx.px_hi) << "\" y2=\""
     << num(y_bottom) << "\" stroke=\"#333333\" stroke-width=\"1\"/>\n";
  os << text_el((sx.px_lo + sx.px_hi) / 2, y_bottom + 32, label, "text-anchor=\"middle\"");
  return os.str();
}

std::string y_axis(const Scale& sy, double x_left, double x_right, const std::string& label) {
  std::ostringstream os;
  const auto ticks = axis_ticks(sy.lo, sy.hi, sy.log);
  const int dec = tick_decimals(ticks);
  for (double t : ticks) {
    const double y = sy(t);
    os << "<line x1=\"" << num(x_left) << "\" y1=\"" << num(y) << "\" x2=\"" << num(x_right) << "\" y2=\"" << num(y)
       << "\" stroke=\"#e0e0e0\" stroke-width=\"1\"/>\n";
    os << text_el(x_left - 6, y + 4, sy.log || std::abs(t) >= 1e4 ? short_number(t) : fixed(t, dec),
                  "text-anchor=\"end\"", 11);
  }
  os << "<line x1=\"" << num(x_left) << "\" y1=\"" << num(sy.px_hi) << "\" x2=\"" << num(x_left) << "\" y2=\""
     << num(sy.px_lo) << "\" stroke=\"#333333\" stroke-width=\"1\"/>\n";
  const double yc = (sy.px_lo + sy.px_hi) / 2;
  os << text_el(16, yc, label, "text-anchor=\"middle\" transform=\"rotate(-90 16 " + num(yc) + ")\"");
  return os.str();
}

// Step-function path of one memory series in pixel space; events closer than half a pixel are
// merged into one column that spans their minimum and maximum, so that peaks stay visible.
std::string memory_path(const MemorySeries& s, const Scale& sx, const Scale& sy, double end_s) {
  std::ostringstream os;
  os << "M" << num(sx(0)) << " " << num(sy(static_cast<double>(s.static_bytes) / kGiB));
  double col_x = -1e300, col_min = 0, col_max = 0, col_last = 0;
  bool open = false;
  auto flush = [&]() {
    if (!open) return;
    os << " H" << num(col_x);
    if (col_max != col_last || col_min != col_last) os << " V" << num(sy(col_max)) << " V" << num(sy(col_min));
    os << " V" << num(sy(col_last));
    open = false;
  };
  for (const auto& p : s.points) {
    const double x = sx(std::min(p.time_s, end_s));
    const double v = static_cast<double>(p.bytes) / kGiB;
    if (open && x - col_x < 0.5) {
      col_min = std::min(col_min, v);
      col_max = std::max(col_max, v);
      col_last = v;
      continue;
    }
    flush();
    col_x = x;
    col_min = col_max = col_last = v;
    open = true;
  }
  flush();
  os << " H" << num(sx(end_s));
  return os.str();
}

}  // namespace

std::string to_string(GanttCategory c) {
  static constexpr scenarios::NameTable<GanttCategory, 7> kNames{{
      {"forward", GanttCategory::Forward}, {"backward", GanttCategory::Backward}, {"recompute", GanttCategory::Recompute}, {"optimizer", GanttCategory::Optimizer},
      {"other compute", GanttCategory::Other}, {"TP/CP/PP communication", GanttCategory::Comm}, {"DP communication", GanttCategory::DpComm}}};
  return scenarios::name_of(kNames, c);
}

std::string short_number(double v) {
  const double a = std::abs(v);
  auto trim = [](std::string s) {
    if (s.find('.') != std::string::npos) {
      while (!s.empty() && s.back() == '0') s.pop_back();
      if (!s.empty() && s.back() == '.') s.pop_back();
    }
    return s;
  };
  if (a >= 1e12) return trim(fixed(v / 1e12, 2)) + "T";
  if (a >= 1e9) return trim(fixed(v / 1e9, 2)) + "G";
  if (a >= 1e6) return trim(fixed(v / 1e6, 2)) + "M";
  if (a >= 1e4) return trim(fixed(v / 1e3, 2)) + "k";
  if (a >= 1 || a == 0) return trim(fixed(v, 2));
  return trim(fixed(v, 3 - static_cast<int>(std::floor(std::log10(a)))));
}

std::vector<double> axis_ticks(double lo, double hi, bool log_scale) {
  std::vector<double> out;
  if (!(hi > lo)) return {lo};
  if (log_scale && lo > 0) {
    const int d0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
    const int d1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
    const bool fine = d1 - d0 <= 2;
    for (int d = d0; d <= d1; ++d) {
      const double base = std::pow(10.0, d);
      for (double m : {1.0, 2.0, 5.0}) {
        if (m != 1.0 && !fine) continue;
        const double t = m * base;
        if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) out.push_back(t);
      }
    }
    if (out.empty()) out.push_back(lo);
    return out;
  }
  const double raw = (hi - lo) / 6.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (int i = 0; i < 100; ++i) {
    const double t = first + step * i;
    if (t > hi + step * 1e-9) break;
    out.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return out;
}

std::string svg_document(const std::string& svg_element) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + svg_element;
}

MemoryPlot memory_plot(const sim::StepGraph& graph, const memory::Timeline& timeline, double step_time_s,
                       const std::string& title) {
  MemoryPlot p;
  p.title = title;
  p.step_time_s = step_time_s;
  std::map<std::int32_t, int> per_stage;
  for (const auto& d : graph.devices) ++per_stage[d.stage];
  for (std::size_t i = 0; i < graph.devices.size() && i < timeline.devices.size(); ++i) {
    const auto& d = graph.devices[i];
    const auto& t = timeline.devices[i];
    MemorySeries s;
    s.label = "stage " + std::to_string(d.stage);
    if (per_stage[d.stage] > 1) s.label += " (rank " + std::to_string(d.gpu) + ")";
    s.static_bytes = t.static_bytes;
    s.points = t.points;
    p.capacity_bytes = std::max(p.capacity_bytes, t.capacity_bytes);
    p.series.push_back(std::move(s));
  }
  if (timeline.oom) {
    const auto& o = *timeline.oom;
    const auto dv = static_cast<std::size_t>(o.device);
    if (dv < p.series.size()) {
      const auto cap = timeline.devices[dv].capacity_bytes;
      p.oom = MemoryMark{dv, o.time_s, cap + o.bytes_over,
                         "OOM: " + p.series[dv].label + " at " + fixed(o.time_s, 3) + " s (+" + gib(o.bytes_over, 2) +
                             " GiB)"};
    }
  } else {
    for (std::size_t i = 0; i < p.series.size(); ++i)
      if (p.series[i].static_bytes > timeline.devices[i].capacity_bytes) {
        p.oom = MemoryMark{i, 0.0, p.series[i].static_bytes, "OOM: " + p.series[i].label + " static memory exceeds the GPU"};
        break;
      }
  }
  return p;
}

std::string memory_svg(const MemoryPlot& plot, int width_px) {
  const double legend_h = 22.0 * static_cast<double>((plot.series.size() + 5) / 6);
  const int height = static_cast<int>(360 + legend_h);
  const double left = 70, right = width_px - 20.0, top = 40, bottom = 300;
  double max_bytes = static_cast<double>(plot.capacity_bytes);
  for (const auto& s : plot.series) {
    max_bytes = std::max(max_bytes, static_cast<double>(s.static_bytes));
    for (const auto& pt : s.points) max_bytes = std::max(max_bytes, static_cast<double>(pt.bytes));
  }
  const double end_s = plot.step_time_s > 0 ? plot.step_time_s : 1.0;
  const Scale sx{0, end_s, left, right, false};
  const Scale sy{0, std::max(max_bytes / kGiB * 1.08, 1.0), bottom, top, false};
  std::ostringstream os;
  os << svg_open(width_px, height);
  os << text_el(left, 22, plot.title, "font-weight=\"bold\"", 14);
  os << x_axis(sx, top, bottom, "time in the step (s)", false);
  os << y_axis(sy, left, right, "memory per GPU (GiB)");
  if (plot.capacity_bytes > 0) {
    const double y = sy(static_cast<double>(plot.capacity_bytes) / kGiB);
    os << "<line x1=\"" << num(left) << "\" y1=\"" << num(y) << "\" x2=\"" << num(right) << "\" y2=\"" << num(y)
       << "\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n";
    os << text_el(right - 4, y - 5, "GPU memory " + gib(plot.capacity_bytes, 1) + " GiB", "text-anchor=\"end\" fill=\"#d62728\"", 11);
  }
  for (std::size_t i = 0; i < plot.series.size(); ++i)
    os << "<path d=\"" << memory_path(plot.series[i], sx, sy, end_s) << "\" fill=\"none\" stroke=\""
       << series_colour(i) << "\" stroke-width=\"1.5\"/>\n";
  if (plot.oom) {
    const double x = sx(plot.oom->time_s), y = sy(static_cast<double>(plot.oom->bytes) / kGiB);
    os << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"6\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"2.5\"/>\n";
    const bool left_side = x > (left + right) / 2;
    os << text_el(left_side ? x - 10 : x + 10, std::max(y - 10, top + 12), plot.oom->label,
                  std::string("fill=\"#d62728\" font-weight=\"bold\" text-anchor=\"") + (left_side ? "end" : "start") + "\"", 12);
  }
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const double lx = left + 150.0 * static_cast<double>(i % 6), ly = bottom + 50 + 22.0 * static_cast<double>(i / 6);
    os << "<line x1=\"" << num(lx) << "\" y1=\"" << num(ly - 4) << "\" x2=\"" << num(lx + 20) << "\" y2=\"" << num(ly - 4)
       << "\" stroke=\"" << series_colour(i) << "\" stroke-width=\"3\"/>\n";
    os << text_el(lx + 26, ly, plot.series[i].label, "", 11);
  }
  os << "</svg>\n";
  return os.str();
}

GanttPlot gantt_plot(const sim::StepGraph& graph, const sim::Trace& trace, const std::string& title) {
  GanttPlot p;
  p.title = title;
  p.makespan_s = trace.makespan_s;
  std::map<std::int32_t, int> per_stage;
  for (const auto& d : graph.devices) ++per_stage[d.stage];
  for (const auto& d : graph.devices) {
    GanttRow r;
    r.label = "stage " + std::to_string(d.stage);
    if (per_stage[d.stage] > 1) r.label += " r" + std::to_string(d.gpu);
    p.rows.push_back(std::move(r));
  }
  for (std::size_t i = 0; i < graph.ops.size() && i < trace.ops.size(); ++i) {
    const auto& op = graph.ops[i];
    if (op.kind == sim::OpKind::Delay) continue;
    const auto dv = static_cast<std::size_t>(op.device);
    if (dv >= p.rows.size()) continue;
    GanttBar b{trace.ops[i].start_s, trace.ops[i].end_s, GanttCategory::Other};
    if (!(b.end_s > b.start_s)) continue;
    if (op.kind == sim::OpKind::Compute) {
      switch (op.phase) {
        case sim::Phase::Forward: b.category = GanttCategory::Forward; break;
        case sim::Phase::Backward: b.category = GanttCategory::Backward; break;
        case sim::Phase::Recompute: b.category = GanttCategory::Recompute; break;
        case sim::Phase::Optimizer: b.category = GanttCategory::Optimizer; break;
        default: b.category = GanttCategory::Other;
      }
    } else {
      b.category = op.stream == sim::Stream::DpComm ? GanttCategory::DpComm : GanttCategory::Comm;
    }
    p.rows[dv].bars.push_back(b);
  }
  for (auto& r : p.rows)
    std::stable_sort(r.bars.begin(), r.bars.end(), [](const GanttBar& a, const GanttBar& b) {
      return a.start_s < b.start_s || (a.start_s == b.start_s && a.category < b.category);
    });
  return p;
}

std::string gantt_svg(const GanttPlot& plot, int width_px, double time_axis_s) {
  const double left = 80, right = width_px - 16.0, top = 40;
  const double lane_c = 18, lane_m = 12, row_gap = 10;
  const double row_h = lane_c + lane_m + row_gap;
  const double bottom = top + row_h * static_cast<double>(plot.rows.size());
  const double axis_end = time_axis_s > 0 ? time_axis_s : (plot.makespan_s > 0 ? plot.makespan_s : 1.0);
  const Scale sx{0, axis_end, left, right, false};
  const double merge_gap_s = axis_end / (right - left) * 0.5;  // half a pixel

  const GanttCategory legend[] = {GanttCategory::Forward, GanttCategory::Backward, GanttCategory::Recompute,
                                  GanttCategory::Optimizer, GanttCategory::Other, GanttCategory::Comm,
                                  GanttCategory::DpComm};
  const int per_line = std::max(1, static_cast<int>((right - left) / 175));
  const int legend_items = 8;  // categories + idle
  const int legend_lines = (legend_items + per_line - 1) / per_line;
  const int height = static_cast<int>(bottom + 50 + 20.0 * legend_lines);

  std::ostringstream os;
  os << svg_open(width_px, height);
  os << text_el(left, 22, plot.title, "font-weight=\"bold\"", 14);
  os << x_axis(sx, top - 4, bottom, "time in the step (s)", false);
  for (std::size_t r = 0; r < plot.rows.size(); ++r) {
    const auto& row = plot.rows[r];
    const double y = top + row_h * static_cast<double>(r);
    os << text_el(left - 6, y + lane_c - 5, row.label, "text-anchor=\"end\"", 11);
    // Idle background of the compute lane up to the end of the step, then the lane backgrounds.
    os << "<rect x=\"" << num(left) << "\" y=\"" << num(y) << "\" width=\"" << num(sx(plot.makespan_s) - left)
       << "\" height=\"" << num(lane_c) << "\" fill=\"#dddddd\"/>\n";
    os << "<rect x=\"" << num(left) << "\" y=\"" << num(y + lane_c + 1) << "\" width=\"" << num(sx(plot.makespan_s) - left)
       << "\" height=\"" << num(lane_m - 1) << "\" fill=\"#f4f4f4\"/>\n";
    // Bars per category, adjacent ones (closer than half a pixel) merged.
    for (auto cat : legend) {
      const bool comm = cat == GanttCategory::Comm || cat == GanttCategory::DpComm;
      double ly = y, lh = lane_c;
      if (cat == GanttCategory::Comm) ly = y + lane_c + 1, lh = lane_m / 2 - 0.5;
      if (cat == GanttCategory::DpComm) ly = y + lane_c + 1 + lane_m / 2, lh = lane_m / 2 - 0.5;
      double cur_s = -1, cur_e = -1;
      auto flush = [&]() {
        if (cur_e <= cur_s) return;
        const double x0 = sx(cur_s), x1 = sx(cur_e);
        os << "<rect x=\"" << num(x0) << "\" y=\"" << num(ly) << "\" width=\"" << num(std::max(x1 - x0, 0.3))
           << "\" height=\"" << num(lh) << "\" fill=\"" << category_colour(cat) << "\"/>\n";
      };
      for (const auto& b : row.bars) {
        if (b.category != cat) continue;
        if (cur_e >= cur_s && cur_s >= 0 && b.start_s <= cur_e + merge_gap_s && (comm || b.start_s - cur_e <= merge_gap_s)) {
          cur_e = std::max(cur_e, b.end_s);
          continue;
        }
        flush();
        cur_s = b.start_s;
        cur_e = b.end_s;
      }
      flush();
    }
  }
  // Legend.
  for (int i = 0; i < legend_items; ++i) {
    const double lx = left + 175.0 * (i % per_line), ly = bottom + 50 + 20.0 * (i / per_line);
    const std::string colour = i < 7 ? category_colour(legend[i]) : "#dddddd";
    const std::string name = i < 7 ? to_string(legend[i]) : "idle (bubble, waits)";
    os << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly - 10) << "\" width=\"14\" height=\"10\" fill=\"" << colour << "\"/>\n";
    os << text_el(lx + 19, ly, name, "", 11);
  }
  os << "</svg>\n";
  return os.str();
}

std::string xy_svg(const XYChart& chart, int width_px, int height_px) {
  const double left = 80, right = width_px - 210.0, top = 40, bottom = height_px - 60.0;
  double x_lo = 1e300, x_hi = -1e300, y_lo = 1e300, y_hi = -1e300;
  std::size_t n_points = 0;
  for (const auto& s : chart.series)
    for (const auto* v : {&s.points, &s.highlight})
      for (const auto& p : *v) {
        if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
        if ((chart.log_x && p.x <= 0) || (chart.log_y && p.y <= 0)) continue;
        x_lo = std::min(x_lo, p.x), x_hi = std::max(x_hi, p.x);
        y_lo = std::min(y_lo, p.y), y_hi = std::max(y_hi, p.y);
        ++n_points;
      }
  if (n_points == 0) x_lo = y_lo = chart.log_x || chart.log_y ? 1 : 0, x_hi = y_hi = 1;
  auto widen = [](double& lo, double& hi, bool log, bool from_zero) {
    if (log) {
      lo = std::pow(10.0, std::floor(std::log10(lo) + 1e-9));
      hi = std::pow(10.0, std::ceil(std::log10(hi) - 1e-9));
      if (hi <= lo) hi = lo * 10;
      return;
    }
    if (from_zero && lo > 0) lo = 0;
    if (hi <= lo) hi = lo + (lo == 0 ? 1 : std::abs(lo));
    const double pad_v = (hi - lo) * 0.06;
    hi += pad_v;
    if (!from_zero) lo -= pad_v;
  };
  widen(x_lo, x_hi, chart.log_x, false);
  if (chart.log_x && !chart.x_ticks.empty() && n_points > 0) {
    // Explicit ticks on a log axis: a margin of a fifth of the data range instead of whole decades.
    double lo = 1e300, hi = -1e300;
    for (const auto& s : chart.series)
      for (const auto& p : s.points)
        if (p.x > 0) lo = std::min(lo, p.x), hi = std::max(hi, p.x);
    if (hi >= lo && lo > 0) {
      const double m = hi > lo ? std::pow(hi / lo, 0.1) : 2.0;
      x_lo = lo / m, x_hi = hi * m;
    }
  }
  widen(y_lo, y_hi, chart.log_y, true);
  const Scale sx{x_lo, x_hi, left, right, chart.log_x};
  const Scale sy{y_lo, y_hi, bottom, top, chart.log_y};
  auto ok = [&](const XYPoint& p) {
    return std::isfinite(p.x) && std::isfinite(p.y) && !(chart.log_x && p.x <= 0) && !(chart.log_y && p.y <= 0);
  };

  std::ostringstream os;
  os << svg_open(width_px, height_px);
  os << text_el(left, 22, chart.title, "font-weight=\"bold\"", 14);
  std::vector<double> x_ticks;
  for (double t : chart.x_ticks)
    if (t >= x_lo && t <= x_hi && !(chart.log_x && t <= 0)) x_ticks.push_back(t);
  os << x_axis(sx, top, bottom, chart.x_label, true, x_ticks);
  os << y_axis(sy, left, right, chart.y_label);
  if (n_points == 0) os << text_el((left + right) / 2, (top + bottom) / 2, "no data points", "text-anchor=\"middle\" fill=\"#666666\"");
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const auto& s = chart.series[i];
    const char* colour = series_colour(i);
    std::vector<XYPoint> pts;
    for (const auto& p : s.points)
      if (ok(p)) pts.push_back(p);
    if (s.lines && pts.size() > 1) {
      auto sorted = pts;
      std::stable_sort(sorted.begin(), sorted.end(), [](const XYPoint& a, const XYPoint& b) { return a.x < b.x; });
      os << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\"";
      for (std::size_t k = 0; k < sorted.size(); ++k) os << (k ? " " : "") << num(sx(sorted[k].x)) << "," << num(sy(sorted[k].y));
      os << "\"/>\n";
    }
    for (const auto& p : pts)
      os << "<circle cx=\"" << num(sx(p.x)) << "\" cy=\"" << num(sy(p.y)) << "\" r=\"3.5\" fill=\"" << colour
         << "\" fill-opacity=\"" << (s.highlight.empty() ? "0.9" : "0.45") << "\"/>\n";
    std::vector<XYPoint> hl;
    for (const auto& p : s.highlight)
      if (ok(p)) hl.push_back(p);
    if (hl.size() > 1) {
      os << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\" points=\"";
      for (std::size_t k = 0; k < hl.size(); ++k) os << (k ? " " : "") << num(sx(hl[k].x)) << "," << num(sy(hl[k].y));
      os << "\"/>\n";
    }
    for (const auto& p : hl) {
      os << "<circle cx=\"" << num(sx(p.x)) << "\" cy=\"" << num(sy(p.y)) << "\" r=\"5.5\" fill=\"" << colour
         << "\" stroke=\"#000000\" stroke-width=\"1.5\"/>\n";
      if (!p.label.empty()) os << text_el(sx(p.x) + 8, sy(p.y) - 6, p.label, "fill=\"#333333\"", 10);
    }
  }
  // Legend on the right.
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const double lx = right + 20, ly = top + 10 + 20.0 * static_cast<double>(i);
    os << "<circle cx=\"" << num(lx + 5) << "\" cy=\"" << num(ly - 4) << "\" r=\"5\" fill=\"" << series_colour(i) << "\"/>\n";
    os << text_el(lx + 16, ly, chart.series[i].name, "", 11);
  }
  bool any_highlight = false;
  for (const auto& s : chart.series) any_highlight = any_highlight || !s.highlight.empty();
  if (any_highlight) {
    const double ly = top + 10 + 20.0 * static_cast<double>(chart.series.size()) + 6;
    os << "<circle cx=\"" << num(right + 25) << "\" cy=\"" << num(ly - 4) << "\" r=\"5.5\" fill=\"#ffffff\" stroke=\"#000000\" stroke-width=\"1.5\"/>\n";
    os << text_el(right + 36, ly, "Pareto front", "", 11);
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace stepsim::report
