#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "stepsim/costmodel/compute.hpp"
#include "stepsim/workload/kernels.hpp"
#include "stepsim/workload/shape.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"

namespace {

using stepsim::costmodel::ComputeModel;
using stepsim::costmodel::Efficiency;
using stepsim::costmodel::FlopsFormula;
using stepsim::workload::Kernel;
using stepsim::workload::KernelKind;
using stepsim::scenarios::Recompute;
using stepsim::scenarios::Scenario;

// docs/training-step.md section 10: Llama-3.1-70B, s 8192, b 1, t 8, c 1, p 8, d 16, GBS 1024.
Scenario llama70b() {
  return stepsim::scenarios::load_scenario_text(R"({
    "model": "llama-3.1-70b",
    "cluster": {"preset": "dgx-h100", "nodes": 128},
    "training": {"seq_len": 8192, "global_batch": 1024, "micro_batch": 1},
    "parallel": {"tp": 8, "cp": 1, "pp": 8}
  })");
}

// A small case computed by hand: h 64, a 4, k 2 (d_h 16), f 128, vocab 100, s 32, b 2, t 2, c 2.
Scenario tiny(const std::vector<stepsim::scenarios::Override>& overrides = {}) {
  return stepsim::scenarios::load_scenario_text(R"({
    "model": {"layers": 2, "hidden": 64, "ffn_hidden": 128, "heads": 4, "kv_heads": 2, "vocab": 100},
    "cluster": {"preset": "dgx-h100", "nodes": 1},
    "training": {"seq_len": 32, "global_batch": 4, "micro_batch": 2},
    "parallel": {"tp": 2, "cp": 2, "pp": 1}
  })", overrides);
}

using test_support::find;
using test_support::has;

double sum_kind(const std::vector<Kernel>& ks, KernelKind kind) {
  double f = 0;
  for (const Kernel& k : ks)
    if (k.kind == kind) f += k.flops;
  return f;
}

}  // namespace

TEST_CASE("llama-3.1-70b forward GEMMs per layer per rank match docs/training-step.md section 10") {
  const Scenario s = llama70b();
  const auto fwd = stepsim::workload::layer_forward(s);
  const Kernel& qkv = find(fwd, "qkv.fprop");
  CHECK(qkv.m == 8192);
  CHECK(qkv.n == 1280);
  CHECK(qkv.k == 8192);
  CHECK(qkv.flops == 171798691840.0);  // 171.8 G
  CHECK(find(fwd, "attn.fwd").flops == 137438953472.0);  // 137.4 G
  CHECK(find(fwd, "proj.fprop").flops == 137438953472.0);
  CHECK(find(fwd, "fc1.fprop").n == 7168);
  CHECK(find(fwd, "fc1.fprop").flops == 962072674304.0);  // 962.1 G
  CHECK(find(fwd, "fc2.fprop").k == 3584);
  CHECK(find(fwd, "fc2.fprop").flops == 481036337152.0);  // 481.0 G
  const double total = stepsim::workload::total_flops(fwd);
  CHECK(total == 1889785610240.0);
  CHECK(total == doctest::Approx(1889.8e9).epsilon(1e-3));
  CHECK(stepsim::workload::total_model_flops(fwd) == total);
  CHECK(sum_kind(fwd, KernelKind::Memory) == 0);
}

TEST_CASE("llama-3.1-70b backward: model 3779.6 G, executed 3848.3 G with FlashAttention's 2.5x") {
  const Scenario s = llama70b();
  const auto bwd = stepsim::workload::layer_backward(s);
  CHECK(find(bwd, "qkv.dgrad").flops + find(bwd, "qkv.wgrad").flops == 2 * 171798691840.0);
  CHECK(find(bwd, "fc1.wgrad").m == 8192);
  CHECK(find(bwd, "fc1.wgrad").n == 7168);
  CHECK(find(bwd, "fc1.wgrad").k == 8192);
  CHECK(find(bwd, "attn.bwd").flops == 2.5 * 137438953472.0);
  CHECK(find(bwd, "attn.bwd").model_flops == 2.0 * 137438953472.0);
  CHECK(stepsim::workload::total_model_flops(bwd) == 2 * 1889785610240.0);
  CHECK(stepsim::workload::total_model_flops(bwd) == doctest::Approx(3779.6e9).epsilon(1e-4));
  CHECK(stepsim::workload::total_flops(bwd) == doctest::Approx(3848.3e9).epsilon(1e-4));
  // Backward order: FC2 first, QKV and the first norm last.
  CHECK(bwd.front().name == "fc2.dgrad");
  CHECK(bwd.back().name == "norm1.bwd");
}

TEST_CASE("llama-3.1-70b output layer: padded vocabulary 129024, 2.16 T forward, 4.33 T backward") {
  const Scenario s = llama70b();
  CHECK(stepsim::workload::shape_of(s).padded_vocab == 129024);
  const auto fwd = stepsim::workload::output_forward(s);
  const Kernel& logits = find(fwd, "logits.fprop");
  CHECK(logits.n == 16128);
  CHECK(logits.flops == 2164663517184.0);
  // 2.1647 T: the reference's "2.16" is truncated.
  CHECK(stepsim::workload::total_flops(fwd) == doctest::Approx(2.16e12).epsilon(2.5e-3));
  CHECK(stepsim::workload::total_flops(stepsim::workload::output_backward(s)) ==
        doctest::Approx(4.33e12).epsilon(2e-3));
  // Cross-entropy in fp32 over [n, v/t]: 38 bytes per logit forward, 14 backward.
  const double elems = 8192.0 * 16128.0;
  CHECK(find(fwd, "ce.max").bytes + find(fwd, "ce.exp_sum").bytes + find(fwd, "ce.softmax").bytes == 38 * elems);
  CHECK(find(stepsim::workload::output_backward(s), "ce.bwd").bytes == 14 * elems);
}

