#include <cstdint>
#include <doctest/doctest.h>

#include <string>

#include "stepsim/memory/estimator.hpp"
#include "stepsim/workload/params.hpp"
#include "stepsim/workload/program.hpp"
#include "stepsim/scenarios/load.hpp"

using namespace stepsim;

namespace {

// Llama-3.1-8B, seq 8192, GBS 1024 on 4-GPU H100 94 GB nodes: the paper's test setups.
scenarios::Scenario llama8b(int tp, int cp, int pp, int mbs, int gpus) {
  const std::string text = R"({"model": "llama-3.1-8b",
    "cluster": {"gpu": "h100-sxm-94gb", "gpus_per_node": 4, "nodes": )" + std::to_string(gpus / 4) + R"(},
    "training": {"seq_len": 8192, "global_batch": 1024, "micro_batch": )" + std::to_string(mbs) + R"(},
    "parallel": {"tp": )" + std::to_string(tp) + ", \"cp\": " + std::to_string(cp) + ", \"pp\": " + std::to_string(pp) + "}}";
  return scenarios::load_scenario_text(text);
}

double gib(std::int64_t b) { return static_cast<double>(b) / memory::kGiB; }

// Llama-3.1-8B at TP2: parameters of one layer per rank (two replicated RMSNorms), of the
// embedding shard, and one layer's stored activations at s = 8192, b = 1 with SP (34 sbh / t: the
// paper's 41 less the SwiGLU output, 2 sbf / t, that the fused activation does not keep).
constexpr double kLayerParams = (2.0 * 4096 * 4096 * 1.25 + 3.0 * 4096 * 14336) / 2.0 + 2.0 * 4096;
constexpr double kEmbeddingParams = 128256.0 * 4096 / 2;
constexpr std::int64_t kLayerActs = 570425344;  // 34 x 8192 x 4096 / 2

// The last stage's output-layer term of a stage estimate (-1 when absent).
std::int64_t output_layer_term(const memory::StageEstimate& st) {
  for (const auto& t : st.terms)
    if (t.key == "output_layer_bytes") return t.bytes;
  return -1;
}

}  // namespace

TEST_CASE("paper mode reproduces the authors' four reference values (section 8) to 0.001 GiB") {
  struct Case { int tp, cp, pp, mbs, gpus; double states, acts, total; };
  const Case cases[] = {
      {2, 1, 1, 1, 4, 44.8726, 22.6445, 67.52},
      {1, 2, 1, 1, 4, 67.3089, 22.6445, 89.95},
      {2, 1, 2, 1, 128, 11.9193, 20.7500, 32.67},
      {2, 2, 1, 2, 128, 23.1374, 22.6445, 45.78},
  };
  for (const auto& c : cases) {
    CAPTURE(c.tp); CAPTURE(c.cp); CAPTURE(c.pp); CAPTURE(c.mbs);
    const auto e = memory::paper_estimate(llama8b(c.tp, c.cp, c.pp, c.mbs, c.gpus));
    CHECK(std::abs(gib(e.model_states_bytes) - c.states) < 0.001);
    CHECK(std::abs(gib(e.activation_bytes) - c.acts) < 0.001);
    CHECK(std::abs(gib(e.total_bytes) - c.total) < 0.01);
  }
}

