#include "stepsim/memory/estimator.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/workload/schedule.hpp"

namespace stepsim::memory {

using scenarios::MlpKind;
using scenarios::NormKind;
using scenarios::Recompute;
using scenarios::Scenario;
using scenarios::Schedule;

namespace {

std::int64_t to_bytes(double x) { return static_cast<std::int64_t>(std::llround(x)); }

double d(std::int64_t x) { return static_cast<double>(x); }

// Megatron's distributed-optimizer bucket: max(40e6, 1e6 * dp) parameters
// (megatron/core/distributed, default bucket size; training-step.md section 6).
double bucket_params(const Scenario& s) { return std::max(40e6, 1e6 * d(s.parallel.dp * s.parallel.cp)); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// paper mode (paper-memory-model.md section 4.6):
// M = (6 + 12/(dc)) * {hv/t + (L/p)(2h^2[1 + k/a + 3f/(2h)] + 2h)/t [+ hv/t + h if p = 1]}
//   + (sbh/(tc)) * [(12 + 4k/a + 8f/h) L + 8p + 4(1 + v/h) [p = 1]]
PaperEstimate paper_estimate(const Scenario& s) {
  const auto& m = s.model;
  const auto& p = s.parallel;
  const double h = d(m.hidden), f = d(m.ffn_hidden), L = d(m.layers), a = d(m.heads), k = d(m.kv_heads), v = d(m.vocab);
  const double t = d(p.tp), c = d(p.cp), pp = d(p.pp), dp = d(p.dp);
  const double sq = d(s.training.seq_len), b = d(s.training.micro_batch);

  PaperEstimate e;
  const double per_layer = 2.0 * h * h * (1.0 + k / a) + 3.0 * h * f;
  double P = (L / pp) * (per_layer + 2.0 * h) / t + h * v / t;
  if (p.pp == 1) P += h * v / t + h;
  e.params_first_stage = P;
  const double grad_bytes = s.training.grads_in_fp32 ? 4.0 : 2.0;
  const double opt_bytes = p.distributed_optimizer ? 12.0 / (dp * c) : 12.0;
  e.bytes_per_param = 2.0 + grad_bytes + opt_bytes;
  e.weights_bytes = to_bytes(2.0 * P);
  e.grads_bytes = to_bytes(grad_bytes * P);
  e.optimizer_bytes = to_bytes(opt_bytes * P);
  e.model_states_bytes = to_bytes(P * e.bytes_per_param);

  const double sbh_tc = (sq / c) * b * h / t;
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

std::int64_t padded_vocab(const Scenario& s) {
  const std::int64_t mult = 128 * s.parallel.tp;
  return (s.model.vocab + mult - 1) / mult * mult;
}

// Per layer per TP rank: attention 2h^2(1 + k/a)/t, MLP 3hf/t (SwiGLU) or 2hf/t (GeLU), biases of
// column-parallel layers split by t and of row-parallel layers replicated, norms replicated
// (2h for RMSNorm, 4h for LayerNorm: weight and bias).
double layer_params(const Scenario& s) {
  const auto& m = s.model;
  const double h = d(m.hidden), f = d(m.ffn_hidden), a = d(m.heads), k = d(m.kv_heads), t = d(s.parallel.tp);
  const double mlp_mats = m.mlp == MlpKind::SwiGlu ? 3.0 : 2.0;
  double layer = 2.0 * h * h * (1.0 + k / a) / t + mlp_mats * h * f / t;
  if (m.bias) {
    const double fc1_out = m.mlp == MlpKind::SwiGlu ? 2.0 * f : f;
    layer += (h * (1.0 + 2.0 * k / a) + fc1_out) / t + 2.0 * h;
  }
  return layer + 2.0 * final_norm_params(s);
}

double embedding_params(const Scenario& s) { return d(padded_vocab(s)) * d(s.model.hidden) / d(s.parallel.tp); }

double final_norm_params(const Scenario& s) {
  return s.model.norm == NormKind::RmsNorm ? d(s.model.hidden) : 2.0 * d(s.model.hidden);
}

// The output layer has its own weights when untied; tied embeddings on one stage share them
// (with p > 1 the last stage keeps a copy, as Megatron does).
double output_params(const Scenario& s) {
  return (!s.model.tied_embeddings || s.parallel.pp > 1) ? embedding_params(s) : 0.0;
}

double stage_params(const Scenario& s, std::int64_t stage) {
  double P = d(scenarios::stage_layers(s, stage)) * layer_params(s);
  if (stage == 0) P += embedding_params(s);
  if (stage == s.parallel.pp - 1) P += final_norm_params(s) + output_params(s);
  return P;
}

// Stored activations per layer per micro-batch (paper-memory-model.md section 4.1, 4.2):
// parts replicated across TP unless SP: norm inputs and the inputs of QKV and FC1 (4 x 2sbh);
// parts split by t: Q, attention output (2 x 2sbh), K and V (4sbh k/a), MLP (8sbf SwiGLU,
// 4sbf GeLU). Sequence split by c. With FlashAttention there are no s^2 tensors, so selective
// recomputation of the attention core stores the same tensors.
double full_layer_activation_bytes(const Scenario& s) {
  const auto& m = s.model;
  const double h = d(m.hidden), f = d(m.ffn_hidden), a = d(m.heads), k = d(m.kv_heads), t = d(s.parallel.tp);
  const double sbh = d(s.training.seq_len) / d(s.parallel.cp) * d(s.training.micro_batch) * h;
  const double replicated = 8.0 / (s.parallel.sequence_parallel ? t : 1.0);
  const double mlp = m.mlp == MlpKind::SwiGlu ? 8.0 * f / h : 4.0 * f / h;
  const double split = (4.0 + 4.0 * k / a + mlp) / t;
  double bytes = sbh * (replicated + split);
  // Unfused attention keeps the s x s scores and softmax output in bf16 (2 + 2 bytes per score)
  // and, for GPT models with attention dropout, a 1-byte mask: 5 a s^2 b / t (Korthikanti et al.
  // 2022, Table 2), each CP rank holding s/c query rows. Selective recomputation drops them.
  if (s.training.attention == scenarios::Attention::Unfused && s.training.recompute != Recompute::Selective) {
    const double sq = d(s.training.seq_len);
    const double per_score = m.mlp == MlpKind::Gelu ? 5.0 : 4.0;
    bytes += per_score * a * sq * sq / d(s.parallel.cp) * d(s.training.micro_batch) / t;
  }
  return bytes;
}

// Full recomputation keeps only each layer's input: 2sbh / (c * (SP ? t : 1)).
double stored_layer_activation_bytes(const Scenario& s) {
  if (s.training.recompute != Recompute::Full) return full_layer_activation_bytes(s);
  const double sbh = d(s.training.seq_len) / d(s.parallel.cp) * d(s.training.micro_batch) * d(s.model.hidden);
  return 2.0 * sbh / (s.parallel.sequence_parallel ? d(s.parallel.tp) : 1.0);
}

// Layers of a chunk times the stored layer activation; the first chunk of stage 0 adds the token
// ids (int64, 8sb/c; Megatron's theoretical_memory_usage has 8sbp for p micro-batches).
std::int64_t chunk_activation_bytes(const Scenario& s, std::int64_t stage, std::int64_t chunk) {
  const double layers = d(scenarios::stage_layers(s, stage) / s.parallel.vpp);
  double bytes = layers * stored_layer_activation_bytes(s);
  if (stage == 0 && chunk == 0) bytes += 8.0 * d(s.training.seq_len) / d(s.parallel.cp) * d(s.training.micro_batch);
  return to_bytes(bytes);
}

// fp32 logits and the fp32 final-norm output of one micro-batch on the last stage:
// 4sbh(1 + v/h)/(tc), the paper's output term, with the padded vocabulary.
std::int64_t output_transient_bytes(const Scenario& s) {
  const double sbh_tc = d(s.training.seq_len) / d(s.parallel.cp) * d(s.training.micro_batch) * d(s.model.hidden) /
                        d(s.parallel.tp);
  return to_bytes(4.0 * sbh_tc * (1.0 + d(padded_vocab(s)) / d(s.model.hidden)));
}

std::int64_t backward_transient_bytes(const Scenario& s) {
  if (s.training.recompute != Recompute::Full) return 0;
  return to_bytes(full_layer_activation_bytes(s));
}

// 1F1B: min(p - stage, m); GPipe: m; interleaved: warm-up + 1 chunk passes,
// warm-up = min(2(p - i - 1) + (vpp - 1) p, m vpp) (Megatron's schedules.py, group size p).
std::int64_t in_flight(const Scenario& s, std::int64_t stage) {
  const std::int64_t p = s.parallel.pp, m = s.micro_batches(), v = s.parallel.vpp;
  switch (s.parallel.schedule) {
    case Schedule::GPipe: return m;
    case Schedule::OneFOneB: return std::min(p - stage, m);
    case Schedule::Interleaved: {
      const std::int64_t total = m * v;
      const std::int64_t warmup = std::min(2 * (p - stage - 1) + (v - 1) * p, total);
      return std::min(warmup + 1, total);
    }
  }
  return 1;
}

std::int64_t fragmentation_bytes(const Scenario& s, std::int64_t dynamic_bytes) {
  return to_bytes(d(dynamic_bytes) * s.memory.fragmentation_fraction);
}

namespace {

struct StaticTerms {
  std::int64_t weights = 0, grads = 0, optimizer = 0, cuda_context = 0, nccl = 0, distopt = 0, pp_buffers = 0;
  std::int64_t sum() const { return weights + grads + optimizer + cuda_context + nccl + distopt + pp_buffers; }
};

StaticTerms static_terms(const Scenario& s, std::int64_t stage) {
  const auto& p = s.parallel;
  StaticTerms st;
  const double P = stage_params(s, stage);
  st.weights = to_bytes(2.0 * P);
  st.grads = to_bytes((s.training.grads_in_fp32 ? 4.0 : 2.0) * P);
  st.optimizer = to_bytes(12.0 * P / (p.distributed_optimizer ? d(p.dp * p.cp) : 1.0));
  st.cuda_context = to_bytes(s.memory.cuda_context_bytes);
  int groups = 0;
  groups += p.tp > 1 ? 1 : 0;
  groups += p.cp > 1 ? 1 : 0;
  groups += p.pp > 1 ? 1 : 0;
  groups += p.dp * p.cp > 1 ? 1 : 0;
  st.nccl = to_bytes(groups * s.memory.nccl_buffer_bytes_per_group);
  // Distributed optimizer: one bucket of bf16 parameters staged for the all-gather.
  if (p.distributed_optimizer && p.dp * p.cp > 1) st.distopt = to_bytes(2.0 * std::min(P, bucket_params(s)));
  // Pipeline: receive buffers for one activation and one gradient shard, 2sbh/(ct) each.
  if (p.pp > 1) {
    const double shard = 2.0 * d(s.training.seq_len) / d(p.cp) * d(s.training.micro_batch) * d(s.model.hidden) /
                         (p.sequence_parallel ? d(p.tp) : 1.0);
    st.pp_buffers = to_bytes(2.0 * shard);
  }
  return st;
}

}  // namespace

std::int64_t static_bytes(const Scenario& s, std::int64_t stage) { return static_terms(s, stage).sum(); }

StepsimEstimate stepsim_estimate(const Scenario& s) {
  StepsimEstimate out;
  out.gpu_memory_bytes = to_bytes(s.cluster.gpu.memory_bytes);
  const std::int64_t p = s.parallel.pp;
  for (std::int64_t stage = 0; stage < p; ++stage) {
    StageEstimate se;
    se.stage = stage;
    se.in_flight = in_flight(s, stage);
    const StaticTerms st = static_terms(s, stage);
    // Activations (and the last stage's logits) held at the stage's peak: forward passes allocate
    // their chunk's activations, backward passes free them. With one chunk every pass holds the
    // same bytes, so the peak is the in-flight count times one pass; with interleaving the chunks
    // differ (stage 0's chunk 0 also holds the token ids), so the schedule is followed pass by pass.
    std::int64_t acts = 0, output = 0;
    const std::int64_t out_bytes = output_transient_bytes(s);
    const std::int64_t last_chunk = s.parallel.vpp - 1;
    if (s.parallel.vpp == 1) {
      acts = se.in_flight * chunk_activation_bytes(s, stage, 0);
      output = stage == p - 1 ? se.in_flight * out_bytes : 0;
    } else {
      std::int64_t held_acts = 0, held_out = 0;
      for (const auto& pass : workload::stage_schedule(s.parallel.schedule, p, s.micro_batches(), s.parallel.vpp, stage)) {
        const bool forward = pass.kind == workload::PassKind::Forward;
        const std::int64_t sign = forward ? 1 : -1;
        held_acts += sign * chunk_activation_bytes(s, stage, pass.chunk);
        if (stage == p - 1 && pass.chunk == last_chunk) held_out += sign * out_bytes;
        if (forward && held_acts + held_out > acts + output) {
          acts = held_acts;
          output = held_out;
        }
      }
    }
    const std::int64_t recompute = backward_transient_bytes(s);
    const std::int64_t dynamic = acts + output + recompute;
    const std::int64_t frag = fragmentation_bytes(s, dynamic);
    se.terms = {
        {"weights_bytes", "weights (bf16)", st.weights},
        {"grads_bytes", s.training.grads_in_fp32 ? "gradients (fp32)" : "gradients (bf16)", st.grads},
        {"optimizer_bytes", "optimizer (fp32 master, Adam m, v)", st.optimizer},
        {"activations_bytes", "activations (in-flight)", acts},
        {"output_layer_bytes", "output layer + loss (fp32 logits)", output},
        {"recompute_bytes", "recomputation working set", recompute},
        {"cuda_context_bytes", "CUDA context", st.cuda_context},
        {"nccl_buffers_bytes", "NCCL communicator buffers", st.nccl},
        {"distopt_buffer_bytes", "distributed-optimizer gather bucket", st.distopt},
        {"pp_buffers_bytes", "pipeline send/recv buffers", st.pp_buffers},
        {"fragmentation_bytes", "allocator fragmentation", frag},
    };
    se.total_bytes = 0;
    for (const auto& t : se.terms) se.total_bytes += t.bytes;
    if (se.total_bytes > out.peak_bytes) {
      out.peak_bytes = se.total_bytes;
      out.peak_stage = stage;
    }
    out.stages.push_back(std::move(se));
  }
  out.fits = out.peak_bytes <= out.gpu_memory_bytes;
  return out;
}

}  // namespace stepsim::memory
