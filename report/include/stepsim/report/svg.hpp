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

// Memory over time: one step function per device (pipeline stage), the GPU capacity, the OOM point.
struct MemorySeries {
  std::string label;                           // "stage 0"
  std::int64_t static_bytes = 0;               // level before the first event
  std::vector<memory::TimelinePoint> points;
};

struct MemoryMark {
  std::size_t series = 0;
  double time_s = 0;
  std::int64_t bytes = 0;
  std::string label;
};

struct MemoryPlot {
  std::string title;
  double step_time_s = 0;
  std::int64_t capacity_bytes = 0;
  std::vector<MemorySeries> series;
  std::optional<MemoryMark> oom;
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
  std::vector<XYPoint> highlight;              // drawn larger, outlined, joined by a dashed line
};

struct XYChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  bool log_y = false;
  std::vector<XYSeries> series;
  std::vector<double> x_ticks;                 // tick values of the x axis (empty: automatic)
};

[[nodiscard]] std::string xy_svg(const XYChart& chart, int width_px = 760, int height_px = 440);

// Standalone SVG file text: XML declaration + the element + a final newline.
[[nodiscard]] std::string svg_document(const std::string& svg_element);

// Tick values for an axis: "nice" steps (1, 2, 5 x 10^k) for linear axes, decades (and 2, 5
// within them when the range is short) for logarithmic ones.
[[nodiscard]] std::vector<double> axis_ticks(double lo, double hi, bool log_scale);
// Compact tick label: 1.5k, 2M, 0.25, 3G.
[[nodiscard]] std::string short_number(double value);

}  // namespace stepsim::report