TEST_CASE("megatron_model_flops of the 70B step is 3.77e18 with the padded vocabulary") {
  const Scenario s = llama70b();
  const double F = stepsim::costmodel::megatron_model_flops(s);
  CHECK(F == doctest::Approx(3.768668463e18).epsilon(1e-9));
  CHECK(F / 1024 == doctest::Approx(3.68e15).epsilon(1e-3));  // per GPU
  CHECK(stepsim::costmodel::model_flops(s, FlopsFormula::MegatronCausal) == F);
  CHECK(stepsim::costmodel::model_flops(s, FlopsFormula::MegatronPre011) == doctest::Approx(4.04e18).epsilon(1e-3));

  // The formula equals the kernel lists' model FLOPs summed over the step: per rank per
  // micro-batch L layers (over all stages) and the output layer, times t c ranks, m micro-batches
  // and d replicas.
  const double per_mb = 80 * (stepsim::workload::total_model_flops(stepsim::workload::layer_forward(s)) +
                              stepsim::workload::total_model_flops(stepsim::workload::layer_backward(s))) +
                        stepsim::workload::total_model_flops(stepsim::workload::output_forward(s)) +
                        stepsim::workload::total_model_flops(stepsim::workload::output_backward(s)) +
                        stepsim::workload::total_model_flops(stepsim::workload::embedding_forward(s)) +
                        stepsim::workload::total_model_flops(stepsim::workload::embedding_backward(s));
  CHECK(s.micro_batches() == 64);
  CHECK(per_mb * 8 * 64 * 16 == doctest::Approx(F).epsilon(1e-12));
}

TEST_CASE("attention under CP all_gather and a2a: one kernel, gathered or head-split keys, no merge (hand-computed)") {
  Scenario s = tiny();
  // s = 32, b = 2, c = 2, t = 2, a = 4, k = 2, d_h = 16, n = 32: Q 2048 bytes, own K and V 2048,
  // O 2048, LSE 256.
  s.parallel.cp_comm_type = stepsim::scenarios::CpCommType::AllGather;
  auto fwd = stepsim::workload::layer_forward(s);
  const Kernel& ag = find(fwd, "attn.fwd");
  CHECK(ag.flops == 65536);
  CHECK(ag.m == 16);  // the rank's s/c queries against the gathered keys, one grid
  CHECK(ag.n == 16);
  CHECK(ag.batch == 4);         // b a / t
  CHECK(ag.bytes == 8448);      // Q 2048 + gathered K, V 2 x 2048 + O 2048 + LSE 256
  CHECK(std::none_of(fwd.begin(), fwd.end(), [](const Kernel& k) { return k.name == "attn.cp_merge"; }));
  // Backward: Q, K, V read and dQ, dK, dV written (6144 each), O and dO 4096, LSE 256,
  // preprocessing 4352, fp32 dQ accumulator 8192.
  CHECK(find(stepsim::workload::layer_backward(s), "attn.bwd").bytes == 29184);
  // The p2p ring: c steps of everything (Q, K, V 4096 read and written, O, dO, LSE, preprocessing,
  // accumulator: 25088 per step).
  s.parallel.cp_comm_type = stepsim::scenarios::CpCommType::P2P;
  CHECK(find(stepsim::workload::layer_backward(s), "attn.bwd").bytes == 50176);
  // Ulysses needs c to divide the heads and the kv heads per TP rank: 4 kv heads (K, V 4096 bytes).
  const Scenario u = tiny({{"model.kv_heads", "4"}, {"parallel.cp_comm_type", "\"a2a\""}});
  fwd = stepsim::workload::layer_forward(u);
  const Kernel& a2a = find(fwd, "attn.fwd");
  CHECK(a2a.flops == 65536);
  CHECK(a2a.m == 32);  // the whole sequence with a / c of the rank's heads
  CHECK(a2a.n == 32);
  CHECK(a2a.batch == 2);        // b a / (t c)
  CHECK(a2a.bytes == 8448);     // Q 2048 + K, V 4096 + O 2048 + LSE 256
  CHECK(std::none_of(fwd.begin(), fwd.end(), [](const Kernel& k) { return k.name == "attn.cp_merge"; }));
  CHECK(find(stepsim::workload::layer_backward(u), "attn.bwd").bytes == 29184);
  // a2a+p2p with all-to-all groups of 2 and no ring is Ulysses; with groups of 1 and a ring of 2 it
  // is the ring.
  const Scenario h_a2a = tiny({{"model.kv_heads", "4"}, {"parallel.cp_comm_type", "\"a2a+p2p\""}, {"parallel.hierarchical_cp_sizes", "[2, 1]"}});
  const Kernel ha = find(stepsim::workload::layer_forward(h_a2a), "attn.fwd");  // a copy: the list is a temporary
  CHECK(ha.m == a2a.m);
  CHECK(ha.batch == a2a.batch);
  CHECK(ha.bytes == a2a.bytes);
  const Scenario h_ring = tiny({{"parallel.cp_comm_type", "\"a2a+p2p\""}, {"parallel.hierarchical_cp_sizes", "[1, 2]"}});
  const auto hr = stepsim::workload::layer_forward(h_ring);
  CHECK(find(hr, "attn.fwd").m == 16);
  CHECK(find(hr, "attn.fwd").n == 32);
  CHECK(find(hr, "attn.fwd").bytes == 12800);  // as the p2p ring's: c (Q, K, V 4096 + O 2048 + LSE 256)
  CHECK(find(hr, "attn.cp_merge").bytes == 6912);
  CHECK_THROWS_WITH_AS(tiny({{"parallel.cp_comm_type", "\"a2a\""}}),
                       doctest::Contains("a2a needs cp=2 to divide the heads per TP rank (2) and the kv_heads per TP rank (1)"),
                       stepsim::ScenarioError);
}