TEST_CASE("paper mode: worked example term by term (TP2 CP1 PP1 MBS1 on 4 x H100 94 GB)") {
  const auto e = memory::paper_estimate(llama8b(2, 1, 1, 1, 4));
  CHECK(e.params_first_stage == 4015132672.0);
  CHECK(e.bytes_per_param == 12.0);
  CHECK(e.model_states_bytes == 48181592064);
  CHECK(e.weights_bytes == 2 * 4015132672LL);
  CHECK(e.grads_bytes == 4 * 4015132672LL);
  CHECK(e.optimizer_bytes == 6 * 4015132672LL);
  CHECK(e.transformer_activation_bytes == 22011707392);
  CHECK(e.embedding_activation_bytes == 134217728);
  CHECK(e.output_activation_bytes == 2168455168);
  CHECK(e.activation_bytes == 24314380288);
  CHECK(gib(e.activation_bytes) == 22.64453125);
  CHECK(e.under_usable_fraction);  // 67.52 GiB = 71.8 % of 94
  // MBS 2: 44.87 + 45.29 = 90.16 GiB (95.9 %) -> flagged
  const auto e2 = memory::paper_estimate(llama8b(2, 1, 1, 2, 4));
  CHECK(std::abs(gib(e2.total_bytes) - 90.16) < 0.01);
  CHECK_FALSE(e2.under_usable_fraction);
}

TEST_CASE("paper mode: 18 bytes per parameter without the distributed optimizer") {
  auto s = llama8b(2, 1, 1, 1, 4);
  s.parallel.sharding = scenarios::Sharding::None;
  const auto e = memory::paper_estimate(s);
  CHECK(e.bytes_per_param == 18.0);
  CHECK(e.model_states_bytes == 18 * 4015132672LL);
}

TEST_CASE("paper mode: interleaving multiplies layer activations by 1 + (p-1)/(p v)") {
  auto s = llama8b(2, 1, 4, 1, 128);
  const auto base = memory::paper_estimate(s);
  s.parallel.schedule = scenarios::Schedule::Interleaved;
  s.parallel.vpp = 2;
  const auto inter = memory::paper_estimate(s);
  CHECK(static_cast<double>(inter.transformer_activation_bytes) ==
        doctest::Approx(static_cast<double>(base.transformer_activation_bytes) * (1.0 + 3.0 / 8.0)).epsilon(1e-12));
}

TEST_CASE("stepsim mode: parameters per stage, hand-computed for Llama-3.1-8B TP2 PP2") {
  const auto s = llama8b(2, 1, 2, 1, 128);
  // per layer: (2*4096^2*1.25 + 3*4096*14336)/2 + 2*4096 (replicated norms) = 109,051,904 + 8,192
  const double layer = (2.0 * 4096 * 4096 * 1.25 + 3.0 * 4096 * 14336) / 2.0 + 2.0 * 4096;
  CHECK(workload::shape_of(s).padded_vocab == 128256);  // already a multiple of 256
  const double vocab_shard = 128256.0 * 4096 / 2;
  CHECK(workload::stage_params(s, 0) == 16 * layer + vocab_shard);
  CHECK(workload::stage_params(s, 1) == 16 * layer + vocab_shard + 4096);
  auto s8 = llama8b(8, 1, 1, 1, 128);
  CHECK(workload::shape_of(s8).padded_vocab == 129024);  // multiple of 1024
}

TEST_CASE("stepsim mode: activation per layer, the MLP's backward buffers, and full recomputation keeping 2sbh/t") {
  auto s = llama8b(2, 1, 1, 1, 4);
  // The paper's 41 sbh / t less the SwiGLU output the fused activation does not keep (2 sbf / t, f/h
  // = 3.5): 34 sbh / t, sbh = 8192 x 4096.
  CHECK(workload::layer_program(s).working_set_bytes == 34.0 * 8192 * 4096 / 2);
  CHECK(workload::layer_program(s).working_set_bytes == static_cast<double>(kLayerActs));
  // SiLU and multiply unfused (--no-bias-swiglu-fusion): the SiLU's output is kept as well, the
  // paper's 41 sbh / t.
  auto unfused = s;
  unfused.software.fused_swiglu = false;
  CHECK(workload::layer_program(unfused).working_set_bytes == 41.0 * 8192 * 4096 / 2);
  // In the MLP's backward: the gradient of FC2's input (2 sbf / t) and of FC1's output (4 sbf / t),
  // FC2's input (2 sbf / t) released: 4 sbf / t.
  const double mlp_backward = 4.0 * 8192 * 14336 / 2;
  CHECK(memory::chunk_backward_transient_bytes(workload::step_program(s), 0, 0) == static_cast<std::int64_t>(mlp_backward));
  s.training.recompute = scenarios::Recompute::Full;
  CHECK(workload::layer_program(s).stored_activation_bytes == 2.0 * 8192 * 4096 / 2);
  CHECK(memory::chunk_backward_transient_bytes(workload::step_program(s), 0, 0) ==
        static_cast<std::int64_t>(34.0 * 8192 * 4096 / 2 + mlp_backward));
}

