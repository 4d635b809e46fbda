#pragma once
// Pipeline schedules: the order of forward and backward passes on each stage's compute stream.
// The step graph (sim/) follows it, and the memory model (memory/) counts what it keeps in flight.
//
// p stages, m micro-batches, v model chunks per stage. F3 = forward of micro-batch 3, B3 its
// backward; with chunks, F3.1 = forward of micro-batch 3 on chunk 1.
//
// GPipe (Huang et al. 2019): all forwards, then all backwards. Stage i, p = 4, m = 4:
//   stage 0: F0 F1 F2 F3 .  .  .  B0 B1 B2 B3          (in flight at peak: m)
//   stage 3:  .  .  . F0 F1 F2 F3 B0 B1 B2 B3
//
// 1F1B (PipeDream-flush; Megatron forward_backward_pipelining_without_interleaving): warm-up of
// W_i = min(p - i - 1, m) forwards, then alternate one forward and one backward, then cool-down of
// W_i backwards. p = 4, m = 6:
//   stage 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5       (in flight at peak: p - i = 4)
//   stage 1: F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5
//   stage 3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5
//   step time with equal passes and free communication: (m + p - 1)(t_f + t_b).
//
// Interleaved 1F1B (Narayanan et al. SC'21; Megatron ..._with_interleaving), v chunks per stage,
// chunk j of stage i is virtual stage j p + i. Forward order takes groups of g micro-batches
// (Megatron's microbatch_group_size_per_vp_stage, p by default; the last group takes the rest,
// m mod g when that is not 0) through chunk 0, then chunk 1, ...; backward order the same with
// chunks reversed. Warm-up min(2(p - i - 1) + (v - 1) g, m v) chunk-forwards, then 1F1B over chunk
// passes. p = 2, v = 2, m = 4, stage 0:
//   F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0
//   step time with equal chunks and free communication: (m + (p - 1)/v)(t_f + t_b).

#include <cstdint>
#include <optional>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::workload {

using scenarios::Schedule;

// F: forward; B: backward (input and weight gradients together); W: weight gradients alone, for
// schedules that split the backward (none yet).
enum class PassKind : std::uint8_t { Forward, Backward, WeightGrad };

struct Pass {
  PassKind kind = PassKind::Forward;
  std::int32_t micro_batch = 0;
  std::int32_t chunk = 0;
};

// Order of passes on stage `stage`: 2 m v passes. `group`: the interleaved schedule's micro-batch
// group size g (0: p).
[[nodiscard]] std::vector<Pass> stage_schedule(Schedule schedule, std::int64_t p, std::int64_t m, std::int64_t v,
                                               std::int64_t stage, std::int64_t group = 0);

// Forward passes (chunk passes when interleaved) a stage runs before its first backward:
// GPipe m; 1F1B min(p - i - 1, m); interleaved min(2(p - i - 1) + (v - 1) g, m v)
// (Megatron's schedules.py, micro-batch group size g, p when `group` is 0).
[[nodiscard]] std::int64_t warmup_passes(Schedule schedule, std::int64_t p, std::int64_t m, std::int64_t v,
                                         std::int64_t stage, std::int64_t group = 0);
// Peak number of forward passes whose activations a stage holds: min(warm-up + 1, m v).
[[nodiscard]] std::int64_t in_flight_passes(Schedule schedule, std::int64_t p, std::int64_t m, std::int64_t v,
                                            std::int64_t stage, std::int64_t group = 0);

// Where the model's layers sit on the pipeline's stages and chunks (scenarios/layout.hpp).
using scenarios::PipelineLayout;
using scenarios::StageChunk;

}  // namespace stepsim::workload
