#pragma once
// Memory per GPU.
//
// paper mode: the estimator of Fujii, Watanabe, Yokota, "Accelerating Large Language Model
// Training with 4D Parallelism and Memory Consumption Estimator" (arXiv 2411.06465), exactly as
// the authors' code computes it (first pipeline stage; norms divided by t; 8p embedding term;
// output layer only when p = 1; interleaving factor 1 + (p-1)/(p*vpp)).
//
// stepsim mode: the same terms for every pipeline stage under the scenario's schedule, with the
// physical parameter layout (norm weights replicated under TP, vocabulary padded to 128*t), the
// in-flight micro-batch count of each stage, recomputation, gradient dtype, and explicit terms
// for what the paper leaves to its 80 % margin (CUDA context, NCCL buffers, distributed-optimizer
// staging, pipeline buffers, allocator fragmentation).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::memory {

struct PaperEstimate {
  double params_first_stage = 0;          // P1 of the paper (may be fractional: h*v/t)
  double bytes_per_param = 0;             // 6 + 12/(d*c) with a sharded optimizer, else 18 (grads and weights as the paper: never sharded)
  std::int64_t weights_bytes = 0;         // 2 * P1
  std::int64_t grads_bytes = 0;           // 4 * P1 (2 in bf16)
  std::int64_t optimizer_bytes = 0;       // 12 * P1 / (d*c) (or 12 * P1)
  std::int64_t model_states_bytes = 0;    // P1 * bytes_per_param
  std::int64_t transformer_activation_bytes = 0;  // L * sbh(12 + 4k/a + 8f/h)/(tc) (x interleave factor)
  std::int64_t embedding_activation_bytes = 0;    // 8 * sbh * p / (tc)
  std::int64_t output_activation_bytes = 0;       // 4 * sbh * (1 + v/h) / (tc), only when p = 1
  std::int64_t activation_bytes = 0;
  std::int64_t total_bytes = 0;
  std::int64_t gpu_memory_bytes = 0;
  double usable_fraction = 0.8;
  bool under_usable_fraction = false;     // total <= usable_fraction * gpu memory
};

[[nodiscard]] PaperEstimate paper_estimate(const scenarios::Scenario& s);

// One row of stepsim's breakdown.
// Key and label are string literals (static storage): a sweep's memory verdict makes the terms
// of every stage of every candidate.
struct Term {
  std::string_view key;    // JSON key: "weights_bytes", "activations_bytes", ...
  std::string_view label;  // table label
  std::int64_t bytes = 0;
};

struct StageEstimate {
  std::int64_t stage = 0;
  std::int64_t in_flight = 0;        // micro-batches (1F1B, GPipe) or chunk passes (interleaved) held at peak
  std::vector<Term> terms;
  std::int64_t total_bytes = 0;
};

struct StepsimEstimate {
  std::vector<StageEstimate> stages;  // every pipeline stage
  std::int64_t peak_stage = 0;
  std::int64_t peak_bytes = 0;
  std::int64_t gpu_memory_bytes = 0;
  bool fits = false;                  // peak <= GPU memory
  std::int64_t headroom_bytes = 0;    // memory.headroom_gib
  bool fits_with_headroom = false;    // peak <= GPU memory - headroom (the stepsim prune rule)
};

[[nodiscard]] StepsimEstimate stepsim_estimate(const scenarios::Scenario& s);

// Building blocks shared with the memory timeline of the step engine (so the timeline peak equals
// the closed form exactly).

// Parameter counts, the padded vocabulary and per-layer activations come from workload/
// (params.hpp, shape.hpp, program.hpp); these turn them into whole bytes.

// Bytes one forward pass of (stage, chunk) allocates and its backward frees.
[[nodiscard]] std::int64_t chunk_activation_bytes(const scenarios::Scenario& s, std::int64_t stage, std::int64_t chunk);
// The same from a step program already built for `s` (the step-graph builder has one).
[[nodiscard]] std::int64_t chunk_activation_bytes(const workload::StepProgram& program, const scenarios::Scenario& s,
                                                  std::int64_t stage, std::int64_t chunk);
// Transient bytes of the output layer and loss on the last stage (fp32 logits; paper's term).
[[nodiscard]] std::int64_t output_transient_bytes(const scenarios::Scenario& s);
[[nodiscard]] std::int64_t output_transient_bytes(const workload::StepProgram& program);
// Bytes of the bf16 logits that exist beside their fp32 copy while the loss runs (the last chunk's
// forward) and while its gradient is cast back (the start of that chunk's backward), 2sbv/(tc).
[[nodiscard]] std::int64_t logits_copy_bytes(const workload::StepProgram& program);
// Transient bytes of a backward pass of one (stage, chunk) beyond the stored activations, the
// largest over its layers (0 without layers): the MLP's backward buffers; full recomputation: the
// largest checkpoint group's activations, rebuilt at once; all-gather CP: the buffers of the
// attention's backward at the gathered size, (7 + 1/c) S (workload/program.cpp).
[[nodiscard]] std::int64_t chunk_backward_transient_bytes(const workload::StepProgram& program, std::int64_t stage, std::int64_t chunk);
// What a backward pass allocates when it starts and frees with its chunk's activations when it
// ends: its chunk's backward working set `working`; on the loss's chunk, which holds the output
// layer's `output` bytes from its forward and whose backward first casts the logits' gradient
// (`logits_copy` beside them), the larger of that copy and what the working set needs once the
// loss's bytes are released (the loss's backward runs before the layers').
[[nodiscard]] std::int64_t backward_pass_alloc_bytes(std::int64_t working, bool loss, std::int64_t output, std::int64_t logits_copy);
// Peak number of forward passes (micro-batches, or chunk passes when interleaved) a stage holds.
[[nodiscard]] std::int64_t in_flight(const scenarios::Scenario& s, std::int64_t stage);
// Memory held for the whole step on a rank of `stage` (weights, grads, optimizer, buffers).
[[nodiscard]] std::int64_t static_bytes(const scenarios::Scenario& s, std::int64_t stage);
// FP8 (training.precision other than bf16): TransformerEngine's FP8 weight copies and transposes
// and its scaling state on a rank of `stage`; zero in bf16. Part of static_bytes.
struct Fp8StaticBytes {
  std::int64_t weight_copies = 0;   // FP8 copies beside the weights: the cast (without fp8_params) and the transpose (where kept), 1 byte per GEMM weight element each (MXFP8: 33/32)
  std::int64_t scaling_state = 0;   // amax history (delayed) or amax (current), scale, inverse scale
  [[nodiscard]] std::int64_t sum() const { return weight_copies + scaling_state; }
};
[[nodiscard]] Fp8StaticBytes fp8_static_bytes(const scenarios::Scenario& s, std::int64_t stage);
// Fragmentation on top of dynamic memory: dynamic * fragmentation_fraction.
[[nodiscard]] std::int64_t fragmentation_bytes(const scenarios::Scenario& s, std::int64_t dynamic_bytes);

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace stepsim::memory