TEST_CASE("stepsim mode: in-flight counts per schedule") {
  auto s = llama8b(2, 1, 4, 1, 128);  // dp 16 -> m = 64
  REQUIRE(s.micro_batches() == 64);
  for (int st = 0; st < 4; ++st) CHECK(memory::in_flight(s, st) == 4 - st);
  s.parallel.schedule = scenarios::Schedule::GPipe;
  CHECK(memory::in_flight(s, 0) == 64);
  s.parallel.schedule = scenarios::Schedule::Interleaved;
  s.parallel.vpp = 2;
  CHECK(memory::in_flight(s, 0) == 2 * 4 + 4 - 1);  // v p + p - 1
  CHECK(memory::in_flight(s, 3) == 4 + 1);           // (v-1) p + 1
}

TEST_CASE("stepsim mode: totals are the sum of the terms, the peak stage is named") {
  const auto s = llama8b(2, 1, 4, 1, 128);
  const auto est = memory::stepsim_estimate(s);
  REQUIRE(est.stages.size() == 4);
  for (const auto& st : est.stages) {
    std::int64_t sum = 0;
    for (const auto& t : st.terms) sum += t.bytes;
    CHECK(sum == st.total_bytes);
    CHECK(st.total_bytes <= est.peak_bytes);
  }
  CHECK(est.stages[static_cast<std::size_t>(est.peak_stage)].total_bytes == est.peak_bytes);
  // stage 0 holds 4 micro-batches of 8 layers: 4 * 8 * 34 sbh / t (+ token ids)
  const auto& acts0 = est.stages[0].terms[3];
  CHECK(acts0.key == "activations_bytes");
  CHECK(acts0.bytes == 4 * (8 * kLayerActs + 8 * 8192));
}

TEST_CASE("stepsim mode: the last stage holds fp32 logits per micro-batch in flight and the bf16 logits once beside them") {
  // s = 8192, b = 1, t = 2, h = 4096, v = 128256 (a multiple of 128 t, so not padded):
  // fp32 logits and final-norm output 4 sbh (1 + v/h) / t = 16384 * 132352 = 2168455168 bytes;
  // bf16 logits beside the fp32 copy during the loss, 2 sbv / t = 8192 * 128256 = 1050673152 bytes.
  auto s = llama8b(2, 1, 4, 1, 128);
  CHECK(memory::output_transient_bytes(s) == 2168455168LL);
  CHECK(memory::logits_copy_bytes(workload::step_program(s)) == 1050673152LL);
  auto est = memory::stepsim_estimate(s);
  CHECK(est.stages[3].in_flight == 1);
  CHECK(output_layer_term(est.stages[3]) == 2168455168LL + 1050673152LL);
  CHECK(output_layer_term(est.stages[2]) == 0);
  // GPipe holds all 64 micro-batches' fp32 logits; the bf16 copy exists for one loss at a time.
  s.parallel.schedule = scenarios::Schedule::GPipe;
  est = memory::stepsim_estimate(s);
  CHECK(est.stages[3].in_flight == 64);
  CHECK(output_layer_term(est.stages[3]) == 64 * 2168455168LL + 1050673152LL);
}

