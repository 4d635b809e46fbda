#include <doctest/doctest.h>

#include <algorithm>
#include <string>

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
Scenario tiny() {
  return stepsim::scenarios::load_scenario_text(R"({
    "model": {"layers": 2, "hidden": 64, "ffn_hidden": 128, "heads": 4, "kv_heads": 2, "vocab": 100},
    "cluster": {"preset": "dgx-h100", "nodes": 1},
    "training": {"seq_len": 32, "global_batch": 4, "micro_batch": 2},
    "parallel": {"tp": 2, "cp": 2, "pp": 1}
  })");
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

TEST_CASE("ComputeModel: saturating GEMM efficiency, roofline with HBM, memory kernels") {
  stepsim::scenarios::GpuSpec gpu;
  gpu.name = "test";
  gpu.peak_bf16_flops = 1e15;
  gpu.hbm_Bps = 1e12;
  Efficiency e;
  e.gemm_max = 0.5;
  e.gemm_half_flops = 1e9;
  e.attn_max = 0.25;
  e.attn_half_flops = 3e9;
  e.hbm_eff = 0.5;
  e.comm_slowdown = 0.1;
  gpu.efficiency = e;
  const ComputeModel cm(gpu);

  Kernel g;
  g.kind = KernelKind::Gemm;
  g.flops = 1e9;  // at the half point: eff 0.25 -> 4 us
  g.bytes = 1e6;  // 2 us at 0.5 TB/s
  CHECK(cm.time_s(g) == doctest::Approx(4e-6));
  g.bytes = 3e6;  // memory bound: 6 us
  CHECK(cm.time_s(g) == doctest::Approx(6e-6));
  g.bytes = 0;
  g.flops = 1e12;  // (x + half) / (peak max) = 1.001e12 / 5e14
  CHECK(cm.time_s(g) == doctest::Approx(2.002e-3));

  Kernel a;
  a.kind = KernelKind::Attention;
  a.flops = 3e9;  // eff 0.125 -> 24 us
  CHECK(cm.time_s(a) == doctest::Approx(24e-6));

  Kernel m;
  m.kind = KernelKind::Memory;
  m.flops = 1e12;  // ignored
  m.bytes = 1e6;
  CHECK(cm.time_s(m) == doctest::Approx(2e-6));
  CHECK(cm.overlapped_time_s(m) == doctest::Approx(2.2e-6));
  CHECK(cm.time_s(std::vector<Kernel>{g, a, m}) == doctest::Approx(2.002e-3 + 24e-6 + 2e-6));

  gpu.efficiency.gemm_max = 1.5;
  CHECK_THROWS_WITH_AS((void)ComputeModel{gpu}, "efficiency.gemm_max: must lie in (0, 1]", stepsim::ScenarioError);
}

TEST_CASE("GPU efficiency: preset files, default by peak class") {
  const Scenario s = llama70b();
  // H100 80 GB has no measurements of its own: its file is derived from the H100 94 GB fit (same
  // silicon and peak, only the HBM bandwidth differs, which the GPU spec carries).
  const Efficiency& h100 = s.cluster.gpu.efficiency;
  const Efficiency h100_94 = stepsim::scenarios::gpu_preset("h100-sxm-94gb").efficiency;
  CHECK(h100.gemm_max == h100_94.gemm_max);
  CHECK(h100.gemm_half_flops == h100_94.gemm_half_flops);
  CHECK(h100.hbm_eff == h100_94.hbm_eff);
  CHECK(h100.comm_slowdown == h100_94.comm_slowdown);
  CHECK(h100.kind == stepsim::scenarios::EfficiencyKind::Derived);
  CHECK(h100_94.kind == stepsim::scenarios::EfficiencyKind::Fitted);
  CHECK(h100.source == "scenarios/presets/efficiency/h100-sxm-80gb.json");
  CHECK(h100.fit.find("stepsim calibrate --gpu h100-sxm-80gb") == 0);

  const auto names = stepsim::scenarios::efficiency_preset_names();
  CHECK(names == std::vector<std::string>{"a100-sxm-40gb", "a100-sxm-80gb", "b200-180gb", "h100-sxm-80gb",
                                           "h100-sxm-94gb", "h200-sxm-141gb"});
  for (const auto& n : stepsim::scenarios::gpu_preset_names()) {
    CAPTURE(n);
    const Efficiency e = stepsim::scenarios::gpu_preset(n).efficiency;
    CHECK(e.gemm_max >= 0.2);  // stepsim calibrate's bounds
    CHECK(e.gemm_max <= 0.95);
    CHECK(e.kind != stepsim::scenarios::EfficiencyKind::Default);
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
  }

  stepsim::scenarios::GpuSpec custom;
  custom.name = "custom";
  custom.peak_bf16_flops = 312e12;
  custom.hbm_Bps = 2e12;
  Efficiency e = stepsim::scenarios::default_efficiency(custom);
  CHECK(e.kind == stepsim::scenarios::EfficiencyKind::Default);
  CHECK(e.gemm_max == 0.78);
  CHECK(e.gemm_half_flops == doctest::Approx(1.56e9));
  CHECK(e.attn_max == 0.65);
  custom.peak_bf16_flops = 2e15;
  e = stepsim::scenarios::default_efficiency(custom);
  CHECK(e.gemm_max == 0.70);
  CHECK(e.gemm_half_flops == doctest::Approx(1e10));
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
