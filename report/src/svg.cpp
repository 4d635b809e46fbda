#include "stepsim/report/svg.hpp"

#include <algorithm>
#include <array>
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

constexpr const char* kRed = "#d62728";
// A white outline under text that may cross lines of the plot.
constexpr const char* kHalo = "stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\"";

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

// The bold title from the top, wrapped to max_width; `below` receives the y under its last line.
std::string title_block(const std::string& title, double x, double max_width, double& below) {
  std::ostringstream os;
  double y = 22;
  for (const auto& line : wrap_text(title, 14, max_width, true)) {
    os << text_el(x, y, line, "font-weight=\"bold\"", 14);
    y += 18;
  }
  below = y - 18 + 6;
  return os.str();
}

// Lines of `size` px text from baseline y, wrapped to max_width; `below` receives the y under them.
std::string text_lines(const std::string& text, double x, double y, double max_width, int size, const std::string& extra,
                       double& below, bool bold = false) {
  std::ostringstream os;
  for (const auto& line : wrap_text(text, size, max_width, bold)) {
    os << text_el(x, y, line, extra, size);
    y += size + 4;
  }
  below = y - size;
  return os.str();
}

// Legend entries laid out left to right, wrapping at max_width.
enum class Swatch : std::uint8_t { Line, DashedLine, Rect, Dot, Ring };
struct LegendItem {
  Swatch swatch = Swatch::Line;
  std::string colour;
  std::string label;
  std::string text_extra;                      // e.g. a fill for the label
};

