#pragma once
// What one rank does for one micro-batch, per layer and for the embedding and output layer: the
// kernels (kernels.hpp), the collectives beside them, and the activation memory they allocate and
// free. No time: the step graph (sim/) wires these programs in schedule order and a cost model
// prices them. Layers may differ: StepProgram holds one LayerProgram per model layer.
//
// TP/SP collectives (docs/training-step.md sections 1.2, 2), in messages of S = 2 n h bytes:
//   with SP, per layer: forward 2 all-gathers + 2 reduce-scatters; backward 4 all-gathers (two
//   re-gather the inputs of the weight gradients) + 2 reduce-scatters, plus the forward's 4 again
//   for a layer full recomputation re-runs, or the MLP's all-gather and reduce-scatter when
//   selective recomputation re-runs the MLP. The embedding reduce-scatters its output (GPT: all-reduces it, then
//   adds learned positions and keeps its SP shard), its backward all-gathers; the output layer
//   all-gathers its input, its backward reduce-scatters the input gradient.
//   without SP: 2 all-reduces per layer each way (+2 under full recomputation), one after the
//   embedding, one for the output layer's input gradient.
//   The vocabulary-parallel cross-entropy adds 3 all-reduces of 4 n bytes (fp32 max, target logit,
//   sum of exponentials), latency-bound.
// CP ring (section 4): c - 1 point-to-point steps per ring, each moving one rank's K and V,
//   4 n k d_h / t bytes, alongside the attention; forward 1 ring per layer, backward 2 (K, V and
//   dK, dV) plus 1 when the attention is recomputed (full, or selective with core_attn).
// PP (section 5): each rank sends its shard [n / t, h] in bf16. Without SP every TP rank holds the
//   whole activation, and Megatron's scatter/gather optimization (on by default) still sends 1/t of
//   it per rank and re-gathers it over NVLink on arrival (not modeled: small).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/workload/collective.hpp"
#include "stepsim/workload/kernels.hpp"
#include "stepsim/workload/schedule.hpp"
#include "stepsim/workload/shape.hpp"

namespace stepsim::workload {

struct PassProgram {
  std::vector<Kernel> kernels;
  std::vector<CollectiveWork> collectives;
};

struct LayerProgram {
  PassProgram forward;
  PassProgram backward;            // the backward kernels; recomputed ones are in `recompute`
  std::vector<Kernel> recompute;   // forward work the backward re-runs (model_flops 0)
  double stored_activation_bytes = 0;  // allocated by the forward, freed by the backward
  double working_set_bytes = 0;        // activations of the layer without recomputation
  double backward_transient_bytes = 0; // held during the backward beyond the stored bytes (full recomputation; all-gather CP's backward buffers)
};

// How full recomputation treats one layer of a model chunk (Megatron's recompute_method and
// recompute_num_layers, applied per chunk as Megatron's TransformerBlock does).
struct LayerCheckpoint {
  bool recomputed = false;        // the backward re-runs the layer's forward
  bool keeps_input = false;       // the layer's input is what its checkpoint group stores
  std::int64_t group_layers = 1;  // on a group's first layer: the layers whose activations its backward rebuilds at once
  bool operator==(const LayerCheckpoint&) const = default;
};

// The checkpoint of layer `index_in_chunk` of a chunk of `chunk_layers` layers: uniform, groups of
// recompute_num_layers (the last one shorter); block, the first recompute_num_layers layers.
[[nodiscard]] LayerCheckpoint layer_checkpoint(const scenarios::Scenario& s, std::int64_t index_in_chunk, std::int64_t chunk_layers);

struct StepProgram {
  Shape shape;
  // One per model layer, in model order; layers with the same checkpoint share one program.
  std::vector<std::shared_ptr<const LayerProgram>> layers;
  // Per model layer, the first layer with the same checkpoint, whose program it shares (its own
  // index when it is the first): equal programs without comparing them.
  std::vector<std::size_t> layer_copied_from;
  PassProgram embedding_forward, embedding_backward;  // on the first virtual stage
  PassProgram output_forward, output_backward;        // on the last virtual stage, loss included
  double token_ids_bytes = 0;          // int64 token ids the first chunk keeps per micro-batch
  double output_transient_bytes = 0;   // fp32 logits and final-norm output of one micro-batch (last stage)
  double logits_copy_bytes = 0;        // bf16 logits (and, fused, a second fp32 copy) beside the stored fp32 ones while the loss runs (last stage)
  CollectiveWork pipeline_send;        // an activation (or its gradient) to the neighbouring stage
  PipelineLayout layout{1, 1};        // the scenario's layers per stage and chunk
};

[[nodiscard]] StepProgram step_program(const scenarios::Scenario& s);

// The program of one layer, checkpointed as `checkpoint` says.
[[nodiscard]] LayerProgram layer_program(const scenarios::Scenario& s, const LayerCheckpoint& checkpoint);
// The program of the first layer of the first chunk.
[[nodiscard]] LayerProgram layer_program(const scenarios::Scenario& s);

// Activation bytes one forward pass of (stage, chunk) allocates and its backward frees: its
// layers' stored activations (the layers p.layout places there), and the token ids on the first
// virtual stage.
[[nodiscard]] double chunk_activation_bytes(const StepProgram& p, std::int64_t stage, std::int64_t chunk);
// What a backward pass of (stage, chunk) holds beyond the stored activations at most: the largest
// backward_transient_bytes of its layers (layers are back-propagated one at a time); 0 for a chunk
// without layers.
[[nodiscard]] double chunk_backward_transient_bytes(const StepProgram& p, std::int64_t stage, std::int64_t chunk);

// Collectives of `group` among `cs`, counted in units of `unit` (an all-reduce is two
// reduce-scatter/all-gather units: NCCL runs it as both); with `overlap`, only those that run so.
[[nodiscard]] double collective_units(const std::vector<CollectiveWork>& cs, GroupKind group, double bytes, Collective unit,
                                      std::optional<Overlap> overlap = std::nullopt);

}  // namespace stepsim::workload