TEST_CASE("small hand-computed case with TP 2, CP 2, GQA and SP") {
  const Scenario s = tiny();
  // n = s b / c = 32, n_sp = 16, d_h = 16, padded vocabulary 256 (128 t), v/t = 128.
  CHECK(stepsim::workload::shape_of(s).padded_vocab == 256);
  const auto fwd = stepsim::workload::layer_forward(s);
  const Kernel& qkv = find(fwd, "qkv.fprop");
  CHECK(qkv.m == 32);
  CHECK(qkv.n == 64);  // (a + 2k) d_h / t = 8 * 16 / 2
  CHECK(qkv.k == 64);
  CHECK(qkv.flops == 262144);
  CHECK(qkv.bytes == 16384);  // 2 (32*64 + 64*64 + 32*64)
  const Kernel& attn = find(fwd, "attn.fwd");
  CHECK(attn.flops == 65536);   // 2 b s^2 a d_h / (t c) = 2*2*1024*4*16/4
  CHECK(attn.bytes == 12800);   // c (Q,K,V 4096 + O 2048 + LSE 256)
  CHECK(find(fwd, "attn.cp_merge").bytes == 6912);  // (c-1) 3 (2048 + 256)
  CHECK(find(fwd, "proj.fprop").flops == 131072);   // 2*32*64*32
  CHECK(find(fwd, "fc1.fprop").flops == 524288);    // 2*32*128*64 (gate and up)
  CHECK(find(fwd, "fc2.fprop").flops == 262144);
  CHECK(find(fwd, "norm1.fwd").bytes == 4288);      // 4*16*64 + 4*16 + 2*64
  CHECK(find(fwd, "rope.fwd").bytes == 6144);       // 4*32*(4+2)*16/2
  CHECK(find(fwd, "swiglu.fwd").bytes == 12288);    // 6*32*128/2
  CHECK(find(fwd, "residual1.fwd").bytes == 6144);  // 6*16*64
  const auto bwd = stepsim::workload::layer_backward(s);
  CHECK(find(bwd, "attn.bwd").flops == 163840);
  CHECK(find(bwd, "fc2.wgrad").bytes == 40960);  // 2 (64*32 + 32*64) + 8*64*64 (fp32 main_grad)
  CHECK(find(bwd, "norm2.bwd").bytes == 8256);   // 8*16*64 + 4*16
  const auto out = stepsim::workload::output_forward(s);
  CHECK(find(out, "logits.fprop").flops == 2.0 * 32 * 128 * 64);
}

