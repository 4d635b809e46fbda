#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kernels.hpp"
#include "stepsim/costmodel/compute.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/workload/kernels.hpp"
#include "stepsim/workload/params.hpp"

namespace {

using stepsim::costmodel::ComputeModel;
using stepsim::workload::Kernel;
using stepsim::workload::KernelKind;
using stepsim::scenarios::Scenario;
using test_support::find;
using test_support::has;

// h 64, a 4, k 2 (d_h 16), f 128 (SwiGLU), s 32, b 2, t 2, c 2, SP on, 8 GPUs: dp 2, one
// micro-batch per step. n = s b / c = 32 tokens per rank, n_sp = n / t = 16.
Scenario tiny(const std::string& precision, const std::string& gpu = "dgx-h100") {
  return stepsim::scenarios::load_scenario_text(R"({
    "model": {"layers": 2, "hidden": 64, "ffn_hidden": 128, "heads": 4, "kv_heads": 2, "vocab": 100},
    "cluster": {"preset": ")" + gpu + R"(", "nodes": 1},
    "training": {"seq_len": 32, "global_batch": 4, "micro_batch": 2, "precision": ")" + precision + R"("},
    "parallel": {"tp": 2, "cp": 2, "pp": 1}
  })");
}

}  // namespace

TEST_CASE("fp8: the layers' GEMMs take 1-byte operands and write bf16, attention and logits stay bf16") {
  const Scenario s = tiny("fp8-delayed");
  const auto fwd = stepsim::workload::layer_forward(s);
  const auto bwd = stepsim::workload::layer_backward(s);
  // qkv.fprop: m 32, n (4 + 2 x 2) 16 / 2 = 64, k 64: mk + kn + 2 mn = 2048 + 4096 + 4096.
  const Kernel& qkv = find(fwd, "qkv.fprop");
  CHECK(qkv.fp8);
  CHECK(qkv.bytes == 10240);
  CHECK(qkv.flops == 2.0 * 32 * 64 * 64);
  // fc2.wgrad: m f/t 64, n h 64, k n 32, accumulated into the fp32 main gradient:
  // (mk + kn) + 2 x 4 mn = 4096 + 32768.
  const Kernel& w = find(bwd, "fc2.wgrad");
  CHECK(w.fp8);
  CHECK(w.bytes == 36864);
  CHECK_FALSE(find(fwd, "attn.fwd").fp8);
  CHECK_FALSE(find(stepsim::workload::output_forward(s), "logits.fprop").fp8);
  for (const Kernel& k : fwd) CHECK_FALSE((k.kind == KernelKind::Memory && k.fp8));
  // bf16 keeps 2-byte operands and no FP8 kernels.
  const Scenario b = tiny("bf16");
  const auto fwd16 = stepsim::workload::layer_forward(b);
  CHECK_FALSE(find(fwd16, "qkv.fprop").fp8);
  CHECK(find(fwd16, "qkv.fprop").bytes == 2.0 * (2048 + 4096 + 2048));
  CHECK_FALSE(has(fwd16, "proj.input_cast"));
  CHECK_FALSE(has(fwd16, "fp8.weight_cast"));
  // Model FLOPs do not depend on the precision.
  CHECK(stepsim::workload::total_model_flops(fwd) == stepsim::workload::total_model_flops(fwd16));
}

// The forward and backward kernels of one layer of `s`, and the bytes per element of its proj
// input cast (n x a d_h / t = 32 x 32 elements) and its FC2 output-gradient cast (n x h = 32 x 64).
struct LayerKernels {
  std::vector<Kernel> fwd, bwd;
  explicit LayerKernels(const Scenario& s) : fwd(stepsim::workload::layer_forward(s)), bwd(stepsim::workload::layer_backward(s)) {}
  [[nodiscard]] double input_cast_per_elem() const { return find(fwd, "proj.input_cast").bytes / 1024.0; }
  [[nodiscard]] double grad_cast_per_elem() const { return find(bwd, "fc2.grad_cast").bytes / 2048.0; }
};

TEST_CASE("fp8 quantization kernels: delayed, current (amax pass, unfused norm) and MXFP8 (block scales, no transposes)") {
  SUBCASE("delayed: cast read 2 write 1; grad cast + transpose read 2 write 2; input transpose read 1 write 1") {
    const Scenario s = tiny("fp8-delayed");
    const LayerKernels l(s);
    CHECK(l.input_cast_per_elem() == 3.0);
    CHECK(l.grad_cast_per_elem() == 4.0);
    CHECK(find(l.bwd, "fc2.input_t").bytes == 2.0 * 32 * 64);  // FC2 input n x f / t
    // The norm writes the FP8 QKV input itself: read 2 n_sp h, write 1 n_sp h, fp32 rstd, weights.
    CHECK(find(l.fwd, "norm1.fwd").bytes == 3.0 * 16 * 64 + 4.0 * 16 + 2.0 * 64);
    CHECK_FALSE(has(l.fwd, "qkv.input_cast"));
    // Weights cast once per step (one micro-batch here): read 2, write FP8 and its transpose, of
    // 2 h^2 (1 + k/a) / t + 3 h f / t = 6144 + 12288 elements.
    CHECK(stepsim::workload::layer_gemm_weights(s) == 18432);
    CHECK(find(l.fwd, "fp8.weight_cast").bytes == 4.0 * 18432);
  }
  SUBCASE("current: an amax read of the bf16 tensor before every cast; the norm writes bf16") {
    const LayerKernels l(tiny("fp8-current"));
    CHECK(l.input_cast_per_elem() == 5.0);
    CHECK(l.grad_cast_per_elem() == 6.0);
    CHECK(find(l.fwd, "norm1.fwd").bytes == 4.0 * 16 * 64 + 4.0 * 16 + 2.0 * 64);
    CHECK(find(l.fwd, "qkv.input_cast").bytes == 5.0 * 16 * 64);
  }
  SUBCASE("mxfp8: row- and column-wise copies with one scale byte per 32 elements, no backward transposes") {
    const LayerKernels l(tiny("mxfp8", "dgx-b200"));
    CHECK(l.input_cast_per_elem() == doctest::Approx(2.0 + 2.0 * 33.0 / 32.0));
    CHECK(l.grad_cast_per_elem() == doctest::Approx(2.0 + 2.0 * 33.0 / 32.0));
    CHECK_FALSE(has(l.bwd, "fc2.input_t"));
  }
}