std::string legend_flow(const std::vector<LegendItem>& items, double x0, double y0, double max_width, double& below) {
  std::ostringstream os;
  const double swatch_w = 20, gap = 18, row_h = 18;
  double x = x0, y = y0 + 11;
  for (const auto& it : items) {
    const double w = swatch_w + 5 + text_width_px(it.label, 11);
    if (x > x0 && x + w > x0 + max_width) x = x0, y += row_h;
    const double cy = y - 4;
    switch (it.swatch) {
      case Swatch::Line:
      case Swatch::DashedLine:
        os << "<line x1=\"" << num(x) << "\" y1=\"" << num(cy) << "\" x2=\"" << num(x + swatch_w) << "\" y2=\"" << num(cy)
           << "\" stroke=\"" << it.colour << "\" stroke-width=\"" << (it.swatch == Swatch::Line ? "3" : "1.5\" stroke-dasharray=\"4 3")
           << "\"/>\n";
        break;
      case Swatch::Rect:
        os << "<rect x=\"" << num(x + 3) << "\" y=\"" << num(cy - 5) << "\" width=\"14\" height=\"10\" fill=\"" << it.colour
           << "\"/>\n";
        break;
      case Swatch::Dot:
        os << "<circle cx=\"" << num(x + swatch_w / 2) << "\" cy=\"" << num(cy) << "\" r=\"5\" fill=\"" << it.colour << "\"/>\n";
        break;
      case Swatch::Ring:
        os << "<circle cx=\"" << num(x + swatch_w / 2) << "\" cy=\"" << num(cy) << "\" r=\"5.5\" fill=\"" << it.colour
           << "\" stroke=\"#000000\" stroke-width=\"1.5\"/>\n";
        break;
    }
    os << text_el(x + swatch_w + 5, y, it.label, it.text_extra, 11);
    x += w + gap;
  }
  below = items.empty() ? y0 : y + 7;
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

// Horizontal axis with ticks, grid lines and a label; a tick label that would touch the one
// before it is left out (its grid line stays).
std::string x_axis(const Scale& sx, double y_top, double y_bottom, const std::string& label, bool compact,
                   const std::vector<double>& fixed_ticks = {}) {
  std::ostringstream os;
  const auto ticks = fixed_ticks.empty() ? axis_ticks(sx.lo, sx.hi, sx.log) : fixed_ticks;
  const int dec = tick_decimals(ticks);
  double last_right = -1e300;
  for (double t : ticks) {
    const double x = sx(t);
    os << "<line x1=\"" << num(x) << "\" y1=\"" << num(y_top) << "\" x2=\"" << num(x) << "\" y2=\"" << num(y_bottom)
       << "\" stroke=\"#e0e0e0\" stroke-width=\"1\"/>\n";
    const std::string text = compact || sx.log ? short_number(t) : fixed(t, dec);
    const double half = text_width_px(text, 11) / 2;
    if (x - half < last_right + 4) continue;
    last_right = x + half;
    os << text_el(x, y_bottom + 15, text, "text-anchor=\"middle\"", 11);
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

std::int64_t series_peak(const MemorySeries& s) {
  std::int64_t peak = s.static_bytes;
  for (const auto& p : s.points) peak = std::max(peak, p.bytes);
  return peak;
}

// Label positions (pixel y of each, in input order) at least `spacing` apart within [lo, hi],
// each as close to its wanted position as the others allow.
std::vector<double> spread_labels(const std::vector<double>& wanted, double spacing, double lo, double hi) {
  std::vector<std::size_t> order(wanted.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return wanted[a] < wanted[b]; });
  std::vector<double> y(wanted.size());
  double prev = lo - spacing;
  for (auto i : order) prev = y[i] = std::max(wanted[i], prev + spacing);
  double next = hi + spacing;
  for (auto it = order.rbegin(); it != order.rend(); ++it) next = y[*it] = std::min(y[*it], next - spacing);
  return y;
}

struct Box {
  double x0, y0, x1, y1;
  [[nodiscard]] bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

// One bar of a Gantt lane after merging, in pixels.
struct LaneBar {
  double x0 = 0, x1 = 0;
  std::int32_t micro_batch = -1;               // -2: several
};

// Median duration of the forward and backward bars (0 when there are none).
double median_bar_s(const GanttPlot& plot) {
  std::vector<double> durations;
  for (const auto& r : plot.rows)
    for (const auto& b : r.bars)
      if (b.category == GanttCategory::Forward || b.category == GanttCategory::Backward) durations.push_back(b.end_s - b.start_s);
  if (durations.empty()) return 0;
  const auto mid = durations.begin() + static_cast<std::ptrdiff_t>(durations.size() / 2);
  std::nth_element(durations.begin(), mid, durations.end());
  return *mid;
}

constexpr std::size_t kComputeCategories = 5;  // Forward .. Other: the compute lane

// The compute lane of one row where bars are narrower than pixels: per pixel column the share of
// its time in each compute category, stacked from the lane's bottom (1 px steps; equal
// neighbouring columns form one rect).
std::string density_lane(const GanttRow& row, const Scale& sx, double t0, double t1, double y, double lane_h) {
  const auto cols = static_cast<std::size_t>(std::ceil(sx.px_hi - sx.px_lo));
  const double col_s = (t1 - t0) / (sx.px_hi - sx.px_lo);
  std::vector<std::array<double, kComputeCategories>> busy(cols);
  for (const auto& b : row.bars) {
    const auto c = static_cast<std::size_t>(b.category);
    const double s = std::max(b.start_s, t0), e = std::min(b.end_s, t1);
    if (c >= kComputeCategories || !(e > s)) continue;
    const auto k0 = static_cast<std::size_t>((s - t0) / col_s);
    for (std::size_t k = k0; k < cols; ++k) {
      const double cs = t0 + static_cast<double>(k) * col_s;
      if (cs >= e) break;
      busy[k][c] += std::max(0.0, std::min(e, cs + col_s) - std::max(s, cs));
    }
  }
  // Height and offset (px from the bottom) of each category in each column.
  std::vector<std::array<std::pair<int, int>, kComputeCategories>> stack(cols);
  const int lane_px = static_cast<int>(lane_h);
  for (std::size_t k = 0; k < cols; ++k) {
    int offset = 0;
    for (std::size_t c = 0; c < kComputeCategories; ++c) {
      const int h = std::min(static_cast<int>(std::lround(std::min(1.0, busy[k][c] / col_s) * lane_h)), lane_px - offset);
      stack[k][c] = {h, offset};
      offset += h;
    }
  }
  std::ostringstream os;
  for (std::size_t c = 0; c < kComputeCategories; ++c) {
    std::size_t k = 0;
    while (k < cols) {
      const auto [h, off] = stack[k][c];
      std::size_t e = k + 1;
      while (e < cols && stack[e][c] == stack[k][c]) ++e;
      if (h > 0)
        os << "<rect x=\"" << num(sx.px_lo + static_cast<double>(k)) << "\" y=\"" << num(y + lane_h - off - h) << "\" width=\""
           << num(std::min(static_cast<double>(e - k), sx.px_hi - sx.px_lo - static_cast<double>(k))) << "\" height=\"" << h
           << "\" fill=\"" << category_colour(static_cast<GanttCategory>(c)) << "\"/>\n";
      k = e;
    }
  }
  return os.str();
}

// The chart of [t0, t1] of a Gantt plot; micro-batch numbers inside the forward and backward
// bars wide enough for them.
std::string gantt_chart(const GanttPlot& plot, const std::string& title, double t0, double t1, int width_px) {
  double label_w = 0;
  for (const auto& r : plot.rows) label_w = std::max(label_w, text_width_px(r.label, 11));
  const double left = std::max(80.0, label_w + 14), right = width_px - 16.0;
  double title_below = 0;
  const std::string title_svg = title_block(title, 12, width_px - 24.0, title_below);
  const double top = title_below + 12;
  const double lane_c = 18, lane_m = 12, row_gap = 10;
  const double row_h = lane_c + lane_m + row_gap;
  const double bottom = top + row_h * static_cast<double>(plot.rows.size());
  if (!(t1 > t0)) t1 = t0 + 1.0;
  const Scale sx{t0, t1, left, right, false};
  const double merge_gap_s = (t1 - t0) / (right - left) * 0.5;  // half a pixel
  // Forward and backward bars under 2 px wide: the compute lanes show shares per pixel column.
  const bool dense = median_bar_s(plot) * (right - left) / (t1 - t0) < 2;

  const GanttCategory cats[] = {GanttCategory::Forward, GanttCategory::Backward, GanttCategory::Recompute,
                                GanttCategory::Optimizer, GanttCategory::Other, GanttCategory::Comm,
                                GanttCategory::DpComm};
  std::vector<LegendItem> legend;
  for (auto c : cats) legend.push_back({Swatch::Rect, category_colour(c), to_string(c), ""});
  legend.push_back({Swatch::Rect, "#dddddd", "idle (bubble, waits)", ""});
  std::ostringstream body;
  body << x_axis(sx, top - 4, bottom, "time in the step (s)", false);
  const double bg0 = sx(std::max(t0, 0.0)), bg1 = sx(std::min(std::max(plot.makespan_s, t0), t1));
  for (std::size_t r = 0; r < plot.rows.size(); ++r) {
    const auto& row = plot.rows[r];
    const double y = top + row_h * static_cast<double>(r);
    body << text_el(left - 6, y + lane_c - 5, row.label, "text-anchor=\"end\"", 11);
    // Idle background of the compute lane up to the end of the step, then the lane backgrounds.
    body << "<rect x=\"" << num(bg0) << "\" y=\"" << num(y) << "\" width=\"" << num(std::max(bg1 - bg0, 0.0))
         << "\" height=\"" << num(lane_c) << "\" fill=\"#dddddd\"/>\n";
    body << "<rect x=\"" << num(bg0) << "\" y=\"" << num(y + lane_c + 1) << "\" width=\"" << num(std::max(bg1 - bg0, 0.0))
         << "\" height=\"" << num(lane_m - 1) << "\" fill=\"#f4f4f4\"/>\n";
    std::ostringstream labels;
    // Bars per category clipped to the window; neighbours closer than half a pixel merge when
    // they belong to one micro-batch or both are under two pixels wide.
    if (dense) body << density_lane(row, sx, t0, t1, y, lane_c);
    for (auto cat : cats) {
      const bool comm = cat == GanttCategory::Comm || cat == GanttCategory::DpComm;
      if (dense && !comm) continue;
      const bool numbered = cat == GanttCategory::Forward || cat == GanttCategory::Backward;
      double ly = y, lh = lane_c;
      if (cat == GanttCategory::Comm) ly = y + lane_c + 1, lh = lane_m / 2 - 0.5;
      if (cat == GanttCategory::DpComm) ly = y + lane_c + 1 + lane_m / 2, lh = lane_m / 2 - 0.5;
      std::vector<LaneBar> bars;
      double cur_s = 0, cur_e = -1;
      std::int32_t cur_mb = -1;
      auto flush = [&]() {
        if (cur_e > cur_s) bars.push_back({sx(cur_s), sx(cur_e), cur_mb});
        cur_e = -1;
      };
      for (const auto& b : row.bars) {
        if (b.category != cat || b.end_s <= t0 || b.start_s >= t1) continue;
        const double s = std::max(b.start_s, t0), e = std::min(b.end_s, t1);
        // A sliver cut off by the window's edge (rounding of its end) is not drawn.
        if (!(e > s) || ((s > b.start_s || e < b.end_s) && sx(e) - sx(s) < 0.05)) continue;
        if (cur_e >= 0 && s <= cur_e + merge_gap_s && (comm || s - cur_e <= merge_gap_s)) {
          const bool narrow = sx(cur_e) - sx(cur_s) < 2 && sx(e) - sx(s) < 2;
          if (b.micro_batch == cur_mb || narrow) {
            if (b.micro_batch != cur_mb) cur_mb = -2;
            cur_e = std::max(cur_e, e);
            continue;
          }
        }
        flush();
        cur_s = s, cur_e = e, cur_mb = b.micro_batch;
      }
      flush();
      for (const auto& b : bars) {
        const double w = b.x1 - b.x0;
        // Bars of several pixels leave a hairline gap so that neighbours stay apart.
        body << "<rect x=\"" << num(b.x0) << "\" y=\"" << num(ly) << "\" width=\"" << num(w > 4 ? w - 0.6 : std::max(w, 0.3))
             << "\" height=\"" << num(lh) << "\" fill=\"" << category_colour(cat) << "\"/>\n";
        if (numbered && b.micro_batch >= 0) {
          const std::string t = std::to_string(b.micro_batch);
          if (text_width_px(t, 9) + 3 <= w - 0.6)
            labels << text_el((b.x0 + b.x1 - 0.6) / 2, ly + lane_c - 5.5, t, "text-anchor=\"middle\" fill=\"#1a1a1a\"", 9);
        }
      }
    }
    body << labels.str();
  }
  double legend_below = 0;
  std::string legend_svg = legend_flow(legend, left, bottom + 40, right - left, legend_below);
  if (dense)
    legend_svg += text_lines("Bars narrower than 2 px: each pixel column of a compute lane stacks the share of its time "
                             "spent in each phase (grey above: idle).",
                             left, legend_below + 12, right - left, 11, "fill=\"#555555\"", legend_below);
  const int height = static_cast<int>(std::ceil(legend_below + 6));
  std::ostringstream os;
  os << svg_open(width_px, height) << title_svg << body.str() << legend_svg << "</svg>\n";
  return os.str();
}

}  // namespace

double text_width_px(const std::string& text, double size_px, bool bold) {
  double em = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      if ((c & 0xC0) != 0x80) em += 0.8;  // one code point outside ASCII
      continue;
    }
    const std::string_view narrow = "il.,:;'|!", half = "fjrt()[]{}-/\"", wide = "+=<>#~", widest = "%@";
    if (c == ' ') em += 0.32;
    else if (narrow.find(static_cast<char>(c)) != std::string_view::npos) em += 0.28;
    else if (half.find(static_cast<char>(c)) != std::string_view::npos) em += 0.40;
    else if (c == 'm') em += 0.98;
    else if (c == 'w') em += 0.82;
    else if (c == 'M' || c == 'W') em += 0.92;
    else if (widest.find(static_cast<char>(c)) != std::string_view::npos) em += 0.98;
    else if (wide.find(static_cast<char>(c)) != std::string_view::npos) em += 0.84;
    else if (c >= 'A' && c <= 'Z') em += 0.72;
    else if (c >= '0' && c <= '9') em += 0.64;
    else if (c >= 'a' && c <= 'z') em += 0.61;
    else em += 0.72;
  }
  return em * size_px * (bold ? 1.1 : 1.0);
}

