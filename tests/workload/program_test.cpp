// Layer programs: the collectives beside the kernels, against the counts of training-step.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "model.hpp"
#include "stepsim/workload/kernels.hpp"
#include "stepsim/workload/params.hpp"
#include "stepsim/workload/program.hpp"

using namespace stepsim;
using workload::Collective;
using workload::GroupKind;

namespace {

scenarios::Scenario base() {
  auto s = workload_test::small_model();
  s.model.kv_heads = 2;
  s.parallel.tp = 4;
  s.parallel.pp = 2;
  return s;
}

double count_of(const std::vector<workload::CollectiveWork>& cs, GroupKind g, Collective c) {
  double n = 0;
  for (const auto& w : cs)
    if (w.group == g && w.collective == c) n += w.count;
  return n;
}

}  // namespace

TEST_CASE("with SP a layer all-gathers and reduce-scatters S = 2 s b h / c bytes: 2 + 2 forward, 4 + 2 backward") {
  auto s = base();
  const auto l = workload::layer_program(s);
  const auto& f = l.forward.collectives;
  const auto& b = l.backward.collectives;
  CHECK(count_of(f, GroupKind::Tensor, Collective::AllGather) == 2);
  CHECK(count_of(f, GroupKind::Tensor, Collective::ReduceScatter) == 2);
  CHECK(count_of(f, GroupKind::Tensor, Collective::AllReduce) == 0);
  CHECK(count_of(b, GroupKind::Tensor, Collective::AllGather) == 4);
  CHECK(count_of(b, GroupKind::Tensor, Collective::ReduceScatter) == 2);
  for (const auto& c : f) CHECK(c.bytes == 2.0 * 4096 * 1024);
  // In ring units of one all-gather: 4 forward, 6 backward.
  CHECK(workload::collective_units(f, GroupKind::Tensor, 2.0 * 4096 * 1024, Collective::AllGather) == 4);
  CHECK(workload::collective_units(b, GroupKind::Tensor, 2.0 * 4096 * 1024, Collective::AllGather) == 6);
  // Full recomputation re-runs the forward's collectives in the backward.
  s.training.recompute = scenarios::Recompute::Full;
  const auto r = workload::layer_program(s);
  CHECK(workload::collective_units(r.backward.collectives, GroupKind::Tensor, 2.0 * 4096 * 1024, Collective::AllGather) == 10);
  // Beside the backward compute (software.tp_backward_overlap): the re-gathers and the dgrad
  // reduce-scatters of QKV and FC1, 4 units; in line the other 2 all-gathers and the rerun 4.
  CHECK(workload::collective_units(r.backward.collectives, GroupKind::Tensor, 2.0 * 4096 * 1024, Collective::AllGather,
                                   workload::Overlap::WithCompute) == 4);
  CHECK(workload::collective_units(r.backward.collectives, GroupKind::Tensor, 2.0 * 4096 * 1024, Collective::AllGather,
                                   workload::Overlap::AfterCompute) == 6);
  // FP8: the 1-byte all-gathers of the QKV and FC1 inputs are half units: 2 x 1/2 + 2 forward,
  // 2 x 1/2 + 2 + 2 backward.
  s.training.recompute = scenarios::Recompute::None;
  s.training.precision = scenarios::TrainingPrecision::Fp8Delayed;
  const auto q = workload::layer_program(s);
  CHECK(workload::collective_units(q.forward.collectives, GroupKind::Tensor, 2.0 * 4096 * 1024, Collective::AllGather) == 3);
  CHECK(workload::collective_units(q.backward.collectives, GroupKind::Tensor, 2.0 * 4096 * 1024, Collective::AllGather) == 5);
}

TEST_CASE("without SP a layer all-reduces twice each way, the embedding once, the logits' input gradient once") {
  auto s = base();
  s.parallel.sequence_parallel = false;
  const auto p = workload::step_program(s);
  const auto& l = *p.layers.front();
  CHECK(count_of(l.forward.collectives, GroupKind::Tensor, Collective::AllReduce) == 2);
  CHECK(count_of(l.backward.collectives, GroupKind::Tensor, Collective::AllReduce) == 2);
  CHECK(count_of(l.forward.collectives, GroupKind::Tensor, Collective::AllGather) == 0);
  CHECK(count_of(p.embedding_forward.collectives, GroupKind::Tensor, Collective::AllReduce) == 1);
  CHECK(p.embedding_backward.collectives.empty());
  CHECK(count_of(p.output_backward.collectives, GroupKind::Tensor, Collective::AllReduce) == 1);
  // The cross-entropy's three all-reduces of n fp32 values.
  bool ce = false;
  for (const auto& c : p.output_forward.collectives)
    if (c.bytes == 4.0 * 4096) ce = c.count == 3 && c.collective == Collective::AllReduce;
  CHECK(ce);
  CHECK(p.layers.size() == 8);
}