TEST_CASE("the software stack's fusions change the memory kernels' bytes, by hand (tiny case)") {
  // n = 32 tokens, d_h 16, a + k = 6 heads, f / t = 64, V = n v / t = 32 * 128 = 4096 logits.
  const Scenario fused = tiny();
  const Scenario unfused = tiny({{"software", R"({"fused_rope": false, "fused_swiglu": false, "fused_cross_entropy": false,
                                                  "grad_accum_fusion": false})"}});
  const Scenario ce = tiny({{"software.fused_cross_entropy", "true"}});
  using stepsim::workload::layer_backward;
  using stepsim::workload::layer_forward;
  using stepsim::workload::output_backward;
  using stepsim::workload::output_forward;
  // RoPE: 4 n (a + k) d_h / t = 6144 fused, five passes unfused.
  CHECK(find(layer_forward(fused), "rope.fwd").bytes == 6144);
  CHECK(find(layer_forward(unfused), "rope.fwd").bytes == 30720);
  CHECK(find(layer_backward(unfused), "rope.bwd").bytes == 30720);
  // SwiGLU: forward 6 / 10, backward 10 / 18 bytes per n f / t = 2048 elements.
  CHECK(find(layer_forward(fused), "swiglu.fwd").bytes == 12288);
  CHECK(find(layer_forward(unfused), "swiglu.fwd").bytes == 20480);
  CHECK(find(layer_backward(fused), "swiglu.bwd").bytes == 20480);
  CHECK(find(layer_backward(unfused), "swiglu.bwd").bytes == 36864);
  // Cross-entropy: unfused 10 V + 20 V + 8 V forward, 14 V backward; fused 6 V + 8 V + 8 V, 6 V.
  CHECK(find(output_forward(fused), "ce.max").bytes == 40960);
  CHECK(find(output_forward(fused), "ce.exp_sum").bytes == 81920);
  CHECK(find(output_backward(fused), "ce.bwd").bytes == 57344);
  CHECK(find(output_forward(ce), "ce.max").bytes == 24576);
  CHECK(find(output_forward(ce), "ce.exp_sum").bytes == 32768);
  CHECK(find(output_forward(ce), "ce.softmax").bytes == 32768);
  CHECK(find(output_backward(ce), "ce.bwd").bytes == 24576);
  // Without gradient-accumulation fusion the FC2 wgrad (m = f / t = 64, n = h = 64, k = n = 32)
  // writes bf16, 2 (64*32 + 32*64) + 2*64*64 = 16384, and an add reads it and the fp32 main
  // gradient and writes that: (2 + 2*4) * 64*64 = 40960.
  const auto bwd = layer_backward(unfused);
  CHECK(find(bwd, "fc2.wgrad").bytes == 16384);
  CHECK(find(bwd, "fc2.wgrad.accum").bytes == 40960);
  CHECK(find(bwd, "fc2.wgrad.accum").kind == KernelKind::Memory);
  CHECK(has(output_backward(unfused), "logits.wgrad.accum"));
  CHECK_FALSE(has(layer_backward(fused), "fc2.wgrad.accum"));
  // The model FLOPs do not depend on the fusions.
  CHECK(stepsim::workload::total_model_flops(bwd) == stepsim::workload::total_model_flops(layer_backward(fused)));
  // The attention kernel's shape: s / c = 16 queries and s = 32 keys per sequence, d_h 16, b a / t = 4 of them.
  const auto forward = layer_forward(fused);
  const Kernel& attn = find(forward, "attn.fwd");
  CHECK(attn.m == 16);
  CHECK(attn.n == 32);
  CHECK(attn.k == 16);
  CHECK(attn.batch == 4);
  CHECK(attn.causal);
  CHECK_FALSE(attn.backward);
  CHECK(find(layer_backward(fused), "attn.bwd").backward);
}

TEST_CASE("recomputation lists") {
  Scenario s = llama70b();
  s.training.recompute = Recompute::None;
  CHECK(stepsim::workload::layer_recompute(s).empty());
  s.training.recompute = Recompute::Selective;
  const auto sel = stepsim::workload::layer_recompute(s);
  REQUIRE(sel.size() == 1);
  CHECK(sel[0].name == "attn.fwd");
  CHECK(sel[0].flops == 137438953472.0);
  CHECK(sel[0].model_flops == 0);
  s.training.recompute = Recompute::Full;
  const auto full = stepsim::workload::layer_recompute(s);
  CHECK(stepsim::workload::total_flops(full) == 1889785610240.0);
  CHECK(stepsim::workload::total_model_flops(full) == 0);
  CHECK(full.size() == stepsim::workload::layer_forward(s).size());
}

TEST_CASE("GPT variant: GeLU MLP, LayerNorm, learned positions and dropout, no RoPE") {
  const Scenario s = stepsim::scenarios::load_scenario_text(R"({
    "model": "gpt3-175b",
    "cluster": {"preset": "dgx-a100", "nodes": 1},
    "training": {"seq_len": 2048, "global_batch": 8, "micro_batch": 1},
    "parallel": {"tp": 8, "pp": 1}
  })");
  CHECK(stepsim::workload::gpt_family(s.model));
  const auto fwd = stepsim::workload::layer_forward(s);
  CHECK_FALSE(has(fwd, "rope.fwd"));
  CHECK(has(fwd, "gelu.fwd"));
  CHECK(find(fwd, "fc1.fprop").n == 49152.0 / 8);
  // Whole-model forward GEMM + attention FLOPs per layer: 24 b s h^2 + 4 b s^2 h unmasked
  // (Narayanan et al.); causal attention halves the s^2 term: per rank (24 b s h^2 + 2 b s^2 h) / t.
  const double h = 12288, sq = 2048;
  CHECK(stepsim::workload::total_flops(fwd) == doctest::Approx((24 * sq * h * h + 2 * sq * sq * h) / 8).epsilon(1e-12));
  // bias-dropout-add writes a 1-byte mask: 6 n_sp h + 2h + n_sp h with n_sp = 256.
  CHECK(find(fwd, "residual1.fwd").bytes == 7.0 * 256 * h + 2 * h);
  const auto bwd = stepsim::workload::layer_backward(s);
  CHECK(bwd.front().name == "residual2.bwd");
  CHECK_FALSE(has(bwd, "rope.bwd"));
  CHECK(has(stepsim::workload::embedding_forward(s), "embed.pos_add"));
  // vocabulary 50257 padded to a multiple of 1024.
  CHECK(stepsim::workload::shape_of(s).padded_vocab == 51200);
}

TEST_CASE("without sequence parallelism norms and residuals run on all n tokens") {
  Scenario s = llama70b();
  s.parallel.sequence_parallel = false;
  const auto fwd = stepsim::workload::layer_forward(s);
  CHECK(find(fwd, "residual1.fwd").bytes == 6.0 * 8192 * 8192);
}

TEST_CASE("embedding and optimizer bytes") {
  Scenario s = llama70b();
  const auto emb = stepsim::workload::embedding_forward(s);
  REQUIRE(emb.size() == 1);
  CHECK(emb[0].bytes == 4.0 * 8192 * 8192 + 8.0 * 8192);
  const auto opt = stepsim::workload::optimizer_step(s, 1e6);
  CHECK(stepsim::workload::total_bytes(opt) == 38e6);
  CHECK(stepsim::workload::total_flops(opt) == 0);
  CHECK(stepsim::workload::total_bytes(stepsim::workload::zero_grad_buffer(s, 1e6)) == 4e6);
  s.training.grads_in_fp32 = false;
  CHECK(stepsim::workload::total_bytes(stepsim::workload::optimizer_step(s, 1e6)) == 44e6);
  CHECK(find(stepsim::workload::layer_backward(s), "fc2.wgrad").bytes ==
        2.0 * (3584.0 * 8192 + 8192.0 * 8192) + 4.0 * 3584 * 8192);
}

namespace {

// A GPU with round numbers: 5 SMs, 128 x 256 tiles, matmul ceiling 1e15 FLOP/s at gemm_max 0.5
// (1e14 FLOP/s per SM), HBM 1e12 B/s at 0.5.
stepsim::scenarios::GpuSpec test_gpu() {
  stepsim::scenarios::GpuSpec gpu;
  gpu.name = "test";
  gpu.peak_bf16_flops = 1e15;
  gpu.matmul_bf16_flops = 1e15;
  gpu.hbm_Bps = 1e12;
  gpu.sms = 5;
  gpu.gemm_tile_m = 128;
  gpu.gemm_tile_n = 256;
  Efficiency e;
  e.gemm_max = 0.5;
  e.attn_max = 0.5;
  e.hbm_eff = 0.5;
  e.comm_slowdown = 0.1;
  gpu.efficiency = e;
  return gpu;
}

Kernel gemm_kernel(double m, double n, double k, double batch = 1) {
  Kernel g;
  g.kind = KernelKind::Gemm;
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch = batch;
  g.flops = 2 * m * n * k * batch;
  return g;
}

}  // namespace