std::vector<std::string> wrap_text(const std::string& text, double size_px, double max_width_px, bool bold) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    const std::string candidate = line.empty() ? word : line + " " + word;
    if (!line.empty() && text_width_px(candidate, size_px, bold) > max_width_px) {
      lines.push_back(line);
      line = word;
    } else {
      line = candidate;
    }
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

std::string series_colour(std::size_t i, std::size_t n) {
  static const char* kCategorical[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9",
                                       "#d55e00", "#f0e442", "#000000", "#999999", "#882255"};
  constexpr std::size_t kCategories = sizeof kCategorical / sizeof kCategorical[0];
  if (n <= kCategories) return kCategorical[i % kCategories];
  // Purple, blue, teal, green, amber, red: neighbours differ in hue, the order reads as a sequence.
  static const int kRamp[][3] = {{0x44, 0x1a, 0x7a}, {0x2a, 0x63, 0xb8}, {0x12, 0x9a, 0x8c},
                                 {0x5a, 0xb0, 0x32}, {0xd8, 0x9c, 0x00}, {0xc8, 0x2a, 0x2a}};
  constexpr std::size_t kStops = sizeof kRamp / sizeof kRamp[0];
  const double t = static_cast<double>(std::min(i, n - 1)) / static_cast<double>(n - 1) * (kStops - 1);
  const auto k = std::min(static_cast<std::size_t>(t), kStops - 2);
  const double f = t - static_cast<double>(k);
  static const char* kHex = "0123456789abcdef";
  std::string out = "#";
  for (int c = 0; c < 3; ++c) {
    const int v = static_cast<int>(std::lround(kRamp[k][c] + f * (kRamp[k + 1][c] - kRamp[k][c])));
    out += kHex[v / 16];
    out += kHex[v % 16];
  }
  return out;
}

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
    const bool fine = std::log10(hi / lo) <= 2 + 1e-9;  // two decades or less: 1, 2 and 5 in each
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
    const std::int64_t cap = t.capacity_bytes;
    if (cap > 0) {
      std::optional<MemoryMark> mark;
      if (s.static_bytes > cap) mark = MemoryMark{p.series.size(), 0.0, s.static_bytes, 0};
      for (const auto& pt : s.points)
        if (!mark && pt.bytes > cap) mark = MemoryMark{p.series.size(), pt.time_s, pt.bytes, 0};
      if (mark) {
        mark->peak_over_bytes = series_peak(s) - cap;
        p.over_capacity.push_back(*mark);
      }
    }
    p.series.push_back(std::move(s));
  }
  return p;
}

