#pragma once
// Plots as hand-written SVG: memory over time per stage, the pipeline Gantt chart of a step, and
// generic x/y charts (lines, scatter, a highlighted front). Every function returns one <svg>
// element (no XML declaration, no ids) so that it can be written to a file or inlined in HTML;
// svg_document() adds the declaration for a standalone file. Output is deterministic.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/memory/timeline.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/graph.hpp"

namespace stepsim::report {

// Memory over time: one step function per device (pipeline stage), the GPU capacity, a mark on
// every stage that exceeds it; beyond ten series the colours follow a sequential ramp and each
// series' peak is labelled directly at the right edge.
struct MemorySeries {
  std::string label;                           // "stage 0"
  std::int64_t static_bytes = 0;               // level before the first event
  std::vector<memory::TimelinePoint> points;
};

// A series above the GPU's capacity: its first point above it and how far its peak goes over.
struct MemoryMark {
  std::size_t series = 0;
  double time_s = 0;
  std::int64_t bytes = 0;                      // level at the first point above capacity
  std::int64_t peak_over_bytes = 0;            // peak minus capacity
};

struct MemoryPlot {
  std::string title;
  double step_time_s = 0;
  std::int64_t capacity_bytes = 0;
  std::vector<MemorySeries> series;
  std::vector<MemoryMark> over_capacity;       // every series that exceeds its GPU, in series order
};

[[nodiscard]] MemoryPlot memory_plot(const sim::StepGraph& graph, const memory::Timeline& timeline, double step_time_s,
                       const std::string& title);
[[nodiscard]] std::string memory_svg(const MemoryPlot& plot, int width_px = 960);

// Pipeline Gantt chart: per stage a compute lane (coloured by phase; idle shows as the grey
// background) and a communication lane (TP/CP/PP on top, DP gradient and parameter traffic below).
enum class GanttCategory : std::uint8_t { Forward, Backward, Recompute, Optimizer, Other, Comm, DpComm };
[[nodiscard]] std::string to_string(GanttCategory c);

struct GanttBar {
  double start_s = 0;
  double end_s = 0;
  GanttCategory category = GanttCategory::Forward;
  std::int32_t micro_batch = -1;               // shown inside the bar when it is wide enough
};

struct GanttRow {
  std::string label;
  std::vector<GanttBar> bars;                  // sorted by start time
};

struct GanttPlot {
  std::string title;
  double makespan_s = 0;
  std::vector<GanttRow> rows;
};

[[nodiscard]] GanttPlot gantt_plot(const sim::StepGraph& graph, const sim::Trace& trace, const std::string& title);
// time_axis_s: end of the time axis (0: the plot's own makespan); charts shown side by side pass
// the same value so that their bars compare.
[[nodiscard]] std::string gantt_svg(const GanttPlot& plot, int width_px = 960, double time_axis_s = 0);

// A time window of a long step, drawn at a scale where single micro-batches are legible.
struct GanttWindow {
  std::string name;                            // "warm-up", "steady state", "cool-down"
  double start_s = 0;
  double end_s = 0;
};
// Windows for a step whose typical forward/backward bar is too narrow to see in the whole-step
// chart of width_px: the start (pipeline fill), the middle (steady state) and the end (drain,
// gradient reduction, optimizer), each long enough that a median bar is about 16 px wide. Empty
// when the whole step is legible already.
[[nodiscard]] std::vector<GanttWindow> gantt_zoom_windows(const GanttPlot& plot, int width_px = 960);
// The chart of one window (micro-batch numbers inside the bars that fit them).
[[nodiscard]] std::string gantt_window_svg(const GanttPlot& plot, const GanttWindow& window, int width_px = 960);

// Generic x/y chart.
struct XYPoint {
  double x = 0;
  double y = 0;
  std::string label;                           // shown next to highlighted points
};

struct XYSeries {
  std::string name;
  std::vector<XYPoint> points;
  bool lines = false;                          // connect the points in x order
  std::vector<XYPoint> reference;              // a thin dashed line in the series' colour (ideal scaling)
  std::vector<XYPoint> highlight;              // drawn larger and outlined; all series' highlighted points are
                                               // joined by one dashed line in x order and numbered, their
                                               // labels listed in a key under the chart
};

struct XYChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  bool log_y = false;
  std::vector<XYSeries> series;
  std::vector<double> x_ticks;                 // tick values of the x axis (empty: automatic)
  std::string reference_label;                 // legend entry of the reference lines
  std::string highlight_label = "Pareto front";
};

// height_px: the height of the plotting area with its axes; the title, the legend and the key
// below add to it.
[[nodiscard]] std::string xy_svg(const XYChart& chart, int width_px = 760, int height_px = 440);

// Layout helpers shared by the charts.
// Width of `text` in DejaVu Sans (the sans-serif of Debian's browsers, wider than most) at
// size_px, per-glyph estimates that err on the wide side; bold adds a tenth.
[[nodiscard]] double text_width_px(const std::string& text, double size_px, bool bold = false);
// Words of `text` in lines no wider than max_width_px (a single word too long keeps its line).
[[nodiscard]] std::vector<std::string> wrap_text(const std::string& text, double size_px, double max_width_px,
                                                 bool bold = false);
// Colour of series i of n: a colour-blind-friendly categorical palette up to ten series, a
// sequential dark-blue-to-yellow ramp beyond (ordered stages stay distinguishable by order).
[[nodiscard]] std::string series_colour(std::size_t i, std::size_t n);

// Standalone SVG file text: XML declaration + the element + a final newline.
[[nodiscard]] std::string svg_document(const std::string& svg_element);

// Tick values for an axis: "nice" steps (1, 2, 5 x 10^k) for linear axes, decades (and 2, 5
// within them when the range is two decades or less) for logarithmic ones.
[[nodiscard]] std::vector<double> axis_ticks(double lo, double hi, bool log_scale);
// Compact tick label: 1.5k, 2M, 0.25, 3G.
[[nodiscard]] std::string short_number(double value);

}  // namespace stepsim::report