TEST_CASE("stepsim mode: the fused cross-entropy holds a second fp32 copy of the logits while the loss runs") {
  // s = 8192, b = 1, t = 2, v = 128256: the unfused loss adds the bf16 logits, 2 sbv / t =
  // 1050673152 bytes; the fused one also a new fp32 tensor, (2 + 4) sbv / t = 8192 * 128256 * 3 =
  // 3152019456 bytes. The stored fp32 logits (4 sbh (1 + v/h) / t) do not change.
  auto s = llama8b(2, 1, 4, 1, 128);
  s.software.fused_cross_entropy = true;
  CHECK(memory::output_transient_bytes(s) == 2168455168LL);
  CHECK(memory::logits_copy_bytes(workload::step_program(s)) == 3152019456LL);
  const auto est = memory::stepsim_estimate(s);
  CHECK(output_layer_term(est.stages[3]) == 2168455168LL + 3152019456LL);
  CHECK(output_layer_term(est.stages[2]) == 0);
}

TEST_CASE("stepsim mode: uneven stages hold their own layer counts, also with interleaving") {
  auto s = llama8b(2, 1, 4, 1, 128);  // p = 4, m = 64
  s.parallel.first_stage_layers = 6;
  s.parallel.last_stage_layers = 6;
  CHECK(workload::stage_params(s, 0) == 6 * kLayerParams + kEmbeddingParams);
  CHECK(workload::stage_params(s, 1) == 10 * kLayerParams);
  CHECK(memory::chunk_activation_bytes(s, 1, 0) == 10 * kLayerActs);
  // v = 2: 6 layers on the first and last stage, 10 on the others, in chunks of 3 and 5.
  s.parallel.schedule = scenarios::Schedule::Interleaved;
  s.parallel.vpp = 2;
  CHECK(workload::stage_params(s, 0) == 6 * kLayerParams + kEmbeddingParams);
  CHECK(memory::chunk_activation_bytes(s, 1, 1) == 5 * kLayerActs);
  CHECK(memory::chunk_activation_bytes(s, 0, 1) == 3 * kLayerActs);
  CHECK(memory::chunk_activation_bytes(s, 0, 0) == 3 * kLayerActs + 8 * 8192);
  const auto est = memory::stepsim_estimate(s);
  // Stage i holds 2(p - i - 1) + (v - 1) p + 1 chunk passes at its peak, all of 5 layers on the middle stages.
  CHECK(est.stages[1].in_flight == 9);
  CHECK(est.stages[1].terms[3].bytes == 9 * 5 * kLayerActs);
  CHECK(est.stages[2].in_flight == 7);
  CHECK(est.stages[2].terms[3].bytes == 7 * 5 * kLayerActs);
}

TEST_CASE("stepsim mode: embedding and loss counted in the split move one layer off the first and the last chunk") {
  auto s = llama8b(2, 1, 4, 1, 128);
  s.model.layers = 30;
  s.parallel.schedule = scenarios::Schedule::Interleaved;
  s.parallel.vpp = 2;
  s.parallel.account_for_embedding_in_pipeline_split = true;
  s.parallel.account_for_loss_in_pipeline_split = true;
  CHECK(workload::stage_params(s, 0) == 7 * kLayerParams + kEmbeddingParams);
  CHECK(workload::stage_params(s, 1) == 8 * kLayerParams);
  CHECK(memory::chunk_activation_bytes(s, 0, 0) == 3 * kLayerActs + 8 * 8192);
  CHECK(memory::chunk_activation_bytes(s, 3, 1) == 3 * kLayerActs);
  CHECK(memory::chunk_activation_bytes(s, 3, 0) == 4 * kLayerActs);
  const auto est = memory::stepsim_estimate(s);
  CHECK(est.stages[1].terms[3].bytes == 9 * 4 * kLayerActs);
  // Paper mode covers even layouts only; its stage-0 formula is unchanged by the option.
  s.parallel.account_for_embedding_in_pipeline_split = false;
  s.parallel.account_for_loss_in_pipeline_split = false;
  s.model.layers = 32;
  const auto even = memory::paper_estimate(s);
  CHECK(even.params_first_stage == 8 * (2.0 * 4096 * 4096 * 1.25 + 3.0 * 4096 * 14336 + 2.0 * 4096) / 2.0 + 4096.0 * 128256 / 2);
}

