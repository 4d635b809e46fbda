#pragma once
// The kernels of one rank of a pipeline stage as the cost model prices them (`stepsim kernels`):
// each distinct transformer-layer program the stage runs (forward, backward, recomputation), the
// embedding and the output layer where the stage holds them, and the stack's host time per pass,
// once per micro-batch; the gradient-buffer zeroing and the optimizer step once per step. Each
// kernel with its shape, FLOPs, HBM bytes and time, split into the launch gap, the arithmetic term
// and the HBM term (costmodel::KernelTime). The kernels are those the step graph runs
// (workload::step_program); the graph adds communication, the slowdown of compute beside it
// (comm_slowdown) and the pipeline's waits, which this report leaves out.

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/workload/kernels.hpp"

namespace stepsim::report {

struct KernelRow {
  workload::Kernel kernel;
  costmodel::KernelTime time;  // time.body_s: the kernel itself (what a profiler shows); total_s(): with the launch gap
  // What sets the kernel's body: "matmul" or "attention" (its arithmetic term), "HBM" (its bytes),
  // "host" (the stack's host time).
  std::string bound;
};

struct KernelSection {
  std::string name;        // "layer forward", "embedding backward", "optimizer step", ...
  std::string layers;      // layer sections: the model layers on the stage that run these kernels ("0-19, 40-59")
  bool per_step = false;   // once per step (else once per micro-batch)
  std::int64_t count = 1;  // runs per micro-batch (layer sections: layers; host: passes) or per step
  std::vector<KernelRow> rows;
  double time_s = 0;  // one run: the sum of its kernels' times, launch gaps included
  double flops = 0;   // one run: executed FLOPs
  double bytes = 0;   // one run: HBM bytes
};

struct KernelReport {
  std::string summary;  // scenario_summary()
  std::string gpu, software, attention;
  double gemm_rate_flops = 0;      // the BF16 GEMM ceiling the GPU's efficiency gives (matmul x gemm_max)
  double gemm_fp8_rate_flops = 0;  // the FP8 one, when the scenario trains in FP8 (else 0)
  double gemm_k_overhead = 0;      // the GPU's fixed cost per GEMM tile, in elements of K (0: none)
  std::int64_t cp = 1;             // context parallelism
  scenarios::CpCommType cp_comm_type = scenarios::CpCommType::P2P;
  double hbm_Bps = 0;          // HBM bandwidth at hbm_eff
  double launch_s = 0;         // the stack's launch gap per kernel
  std::int64_t stage = 0, stages = 1, micro_batches = 1;
  std::vector<KernelSection> sections;
  double micro_batch_s = 0;  // kernel time of one micro-batch on the stage (per-micro-batch sections x count)
  double step_s = 0;         // micro_batches x micro_batch_s + the per-step sections
};

// The report of pipeline stage `stage` (0 ... pp - 1; ScenarioError("--stage", ...) outside).
[[nodiscard]] KernelReport kernel_report(const scenarios::Scenario& s, std::int64_t stage);

[[nodiscard]] std::string kernel_text(const KernelReport& r);      // aligned plain-text tables
[[nodiscard]] std::string kernel_markdown(const KernelReport& r);  // a Markdown table per section
[[nodiscard]] std::string kernel_csv(const KernelReport& r);       // one row per kernel, SI units
[[nodiscard]] std::string kernel_json(const KernelReport& r);

}  // namespace stepsim::report