TEST_CASE("CP: c - 1 ring steps of K and V per forward, twice that backward (once more when recomputing)") {
  auto s = base();
  s.parallel.cp = 4;
  s.parallel.tp = 2;
  auto l = workload::layer_program(s);
  // 4 n k d_h / t with n = s b / c = 1024, k = 2, d_h = 128, t = 2.
  const double kv = 4.0 * 1024 * 2 * 128 / 2;
  REQUIRE(count_of(l.forward.collectives, GroupKind::ContextRing, Collective::SendRecv) == 3);
  CHECK(count_of(l.backward.collectives, GroupKind::ContextRing, Collective::SendRecv) == 6);
  for (const auto& c : l.forward.collectives)
    if (c.group == GroupKind::ContextRing) {
      CHECK(c.bytes == kv);
      CHECK(c.overlap == workload::Overlap::WithCompute);
    }
  s.training.recompute = scenarios::Recompute::Selective;
  l = workload::layer_program(s);
  CHECK(count_of(l.backward.collectives, GroupKind::ContextRing, Collective::SendRecv) == 9);
}

TEST_CASE("CP all_gather: K and V gathered before the attention each way, dK and dV reduce-scattered after it, one collective each, in line") {
  auto s = base();
  s.parallel.cp = 4;
  s.parallel.tp = 2;
  s.parallel.cp_comm_type = scenarios::CpCommType::AllGather;
  auto l = workload::layer_program(s);
  // K and V each: S = c x 2 n k d_h / t = 4 * 2 * 1024 * 2 * 128 / 2.
  const double gathered = 4.0 * 2.0 * 1024 * 2 * 128 / 2;
  CHECK(count_of(l.forward.collectives, GroupKind::ContextRing, Collective::SendRecv) == 0);
  CHECK(count_of(l.forward.collectives, GroupKind::Context, Collective::AllGather) == 2);
  CHECK(count_of(l.backward.collectives, GroupKind::Context, Collective::AllGather) == 2);
  CHECK(count_of(l.backward.collectives, GroupKind::Context, Collective::ReduceScatter) == 2);
  for (const auto* pass : {&l.forward, &l.backward})
    for (const auto& c : pass->collectives)
      if (c.group == GroupKind::Context) {
        CHECK(c.bytes == gathered);
        CHECK(c.overlap == workload::Overlap::AfterCompute);
      }
  // The backward holds the gathered K and V and dK, dV at the gathered size (4 S), the two query
  // chunks' dK and dV over (r + 1) + (2c - r) = 9 of the 8 sequence chunks (2 x 9/8 S) and the
  // reordered dK (S): 7.25 S beyond the stored activations (p2p: nothing). The MLP's backward holds
  // the gradients of FC2's input and FC1's output less FC2's released input: 4 n f / t, n = 1024
  // tokens per rank, f = 4096. Not at the same time: the larger counts.
  const double mlp_backward = 4.0 * 1024 * 4096 / 2;
  REQUIRE(mlp_backward > 7.25 * gathered);
  CHECK(l.backward_transient_bytes == doctest::Approx(mlp_backward));
  s.model.ffn_hidden = 1024;  // a narrower MLP: the CP buffers are the larger
  CHECK(workload::layer_program(s).backward_transient_bytes == doctest::Approx(7.25 * gathered));
  s.model.ffn_hidden = 4096;
  // A recomputed attention gathers once more.
  s.training.recompute = scenarios::Recompute::Selective;
  l = workload::layer_program(s);
  CHECK(count_of(l.backward.collectives, GroupKind::Context, Collective::AllGather) == 4);
  CHECK(count_of(l.backward.collectives, GroupKind::Context, Collective::ReduceScatter) == 2);
  CHECK(l.backward_transient_bytes == doctest::Approx(mlp_backward));
  // Full recomputation rebuilds the layer's activations beside them.
  s.training.recompute = scenarios::Recompute::Full;
  l = workload::layer_program(s);
  CHECK(l.backward_transient_bytes == doctest::Approx(l.working_set_bytes + mlp_backward));
  s.parallel.cp_comm_type = scenarios::CpCommType::P2P;
  CHECK(workload::layer_program(s).backward_transient_bytes ==
        doctest::Approx(workload::layer_program(s).working_set_bytes + mlp_backward));
  s.training.recompute = scenarios::Recompute::None;
  CHECK(workload::layer_program(s).backward_transient_bytes == doctest::Approx(mlp_backward));
}