TEST_CASE("fp8 full recomputation re-runs the forward without casting the weights again") {
  auto s = tiny("fp8-delayed");
  s.training.recompute = stepsim::scenarios::Recompute::Full;
  const auto re = stepsim::workload::layer_recompute(s);
  CHECK(has(re, "proj.input_cast"));
  CHECK_FALSE(has(re, "fp8.weight_cast"));
}

TEST_CASE("fp8 GEMMs run at the FP8 ceiling times gemm_fp8_max (gemm_max when not given)") {
  stepsim::scenarios::GpuSpec gpu;
  gpu.name = "test";
  gpu.peak_bf16_flops = 1e15;
  gpu.matmul_bf16_flops = 8e14;
  gpu.peak_fp8_flops = 2e15;  // no FP8 matmul figure: 2e15 x 8e14 / 1e15 = 1.6e15
  gpu.hbm_Bps = 3e12;
  gpu.sms = 100;
  gpu.gemm_tile_m = 128;
  gpu.gemm_tile_n = 256;
  gpu.efficiency = stepsim::scenarios::default_efficiency(gpu);
  gpu.efficiency.gemm_max = 0.5;
  Kernel g;
  g.kind = KernelKind::Gemm;
  g.m = g.n = g.k = 4096;
  g.flops = 2.0 * 4096 * 4096 * 4096;
  g.bytes = 4096.0 * 4096 * 4;
  g.fp8 = true;
  // 32 x 16 = 512 tiles in ceil(512 / 100) = 6 waves of 2 x 128 x 256 x 4096 FLOPs per SM.
  const double per_sm_flops = 6.0 * 2.0 * 128 * 256 * 4096;
  CHECK(ComputeModel(gpu, {}).gemm_rate_flops(g) == doctest::Approx(1.6e15 * 0.5));
  CHECK(ComputeModel(gpu, {}).gemm_time_s(g) == doctest::Approx(per_sm_flops / (1.6e15 * 0.5 / 100)));
  gpu.efficiency.gemm_fp8_max = 0.75;
  CHECK(ComputeModel(gpu, {}).gemm_time_s(g) == doctest::Approx(per_sm_flops / (1.6e15 * 0.75 / 100)));
  g.fp8 = false;
  CHECK(ComputeModel(gpu, {}).gemm_time_s(g) == doctest::Approx(per_sm_flops / (8e14 * 0.5 / 100)));
  // A GPU without FP8 tensor cores cannot run an FP8 GEMM.
  g.fp8 = true;
  gpu.peak_fp8_flops = 0;
  CHECK_THROWS_AS((void)ComputeModel(gpu, {}).gemm_time_s(g), stepsim::ScenarioError);
  gpu.peak_fp8_flops = 2e15;
  gpu.efficiency.gemm_fp8_max = 1.5;
  CHECK_THROWS_WITH_AS((void)ComputeModel(gpu, {}), "efficiency.gemm_fp8_max: must lie in (0, 1]", stepsim::ScenarioError);
}

TEST_CASE("fp8 shortens the step's compute: an FP8 layer is faster than a bf16 one on H100 (llama-3.1-70b shapes)") {
  const auto load = [](const std::string& precision) {
    return stepsim::scenarios::load_scenario_text(R"({
      "model": "llama-3.1-70b", "cluster": {"preset": "dgx-h100", "nodes": 16},
      "training": {"seq_len": 8192, "global_batch": 128, "micro_batch": 1, "precision": ")" + precision + R"("},
      "parallel": {"tp": 8, "cp": 1, "pp": 2}
    })");
  };
  const Scenario b = load("bf16"), f = load("fp8-delayed");
  const ComputeModel cb(b.cluster.gpu, b.software), cf(f.cluster.gpu, f.software);
  const double tb = cb.time_s(stepsim::workload::layer_forward(b)) + cb.time_s(stepsim::workload::layer_backward(b));
  const double tf = cf.time_s(stepsim::workload::layer_forward(f)) + cf.time_s(stepsim::workload::layer_backward(f));
  CHECK(tf < tb);
  CHECK(tf > 0.5 * tb);  // the attention core and the memory-bound kernels stay as they are
}
