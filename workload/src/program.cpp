#include "stepsim/workload/program.hpp"

#include "stepsim/scenarios/names.hpp"

namespace stepsim::workload {

using scenarios::Recompute;
using scenarios::Scenario;

namespace {

double d(std::int64_t x) { return static_cast<double>(x); }

// FP8 (TransformerEngine's Linear and LayerNormLinear save the input of an FP8 GEMM for wgrad as
// FP8): the inputs of QKV and FC1 (the norm outputs, 2sbh / (SP ? t : 1) each in bf16), of proj
// (the attention output, 2sbh/t) and of FC2 (the activation output, 2sbf/t) take 1 byte per
// element instead of 2 (MXFP8: plus one scale byte per 32 elements). The bytes this saves.
double fp8_saved_input_savings_bytes(const Scenario& s, const Shape& x) {
  if (!s.training.fp8()) return 0.0;
  const double h = d(s.model.hidden), f = d(s.model.ffn_hidden), t = d(s.parallel.tp);
  const double elems = x.tokens_per_rank * (2.0 * h / (s.parallel.sequence_parallel ? t : 1.0) + h / t + f / t);
  const double stored = s.training.precision == scenarios::TrainingPrecision::Mxfp8 ? 1.0 + 1.0 / 32.0 : 1.0;
  return (2.0 - stored) * elems;
}

// Stored activations per layer per micro-batch without recomputation (docs/memory-model.md
// sections 4.1, 4.2): parts replicated across TP unless SP: norm inputs and the inputs of QKV and
// FC1 (4 x 2sbh); parts split by t: Q, attention output (2 x 2sbh), K and V (4sbh k/a), MLP (8sbf
// SwiGLU, 4sbf GeLU). Sequence split by c. With FlashAttention there are no s^2 tensors, so
// selective recomputation of the attention core stores the same tensors.
double layer_working_set_bytes(const Scenario& s, const Shape& x) {
  const auto& m = s.model;
  const double h = d(m.hidden), f = d(m.ffn_hidden), a = d(m.heads), k = d(m.kv_heads), t = d(s.parallel.tp);
  const double sbh = x.tokens_per_rank * h;
  const double replicated = 8.0 / (s.parallel.sequence_parallel ? t : 1.0);
  const double mlp = m.mlp == scenarios::MlpKind::SwiGlu ? 8.0 * f / h : 4.0 * f / h;
  const double split = (4.0 + 4.0 * k / a + mlp) / t;
  double bytes = sbh * (replicated + split);
  // Unfused attention keeps the s x s scores and softmax output in bf16 (2 + 2 bytes per score)
  // and, for GPT models with attention dropout, a 1-byte mask: 5 a s^2 b / t (Korthikanti et al.
  // 2022, Table 2), each CP rank holding s/c query rows. Selective recomputation drops them.
  if (s.training.attention == scenarios::Attention::Unfused && s.training.recompute != Recompute::Selective) {
    const double sq = d(s.training.seq_len);
    const double per_score = m.mlp == scenarios::MlpKind::Gelu ? 5.0 : 4.0;
    bytes += per_score * a * sq * sq / d(s.parallel.cp) * d(s.training.micro_batch) / t;
  }
  return bytes - fp8_saved_input_savings_bytes(s, x);
}

}  // namespace

std::string to_string(GroupKind g) {
  static constexpr scenarios::NameTable<GroupKind, 7> kNames{{
      {"tp", GroupKind::Tensor}, {"cp", GroupKind::Context}, {"dp", GroupKind::DataContext}, {"cp-ring", GroupKind::ContextRing},
      {"embedding", GroupKind::EmbeddingTie}, {"pp", GroupKind::Pipeline}, {"world", GroupKind::World}}};
  return scenarios::name_of(kNames, g);
}

LayerProgram layer_program(const Scenario& s) {
  const Shape x = shape_of(s);
  const double h = d(s.model.hidden);
  const bool sp = x.sequence_parallel;
  const bool full = s.training.recompute == Recompute::Full;
  const Overlap tp_overlap = s.parallel.tp_comm_overlap ? Overlap::WithCompute : Overlap::AfterCompute;
  const double tp_bytes = 2.0 * x.tokens_per_rank * h;

  LayerProgram l;
  l.forward.kernels = layer_forward(s);
  l.backward.kernels = layer_backward(s);
  l.recompute = layer_recompute(s);
  if (x.tp > 1) {
    auto add = [&](PassProgram& pass, Collective c, double count) {
      pass.collectives.push_back(CollectiveWork{GroupKind::Tensor, c, tp_bytes, count, tp_overlap});
    };
    if (sp && s.training.fp8()) {
      // TE gathers the FP8 norm outputs (the inputs of QKV and FC1), 1 byte per element, in the
      // forward and again for wgrad; the output gradients stay bf16.
      const auto add_fp8 = [&](PassProgram& pass, double count) {
        pass.collectives.push_back(CollectiveWork{GroupKind::Tensor, Collective::AllGather, tp_bytes / 2.0, count, tp_overlap});
      };
      add_fp8(l.forward, 2.0);
      add(l.forward, Collective::ReduceScatter, 2.0);
      add_fp8(l.backward, full ? 4.0 : 2.0);
      add(l.backward, Collective::AllGather, 2.0);
      add(l.backward, Collective::ReduceScatter, full ? 4.0 : 2.0);
    } else if (sp) {
      add(l.forward, Collective::AllGather, 2.0);
      add(l.forward, Collective::ReduceScatter, 2.0);
      add(l.backward, Collective::AllGather, full ? 6.0 : 4.0);
      add(l.backward, Collective::ReduceScatter, full ? 4.0 : 2.0);
    } else {
      add(l.forward, Collective::AllReduce, 2.0);
      add(l.backward, Collective::AllReduce, full ? 4.0 : 2.0);
    }
  }
  if (x.cp > 1) {
    const double kv_bytes = 4.0 * x.tokens_per_rank * d(s.model.kv_heads) * (h / d(s.model.heads)) / d(x.tp);
    const double ring = d(x.cp - 1);
    const double backward_rings = 2.0 + (s.training.recompute == Recompute::None ? 0.0 : 1.0);
    l.forward.collectives.push_back(
        CollectiveWork{GroupKind::ContextRing, Collective::SendRecv, kv_bytes, ring, Overlap::WithCompute});
    l.backward.collectives.push_back(
        CollectiveWork{GroupKind::ContextRing, Collective::SendRecv, kv_bytes, backward_rings * ring, Overlap::WithCompute});
  }
  l.working_set_bytes = layer_working_set_bytes(s, x);
  // Full recomputation keeps only each layer's input, 2sbh / (c (SP ? t : 1)), and rebuilds the
  // rest during the backward.
  l.stored_activation_bytes =
      full ? 2.0 * (x.tokens_per_rank * h) / (sp ? d(x.tp) : 1.0) : l.working_set_bytes;
  l.backward_transient_bytes = full ? l.working_set_bytes : 0.0;
  return l;
}

StepProgram step_program(const Scenario& s) {
  StepProgram p;
  p.shape = shape_of(s);
  const Shape& x = p.shape;
  const double h = d(s.model.hidden);
  const bool sp = x.sequence_parallel;
  p.layout = PipelineLayout(x.pp, x.vpp);
  p.layers.assign(static_cast<std::size_t>(s.model.layers), layer_program(s));
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
  p.pipeline_send = CollectiveWork{GroupKind::Pipeline, Collective::SendRecv, 2.0 * x.tokens_per_rank * h / d(x.tp), 1.0,
                                   Overlap::AfterCompute};
  return p;
}

std::int64_t chunk_first_layer(const Scenario& s, const PipelineLayout& layout, std::int64_t stage, std::int64_t chunk) {
  std::int64_t first = 0;
  for (std::int64_t k = 0; k < layout.virtual_stage(stage, chunk); ++k) first += chunk_layers(s, layout.at(k).stage);
  return first;
}

double chunk_activation_bytes(const StepProgram& p, const Scenario& s, std::int64_t stage, std::int64_t chunk) {
  const std::int64_t first = chunk_first_layer(s, p.layout, stage, chunk);
  const std::int64_t n = chunk_layers(s, stage);
  double bytes = 0;
  for (std::int64_t l = first; l < first + n; ++l) bytes += p.layers[static_cast<std::size_t>(l)].stored_activation_bytes;
  if (p.layout.is_first(stage, chunk)) bytes += p.token_ids_bytes;
  return bytes;
}

double collective_units(const std::vector<CollectiveWork>& cs, GroupKind group, double bytes, Collective unit) {
  double units = 0;
  for (const auto& c : cs)
    if (c.group == group && c.bytes == bytes)
      units += c.count * (c.collective == Collective::AllReduce && unit != Collective::AllReduce ? 2.0 : 1.0);
  return units;
}

}  // namespace stepsim::workload
