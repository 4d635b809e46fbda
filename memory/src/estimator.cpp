#include "stepsim/memory/estimator.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "stepsim/memory/round.hpp"
#include "stepsim/workload/params.hpp"
#include "stepsim/workload/program.hpp"
#include "stepsim/workload/schedule.hpp"
#include "stepsim/workload/shape.hpp"

namespace stepsim::memory {

using scenarios::Recompute;
using scenarios::Scenario;

namespace {

std::int64_t to_bytes(double x) { return round_bytes(x); }

double d(std::int64_t x) { return static_cast<double>(x); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// paper mode (docs/memory-model.md section 4.6):
// M = (6 + 12/(dc)) * {hv/t + (L/p)(2h^2[1 + k/a + 3f/(2h)] + 2h)/t [+ hv/t + h if p = 1]}
//   + (sbh/(tc)) * [(12 + 4k/a + 8f/h) L + 8p + 4(1 + v/h) [p = 1]]
PaperEstimate paper_estimate(const Scenario& s) {
  const auto& m = s.model;
  const auto& p = s.parallel;
  const double h = d(m.hidden), f = d(m.ffn_hidden), L = d(m.layers), a = d(m.heads), k = d(m.kv_heads), v = d(m.vocab);
  const double t = d(p.tp), c = d(p.cp), pp = d(p.pp), dp = d(p.dp);
  const workload::Shape x = workload::shape_of(s);

  PaperEstimate e;
  const double per_layer = 2.0 * h * h * (1.0 + k / a) + 3.0 * h * f;
  double P = (L / pp) * (per_layer + 2.0 * h) / t + h * v / t;
  if (p.pp == 1) P += h * v / t + h;
  e.params_first_stage = P;
  const double grad_bytes = x.grad_bytes_per_param;
  const double opt_bytes = p.shards_optimizer() ? 12.0 / (dp * c) : 12.0;
  e.bytes_per_param = 2.0 + grad_bytes + opt_bytes;
  e.weights_bytes = to_bytes(2.0 * P);
  e.grads_bytes = to_bytes(grad_bytes * P);
  e.optimizer_bytes = to_bytes(opt_bytes * P);
  e.model_states_bytes = to_bytes(P * e.bytes_per_param);

  const double sbh_tc = x.tokens_per_rank * h / t;
  double layers = sbh_tc * (12.0 + 4.0 * k / a + 8.0 * f / h) * L;
  if (p.vpp > 1) layers *= 1.0 + (pp - 1.0) / (pp * d(p.vpp));
  e.transformer_activation_bytes = to_bytes(layers);
  e.embedding_activation_bytes = to_bytes(8.0 * sbh_tc * pp);
  e.output_activation_bytes = p.pp == 1 ? to_bytes(4.0 * sbh_tc * (1.0 + v / h)) : 0;
  e.activation_bytes = e.transformer_activation_bytes + e.embedding_activation_bytes + e.output_activation_bytes;
  e.total_bytes = e.model_states_bytes + e.activation_bytes;
  e.gpu_memory_bytes = to_bytes(s.cluster.gpu.memory_bytes);
  e.usable_fraction = s.memory.usable_fraction;
  e.under_usable_fraction = d(e.total_bytes) <= s.memory.usable_fraction * s.cluster.gpu.memory_bytes;
  return e;
}

// ---------------------------------------------------------------------------------------------
// stepsim mode building blocks

// The stored activations of the chunk's layers; the first chunk of stage 0 adds the token ids
// (int64, 8sb/c; Megatron's theoretical_memory_usage has 8sbp for p micro-batches).
std::int64_t chunk_activation_bytes(const workload::StepProgram& program, const Scenario& /*built from*/, std::int64_t stage,
                                    std::int64_t chunk) {
  return to_bytes(workload::chunk_activation_bytes(program, stage, chunk));
}

std::int64_t chunk_activation_bytes(const Scenario& s, std::int64_t stage, std::int64_t chunk) {
  return memory::chunk_activation_bytes(workload::step_program(s), s, stage, chunk);
}

std::int64_t output_transient_bytes(const workload::StepProgram& program) { return to_bytes(program.output_transient_bytes); }

std::int64_t output_transient_bytes(const Scenario& s) { return output_transient_bytes(workload::step_program(s)); }

std::int64_t logits_copy_bytes(const workload::StepProgram& program) { return to_bytes(program.logits_copy_bytes); }

std::int64_t chunk_backward_transient_bytes(const workload::StepProgram& program, std::int64_t stage, std::int64_t chunk) {
  return to_bytes(workload::chunk_backward_transient_bytes(program, stage, chunk));
}

std::int64_t backward_pass_alloc_bytes(std::int64_t working, bool loss, std::int64_t output, std::int64_t logits_copy) {
  return loss ? std::max(logits_copy, working - output) : working;
}

std::int64_t in_flight(const Scenario& s, std::int64_t stage) {
  return workload::in_flight_passes(s.parallel.schedule, s.parallel.pp, s.micro_batches(), s.parallel.vpp, stage,
                                    s.parallel.microbatch_group());
}

std::int64_t fragmentation_bytes(const Scenario& s, std::int64_t dynamic_bytes) {
  return to_bytes(d(dynamic_bytes) * s.memory.fragmentation_fraction);
}

// FP8 terms (docs/memory-model.md, FP8). TransformerEngine keeps, beside the bf16 parameters,
// an FP8 copy of every GEMM weight and its transpose (both orientations; MXFP8: each with one
// E8M0 scale per 32 elements), cached across the micro-batches of a step. Scaling state per FP8
// tensor of a GEMM (3 forward: input, weight, output; 2 backward: output gradient, input
// gradient): delayed scaling an fp32 amax history of training.fp8_amax_history_len entries plus
// fp32 scale and inverse scale; current scaling an fp32 amax, scale and inverse scale; MXFP8 none
// beyond the block scales. training.fp8_params (Megatron --fp8-param-gather, TE's FP8 parameters)
// keeps the GEMM weights in FP8 only: no bf16 copy of them, the FP8 transpose still cached (none
// on Blackwell with per-tensor scaling).
namespace {

// Whether TransformerEngine keeps an FP8 transpose of each GEMM weight beside its FP8 data: not on
// Blackwell with per-tensor scaling (below), always with MXFP8.
bool keeps_fp8_transposes(const Scenario& s) {
  return s.training.precision == scenarios::TrainingPrecision::Mxfp8 || s.cluster.gpu.architecture != scenarios::GpuArchitecture::Blackwell;
}

}  // namespace

Fp8StaticBytes fp8_static_bytes(const Scenario& s, std::int64_t stage) {
  Fp8StaticBytes b;
  if (!s.training.fp8()) return b;
  const double layers = d(scenarios::stage_layers(s, stage));
  const double per_copy = workload::fp8_element_bytes(s.training.precision);
  // With FP8 parameters the FP8 data is the weight itself (counted in the weights term) and only
  // the transpose is an extra copy. Blackwell's FP8 GEMMs take either orientation of a per-tensor
  // scaled operand, so TransformerEngine keeps no transpose there (utils.py
  // is_non_tn_fp8_gemm_supported: compute capability 10.x, the B200, GB200, B300 and GB300 of the
  // presets; Float8TensorStorage.update_usage then drops the transpose);
  // MXFP8 scales blocks along one dimension and keeps both orientations everywhere.
  const double copies = (s.training.fp8_params ? 0.0 : 1.0) + (keeps_fp8_transposes(s) ? 1.0 : 0.0);
  b.weight_copies = to_bytes(copies * per_copy * layers * workload::layer_gemm_weights(s));
  constexpr double kTensorsPerGemm = 5.0, kGemmsPerLayer = 4.0;
  double per_tensor = 0;
  if (s.training.precision == scenarios::TrainingPrecision::Fp8Delayed) per_tensor = 4.0 * (d(s.training.fp8_amax_history_len) + 2.0);
  else if (s.training.precision == scenarios::TrainingPrecision::Fp8Current) per_tensor = 4.0 * 3.0;
  b.scaling_state = to_bytes(layers * kGemmsPerLayer * kTensorsPerGemm * per_tensor);
  return b;
}

namespace {

// Library workspaces that torch's caching allocator holds, so that they count in its allocated
// bytes (memory.workspaces_mib; by default): the cuBLAS workspace of the compute stream (PyTorch
// allocates it through the caching allocator, one per handle and stream, sized by
// CUBLAS_WORKSPACE_CONFIG: 32 MiB for :4096:8, the setting of Megatron-LM's deterministic runs and
// PyTorch's default from Hopper on) and the cuBLASLt workspace of the same size (a torch tensor);
// TransformerEngine's own cuBLAS workspace, a torch tensor of 32 MiB from Hopper on and 4 MiB
// before (transformer_engine/pytorch/module/base.py, get_cublas_workspace_size_bytes), which
// initialize_ub, run for userbuffers TP overlap, replaces by _NUM_MAX_UB_STREAMS = 3 copies of it
// (the userbuffers themselves are allocated outside torch's allocator).
std::int64_t library_workspace_bytes(const Scenario& s) {
  if (s.memory.workspaces_bytes) return to_bytes(*s.memory.workspaces_bytes);
  constexpr double kMiB = 1024.0 * 1024.0;
  const bool before_hopper = s.cluster.gpu.architecture == scenarios::GpuArchitecture::Ampere;
  const double te_copies = s.parallel.tp_comm_overlap ? 3.0 : 1.0;
  return to_bytes((2.0 * 32.0 + te_copies * (before_hopper ? 4.0 : 32.0)) * kMiB);
}

struct StaticTerms {
  std::int64_t weights = 0, grads = 0, optimizer = 0, cuda_context = 0, workspaces = 0, nccl = 0, grad_bucket = 0, gathered_params = 0,
               pp_buffers = 0, tp_overlap = 0;
  Fp8StaticBytes fp8;
  std::int64_t sum() const {
    return weights + grads + optimizer + cuda_context + workspaces + nccl + grad_bucket + gathered_params + pp_buffers + tp_overlap +
           fp8.sum();
  }
};

// The largest unit ZeRO-3 gathers on `stage`: a transformer layer, or the embedding (first stage)
// or output layer (last stage) when larger.
double largest_unit_params(const Scenario& s, std::int64_t stage) {
  double unit = scenarios::stage_layers(s, stage) > 0 ? workload::layer_params(s) : 0.0;
  if (stage == 0) unit = std::max(unit, workload::embedding_params(s));
  if (stage == s.parallel.pp - 1) unit = std::max(unit, workload::output_params(s) + workload::final_norm_params(s));
  return unit;
}

StaticTerms static_terms(const Scenario& s, std::int64_t stage) {
  const auto& p = s.parallel;
  StaticTerms st;
  const workload::Shape x = workload::shape_of(s);
  const double P = workload::stage_params(s, stage);
  const double shards = d(p.shard_group_size());
  // Parameters, main gradients and optimizer state, each divided over DP x CP where sharded (over
  // DP x CP / instances with several distributed-optimizer instances, each of which holds a whole
  // copy); the offloaded fraction of the optimizer state lives on the host.
  // FP8 parameters: the GEMM weights are FP8 data (MXFP8 with its block scales), the rest bf16.
  const Fp8StaticBytes fp8 = fp8_static_bytes(s, stage);
  double weight_bytes = 2.0 * P;
  if (s.training.fp8() && s.training.fp8_params) {
    // The GEMM weights' bf16 bytes become their FP8 data (1 byte per element; MXFP8 with one scale
    // byte per 32), whatever copies fp8_static_bytes adds beside them.
    weight_bytes -= (2.0 - workload::fp8_element_bytes(s.training.precision)) * d(scenarios::stage_layers(s, stage)) * workload::layer_gemm_weights(s);
  }
  st.weights = to_bytes(weight_bytes / (p.shards_params() ? shards : 1.0));
  st.grads = to_bytes(x.grad_bytes_per_param * P / (p.shards_grads() ? shards : 1.0));
  st.optimizer = to_bytes(12.0 * P * (1.0 - s.training.optimizer_offload_fraction) / (p.shards_optimizer() ? shards : 1.0));
  st.cuda_context = to_bytes(s.memory.cuda_context_bytes);
  st.fp8 = fp8;
  int groups = 0;
  groups += p.tp > 1 ? 1 : 0;
  groups += p.cp > 1 ? 1 : 0;
  groups += p.pp > 1 ? 1 : 0;
  groups += p.dp * p.cp > 1 ? 1 : 0;
  // Several distributed-optimizer instances: the group within an instance (reduce-scatter and
  // all-gather) and the group across the instances (all-reduce of the shards), beside DP x CP.
  if (p.distributed_optimizer_instances > 1) groups += (p.shard_group_size() > 1 ? 1 : 0) + 1;
  // a2a+p2p: the all-to-all groups and the ring across them are communicators of their own
  // (Megatron's hierarchical CP groups), each used when it spans more than one rank.
  if (p.cp > 1 && p.cp_comm_type == scenarios::CpCommType::A2AP2P) groups += (p.cp_a2a_size() > 1 ? 1 : 0) + (p.cp_ring_size() > 1 ? 1 : 0);
  st.nccl = to_bytes(groups * s.memory.nccl_buffer_bytes_per_group);
  st.workspaces = library_workspace_bytes(s);
  // The distributed optimizer (parameters not sharded) gathers the parameters in place into the
  // bf16 parameter buffer and reduce-scatters the gradients in place in the gradient buffer
  // (Megatron-Core param_and_grad_buffer.py: all_gather_into_tensor into bucket.param_data,
  // reduce_scatter_tensor into a shard view of bucket.grad_data): no staging buffer.
  const bool dp_active = p.dp * p.cp > 1;
  // Sharded gradients: one bucket of whole gradients staged for its reduce-scatter.
  if (p.shards_grads() && dp_active) st.grad_bucket = to_bytes(x.grad_bytes_per_param * std::min(P, x.bucket_params));
  // Sharded parameters: the unit being computed whole in bf16, and the next one while it is
  // prefetched (overlap_param_gather).
  if (p.shards_params() && dp_active)
    st.gathered_params = to_bytes(2.0 * largest_unit_params(s, stage) * (p.overlap_param_gather ? 2.0 : 1.0));
  // TP communication overlap: TransformerEngine's userbuffers, one set per process that every layer
  // reuses, each [S, h] with S = s b / c the TP group's tokens (Megatron passes that shape to
  // initialize_ub): the all-gathers of QKV's and FC1's inputs (ring exchange) and of their dgrad
  // (bulk), and of the dgrads of proj and FC2 (ring exchange), 6 buffers in FP8 when training in
  // FP8, else bf16; the reduce-scatters after proj and FC2 (pipeline) and of QKV's and FC1's wgrad
  // (bulk), 4 in bf16 (TransformerEngine module/base.py initialize_ub, its default methods, 1.9 to
  // 2.6). From 2.7 on initialize_ub also registers the "external" overlaps of proj's and FC2's
  // wgrad, two more [S, h] buffers of the all-gather kind (FP8 when training in FP8): not counted
  // here, as no field says which TransformerEngine a stack runs (docs/memory-model.md). Mapped with
  // cuMemCreate outside torch's caching allocator (userbuffers-host.cpp), so torch's peak does not
  // count them.
  if (p.tp_comm_overlap && p.tp > 1) {
    const double S = d(s.training.seq_len) * d(s.training.micro_batch) / d(p.cp);
    const double all_gather_bytes = s.training.fp8() ? 1.0 : 2.0;
    st.tp_overlap = to_bytes(S * d(s.model.hidden) * (6.0 * all_gather_bytes + 4.0 * 2.0));
  }
  // Pipeline: receive buffers for one activation and one gradient shard, 2sbh/(ct) each.
  if (p.pp > 1) {
    const double shard = 2.0 * (x.tokens_per_rank * d(s.model.hidden)) / (p.sequence_parallel ? d(p.tp) : 1.0);
    st.pp_buffers = to_bytes(2.0 * shard);
  }
  return st;
}

const char* weights_label(const Scenario& s) {
  if (s.training.fp8_params) return s.parallel.shards_params() ? "weights (bf16, GEMM weights FP8, sharded)" : "weights (bf16, GEMM weights FP8)";
  return s.parallel.shards_params() ? "weights (bf16, sharded)" : "weights (bf16)";
}

const char* grads_label(const Scenario& s) {
  if (s.training.grads_in_fp32) return s.parallel.shards_grads() ? "gradients (fp32, sharded)" : "gradients (fp32)";
  return s.parallel.shards_grads() ? "gradients (bf16, sharded)" : "gradients (bf16)";
}

}  // namespace

std::int64_t static_bytes(const Scenario& s, std::int64_t stage) { return static_terms(s, stage).sum(); }

StepsimEstimate stepsim_estimate(const Scenario& s) {
  StepsimEstimate out;
  out.gpu_memory_bytes = to_bytes(s.cluster.gpu.memory_bytes);
  const std::int64_t p = s.parallel.pp;
  const workload::StepProgram program = workload::step_program(s);
  const auto chunk_bytes = [&](std::int64_t stage, std::int64_t chunk) { return memory::chunk_activation_bytes(program, s, stage, chunk); };
  const std::int64_t out_bytes = output_transient_bytes(program);
  const std::int64_t logits_copy = logits_copy_bytes(program);
  for (std::int64_t stage = 0; stage < p; ++stage) {
    StageEstimate se;
    se.stage = stage;
    se.in_flight = in_flight(s, stage);
    const StaticTerms st = static_terms(s, stage);
    // Activations (and the last stage's logits) held at the stage's peak: forward passes allocate
    // their chunk's activations, backward passes free them. With one chunk every pass holds the
    // same bytes, so the peak is the in-flight count times one pass; with interleaving the chunks
    // differ (stage 0's chunk 0 also holds the token ids), so the schedule is followed pass by pass.
    // A backward pass allocates its working set (backward_pass_alloc_bytes) beside what it frees
    // only at its end; on the last stage's loss chunk the logits' copy comes first.
    std::int64_t acts = 0, output = 0, backward = 0;
    const std::int64_t last_chunk = s.parallel.vpp - 1;
    const std::int64_t copy = stage == p - 1 ? logits_copy : 0;
    if (s.parallel.vpp == 1) {
      // The peak is the backward right after the forward that fills the in-flight count.
      acts = se.in_flight * chunk_bytes(stage, 0);
      const bool loss = stage == p - 1;
      const std::int64_t working = backward_pass_alloc_bytes(memory::chunk_backward_transient_bytes(program, stage, 0), loss, out_bytes, copy);
      output = loss ? se.in_flight * out_bytes + copy : 0;
      backward = working - (loss ? copy : 0);
    } else {
      // A forward allocates its chunk's bytes and then runs the loss (the last chunk); a backward
      // starts with the loss's backward and its working set and frees them with the chunk's bytes
      // when it ends.
      std::int64_t held_acts = 0, held_out = 0;
      std::vector<std::int64_t> stage_chunk_bytes;  // per chunk of the stage, looked up per pass
      std::vector<std::int64_t> stage_chunk_working;
      for (std::int64_t j = 0; j < s.parallel.vpp; ++j) {
        stage_chunk_bytes.push_back(chunk_bytes(stage, j));
        stage_chunk_working.push_back(memory::chunk_backward_transient_bytes(program, stage, j));
      }
      for (const auto& pass : workload::stage_schedule(s.parallel.schedule, p, s.micro_batches(), s.parallel.vpp, stage,
                                                                 s.parallel.microbatch_group())) {
        const bool forward = pass.kind == workload::PassKind::Forward;
        const bool loss = stage == p - 1 && pass.chunk == last_chunk;
        const std::int64_t chunk = stage_chunk_bytes[static_cast<std::size_t>(pass.chunk)], loss_out = loss ? out_bytes : 0,
                           extra = loss ? copy : 0;
        if (forward) {
          held_acts += chunk;
          held_out += loss_out;
        }
        // A backward's allocation: the logits' copy (counted with the output) and its working set.
        const std::int64_t working =
            forward ? 0 : backward_pass_alloc_bytes(stage_chunk_working[static_cast<std::size_t>(pass.chunk)], loss, out_bytes, extra) - extra;
        if (held_acts + held_out + extra + working > acts + output + backward) {
          acts = held_acts;
          output = held_out + extra;
          backward = working;
        }
        if (!forward) {
          held_acts -= chunk;
          held_out -= loss_out;
        }
      }
    }
    const std::int64_t dynamic = acts + output + backward;
    const std::int64_t frag = fragmentation_bytes(s, dynamic);
    se.terms = {
        {"weights_bytes", weights_label(s), st.weights},
        {"grads_bytes", grads_label(s), st.grads},
        {"optimizer_bytes", s.training.optimizer_offload_fraction > 0 ? "optimizer (fp32 master, Adam m, v; on GPU)" : "optimizer (fp32 master, Adam m, v)", st.optimizer},
        {"activations_bytes", "activations (in-flight)", acts},
        {"output_layer_bytes", "output layer + loss (fp32 and bf16 logits)", output},
        // Recomputed activations, the MLP's gradient buffers or all-gather CP's buffers (the key
        // keeps its first name).
        {"recompute_bytes", "backward working set", backward},
        {"cuda_context_bytes", "CUDA context", st.cuda_context},
        {"workspaces_bytes", "cuBLAS, cuBLASLt and TE workspaces", st.workspaces},
        {"nccl_buffers_bytes", "NCCL communicator buffers", st.nccl},
        {"pp_buffers_bytes", "pipeline send/recv buffers", st.pp_buffers},
        {"fragmentation_bytes", "allocator fragmentation", frag},
    };
    if (s.training.fp8()) {
      // After the optimizer state.
      const auto optimizer = std::find_if(se.terms.begin(), se.terms.end(), [](const Term& t) { return t.key == "optimizer_bytes"; });
      const bool transpose = keeps_fp8_transposes(s);
      const char* copies = s.training.fp8_params ? (transpose ? "FP8 weight transposes" : "FP8 weight transposes (none on Blackwell)")
                                                 : (transpose ? "FP8 weight copies + transposes" : "FP8 weight copies");
      se.terms.insert(optimizer + 1, {{"fp8_weights_bytes", copies, st.fp8.weight_copies},
                           {"fp8_scaling_bytes", "FP8 scaling state (amax, scales)", st.fp8.scaling_state}});
    }
    if (st.tp_overlap > 0) {
      // After the NCCL buffers.
      const auto nccl = std::find_if(se.terms.begin(), se.terms.end(), [](const Term& t) { return t.key == "nccl_buffers_bytes"; });
      se.terms.insert(nccl + 1, {"tp_overlap_buffers_bytes", "TP overlap buffers (userbuffers)", st.tp_overlap});
    }
    // The buffers of sharded gradients and parameters, where the sharding has them.
    if (s.parallel.shards_grads()) {
      // After the NCCL buffers.
      const auto nccl = std::find_if(se.terms.begin(), se.terms.end(), [](const Term& t) { return t.key == "nccl_buffers_bytes"; });
      const auto at = se.terms.insert(nccl + 1, {"grad_bucket_bytes", "gradient reduce-scatter bucket", st.grad_bucket});
      if (s.parallel.shards_params())
        se.terms.insert(at + 1, {"gathered_params_bytes", "gathered parameters (sharded weights)", st.gathered_params});
    }
    se.total_bytes = 0;
    for (const auto& t : se.terms) se.total_bytes += t.bytes;
    if (se.total_bytes > out.peak_bytes) {
      out.peak_bytes = se.total_bytes;
      out.peak_stage = stage;
    }
    out.stages.push_back(std::move(se));
  }
  out.fits = out.peak_bytes <= out.gpu_memory_bytes;
  out.headroom_bytes = static_cast<std::int64_t>(s.memory.headroom_bytes);
  out.fits_with_headroom = out.peak_bytes <= out.gpu_memory_bytes - out.headroom_bytes;
  return out;
}

}  // namespace stepsim::memory