std::string memory_svg(const MemoryPlot& plot, int width_px) {
  const std::size_t n = plot.series.size();
  std::vector<bool> over(n, false);
  for (const auto& m : plot.over_capacity)
    if (m.series < n) over[m.series] = true;
  double title_below = 0;
  const std::string title_svg = title_block(plot.title, 12, width_px - 24.0, title_below);
  std::ostringstream head;
  double top = title_below + 14;
  if (!plot.over_capacity.empty()) {
    // Every stage out of memory is circled; the note names the first few.
    std::string note = "Out of memory (OOM) on " + std::to_string(plot.over_capacity.size()) + " of " + std::to_string(n) +
                       (n == 1 ? " stage: " : " stages: ");
    const std::size_t named = std::min<std::size_t>(plot.over_capacity.size(), 4);
    for (std::size_t k = 0; k < named; ++k) {
      const auto& m = plot.over_capacity[k];
      note += (k ? "; " : "") + plot.series[m.series].label + " at " + fixed(m.time_s, 3) + " s (peak +" +
              gib(m.peak_over_bytes, 2) + " GiB)";
    }
    if (plot.over_capacity.size() > named)
      note += "; and " + std::to_string(plot.over_capacity.size() - named) + " more (each circled)";
    double below = 0;
    head << text_lines(note, 12, top, width_px - 24.0, 12, std::string("fill=\"") + kRed + "\" font-weight=\"bold\"", below, true);
    top = below + 14;
  }
  // Beyond ten series each peak is labelled at the right edge, where the labels fit one above
  // the other.
  const double plot_h = 260;
  const bool direct = n > 10 && static_cast<double>(n) * 13 <= plot_h + 24;
  double direct_w = 0;
  if (direct)
    for (const auto& s : plot.series) direct_w = std::max(direct_w, text_width_px(s.label, 11));
  const double left = 70, right = width_px - 20.0 - (direct ? direct_w + 24 : 0), bottom = top + plot_h;
  double max_bytes = static_cast<double>(plot.capacity_bytes);
  for (const auto& s : plot.series) max_bytes = std::max(max_bytes, static_cast<double>(series_peak(s)));
  const double end_s = plot.step_time_s > 0 ? plot.step_time_s : 1.0;
  const Scale sx{0, end_s, left, right, false};
  const Scale sy{0, std::max(max_bytes / kGiB * 1.08, 1.0), bottom, top, false};
  std::ostringstream os;
  os << head.str();
  os << x_axis(sx, top, bottom, "time in the step (s)", false);
  os << y_axis(sy, left, right, "memory per GPU (GiB)");
  for (std::size_t i = 0; i < n; ++i)
    os << "<path d=\"" << memory_path(plot.series[i], sx, sy, end_s) << "\" fill=\"none\" stroke=\""
       << series_colour(i, n) << "\" stroke-width=\"1.5\"/>\n";
  if (plot.capacity_bytes > 0) {
    const double y = sy(static_cast<double>(plot.capacity_bytes) / kGiB);
    os << "<line x1=\"" << num(left) << "\" y1=\"" << num(y) << "\" x2=\"" << num(right) << "\" y2=\"" << num(y)
       << "\" stroke=\"" << kRed << "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n";
    os << text_el(right - 4, y - 5, "GPU memory " + gib(plot.capacity_bytes, 1) + " GiB",
                  std::string("text-anchor=\"end\" fill=\"") + kRed + "\" " + kHalo, 11);
  }
  for (const auto& m : plot.over_capacity) {
    const double x = sx(m.time_s), y = sy(static_cast<double>(m.bytes) / kGiB);
    os << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"6\" fill=\"none\" stroke=\"" << kRed
       << "\" stroke-width=\"2.5\"/>\n";
  }
  if (direct) {
    std::vector<double> wanted;
    for (const auto& s : plot.series) wanted.push_back(sy(static_cast<double>(series_peak(s)) / kGiB) + 4);
    const auto at = spread_labels(wanted, 13, top + 8, bottom + 4);
    for (std::size_t i = 0; i < n; ++i) {
      os << "<line x1=\"" << num(right) << "\" y1=\"" << num(wanted[i] - 4) << "\" x2=\"" << num(right + 8) << "\" y2=\""
         << num(at[i] - 4) << "\" stroke=\"" << series_colour(i, n) << "\" stroke-width=\"1\"/>\n";
      os << text_el(right + 10, at[i], plot.series[i].label, "fill=\"" + series_colour(i, n) + "\"", 11);
      if (over[i])  // out of memory: a small red ring after the name
        os << "<circle cx=\"" << num(right + 16 + direct_w) << "\" cy=\"" << num(at[i] - 4) << "\" r=\"3\" fill=\"none\" stroke=\""
           << kRed << "\" stroke-width=\"1.5\"/>\n";
    }
  }
  std::vector<LegendItem> legend;
  for (std::size_t i = 0; i < n; ++i)
    legend.push_back({Swatch::Line, series_colour(i, n), plot.series[i].label + (over[i] ? " (OOM)" : ""),
                      over[i] ? std::string("fill=\"") + kRed + "\"" : std::string()});
  double legend_below = 0;
  os << legend_flow(legend, left, bottom + 42, width_px - 20.0 - left, legend_below);
  const int height = static_cast<int>(std::ceil(legend_below + 6));
  return svg_open(width_px, height) + title_svg + os.str() + "</svg>\n";
}