TEST_CASE("GEMM: tile and wave quantization over the SMs, by hand") {
  const ComputeModel cm(test_gpu(), stepsim::scenarios::SoftwareSpec{});
  // 256 x 640 x 64: 128x256 tiles 2 x 3 = 6 (2 waves on 5 SMs); 256x128 tiles 1 x 5 = 5 (1 wave).
  // One wave of 256 x 128 x 64 tiles: 2*256*128*64 / 1e14 = 41.94304 ns.
  const Kernel g = gemm_kernel(256, 640, 64);
  const auto t = cm.gemm_tiling(g);
  CHECK(t.tile_m == 256);
  CHECK(t.tile_n == 128);
  CHECK(t.tiles == 5);
  CHECK(t.waves == 1);
  CHECK(cm.time_s(g) == doctest::Approx(4.194304e-8));
  // One column more: 6 tiles either way, 2 waves, twice the time for 0.2 % more work.
  CHECK(cm.gemm_tiling(gemm_kernel(256, 641, 64)).waves == 2);
  CHECK(cm.time_s(gemm_kernel(256, 641, 64)) == doctest::Approx(2 * 4.194304e-8));
  // Tile quantization: 100 x 100 pads to one 128 x 256 tile.
  CHECK(cm.time_s(gemm_kernel(100, 100, 64)) == doctest::Approx(2.0 * 128 * 256 * 64 / 1e14));
  // A batch of 3 products: 15 tiles, 3 waves.
  CHECK(cm.gemm_tiling(gemm_kernel(256, 640, 64, 3)).waves == 3);
  CHECK(cm.time_s(gemm_kernel(256, 640, 64, 3)) == doctest::Approx(3 * 4.194304e-8));
  // Skinny shapes are HBM bound: 1 MB at 0.5 TB/s is 2 us.
  Kernel skinny = gemm_kernel(256, 640, 64);
  skinny.bytes = 1e6;
  CHECK(cm.time_s(skinny) == doctest::Approx(2e-6));
  // Without SM count and tile: the FLOPs at the ceiling, 2*256*640*64 / 5e14.
  auto plain = test_gpu();
  plain.sms = 0;
  plain.gemm_tile_m = plain.gemm_tile_n = 0;
  CHECK(ComputeModel(plain, {}).time_s(g) == doctest::Approx(2.0 * 256 * 640 * 64 / 5e14));
  // The launch gap of the stack is added to every kernel.
  stepsim::scenarios::SoftwareSpec sw;
  sw.kernel_launch_s = 1e-6;
  const ComputeModel with_gap(test_gpu(), sw);
  Kernel m;
  m.kind = KernelKind::Memory;
  m.bytes = 1e6;
  CHECK(with_gap.time_s(m) == doctest::Approx(3e-6));
  CHECK(with_gap.time_s(std::vector<Kernel>{g, m}) == doctest::Approx(1e-6 + 4.194304e-8 + 3e-6));
  CHECK(with_gap.overlapped_time_s(m) == doctest::Approx(3.3e-6));
  auto bad = test_gpu();
  bad.efficiency.gemm_max = 1.5;
  CHECK_THROWS_WITH_AS((void)ComputeModel(bad, {}), "efficiency.gemm_max: must lie in (0, 1]", stepsim::ScenarioError);
}

TEST_CASE("GEMM: the small square tile and the fixed cost per tile, by hand") {
  // test_gpu: 5 SMs, 128 x 256 tiles, 1e14 FLOP/s per SM. A 128 x 128 fallback at 0.5 of that rate.
  auto gpu = test_gpu();
  gpu.gemm_small_tile = 128;
  gpu.gemm_small_tile_efficiency = 0.5;
  const ComputeModel cm(gpu, stepsim::scenarios::SoftwareSpec{});
  // 512 x 640 x 64: large tiles 4 x 3 = 12 (3 waves of 128 x 256) or 2 x 5 = 10 (2 waves of 256 x 128),
  // 2 x 256 x 128 = 65,536 elements of waves; small tiles 4 x 5 = 20 (4 waves of 128 x 128 at half the rate),
  // 4 x 128 x 128 / 0.5 = 131,072: the large tile, 2 waves of 2*256*128*64 / 1e14 = 41.94304 ns.
  CHECK(cm.gemm_tiling(gemm_kernel(512, 640, 64)).tile_m == 256);
  CHECK(cm.time_s(gemm_kernel(512, 640, 64)) == doctest::Approx(2 * 4.194304e-8));
  // 256 x 128 x 64: one large tile either way (1 wave of 128 x 256 elements = 32,768); two small tiles,
  // one wave at half the rate (128 x 128 / 0.5 = 32,768): a tie keeps the large tile.
  CHECK(cm.gemm_tiling(gemm_kernel(256, 128, 64)).efficiency == 1.0);
  // 128 x 640 x 64: large tiles 1 x 3 = 3 or 1 x 5 (256 x 128 pads m): 1 wave of 32,768 either way; small
  // tiles 1 x 5 = 5 in 1 wave: 16,384 / 0.5 = 32,768. With efficiency 0.6 the small tile wins:
  // 2*128*128*64 / (0.6e14) = 34.952533 ns.
  gpu.gemm_small_tile_efficiency = 0.6;
  const ComputeModel small(gpu, stepsim::scenarios::SoftwareSpec{});
  const auto t = small.gemm_tiling(gemm_kernel(128, 640, 64));
  CHECK(t.tile_m == 128);
  CHECK(t.tile_n == 128);
  CHECK(t.efficiency == 0.6);
  CHECK(t.waves == 1);
  CHECK(small.time_s(gemm_kernel(128, 640, 64)) == doctest::Approx(2.0 * 128 * 128 * 64 / 0.6e14));
  // The fixed cost per tile: 64 more elements of K double the time of a K = 64 product, and add a
  // quarter to a K = 256 one.
  auto fixed = test_gpu();
  fixed.gemm_k_overhead = 64;
  const ComputeModel with_overhead(fixed, stepsim::scenarios::SoftwareSpec{});
  CHECK(with_overhead.time_s(gemm_kernel(256, 640, 64)) == doctest::Approx(2 * 4.194304e-8));
  CHECK(with_overhead.time_s(gemm_kernel(256, 640, 256)) == doctest::Approx(1.25 * 4 * 4.194304e-8));
}