TEST_CASE("CP a2a (Ulysses): all-to-alls of Q, K, V and O forward, of dO, dQ, dK, dV backward, in line") {
  auto s = base();
  s.parallel.tp = 1;
  s.parallel.cp = 2;
  s.parallel.cp_comm_type = scenarios::CpCommType::A2A;
  auto l = workload::layer_program(s);
  // n = s b / c = 2048, d_h = 128: Q and O 2 n a d_h / t with a = 8, K and V 2 n k d_h / t with k = 2.
  const double q = 2.0 * 2048 * 8 * 128, k = 2.0 * 2048 * 2 * 128;
  const auto count_bytes = [](const std::vector<workload::CollectiveWork>& cs, double bytes) {
    double n = 0;
    for (const auto& c : cs)
      if (c.group == GroupKind::Context && c.collective == Collective::AllToAll && c.bytes == bytes) n += c.count;
    return n;
  };
  CHECK(count_of(l.forward.collectives, GroupKind::ContextRing, Collective::SendRecv) == 0);
  CHECK(count_bytes(l.forward.collectives, q) == 2);
  CHECK(count_bytes(l.forward.collectives, k) == 2);
  CHECK(count_bytes(l.backward.collectives, q) == 2);
  CHECK(count_bytes(l.backward.collectives, k) == 2);
  CHECK(count_of(l.backward.collectives, GroupKind::Context, Collective::AllToAll) == 4);
  // A recomputed attention runs the forward's four again.
  s.training.recompute = scenarios::Recompute::Full;
  l = workload::layer_program(s);
  CHECK(count_bytes(l.backward.collectives, q) == 4);
  CHECK(count_bytes(l.backward.collectives, k) == 4);
}

TEST_CASE("CP a2a+p2p: all-to-alls within groups of u ranks, then a ring of r steps across them (u r = c)") {
  auto s = base();
  s.parallel.tp = 1;
  s.parallel.cp = 4;
  s.parallel.cp_comm_type = scenarios::CpCommType::A2AP2P;
  s.parallel.hierarchical_cp_sizes = {2, 2};
  const auto l = workload::layer_program(s);
  // n = s b / c = 1024, d_h = 128: Q and O 2 n a d_h with a = 8; K and V 2 n k d_h with k = 2; the
  // ring passes a rank's K and V, 4 n k d_h, in r - 1 = 1 step forward and twice that backward.
  const double q = 2.0 * 1024 * 8 * 128, k = 2.0 * 1024 * 2 * 128;
  CHECK(count_of(l.forward.collectives, GroupKind::ContextA2A, Collective::AllToAll) == 4);
  CHECK(count_of(l.backward.collectives, GroupKind::ContextA2A, Collective::AllToAll) == 4);
  CHECK(count_of(l.forward.collectives, GroupKind::Context, Collective::AllToAll) == 0);
  CHECK(count_of(l.forward.collectives, GroupKind::ContextRing, Collective::SendRecv) == 1);
  CHECK(count_of(l.backward.collectives, GroupKind::ContextRing, Collective::SendRecv) == 2);
  for (const auto& c : l.forward.collectives) {
    if (c.group == GroupKind::ContextA2A) CHECK((c.bytes == q || c.bytes == k));
    if (c.group == GroupKind::ContextRing) CHECK(c.bytes == 2.0 * k);
  }
}

TEST_CASE("activations: stored per layer, and the chunk of the first virtual stage keeps the token ids") {
  auto s = base();
  const auto p = workload::step_program(s);
  // SP, t = 4, n = 4096: sbh (8/t + (4 + 4 k/a + 6 f/h)/t) = 4096 * 1024 * (2 + (4 + 1 + 24)/4): the
  // fused SwiGLU keeps its input (FC1's output, 4 f/h) and FC2 keeps its input (2 f/h).
  const double layer = 4096.0 * 1024 * (2.0 + 29.0 / 4.0);
  CHECK(p.layers.front()->stored_activation_bytes == layer);
  CHECK(workload::chunk_activation_bytes(p, 0, 0) == 4 * layer + 8.0 * 4096);
  CHECK(workload::chunk_activation_bytes(p, 1, 0) == 4 * layer);
  CHECK(p.layout.first_layer(1, 0) == 4);
}