GanttPlot gantt_plot(const sim::StepGraph& graph, const sim::Trace& trace, const std::string& title) {
  graph.require_every_op_stored("a Gantt chart");
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
    GanttBar b{trace.ops[i].start_s, trace.ops[i].end_s, GanttCategory::Other, op.micro_batch};
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
  const double axis_end = time_axis_s > 0 ? time_axis_s : (plot.makespan_s > 0 ? plot.makespan_s : 1.0);
  return gantt_chart(plot, plot.title, 0, axis_end, width_px);
}

std::vector<GanttWindow> gantt_zoom_windows(const GanttPlot& plot, int width_px) {
  const double median_s = median_bar_s(plot);
  if (!(median_s > 0) || !(plot.makespan_s > 0)) return {};
  const double plot_w = width_px - 96.0;  // the chart's time axis, less its margins
  if (median_s / plot.makespan_s * plot_w >= 8) return {};
  const double window_s = median_s * plot_w / 16;
  const double end = plot.makespan_s;
  // The cool-down ends with the last forward or backward pass: what follows it (gradient
  // reductions that have no pass left to hide behind, the optimizer) is in the whole-step chart,
  // and a long such tail would otherwise push the last micro-batches out of the window.
  double last_pass_end_s = 0;
  for (const auto& r : plot.rows)
    for (const auto& b : r.bars)
      if (b.category == GanttCategory::Forward || b.category == GanttCategory::Backward)
        last_pass_end_s = std::max(last_pass_end_s, b.end_s);
  std::vector<GanttWindow> out;
  out.push_back({"warm-up", 0, window_s});
  if (3 * window_s < end) out.push_back({"steady state", end / 2 - window_s / 2, end / 2 + window_s / 2});
  if (2 * window_s < last_pass_end_s) out.push_back({"cool-down", last_pass_end_s - window_s, last_pass_end_s});
  return out;
}