// XLA's measured BF16 GEMM tables (tests/costmodel/data/gemm-h100-xla-sm90.csv, gemm-b200-xla-sm100.csv): with the
// presets' GEMM shape parameters the model gives each shape's throughput relative to the table's geometric mean
// as fit_gemm_shapes.py found (mean error 7.4 % on sm_90, 9.5 % on sm_100; 3.1 % and 5.4 % where m, n, k >= 2048),
// and the large tile alone misses by far more (13.7 % and 18.1 %).
TEST_CASE("calibration: GEMM throughput by shape against XLA's measured sm_90 and sm_100 tables") {
  struct Row {
    double batch, m, n, k, tflops;
  };
  const auto read = [](const std::string& file) {
    std::ifstream in(std::string(STEPSIM_SOURCE_DIR "/tests/costmodel/data/") + file);
    REQUIRE(in.good());
    std::vector<Row> rows;
    std::string line;
    bool header = true;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      if (header) {
        header = false;
        continue;
      }
      Row r{};
      char comma = 0;
      std::istringstream cells(line);
      cells >> r.batch >> comma >> r.m >> comma >> r.n >> comma >> r.k >> comma >> r.tflops;
      REQUIRE(cells);
      rows.push_back(r);
    }
    return rows;
  };
  // Mean absolute error of the relative throughputs, over all rows and over those with m, n, k >= 2048.
  const auto errors = [](const std::vector<Row>& rows, const stepsim::scenarios::GpuSpec& gpu) {
    const ComputeModel cm(gpu, stepsim::scenarios::SoftwareSpec{});
    std::vector<double> model, measured;
    for (const auto& r : rows) {
      const Kernel g = gemm_kernel(r.m, r.n, r.k, r.batch);
      model.push_back(g.flops / cm.gemm_compute_s(g));
      measured.push_back(r.tflops);
    }
    const auto log_mean = [](const std::vector<double>& v) {
      double s = 0;
      for (const double x : v) s += std::log(x);
      return std::exp(s / static_cast<double>(v.size()));
    };
    const double gm = log_mean(model), gt = log_mean(measured);
    double all = 0, large = 0;
    int n_large = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const double e = std::abs(model[i] / gm / (measured[i] / gt) - 1.0);
      all += e;
      if (std::min({rows[i].m, rows[i].n, rows[i].k}) >= 2048) {
        large += e;
        ++n_large;
      }
    }
    return std::pair<double, double>{all / static_cast<double>(rows.size()), large / n_large};
  };
  struct Case {
    const char* table;
    std::vector<const char*> gpus;
    double all, large, without;
  };
  const std::vector<Case> cases{
      {"gemm-h100-xla-sm90.csv", {"h100-sxm-80gb", "h100-sxm-94gb", "h200-sxm-141gb", "h200-nvl-141gb"}, 0.075, 0.032, 0.136},
      {"gemm-b200-xla-sm100.csv", {"b200-180gb", "gb200-186gb"}, 0.096, 0.055, 0.18}};
  for (const auto& c : cases) {
    const auto rows = read(c.table);
    REQUIRE(rows.size() == 81);
    for (const char* name : c.gpus) {
      CAPTURE(name);
      const auto gpu = stepsim::scenarios::gpu_preset(name);
      const auto [all, large] = errors(rows, gpu);
      CHECK(all < c.all);
      CHECK(large < c.large);
      auto plain = gpu;
      plain.gemm_small_tile = 0;
      plain.gemm_k_overhead = 0;
      CHECK(errors(rows, plain).first > c.without);
    }
  }
}

TEST_CASE("attention: nearest head dimension, log-linear in the sequence length, clamped") {
  stepsim::scenarios::SoftwareSpec sw;
  sw.attention_curves.seq_len = {512, 2048};
  sw.attention_curves.series = {{false, true, 128, {100e12, 300e12}}, {false, true, 64, {50e12, 150e12}}};
  const ComputeModel cm(test_gpu(), sw);
  Kernel a;
  a.kind = KernelKind::Attention;
  a.m = 1024;  // halfway between 512 and 2048 in log2
  a.k = 128;
  a.flops = 1e12;
  CHECK(cm.attention_rate_flops(a) == doctest::Approx(200e12));
  CHECK(cm.time_s(a) == doctest::Approx(1e12 / (200e12 * 0.5)));
  a.k = 90;  // log2(90/64) = 0.49 < log2(128/90) = 0.51: head dim 64
  CHECK(cm.attention_rate_flops(a) == doctest::Approx(100e12));
  a.m = 8192;
  CHECK(cm.attention_rate_flops(a) == doctest::Approx(150e12));
  a.m = 100;
  CHECK(cm.attention_rate_flops(a) == doctest::Approx(50e12));
  // No backward series: the matmul ceiling.
  a.backward = true;
  CHECK(cm.attention_rate_flops(a) == doctest::Approx(1e15));
}