TEST_CASE("activations follow the layout: a chunk holding only the embedding keeps the token ids, one holding only the loss nothing") {
  auto s = base();
  s.parallel.pp = 3;
  s.parallel.pipeline_layout = "E|t*" + std::to_string(s.model.layers) + "|L";
  const auto p = workload::step_program(s);
  const double layer = p.layers.front()->stored_activation_bytes;
  CHECK(workload::chunk_activation_bytes(p, 0, 0) == 8.0 * 4096);
  CHECK(workload::chunk_activation_bytes(p, 1, 0) == static_cast<double>(s.model.layers) * layer);
  CHECK(workload::chunk_activation_bytes(p, 2, 0) == 0.0);
  CHECK(p.layout.first_layer(2, 0) == s.model.layers);
}

TEST_CASE("activations of a GPT layer keep the two 1-byte hidden-dropout masks, split by t only under SP") {
  auto s = base();
  s.model.mlp = scenarios::MlpKind::Gelu;
  s.model.norm = scenarios::NormKind::LayerNorm;
  s.parallel.sequence_parallel = false;
  // No SP, t = 4, n = 4096, k/a = 1/4, f/h = 4: sbh (8 + (4 + 1 + 16)/4) and the masks 2 sbh.
  const double sbh = 4096.0 * 1024;
  CHECK(workload::step_program(s).layers.front()->stored_activation_bytes == sbh * (8.0 + 21.0 / 4.0 + 2.0));
  // SP: every replicated part, the masks too, split by t: sbh (8 + 21 + 2) / 4.
  s.parallel.sequence_parallel = true;
  CHECK(workload::step_program(s).layers.front()->stored_activation_bytes == sbh * 31.0 / 4.0);
  // A Llama-like layer (SwiGLU, RMSNorm) has no dropout.
  s.model.mlp = scenarios::MlpKind::SwiGlu;
  s.model.norm = scenarios::NormKind::RmsNorm;
  // FC1's output 4 f/h and FC2's input 2 f/h: sbh (8 + 4 + 1 + 24) / 4.
  CHECK(workload::step_program(s).layers.front()->stored_activation_bytes == sbh * (8.0 + 29.0) / 4.0);
}

namespace {

double bytes_of(const std::vector<workload::Kernel>& ks, const std::string& name) {
  const auto it = std::find_if(ks.begin(), ks.end(), [&](const workload::Kernel& k) { return k.name == name; });
  REQUIRE(it != ks.end());
  return it->bytes;
}

}  // namespace

TEST_CASE("qk_norm: per-head query and key norms add their weights, saved inputs and statistics, and four memory kernels") {
  auto s = base();  // h = 1024, a = 8, k = 2, d_h = 128, t = 4, n = 4096 tokens per rank
  const double params = workload::layer_params(s);
  const double stored = workload::step_program(s).layers.front()->stored_activation_bytes;
  const auto fwd = workload::layer_forward(s), bwd = workload::layer_backward(s);
  s.model.qk_norm = true;
  // Weights: one RMSNorm over d_h for the queries, one for the keys, replicated over TP.
  CHECK(workload::layer_params(s) - params == 256.0);
  CHECK(workload::layer_norm_params(s) == 2.0 * 1024 + 2.0 * 128);
  // Saved: the bf16 inputs, n (a + k) / t rows of d_h = 10,240 rows of 256 bytes, and an fp32 rstd
  // per row: 10,240 x 260.
  CHECK(workload::step_program(s).layers.front()->stored_activation_bytes - stored == 10240.0 * 260.0);
  // Forward: read and write the rows, write rstd, read the weights; q: 8,192 rows, k: 2,048.
  const auto qk_fwd = workload::layer_forward(s), qk_bwd = workload::layer_backward(s);
  CHECK(bytes_of(qk_fwd, "q_norm.fwd") == 4.0 * 8192 * 128 + 4.0 * 8192 + 2.0 * 128);
  CHECK(bytes_of(qk_fwd, "k_norm.fwd") == 4.0 * 2048 * 128 + 4.0 * 2048 + 2.0 * 128);
  // Backward: read dy and x, write dx (6 bytes per element; no residual gradient), read rstd.
  CHECK(bytes_of(qk_bwd, "q_norm.bwd") == (6.0 * 128 + 4.0) * 8192);
  CHECK(bytes_of(qk_bwd, "k_norm.bwd") == (6.0 * 128 + 4.0) * 2048);
  CHECK(qk_fwd.size() == fwd.size() + 2);
  CHECK(qk_bwd.size() == bwd.size() + 2);
  // In order: after the QKV projection, before RoPE; backward after RoPE's, before QKV's dgrad.
  const auto at = [](const std::vector<workload::Kernel>& ks, const std::string& name) {
    return std::find_if(ks.begin(), ks.end(), [&](const workload::Kernel& k) { return k.name == name; }) - ks.begin();
  };
  CHECK(at(qk_fwd, "q_norm.fwd") == at(qk_fwd, "qkv.fprop") + 1);
  CHECK(at(qk_fwd, "rope.fwd") == at(qk_fwd, "k_norm.fwd") + 1);
  CHECK(at(qk_bwd, "k_norm.bwd") == at(qk_bwd, "rope.bwd") + 1);
  CHECK(at(qk_bwd, "qkv.dgrad") == at(qk_bwd, "q_norm.bwd") + 1);
  // LayerNorm: weight and bias (2 d_h each), rstd and mean (8 bytes per row). CP 2 halves the rows;
  // SP does not change them (the heads are split by t either way).
  s.model.norm = scenarios::NormKind::LayerNorm;
  s.parallel.cp = 2;
  const double ln_stored = workload::step_program(s).layers.front()->stored_activation_bytes;
  CHECK(workload::layer_norm_params(s) == 2.0 * 2048 + 2.0 * 256);
  s.model.qk_norm = false;
  CHECK(ln_stored - workload::step_program(s).layers.front()->stored_activation_bytes == 5120.0 * 264.0);
  s.model.qk_norm = true;
  s.parallel.sequence_parallel = !s.parallel.sequence_parallel;
  const double flipped = workload::step_program(s).layers.front()->stored_activation_bytes;
  s.model.qk_norm = false;
  CHECK(flipped - workload::step_program(s).layers.front()->stored_activation_bytes == 5120.0 * 264.0);
}