std::string gantt_window_svg(const GanttPlot& plot, const GanttWindow& window, int width_px) {
  const std::string title = plot.title + ": " + window.name + ", " + fixed(window.start_s, 3) + " to " + fixed(window.end_s, 3) + " s";
  return gantt_chart(plot, title, window.start_s, window.end_s, width_px);
}

std::string xy_svg(const XYChart& chart, int width_px, int height_px) {
  double title_below = 0;
  const std::string title_svg = title_block(chart.title, 12, width_px - 24.0, title_below);
  const double left = 80, right = width_px - 24.0, top = title_below + 14, bottom = top + std::max(height_px - 100, 120);
  auto ok = [&](const XYPoint& p) {
    return std::isfinite(p.x) && std::isfinite(p.y) && !(chart.log_x && p.x <= 0) && !(chart.log_y && p.y <= 0);
  };
  double x_lo = 1e300, x_hi = -1e300, y_lo = 1e300, y_hi = -1e300;
  std::size_t n_points = 0;
  for (const auto& s : chart.series)
    for (const auto* v : {&s.points, &s.highlight, &s.reference})
      for (const auto& p : *v) {
        if (!ok(p)) continue;
        x_lo = std::min(x_lo, p.x), x_hi = std::max(x_hi, p.x);
        y_lo = std::min(y_lo, p.y), y_hi = std::max(y_hi, p.y);
        ++n_points;
      }
  if (n_points == 0) x_lo = y_lo = chart.log_x || chart.log_y ? 1 : 0, x_hi = y_hi = 1;
  auto widen = [](double& lo, double& hi, bool log, bool from_zero) {
    if (log) {
      // Out to the nearest 1, 2 or 5 x 10^k on either side, so that no decade stays empty.
      const double d_lo = std::pow(10.0, std::floor(std::log10(lo) + 1e-9));
      const double d_hi = std::pow(10.0, std::floor(std::log10(hi) + 1e-9));
      double new_lo = d_lo, new_hi = 10 * d_hi;
      for (double m : {5.0, 2.0, 1.0})
        if (m * d_lo <= lo * (1 + 1e-9)) {
          new_lo = m * d_lo;
          break;
        }
      for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * d_hi >= hi * (1 - 1e-9)) {
          new_hi = m * d_hi;
          break;
        }
      lo = new_lo, hi = new_hi;
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
    // Explicit ticks on a log axis: a margin of a tenth of the data range instead of whole decades.
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
  const std::size_t n = chart.series.size();

  std::ostringstream os;
  std::vector<double> x_ticks;
  for (double t : chart.x_ticks)
    if (t >= x_lo && t <= x_hi && !(chart.log_x && t <= 0)) x_ticks.push_back(t);
  os << x_axis(sx, top, bottom, chart.x_label, true, x_ticks);
  os << y_axis(sy, left, right, chart.y_label);
  if (n_points == 0) os << text_el((left + right) / 2, (top + bottom) / 2, "no data points", "text-anchor=\"middle\" fill=\"#666666\"");
  auto polyline = [&](std::vector<XYPoint> pts, const std::string& style) {
    std::stable_sort(pts.begin(), pts.end(), [](const XYPoint& a, const XYPoint& b) { return a.x < b.x; });
    os << "<polyline fill=\"none\" " << style << " points=\"";
    for (std::size_t k = 0; k < pts.size(); ++k) os << (k ? " " : "") << num(sx(pts[k].x)) << "," << num(sy(pts[k].y));
    os << "\"/>\n";
  };
  struct Front {
    XYPoint p;
    std::size_t series;
  };
  std::vector<Front> front;
  bool any_reference = false;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& s = chart.series[i];
    const std::string colour = series_colour(i, n);
    std::vector<XYPoint> pts, ref;
    for (const auto& p : s.points)
      if (ok(p)) pts.push_back(p);
    for (const auto& p : s.reference)
      if (ok(p)) ref.push_back(p);
    if (ref.size() > 1) {
      any_reference = true;
      polyline(ref, "stroke=\"" + colour + "\" stroke-width=\"1.2\" stroke-dasharray=\"4 3\" stroke-opacity=\"0.8\"");
    }
    if (s.lines && pts.size() > 1) polyline(pts, "stroke=\"" + colour + "\" stroke-width=\"2\"");
    for (const auto& p : pts)
      os << "<circle cx=\"" << num(sx(p.x)) << "\" cy=\"" << num(sy(p.y)) << "\" r=\"3.5\" fill=\"" << colour
         << "\" fill-opacity=\"" << (s.highlight.empty() ? "0.9" : "0.45") << "\"/>\n";
    for (const auto& p : s.highlight)
      if (ok(p)) front.push_back({p, i});
  }
  // One dashed line through every highlighted point, numbered in x order; the numbers go where
  // they touch neither another number nor a marker.
  std::stable_sort(front.begin(), front.end(), [](const Front& a, const Front& b) {
    return a.p.x < b.p.x || (a.p.x == b.p.x && a.p.y < b.p.y);
  });
  if (front.size() > 1) {
    std::vector<XYPoint> pts;
    for (const auto& f : front) pts.push_back(f.p);
    polyline(pts, "stroke=\"#000000\" stroke-width=\"1.2\" stroke-dasharray=\"5 3\"");
  }
  std::vector<Box> taken;
  for (const auto& f : front) {
    const double x = sx(f.p.x), y = sy(f.p.y);
    taken.push_back({x - 6, y - 6, x + 6, y + 6});
  }
  std::vector<std::string> key;
  for (std::size_t k = 0; k < front.size(); ++k) {
    const auto& f = front[k];
    const double x = sx(f.p.x), y = sy(f.p.y);
    os << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"5.5\" fill=\"" << series_colour(f.series, n)
       << "\" stroke=\"#000000\" stroke-width=\"1.5\"/>\n";
    if (f.p.label.empty()) continue;
    const std::string tag = std::to_string(key.size() + 1);
    key.push_back(tag + ": " + f.p.label + (n > 1 ? " (" + chart.series[f.series].name + ")" : ""));
    const double w = text_width_px(tag, 10, true), h = 10;
    const double dx[] = {8, 8, -8 - w, -8 - w, -w / 2, -w / 2, 12, -12 - w};
    const double dy[] = {-6, 14, -6, 14, -10, 20, 4, 4};
    std::size_t pick = 0;
    for (std::size_t c = 0; c < sizeof dx / sizeof dx[0]; ++c) {
      const Box b{x + dx[c], y + dy[c] - h, x + dx[c] + w, y + dy[c] + 1};
      const bool inside = b.x0 >= left && b.x1 <= right && b.y0 >= top && b.y1 <= bottom;
      if (inside && std::none_of(taken.begin(), taken.end(), [&](const Box& o) { return o.overlaps(b); })) {
        pick = c;
        break;
      }
    }
    taken.push_back({x + dx[pick], y + dy[pick] - h, x + dx[pick] + w, y + dy[pick] + 1});
    os << text_el(x + dx[pick], y + dy[pick], tag, std::string("font-weight=\"bold\" fill=\"#000000\" ") + kHalo, 10);
  }
  std::vector<LegendItem> legend;
  for (std::size_t i = 0; i < n; ++i) legend.push_back({Swatch::Dot, series_colour(i, n), chart.series[i].name, ""});
  if (any_reference && !chart.reference_label.empty()) legend.push_back({Swatch::DashedLine, "#555555", chart.reference_label, ""});
  if (!front.empty()) legend.push_back({Swatch::Ring, "#ffffff", chart.highlight_label, ""});
  double below = 0;
  os << legend_flow(legend, left, bottom + 42, right - left, below);
  for (const auto& line : key) {
    double after = 0;
    os << text_lines(line, left, below + 12, right - left, 11, "fill=\"#333333\"", after);
    below = after;
  }
  const int height = static_cast<int>(std::ceil(below + 8));
  return svg_open(width_px, height) + title_svg + os.str() + "</svg>\n";
}

}  // namespace stepsim::report