TEST_CASE("attention: FlashAttention-2 grids in waves over the SMs, CP ring steps as kernels of their own, by hand") {
  using stepsim::costmodel::attention_wave_occupancy;
  CHECK(attention_wave_occupancy(256, 216) == doctest::Approx(256.0 / 432.0));
  CHECK(attention_wave_occupancy(432, 216) == doctest::Approx(1.0));
  CHECK(attention_wave_occupancy(0, 216) == doctest::Approx(1.0));
  stepsim::scenarios::GpuSpec gpu = test_gpu();
  gpu.sms = 108;
  stepsim::scenarios::SoftwareSpec sw;
  sw.attention_curves.implementation = "flash-attention-2";
  const ComputeModel cm(gpu, sw);
  // Llama-3.1-8B at TP 2 (16 heads, d_h 128), s 8192, CP 4: 2048 query rows per rank.
  Kernel a;
  a.kind = KernelKind::Attention;
  a.m = 2048;
  a.n = 8192;
  a.k = 128;
  a.batch = 16;
  // Forward: 2 x 108 slots. Published shape at 2048: 8 sequences x 16 heads x 16 blocks = 2048 CTAs
  // (9.48 waves of 10). The 4 steps on two streams run as one grid of 4 x 16 x 16 = 1024 CTAs (4.74 of 5).
  const double bench = (2048.0 / 216.0) / 10.0;
  CHECK(cm.attention_occupancy_factor(a) == doctest::Approx(bench / ((1024.0 / 216.0) / 5.0)));
  // TP 4 (8 heads): 4 x 16 x 8 = 512 CTAs (2.37 of 3).
  a.batch = 8;
  CHECK(cm.attention_occupancy_factor(a) == doctest::Approx(bench / ((512.0 / 216.0) / 3.0)));
  a.batch = 16;
  // Backward: 108 slots; step 0 256 CTAs (2.37 of 3), the others 128 CTAs (1.19 of 2); published 2048 (18.96 of 19).
  a.backward = true;
  const double bench_bwd = (2048.0 / 108.0) / 19.0;
  CHECK(cm.attention_occupancy_factor(a) ==
        doctest::Approx(bench_bwd * (1.0 / ((256.0 / 108.0) / 3.0) + 3.0 / ((128.0 / 108.0) / 2.0)) / 4.0));
  // No CP (n = m = 8192): one grid of 64 x 16 = 1024 CTAs, 9.48 waves of 10 against 2 x 16 x 64 = 2048 (18.96 of 19).
  a.m = a.n = 8192;
  CHECK(cm.attention_occupancy_factor(a) == doctest::Approx(((2048.0 / 108.0) / 19.0) / ((1024.0 / 108.0) / 10.0)));
  // The factor multiplies the compute time; other implementations and unknown SM counts keep 1.
  a.flops = 1e12;
  sw.attention_curves.implementation = "cudnn";
  CHECK(ComputeModel(gpu, sw).attention_occupancy_factor(a) == doctest::Approx(1.0));
  sw.attention_curves.implementation = "flash-attention-2";
  gpu.sms = 0;
  CHECK(ComputeModel(gpu, sw).attention_occupancy_factor(a) == doctest::Approx(1.0));
}

TEST_CASE("attention: the published figures by stack and architecture (scenarios/presets/kernels/attention.json)") {
  const auto load = [](const std::string& gpu, const std::string& software) {
    return stepsim::scenarios::load_scenario_text(R"({"model": "llama-3.1-8b", "cluster": {"gpu": ")" + gpu +
                                                  R"(", "gpus_per_node": 8, "nodes": 1}, "training": {"seq_len": 8192,
      "global_batch": 8}, "software": )" + software + "}");
  };
  const auto rate = [](const Scenario& s, bool backward, double seq) {
    Kernel a;
    a.kind = KernelKind::Attention;
    a.backward = backward;
    a.m = seq;
    a.k = 128;
    return ComputeModel(s.cluster.gpu, s.software).attention_rate_flops(a);
  };
  // H100, cuDNN (NeMo): Figure 5(e) causal forward, head dim 128: 484 at 2k, 529 at 8k.
  const Scenario nemo = load("h100-sxm-80gb", R"("nemo-24.09")");
  CHECK(nemo.software.attention_curves.implementation == "cudnn");
  CHECK(rate(nemo, false, 2048) == doctest::Approx(484e12));
  CHECK(rate(nemo, false, 8192) == doctest::Approx(529e12));
  // Causal backward, derived: non-causal backward 465 (Figure 6(b)) x 484 / 617 at 2k.
  CHECK(rate(nemo, true, 2048) == doctest::Approx(465e12 * 484.0 / 617.0));
  // megatron-core-0.8 runs FlashAttention-2: 333 at 8k (Figure 5(e)).
  CHECK(rate(load("h100-sxm-94gb", R"("megatron-core-0.8")"), false, 8192) == doctest::Approx(333e12));
  // A100: FlashAttention-2 scaled by 0.6156; B200 cuDNN by 2.1963 (attention.json "derived").
  CHECK(rate(load("a100-sxm-80gb", R"("megatron-core-0.20")"), false, 4096) == doctest::Approx(319e12 * 0.6156));
  CHECK(rate(load("b200-180gb", R"("megatron-core-0.20")"), false, 1024) == doctest::Approx(410e12 * 2.1963));
  // B200 FlashAttention-2: the Hopper series scaled to the published 428.6 at 16k (cudnn-frontend artifacts).
  CHECK(rate(load("b200-180gb", R"({"attention": "flash-attention-2"})"), false, 16384) == doctest::Approx(428.6e12).epsilon(1e-4));
  CHECK(rate(load("b200-180gb", R"({"attention": "flash-attention-2"})"), false, 4096) == doctest::Approx(319e12 * 1.2794));
  // FlashAttention-3 exists only on Hopper.
  CHECK_THROWS_WITH_AS((void)load("a100-sxm-80gb", R"({"attention": "flash-attention-3"})"),
                       doctest::Contains("software.attention: flash-attention-3 has no published figures on ampere GPUs"),
                       stepsim::ScenarioError);
}

