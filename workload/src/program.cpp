#include "stepsim/workload/program.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "stepsim/scenarios/names.hpp"
#include "stepsim/workload/params.hpp"

namespace stepsim::workload {

using scenarios::Recompute;
using scenarios::Scenario;

namespace {

double d(std::int64_t x) { return static_cast<double>(x); }

// Stored activations per layer per micro-batch without recomputation (docs/memory-model.md
// sections 4.1, 4.2): parts replicated across TP unless SP: norm inputs and the inputs of QKV and
// FC1 (4 x 2sbh); parts split by t: Q, attention output (2 x 2sbh), K and V (4sbh k/a), MLP (6sbf
// SwiGLU fused, 8sbf unfused, 4sbf GeLU). Sequence split by c. With FlashAttention there are no s^2 tensors, so
// selective recomputation of the attention core stores the same tensors.
struct LayerActivations {
  double norm_inputs = 0;   // 2 x 2sbh / (SP ? t : 1)
  double norm_outputs = 0;  // the QKV and FC1 inputs, 2 x 2sbh / (SP ? t : 1)
  double attention = 0;     // Q, K, V, attention output: (4 + 4k/a) sbh / t; FP8: + sbh / t, the projection's FP8 input
  double attention_copy = 0;  // FlashAttention-2 through TransformerEngine: the output kept twice, 2sbh / t
  double mlp = 0;           // FC1 output and FC2 input: 6sbf / t (SwiGLU; unfused also the SiLU output: 8sbf / t), 4sbf / t (GeLU)
  double mlp_backward = 0;  // held beyond the stored bytes during the MLP's backward
  double scores = 0;        // unfused attention's s x s tensors
  double dropout_masks = 0; // hidden dropout after attention and after the MLP: 2 x sbh / (SP ? t : 1), 1 byte each
  double qk_norm = 0;       // model.qk_norm: the query and key norms' inputs and statistics, (2 d_h + stats) sb(a + k) / (ct)
  [[nodiscard]] double total() const {
    return norm_inputs + norm_outputs + attention + attention_copy + mlp + scores + dropout_masks + qk_norm;
  }
};

LayerActivations layer_activations(const Scenario& s, const Shape& x) {
  const auto& m = s.model;
  const double h = d(m.hidden), f = d(m.ffn_hidden), a = d(m.heads), k = d(m.kv_heads), t = d(s.parallel.tp);
  const double sbh = x.tokens_per_rank * h;
  LayerActivations acts;
  acts.norm_inputs = acts.norm_outputs = 4.0 * sbh / (s.parallel.sequence_parallel ? t : 1.0);
  acts.attention = sbh * (4.0 + 4.0 * k / a) / t;
  // TransformerEngine's FlashAttention backend (the flash-attn package) takes Megatron's sbhd
  // Q, K, V as bshd copies and returns its bshd output transposed into a new sbhd tensor: flash-attn
  // saves its own output, the projection saves the copy, so the output is stored twice. cuDNN
  // (FusedAttention) writes the output in sbhd once and saves views of the QKV output, which the
  // 4 + 4k/a above counts. (TransformerEngine attention/dot_product_attention/backends.py,
  // FlashAttention.forward; flash-attn flash_attn_interface.py, FlashAttnFunc.forward.) Not with
  // context parallelism (TransformerEngine's CP ring has its own buffers) nor FP8 (the projection
  // then saves an FP8 cast of the copy and the copy is freed).
  const bool flash2 = s.training.attention == scenarios::Attention::Flash &&
                      scenarios::resolved_attention_kernel(s.cluster.gpu.architecture, s.software.attention) ==
                          scenarios::AttentionKernel::FlashAttention2;
  if (flash2 && s.parallel.cp == 1 && !s.training.fp8()) acts.attention_copy = 2.0 * sbh / t;
  // The MLP keeps FC1's output (the gate and up halves with SwiGLU: 2 x 2sbf / t; GeLU 2sbf / t),
  // the activation's only saved input, and FC2's input (the activation's output, 2sbf / t): the
  // fused bias-activation functions save their input alone and recompute the activation in the
  // backward (Megatron-core fusions/fused_bias_swiglu.py SwiGLUFunction and fused_bias_gelu.py;
  // bias_activation_fusion is on by default: --no-bias-swiglu-fusion turns it off).
  // Unfused (software.fused_swiglu off) the SiLU's output is kept too, as the multiply's input.
  const bool swiglu = m.mlp == scenarios::MlpKind::SwiGlu;
  const double fc1_out = (swiglu ? 4.0 : 2.0) * x.tokens_per_rank * f / t;
  const double fc2_in = 2.0 * x.tokens_per_rank * f / t;
  const double silu_out = swiglu && !s.software.fused_swiglu ? 2.0 * x.tokens_per_rank * f / t : 0.0;
  acts.mlp = fc1_out + fc2_in + silu_out;
  // In the MLP's backward the activation's backward holds the gradient of FC2's input (bf16, 2sbf / t)
  // and writes that of FC1's output (as large as FC1's output) while FC1's output is still kept;
  // FC2's saved input has been released by FC2's backward just before.
  double fc2_in_saved = fc2_in;
  // GPT models train with hidden dropout (Megatron's default 0.1): each bias-dropout-add keeps its
  // 1-byte mask for the backward, on the full hidden size, split by t only under SP (Korthikanti
  // et al. 2022, Table 2: the two sbh terms of 34sbh).
  if (gpt_family(m)) acts.dropout_masks = 2.0 * x.tokens_per_rank * h / (s.parallel.sequence_parallel ? t : 1.0);
  // Query and key norms (Megatron's q_layernorm and k_layernorm over the head dimension): each
  // keeps its bf16 input, the projection's query or key heads, and the fp32 statistics of every row
  // (one row per token and head: rstd, LayerNorm also the mean). The heads are split by t (with or
  // without SP), the sequence by c.
  if (m.qk_norm) {
    acts.qk_norm = x.tokens_per_rank * (a + k) / t * (2.0 * (h / a) + norm_statistics_bytes(s));
  }
  // Unfused attention keeps the s x s scores and softmax output in bf16 (2 + 2 bytes per score)
  // and, for GPT models with attention dropout, a 1-byte mask: 5 a s^2 b / t (Korthikanti et al.
  // 2022, Table 2), each CP rank holding s/c query rows.
  if (s.training.attention == scenarios::Attention::Unfused) {
    const double sq = d(s.training.seq_len);
    const double per_score = m.mlp == scenarios::MlpKind::Gelu ? 5.0 : 4.0;
    acts.scores = per_score * a * sq * sq / d(s.parallel.cp) * d(s.training.micro_batch) / t;
  }
  // FP8: TransformerEngine's Linear and LayerNormLinear save the input of an FP8 GEMM for wgrad as
  // FP8, 1 byte per element (MXFP8: plus one scale byte per 32 elements). The norms write the QKV
  // and FC1 inputs in FP8 directly, and FC2's bf16 input (the activation's output) is released once
  // cast: those take 1 byte instead of 2. The projection's FP8 input is a cast of the attention
  // output, which the attention kernel keeps in bf16 for its own backward: 1 byte beside the 2.
  // (TransformerEngine layernorm_linear.py and linear.py, the tensors saved for backward; the
  // attention backends save q, k, v and out.)
  if (s.training.fp8()) {
    const double fp8 = fp8_element_bytes(s.training.precision);
    const double saved = 2.0 - fp8;
    const double tokens = x.tokens_per_rank;
    acts.norm_outputs -= saved * tokens * 2.0 * h / (s.parallel.sequence_parallel ? t : 1.0);
    acts.attention += fp8 * tokens * h / t;
    acts.mlp -= saved * tokens * f / t;
    fc2_in_saved -= saved * tokens * f / t;
  }
  acts.mlp_backward = fc2_in + fc1_out - fc2_in_saved;
  return acts;
}

// What the forward stores under selective recomputation: the recomputed modules keep only their
// inputs. core_attn drops the s x s tensors and the kernel's own copy of its output (its inputs
// Q, K, V and its output, the projection's input, stay); mlp drops FC1's output, the activation and FC2's input (its input, the second norm's
// output, stays unless the norm is recomputed too); layernorm drops both norm outputs.
double stored_bytes_selective(const scenarios::RecomputeModules& mods, const LayerActivations& acts) {
  double bytes = acts.total();
  if (mods.core_attn) bytes -= acts.scores + acts.attention_copy;
  if (mods.mlp) bytes -= acts.mlp;
  if (mods.layernorm) bytes -= acts.norm_outputs;
  return bytes;
}

}  // namespace

std::string to_string(Collective c) {
  static constexpr scenarios::NameTable<Collective, 6> kNames{{{"none", Collective::None},
                                                               {"all-reduce", Collective::AllReduce},
                                                               {"reduce-scatter", Collective::ReduceScatter},
                                                               {"all-gather", Collective::AllGather},
                                                               {"all-to-all", Collective::AllToAll},
                                                               {"send/recv", Collective::SendRecv}}};
  return scenarios::name_of(kNames, c);
}

std::string to_string(GroupKind g) {
  static constexpr scenarios::NameTable<GroupKind, 10> kNames{{
      {"tp", GroupKind::Tensor}, {"cp", GroupKind::Context}, {"dp", GroupKind::DataContext},
      {"dp-instance", GroupKind::DataContextInstance}, {"dp-replicas", GroupKind::DataContextReplicas}, {"cp-ring", GroupKind::ContextRing},
      {"embedding", GroupKind::EmbeddingTie}, {"pp", GroupKind::Pipeline}, {"world", GroupKind::World},
      {"cp-a2a", GroupKind::ContextA2A}}};
  return scenarios::name_of(kNames, g);
}

LayerCheckpoint layer_checkpoint(const Scenario& s, std::int64_t index_in_chunk, std::int64_t chunk_layers) {
  LayerCheckpoint c;
  if (s.training.recompute != Recompute::Full) return c;
  const std::int64_t n = s.training.recompute_num_layers;
  if (s.training.recompute_method == scenarios::RecomputeMethod::Block) {
    c.recomputed = index_in_chunk < n;
    c.keeps_input = c.recomputed;
    return c;
  }
  c.recomputed = true;
  c.keeps_input = index_in_chunk % n == 0;
  c.group_layers = c.keeps_input ? std::min(n, chunk_layers - index_in_chunk) : 0;
  return c;
}

LayerProgram layer_program(const Scenario& s, const LayerCheckpoint& checkpoint) {
  const Shape x = shape_of(s);
  const double h = d(s.model.hidden);
  const bool sp = x.sequence_parallel;
  const bool full = checkpoint.recomputed;
  const bool selective = s.training.recompute == Recompute::Selective;
  const auto& mods = s.training.recompute_modules;
  const Overlap tp_overlap = s.parallel.tp_comm_overlap ? Overlap::WithCompute : Overlap::AfterCompute;
  // The backward TP communication of the column-parallel linears (QKV, FC1) that the stack runs
  // beside their own GEMMs (software.tp_backward_overlap): the re-gather of the saved SP input
  // beside the dgrad GEMM, the dgrad reduce-scatter (all-reduce without SP) beside the wgrad GEMM.
  const Overlap bwd_overlap = s.software.tp_backward_overlap ? Overlap::WithCompute : tp_overlap;
  const double tp_bytes = 2.0 * x.tokens_per_rank * h;

  LayerProgram l;
  l.forward.kernels = layer_forward(s);
  l.backward.kernels = layer_backward(s);
  l.recompute = layer_recompute(s, full);
  if (x.tp > 1) {
    auto add = [&](PassProgram& pass, Collective c, double count, Overlap o) {
      if (count > 0) pass.collectives.push_back(CollectiveWork{GroupKind::Tensor, c, tp_bytes, count, o});
    };
    // Recomputed forward collectives: the whole layer's (full), or the MLP's all-gather and
    // reduce-scatter (all-reduce without SP) when the MLP is recomputed.
    const double rerun = full ? 2.0 : (selective && mods.mlp ? 1.0 : 0.0);
    if (sp && s.training.fp8()) {
      // TE gathers the FP8 norm outputs (the inputs of QKV and FC1), 1 byte per element, in the
      // forward, again for wgrad and in a recomputed forward; the output gradients stay bf16. A
      // pass's TP collectives are planned as one ring of S-byte units: an all-gather of S/2 bytes
      // is half a unit.
      const auto add_fp8 = [&](PassProgram& pass, double count, Overlap o) {
        if (count > 0)
          pass.collectives.push_back(CollectiveWork{GroupKind::Tensor, Collective::AllGather, tp_bytes, 0.5 * count, o});
      };
      add_fp8(l.forward, 2.0, tp_overlap);
      add(l.forward, Collective::ReduceScatter, 2.0, tp_overlap);
      add_fp8(l.backward, 2.0, bwd_overlap);  // the inputs of QKV and FC1 again, for their wgrad
      add_fp8(l.backward, rerun, tp_overlap);
      add(l.backward, Collective::AllGather, 2.0, tp_overlap);  // the output gradients of proj and FC2
      add(l.backward, Collective::ReduceScatter, 2.0, bwd_overlap);
      add(l.backward, Collective::ReduceScatter, rerun, tp_overlap);
    } else if (sp) {
      add(l.forward, Collective::AllGather, 2.0, tp_overlap);
      add(l.forward, Collective::ReduceScatter, 2.0, tp_overlap);
      // Backward: the output gradients of proj and FC2 gathered in line, the saved inputs of QKV
      // and FC1 gathered again for their wgrad and the dgrads of QKV and FC1 reduce-scattered.
      add(l.backward, Collective::AllGather, 2.0 + rerun, tp_overlap);
      add(l.backward, Collective::AllGather, 2.0, bwd_overlap);
      add(l.backward, Collective::ReduceScatter, 2.0, bwd_overlap);
      add(l.backward, Collective::ReduceScatter, rerun, tp_overlap);
    } else {
      add(l.forward, Collective::AllReduce, 2.0, tp_overlap);
      add(l.backward, Collective::AllReduce, 2.0, bwd_overlap);  // the dgrads of QKV and FC1
      add(l.backward, Collective::AllReduce, rerun, tp_overlap);
    }
  }
  double cp_backward_transient = 0;  // beyond the stored activations, during the backward's attention
  if (x.cp > 1) {
    const double dh = h / d(s.model.heads);
    // K and V of the rank's tokens (bf16): 2 x 2 n k d_h / t.
    const double kv_bytes = 4.0 * x.tokens_per_rank * d(s.model.kv_heads) * dh / d(x.tp);
    const bool attention_rerun = full || (selective && mods.core_attn);
    const double reruns = attention_rerun ? 1.0 : 0.0;
    const auto add = [&](PassProgram& pass, GroupKind g, Collective c, double bytes, double count) {
      pass.collectives.push_back(CollectiveWork{g, c, bytes, count, Overlap::AfterCompute});
    };
    // The p2p ring (c - 1 steps; across the all-to-all groups with a2a+p2p): K and V of one rank per
    // step beside the attention, dK and dV too in the backward (twice the forward's traffic).
    const auto ring = [&](double ranks) {
      if (ranks <= 1.0) return;
      l.forward.collectives.push_back(
          CollectiveWork{GroupKind::ContextRing, Collective::SendRecv, kv_bytes, ranks - 1.0, Overlap::WithCompute});
      l.backward.collectives.push_back(
          CollectiveWork{GroupKind::ContextRing, Collective::SendRecv, kv_bytes, (2.0 + reruns) * (ranks - 1.0), Overlap::WithCompute});
    };
    // Ulysses (TransformerEngine's AttnFuncWithCPAndQKVOA2A; the first step of a2a+p2p): the
    // forward's all-to-alls turn the sequence-split Q, K and V into head-split ones before the
    // attention and its output back after it; the backward's turn dO before and dQ, dK, dV after.
    // Each all-to-all's S is the rank's tensor: 2 n a d_h / t for Q, O and their gradients,
    // 2 n k d_h / t for K and V.
    const auto all_to_all = [&](GroupKind g) {
      const double q_bytes = 2.0 * x.tokens_per_rank * d(s.model.heads) * dh / d(x.tp);
      const double k_bytes = 0.5 * kv_bytes;
      add(l.forward, g, Collective::AllToAll, q_bytes, 2.0);
      add(l.forward, g, Collective::AllToAll, k_bytes, 2.0);
      add(l.backward, g, Collective::AllToAll, q_bytes, 2.0 * (1.0 + reruns));
      add(l.backward, g, Collective::AllToAll, k_bytes, 2.0 * (1.0 + reruns));
    };
    switch (s.parallel.cp_comm_type) {
      case scenarios::CpCommType::P2P:
        ring(d(x.cp));
        break;
      case scenarios::CpCommType::AllGather: {
        // TransformerEngine's AttnFuncWithCPAndKVAllGather: the forward gathers every rank's K and,
        // separately, V (S = c x the local bytes of one) before its attention; the backward, which
        // keeps only the local K and V, gathers them again and reduce-scatters dK and dV after its
        // attention, one collective each.
        const double gathered = d(x.cp) * 0.5 * kv_bytes;
        add(l.forward, GroupKind::Context, Collective::AllGather, gathered, 2.0);
        add(l.backward, GroupKind::Context, Collective::AllGather, gathered, 2.0 * (1.0 + reruns));
        add(l.backward, GroupKind::Context, Collective::ReduceScatter, gathered, 2.0);
        // The backward's buffers (TransformerEngine allocates them at the gathered size and frees
        // them when the attention's backward returns): the gathered K and V and the zeroed dK and
        // dV (4 S); the two query chunks' dK and dV, kept to the end, over the keys each chunk
        // sees, (r + 1) and (2c - r) of the 2c sequence chunks, together (2c + 1) / (2c) S each;
        // and the reordered copy of dK made before the reduce-scatter while the rest lives (S).
        cp_backward_transient = (5.0 + 2.0 * (2.0 * d(x.cp) + 1.0) / (2.0 * d(x.cp))) * gathered;
        break;
      }
      case scenarios::CpCommType::A2A:
        all_to_all(GroupKind::Context);
        break;
      case scenarios::CpCommType::A2AP2P:
        // After the all-to-all a rank holds a2a times its tokens with 1/a2a of its heads: its K
        // and V take the bytes they had, and the ring passes them as in p2p.
        if (s.parallel.cp_a2a_size() > 1) all_to_all(GroupKind::ContextA2A);
        ring(d(s.parallel.cp_ring_size()));
        break;
    }
  }
  const LayerActivations acts = layer_activations(s, x);
  l.working_set_bytes = acts.total();
  if (full) {
    // Full recomputation keeps each checkpoint group's input, 2sbh / (c (SP ? t : 1)), on its first
    // layer, and rebuilds the whole group's activations during the group's backward.
    l.stored_activation_bytes = checkpoint.keeps_input ? 2.0 * (x.tokens_per_rank * h) / (sp ? d(x.tp) : 1.0) : 0.0;
    l.backward_transient_bytes = d(checkpoint.group_layers) * l.working_set_bytes;
  } else {
    l.stored_activation_bytes = selective ? stored_bytes_selective(mods, acts) : l.working_set_bytes;
  }
  // The MLP's backward: its gradient buffers, beside the tensors a selective recomputation rebuilt
  // for it (the MLP's own, and the second norm's output, FC1's input, when the norms are recomputed).
  double mlp_backward = acts.mlp_backward;
  if (selective && mods.mlp) mlp_backward += acts.mlp;
  if (selective && mods.layernorm) mlp_backward += acts.norm_outputs / 2.0;
  // The attention's backward: CP's buffers, beside what a selective recomputation of the attention
  // core rebuilt (the unfused s x s tensors, FlashAttention-2's second copy of its output).
  double attention_backward = cp_backward_transient;
  if (selective && mods.core_attn) attention_backward += acts.scores + acts.attention_copy;
  // The attention's and the MLP's backward buffers are not held at the same time.
  l.backward_transient_bytes += std::max(attention_backward, mlp_backward);
  return l;
}

LayerProgram layer_program(const Scenario& s) { return layer_program(s, layer_checkpoint(s, 0, scenarios::pipeline_layout(s).max_chunk_layers())); }

StepProgram step_program(const Scenario& s) {
  StepProgram p;
  p.shape = shape_of(s);
  const Shape& x = p.shape;
  const double h = d(s.model.hidden);
  const bool sp = x.sequence_parallel;
  p.layout = scenarios::pipeline_layout(s);
  // Layers differ only by where full recomputation checkpoints them in their model chunk: each
  // distinct checkpoint's program is made once and shared by the layers that have it.
  p.layers.reserve(static_cast<std::size_t>(s.model.layers));
  p.layer_copied_from.reserve(static_cast<std::size_t>(s.model.layers));
  std::vector<std::pair<LayerCheckpoint, std::size_t>> made;  // checkpoint, index of its first layer
  for (std::int64_t k = 0; k < p.layout.virtual_stages(); ++k) {
    const auto [stage, chunk] = p.layout.at(k);
    const std::int64_t n = p.layout.layers(stage, chunk);
    for (std::int64_t i = 0; i < n; ++i) {
      const LayerCheckpoint c = layer_checkpoint(s, i, n);
      const auto same = std::find_if(made.begin(), made.end(), [&c](const auto& m) { return m.first == c; });
      if (same != made.end()) {
        p.layer_copied_from.push_back(same->second);
        p.layers.push_back(p.layers[same->second]);
      } else {
        made.emplace_back(c, p.layers.size());
        p.layer_copied_from.push_back(p.layers.size());
        p.layers.push_back(std::make_shared<const LayerProgram>(layer_program(s, c)));
      }
    }
  }
  p.embedding_forward.kernels = embedding_forward(s);
  p.embedding_backward.kernels = embedding_backward(s);
  p.output_forward.kernels = output_forward(s);
  p.output_backward.kernels = output_backward(s);
  if (x.tp > 1) {
    const double tp_bytes = 2.0 * x.tokens_per_rank * h;
    const Overlap overlap = s.parallel.tp_comm_overlap ? Overlap::WithCompute : Overlap::AfterCompute;
    auto add = [&](PassProgram& pass, Collective c, double bytes, double count, Overlap o) {
      pass.collectives.push_back(CollectiveWork{GroupKind::Tensor, c, bytes, count, o});
    };
    if (sp) {
      add(p.embedding_forward, gpt_family(s.model) ? Collective::AllReduce : Collective::ReduceScatter, tp_bytes, 1.0, overlap);
      add(p.embedding_backward, Collective::AllGather, tp_bytes, 1.0, overlap);
      add(p.output_forward, Collective::AllGather, tp_bytes, 1.0, overlap);
      add(p.output_backward, Collective::ReduceScatter, tp_bytes, 1.0, overlap);
    } else {
      add(p.embedding_forward, Collective::AllReduce, tp_bytes, 1.0, overlap);
      add(p.output_backward, Collective::AllReduce, tp_bytes, 1.0, overlap);
    }
    // Cross-entropy: max, target logit and sum of exponentials, n fp32 values each.
    add(p.output_forward, Collective::AllReduce, 4.0 * x.tokens_per_rank, 3.0, Overlap::AfterCompute);
  }
  p.token_ids_bytes = 8.0 * x.tokens_per_rank;
  // fp32 logits and the fp32 final-norm output: 4sbh(1 + v/h)/(tc), the paper's output term, with
  // the padded vocabulary.
  p.output_transient_bytes = 4.0 * (x.tokens_per_rank * h / d(x.tp)) * (1.0 + d(x.padded_vocab) / h);
  // Megatron's vocab-parallel cross-entropy casts the bf16 logits to fp32 (the copy it keeps as the
  // softmax for the backward); the bf16 logits live beside it until the loss returns, and in the
  // backward the bf16 gradient of the logits is cast from the fp32 one the same way: 2sbv/(tc) on
  // top of the stored bytes, during the last chunk's forward and the start of its backward.
  // The fused cross-entropy (megatron/core/fusions/fused_cross_entropy.py) runs the same in-place
  // steps inside compiled functions, which write their result to a new fp32 tensor and copy it back
  // into their input: one more fp32 sbv/(tc) beside the stored one in either pass, 6sbv/(tc) in all.
  const double copy_bytes_per_logit = s.software.fused_cross_entropy ? 6.0 : 2.0;
  p.logits_copy_bytes = copy_bytes_per_logit * x.tokens_per_rank * d(x.padded_vocab) / d(x.tp);
  p.pipeline_send = CollectiveWork{GroupKind::Pipeline, Collective::SendRecv, 2.0 * x.tokens_per_rank * h / d(x.tp), 1.0,
                                   Overlap::AfterCompute};
  return p;
}

double chunk_activation_bytes(const StepProgram& p, std::int64_t stage, std::int64_t chunk) {
  const std::int64_t first = p.layout.first_layer(stage, chunk);
  const std::int64_t n = p.layout.layers(stage, chunk);
  double bytes = 0;
  for (std::int64_t l = first; l < first + n; ++l) bytes += p.layers[static_cast<std::size_t>(l)]->stored_activation_bytes;
  if (p.layout.is_first(stage, chunk)) bytes += p.token_ids_bytes;
  return bytes;
}

double chunk_backward_transient_bytes(const StepProgram& p, std::int64_t stage, std::int64_t chunk) {
  const std::int64_t first = p.layout.first_layer(stage, chunk);
  const std::int64_t n = p.layout.layers(stage, chunk);
  double bytes = 0;
  for (std::int64_t l = first; l < first + n; ++l) bytes = std::max(bytes, p.layers[static_cast<std::size_t>(l)]->backward_transient_bytes);
  return bytes;
}

double collective_units(const std::vector<CollectiveWork>& cs, GroupKind group, double bytes, Collective unit,
                        std::optional<Overlap> overlap) {
  double units = 0;
  for (const auto& c : cs)
    if (c.group == group && c.bytes == bytes && (!overlap || c.overlap == *overlap))
      units += c.count * (c.collective == Collective::AllReduce && unit != Collective::AllReduce ? 2.0 : 1.0);
  return units;
}

}  // namespace stepsim::workload