TEST_CASE("stepsim mode: qk_norm adds the query and key norms' weights (and their gradients and optimizer state) and saved inputs") {
  // Llama-3.1-8B TP2 PP4 DP16, s = 8192: stage 0 holds 8 layers and 4 micro-batches in flight.
  auto s = llama8b(2, 1, 4, 1, 128);
  const auto before = memory::stepsim_estimate(s);
  s.model.qk_norm = true;
  const auto after = memory::stepsim_estimate(s);
  const auto term = [](const memory::StageEstimate& st, const std::string& key) {
    for (const auto& t : st.terms)
      if (t.key == key) return t.bytes;
    return std::int64_t{-1};
  };
  // Two RMSNorms over d_h = 128 per layer, replicated on every TP rank: 8 x 256 parameters, bf16
  // weights, fp32 gradients, optimizer state 12 bytes over DP 16.
  const double params = 8.0 * 256;
  CHECK(term(after.stages[0], "weights_bytes") - term(before.stages[0], "weights_bytes") == 2.0 * params);
  CHECK(term(after.stages[0], "grads_bytes") - term(before.stages[0], "grads_bytes") == 4.0 * params);
  CHECK(term(after.stages[0], "optimizer_bytes") - term(before.stages[0], "optimizer_bytes") == 12.0 * params / 16);
  // Per layer and micro-batch: n (a + k) / t = 8192 x 40 / 2 rows of 128 bf16 inputs and an fp32
  // rstd, 163,840 x 260 bytes; 4 micro-batches of 8 layers.
  CHECK(term(after.stages[0], "activations_bytes") - term(before.stages[0], "activations_bytes") == 4 * 8 * 163840LL * 260);
  // The paper's formula knows no query and key norms.
  CHECK(memory::paper_estimate(s).total_bytes == memory::paper_estimate(llama8b(2, 1, 4, 1, 128)).total_bytes);
}

TEST_CASE("stepsim mode: FlashAttention-2 through TransformerEngine stores the attention output twice") {
  // Llama-3.1-8B TP2 PP4 DP16, s = 8192, b = 1, on H100 80 GB with FlashAttention-2 against cuDNN
  // (TransformerEngine's auto choice on Hopper): stage 0 holds 8 layers and 4 micro-batches in
  // flight; per layer and micro-batch one more bf16 output of s b h / t elements.
  auto load = [](const std::string& gpu, const std::string& software, int cp, const std::string& extra) {
    const std::string text = R"({"model": "llama-3.1-8b", "cluster": {"gpu": ")" + gpu + R"(", "gpus_per_node": 8, "nodes": 16},
      "training": {"seq_len": 8192, "global_batch": 1024, "micro_batch": 1)" + extra + R"(},
      "software": {"preset": "megatron-core-0.20", "attention": ")" + software + R"("},
      "parallel": {"tp": 2, "cp": )" + std::to_string(cp) + R"(, "pp": 4}})";
    return memory::stepsim_estimate(scenarios::load_scenario_text(text));
  };
  const auto acts = [](const memory::StageEstimate& st) {
    for (const auto& t : st.terms)
      if (t.key == "activations_bytes") return t.bytes;
    return std::int64_t{-1};
  };
  const std::string h100 = "h100-sxm-80gb";
  const std::int64_t copy = 2LL * 8192 * 4096 / 2;
  CHECK(acts(load(h100, "flash-attention-2", 1, "").stages[0]) - acts(load(h100, "cudnn", 1, "").stages[0]) == 4 * 8 * copy);
  CHECK(acts(load(h100, "auto", 1, "").stages[0]) == acts(load(h100, "cudnn", 1, "").stages[0]));
  // On Ampere, auto is FlashAttention-2.
  CHECK(acts(load("a100-sxm-80gb", "auto", 1, "").stages[0]) == acts(load(h100, "flash-attention-2", 1, "").stages[0]));
  // Not with context parallelism, nor when the attention core is recomputed (the kernel's own
  // saved tensors are dropped), nor on the unfused path.
  CHECK(acts(load(h100, "flash-attention-2", 2, "").stages[0]) == acts(load(h100, "cudnn", 2, "").stages[0]));
  CHECK(acts(load(h100, "flash-attention-2", 1, R"(, "recompute": "selective")").stages[0]) ==
        acts(load(h100, "cudnn", 1, R"(, "recompute": "selective")").stages[0]));
  CHECK(acts(load(h100, "flash-attention-2", 1, R"(, "attention": "unfused")").stages[0]) ==
        acts(load(h100, "cudnn", 1, R"(, "attention": "unfused")").stages[0]));
}