TEST_CASE("GPU efficiency: preset files, the published ceilings as default") {
  const Scenario s = llama70b();
  // H100 80 GB is fitted on NVIDIA's Llama 3 70B table (its own fraction of its ceilings, not the
  // TSUBAME H100 94 GB fit); H200 and the Blackwell GPUs take its fractions of their own ceilings.
  const Efficiency& h100 = s.cluster.gpu.efficiency;
  CHECK(h100.gemm_max > 0.8);
  CHECK(h100.gemm_max < 1.0);
  CHECK(h100.attn_max == 1.0);
  CHECK(h100.kind == stepsim::scenarios::EfficiencyKind::Fitted);
  CHECK(h100.gemm_max != stepsim::scenarios::gpu_preset("h100-sxm-94gb").efficiency.gemm_max);
  CHECK(stepsim::scenarios::gpu_preset("h200-sxm-141gb").efficiency.gemm_max == h100.gemm_max);
  CHECK(stepsim::scenarios::gpu_preset("h200-sxm-141gb").efficiency.kind == stepsim::scenarios::EfficiencyKind::Derived);
  for (const char* blackwell : {"b200-180gb", "gb200-186gb", "b300-288gb", "gb300-288gb"}) {
    CAPTURE(blackwell);
    const Efficiency& e = stepsim::scenarios::gpu_preset(blackwell).efficiency;
    CHECK(e.gemm_max == h100.gemm_max);
    CHECK(e.gemm_fp8_max == h100.gemm_fp8_max);
    CHECK(e.kind == stepsim::scenarios::EfficiencyKind::Derived);
  }
  CHECK(stepsim::scenarios::gpu_preset("h100-sxm-94gb").efficiency.kind == stepsim::scenarios::EfficiencyKind::Fitted);
  CHECK(h100.source == "scenarios/presets/efficiency/h100-sxm-80gb.json");
  CHECK(h100.fit.find("stepsim calibrate --gpu h100-sxm-80gb") == 0);
  CHECK(s.cluster.gpu.sms == 132);
  CHECK(s.cluster.gpu.matmul_bf16_flops == doctest::Approx(794.5e12));

  const auto names = stepsim::scenarios::efficiency_preset_names();
  CHECK(names == std::vector<std::string>{"a100-sxm-40gb", "a100-sxm-80gb", "b200-180gb", "b300-288gb", "gb200-186gb", "gb300-288gb", "h100-sxm-80gb",
                                           "h100-sxm-94gb", "h200-nvl-141gb", "h200-sxm-141gb"});
  for (const auto& n : stepsim::scenarios::gpu_preset_names()) {
    CAPTURE(n);
    const auto gpu = stepsim::scenarios::gpu_preset(n);
    const Efficiency& e = gpu.efficiency;
    CHECK(e.gemm_max >= 0.2);  // stepsim calibrate's bounds
    CHECK(e.gemm_max <= 1.0);
    CHECK(e.kind != stepsim::scenarios::EfficiencyKind::Default);
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
    CHECK(gpu.sms > 0);
    CHECK(gpu.matmul_bf16_flops < gpu.peak_bf16_flops);
    CHECK(gpu.architecture != stepsim::scenarios::GpuArchitecture::Unknown);
  }

  stepsim::scenarios::GpuSpec custom;
  custom.name = "custom";
  custom.peak_bf16_flops = 312e12;
  custom.hbm_Bps = 2e12;
  const Efficiency e = stepsim::scenarios::default_efficiency(custom);
  CHECK(e.kind == stepsim::scenarios::EfficiencyKind::Default);
  CHECK(e.gemm_max == 1.0);
  CHECK(e.attn_max == 1.0);
  CHECK(e.hbm_eff == 0.85);
}

TEST_CASE("FLOP formulas by name") {
  using stepsim::costmodel::flops_formula_from_string;
  CHECK(flops_formula_from_string("narayanan-eq3") == FlopsFormula::NarayananEq3);
  CHECK(stepsim::costmodel::to_string(FlopsFormula::MegatronPre011) == "megatron-pre-0.11");
  CHECK_THROWS_WITH_AS((void)flops_formula_from_string("6nd"),
                       "flops_formula: unknown formula '6nd' (expected megatron-causal, megatron-pre-0.11 or narayanan-eq3)",
                       stepsim::ScenarioError);
  // Narayanan Eq. 3 for the 1T model of Table 1: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
  const Scenario s = stepsim::scenarios::load_scenario_text(R"({
    "model": {"layers": 128, "hidden": 25600, "ffn_hidden": 102400, "heads": 160, "vocab": 51200,
              "tied_embeddings": true, "mlp": "gelu", "norm": "layernorm", "bias": true},
    "cluster": {"preset": "dgx-a100", "nodes": 384},
    "training": {"seq_len": 2048, "global_batch": 3072, "micro_batch": 1, "recompute": "full"},
    "parallel": {"tp": 8, "pp": 64, "sequence_parallel": false}
  })");
  const double h = 25600, L = 128;
  const double expect = 96.0 * 3072 * 2048 * L * h * h * (1 + 2048 / (6 * h) + 51200 / (16 * L * h));
  CHECK(stepsim::costmodel::model_flops(s, FlopsFormula::NarayananEq3) == doctest::Approx(expect).epsilon(1e-14));
  // For GPT shapes the pre-0.11 Megatron count equals 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).
  CHECK(stepsim::costmodel::model_flops(s, FlopsFormula::MegatronPre011) ==
        doctest::Approx(72.0 * 3072 * 2048 * L * h * h * (1 + 2048 / (6 * h) + 51200 / (12 * L * h))).epsilon(1e-12));
}