TEST_CASE("step_program: each layer's program is the one layer_program makes for its checkpoint, made once per checkpoint") {
  const auto same_collectives = [](const std::vector<workload::CollectiveWork>& a, const std::vector<workload::CollectiveWork>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i].group != b[i].group || a[i].collective != b[i].collective || a[i].bytes != b[i].bytes || a[i].count != b[i].count ||
          a[i].overlap != b[i].overlap)
        return false;
    return true;
  };
  for (const auto recompute : {scenarios::Recompute::None, scenarios::Recompute::Selective, scenarios::Recompute::Full})
    for (const auto method : {scenarios::RecomputeMethod::Uniform, scenarios::RecomputeMethod::Block})
      for (const std::int64_t num_layers : {1, 3}) {
        auto s = base();
        s.parallel.cp = 2;
        s.parallel.vpp = 2;
        s.training.global_batch = 32;
        s.training.recompute = recompute;
        s.training.recompute_method = method;
        s.training.recompute_num_layers = num_layers;
        const auto p = workload::step_program(s);
        REQUIRE(p.layers.size() == 8);
        REQUIRE(p.layer_copied_from.size() == 8);
        std::size_t l = 0;
        std::vector<workload::LayerCheckpoint> checkpoints;
        for (std::int64_t k = 0; k < p.layout.virtual_stages(); ++k) {
          const auto [stage, chunk] = p.layout.at(k);
          const std::int64_t n = p.layout.layers(stage, chunk);
          for (std::int64_t i = 0; i < n; ++i, ++l) {
            CAPTURE(l);
            const auto c = workload::layer_checkpoint(s, i, n);
            checkpoints.push_back(c);
            const auto fresh = workload::layer_program(s, c);
            const auto& got = *p.layers[l];
            CHECK(got.forward.kernels == fresh.forward.kernels);
            CHECK(got.backward.kernels == fresh.backward.kernels);
            CHECK(got.recompute == fresh.recompute);
            CHECK(same_collectives(got.forward.collectives, fresh.forward.collectives));
            CHECK(same_collectives(got.backward.collectives, fresh.backward.collectives));
            CHECK(got.stored_activation_bytes == fresh.stored_activation_bytes);
            CHECK(got.working_set_bytes == fresh.working_set_bytes);
            CHECK(got.backward_transient_bytes == fresh.backward_transient_bytes);
            // A copy names the first layer of its checkpoint, which names itself.
            const std::size_t from = p.layer_copied_from[l];
            CHECK(from <= l);
            CHECK(p.layer_copied_from[from] == from);
            CHECK(checkpoints[from] == c);
          }
        }
      }
}