TEST_CASE("stepsim mode: TP overlap keeps TransformerEngine's userbuffers, one set per process, outside torch's allocator") {
  auto s = llama8b(2, 2, 1, 2, 128);
  const auto term_bytes = [](const memory::StepsimEstimate& e, const std::string& key) -> std::int64_t {
    for (const auto& t : e.stages[0].terms)
      if (t.key == key) return t.bytes;
    return -1;
  };
  CHECK(term_bytes(memory::stepsim_estimate(s), "tp_overlap_buffers_bytes") == -1);  // no overlap: no term
  const auto before = memory::stepsim_estimate(s).stages[0].total_bytes;
  s.parallel.tp_comm_overlap = true;
  // [S, h] buffers, S = s b / c = 8192 x 2 / 2: 6 all-gather and 4 reduce-scatter buffers, bf16.
  const std::int64_t bf16 = 20LL * 8192 * 4096;
  CHECK(term_bytes(memory::stepsim_estimate(s), "tp_overlap_buffers_bytes") == bf16);
  CHECK(memory::static_bytes(s, 0) - memory::static_bytes(llama8b(2, 2, 1, 2, 128), 0) ==
        bf16 + term_bytes(memory::stepsim_estimate(s), "workspaces_bytes") -
            term_bytes(memory::stepsim_estimate(llama8b(2, 2, 1, 2, 128)), "workspaces_bytes"));
  CHECK(memory::stepsim_estimate(s).stages[0].total_bytes > before);
  // FP8: the all-gather buffers hold FP8, 6 x 1 + 4 x 2 = 14 bytes per [S, h] element.
  s.training.precision = scenarios::TrainingPrecision::Fp8Delayed;
  CHECK(term_bytes(memory::stepsim_estimate(s), "tp_overlap_buffers_bytes") == 14LL * 8192 * 4096);
  // No TP: nothing to overlap, no buffers.
  auto tp1 = llama8b(1, 2, 1, 2, 128);
  tp1.parallel.tp_comm_overlap = true;
  CHECK(term_bytes(memory::stepsim_estimate(tp1), "tp_overlap_buffers_bytes") == -1);
  // Layers, PP and DP do not change them.
  auto deep = llama8b(2, 2, 4, 2, 128);
  deep.parallel.tp_comm_overlap = true;
  CHECK(term_bytes(memory::stepsim_estimate(deep), "tp_overlap_buffers_bytes") == bf16);
  // S follows the micro-batch and the CP size: micro-batch 1 at CP 2 halves it, micro-batch 2 at
  // CP 1 doubles it.
  auto half = llama8b(2, 2, 1, 1, 128);
  half.parallel.tp_comm_overlap = true;
  CHECK(term_bytes(memory::stepsim_estimate(half), "tp_overlap_buffers_bytes") == 20LL * 4096 * 4096);
  auto twice = llama8b(2, 1, 1, 2, 128);
  twice.parallel.tp_comm_overlap = true;
  CHECK(term_bytes(memory::stepsim_estimate(twice), "tp_overlap_buffers_bytes") == 20LL * 16384 * 4096);
}
