#pragma once
// The step report: metrics derived from the step graph, the engine's trace and the memory
// timeline, and its writers (table, JSON, Chrome trace).

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "stepsim/memory/timeline.hpp"
#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/sim/build.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/tally.hpp"

namespace stepsim::report {

struct StageReport {
  std::int64_t stage = 0;
  std::int64_t peak_memory_bytes = 0;
  double peak_memory_time_s = 0;
  double compute_s = 0;        // compute stream busy
  double exposed_comm_s = 0;   // some communication stream busy while compute is idle
  double idle_s = 0;           // neither: pipeline bubble and waits
};

// The communication of one kind of op (its label: "tp.ag", "dp.rs", "pp.send", ...), per stage on
// average: what NCCL ran (algorithm and protocol of its plans; several joined by "+"), the bus
// bandwidth it reached (nccl-tests convention, sum of S x factor over the ops' time) and the time
// it was busy and exposed (not covered by compute).
struct CommKindReport {
  std::string label;
  std::string collective;        // "reduce-scatter", ... (several joined by "+")
  std::string algorithm;         // "ring", "tree", "nvls", "p2p" (send/recv, all-to-all)
  std::string protocol;          // "Simple", "LL128", "LL"
  std::int64_t ops = 0;          // ops of this kind over all stages
  double bus_bandwidth_Bps = 0;
  double time_s = 0;             // busy, mean over stages
  double exposed_s = 0;          // busy while compute is idle, mean over stages
};

struct OomReport {
  std::int64_t stage = 0;
  std::int64_t gpu = 0;              // representative rank
  std::int64_t ranks = 0;            // ranks of the stage (all identical)
  double time_s = 0;
  std::string op;                    // "fwd, micro-batch 5, chunk 0, stage 0"
  std::int64_t bytes_over = 0;
};

struct StepReport {
  std::string scenario;
  std::string summary;
  std::string engine;
  std::string engine_reason;      // why `--engine auto` chose it ("128 GPUs, at most 1,024 ..."); empty when named
  std::string efficiency_kind;    // the GPU's efficiency: "fitted", "derived" or "default"
  std::string efficiency_source;  // and where it came from (scenarios::Efficiency::source)
  std::string software;           // the software stack (scenarios::SoftwareSpec::name)
  std::string attention_kernel;   // its attention kernel on this GPU ("cudnn", ...; "unfused", or "" without figures)
  std::int64_t gpus = 0;
  double step_time_s = 0;
  double tokens_per_step = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_flops = 0;            // Megatron's num_floating_point_operations for the step
  double tflops_per_gpu = 0;
  double mfu = 0;                    // against the dense BF16 peak (as NVIDIA reports FP8 runs too)
  std::optional<double> mfu_fp8;    // FP8 runs: against the dense FP8 peak
  double bubble_fraction = 0;        // mean idle time over stages / step time
  double exposed_comm_fraction = 0;  // mean exposed communication over stages / step time
  std::int64_t peak_memory_bytes = 0;
  std::int64_t gpu_memory_bytes = 0;
  std::int64_t peak_stage = 0;
  bool oom = false;
  std::optional<OomReport> oom_point;
  std::vector<StageReport> stages;
  std::vector<CommKindReport> communication;   // by label
  std::optional<double> train_tokens;
  std::optional<double> time_to_train_s;
  std::optional<double> gpu_hours;
  std::optional<double> cost_usd;
  std::optional<double> cost_usd_per_million_tokens;  // with a price: price x GPUs / (3600 x tokens/s) x 1e6
  std::int64_t ops = 0;
};

// One scenario through the pipeline: the step graph, the engine's trace, the memory timeline and
// the report derived from them.
struct Simulation {
  sim::BuiltStep step;
  sim::Trace trace;
  memory::Timeline timeline;
  StepReport report;
};

// `communication_rows` false leaves StepReport::communication empty (a sweep row never prints
// it); every other field is the same.
[[nodiscard]] StepReport make_report(const scenarios::Scenario& s, const sim::BuiltStep& step, const sim::Trace& trace,
                       const memory::Timeline& timeline, bool communication_rows = true);
// The same from the step's tally (sim/tally.hpp, filled from `trace` or by the replay; its unions
// are merged in place). `trace` holds the makespan, and each op's times where communication_rows.
[[nodiscard]] StepReport make_report(const scenarios::Scenario& s, const sim::BuiltStep& step, const sim::Trace& trace,
                                     sim::StepTally& tally, const memory::Timeline& timeline, bool communication_rows = true);

[[nodiscard]] std::string report_table(const StepReport& r);
// The JSON of a run: the scenario's name and summary, the fields of one step as a sweep row
// writes them (sweep_row.hpp step_fields), the resolved layout (label, micro-batches, layers per
// stage), efficiency, software, the OOM point and the stages; with `timeline`, each stage's memory
// over time ("memory_timeline": static and capacity bytes, [time_s, bytes] points).
[[nodiscard]] std::string report_json(const scenarios::Scenario& s, const StepReport& r, const memory::Timeline* timeline = nullptr);

// Chrome trace-event JSON (opens in Perfetto): one process per stage (pids from 1), one thread
// per stream, spans named with their micro-batch and chunk ("fwd mb3 c0"), a category on every
// event (the stream: compute, tp, cp, pp, dp; memory; __metadata), a flow arrow from each pipeline
// send to the op that receives it, and a memory counter per stage. Streamed into `out` event by
// event (no copy of the trace in memory).
void write_chrome_trace(std::ostream& out, const scenarios::Scenario& s, const sim::StepGraph& graph, const sim::Trace& trace,
                        const memory::Timeline& timeline);
// The events write_chrome_trace writes: a process name and kNumStreams thread names per device,
// one span per op (delays excepted), two flow events per pipeline send that has a receiver, one
// counter per memory-timeline point.
[[nodiscard]] std::int64_t chrome_trace_events(const sim::StepGraph& graph, const memory::Timeline& timeline);

}  // namespace stepsim::report
