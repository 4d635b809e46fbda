#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "stepsim/costmodel/compute.hpp"
#include "stepsim/workload/kernels.hpp"
#include "stepsim/workload/shape.hpp"
#include "stepsim/scenarios/load.hpp"

namespace {

using stepsim::workload::Kernel;
using stepsim::workload::KernelKind;
using stepsim::scenarios::Scenario;

// A small GPT case computed by hand: h 64, a 4 (d_h 16), f 256, s 32, b 2, t 2, c 1.
// Per rank: a batch of b a / t = 4 products, 32 query rows, 32 keys, 4 x 32 x 32 = 4096 scores.
Scenario tiny_gpt(const std::string& attention, const std::string& recompute) {
  return stepsim::scenarios::load_scenario_text(R"({
    "model": {"layers": 2, "hidden": 64, "ffn_hidden": 256, "heads": 4, "kv_heads": 4, "vocab": 100,
              "mlp": "gelu", "norm": "layernorm", "bias": true, "tied_embeddings": true},
    "cluster": {"preset": "dgx-a100", "nodes": 1},
    "training": {"seq_len": 32, "global_batch": 8, "micro_batch": 2, "attention": ")" +
                                                attention + R"(", "recompute": ")" + recompute + R"("},
    "parallel": {"tp": 2, "cp": 1, "pp": 1, "dp": 4, "sequence_parallel": true}
  })");
}

// The same shapes with a Llama layer (SwiGLU, RMSNorm): no attention dropout.
Scenario tiny_llama_unfused() {
  return stepsim::scenarios::load_scenario_text(R"({
    "model": {"layers": 2, "hidden": 64, "ffn_hidden": 128, "heads": 4, "kv_heads": 4, "vocab": 100},
    "cluster": {"preset": "dgx-a100", "nodes": 1},
    "training": {"seq_len": 32, "global_batch": 8, "micro_batch": 2, "attention": "unfused"},
    "parallel": {"tp": 2, "cp": 1, "pp": 1, "dp": 4}
  })");
}

using test_support::find;
using test_support::has;

std::vector<std::string> names(const std::vector<Kernel>& ks) {
  std::vector<std::string> out;
  for (const Kernel& k : ks) out.push_back(k.name);
  return out;
}

}  // namespace

TEST_CASE("unfused attention forward: scores, softmax, dropout, P V, output copy, by hand") {
  const auto fwd = stepsim::workload::layer_forward(tiny_gpt("unfused", "none"));
  CHECK_FALSE(has(fwd, "attn.fwd"));
  const Kernel& scores = find(fwd, "attn.scores.fprop");
  CHECK(scores.kind == KernelKind::Gemm);
  CHECK(scores.m == 32);
  CHECK(scores.n == 32);
  CHECK(scores.k == 16);
  CHECK(scores.flops == 4.0 * 2 * 32 * 32 * 16);                  // 131072: full s x s, not causal-halved
  CHECK(scores.model_flops == 65536);                             // the causal count
  CHECK(scores.bytes == 4.0 * 2 * (32 * 16 + 16 * 32 + 32 * 32));  // 16384
  const Kernel& softmax = find(fwd, "attn.softmax.fwd");
  CHECK(softmax.kind == KernelKind::Memory);
  CHECK(softmax.flops == 0);
  CHECK(softmax.bytes == 4.0 * 4096);
  CHECK(find(fwd, "attn.dropout.fwd").bytes == 5.0 * 4096);
  const Kernel& pv = find(fwd, "attn.pv.fprop");
  CHECK(pv.m == 32);
  CHECK(pv.n == 16);
  CHECK(pv.k == 32);
  CHECK(pv.flops == 131072);
  CHECK(pv.bytes == 4.0 * 2 * (32 * 32 + 32 * 16 + 32 * 16));
  CHECK(find(fwd, "attn.context.copy").bytes == 4.0 * 64 * 4 * 16 / 2);  // n = 64 tokens, a d_h / t = 32
}

TEST_CASE("unfused attention backward: four batched GEMMs and the softmax and dropout passes") {
  const auto bwd = stepsim::workload::layer_backward(tiny_gpt("unfused", "none"));
  CHECK_FALSE(has(bwd, "attn.bwd"));
  for (const char* n : {"attn.pv.dgrad", "attn.pv.wgrad", "attn.scores.dgrad_q", "attn.scores.dgrad_k"}) {
    CAPTURE(n);
    CHECK(find(bwd, n).kind == KernelKind::Gemm);
    CHECK(find(bwd, n).flops == 131072);
    CHECK(find(bwd, n).model_flops == 65536);
  }
  const Kernel& dv = find(bwd, "attn.pv.wgrad");
  CHECK(dv.m == 32);
  CHECK(dv.n == 16);
  CHECK(dv.k == 32);
  CHECK(find(bwd, "attn.dropout.bwd").bytes == 5.0 * 4096);
  CHECK(find(bwd, "attn.softmax.bwd").bytes == 6.0 * 4096);
  CHECK(find(bwd, "attn.context.copy_bwd").bytes == 8192);
}

TEST_CASE("unfused attention keeps the layer's model FLOPs and doubles the attention core's executed FLOPs") {
  const auto flash = tiny_gpt("flash", "none");
  const auto unfused = tiny_gpt("unfused", "none");
  using stepsim::workload::total_flops;
  using stepsim::workload::total_model_flops;
  CHECK(total_model_flops(stepsim::workload::layer_forward(unfused)) ==
        total_model_flops(stepsim::workload::layer_forward(flash)));
  CHECK(total_model_flops(stepsim::workload::layer_backward(unfused)) ==
        total_model_flops(stepsim::workload::layer_backward(flash)));
  // flash forward core: 2 b s^2 a d_h / t = 131072; unfused executes QK^T and P V in full: 262144.
  CHECK(total_flops(stepsim::workload::layer_forward(unfused)) -
            total_flops(stepsim::workload::layer_forward(flash)) ==
        131072);
  // backward: flash 2.5 x 131072, unfused 4 x 131072.
  CHECK(total_flops(stepsim::workload::layer_backward(unfused)) -
            total_flops(stepsim::workload::layer_backward(flash)) ==
        1.5 * 131072);
}

TEST_CASE("selective recomputation re-runs the unfused attention forward") {
  const auto rec = stepsim::workload::layer_recompute(tiny_gpt("unfused", "selective"));
  CHECK(names(rec) == std::vector<std::string>{"attn.scores.fprop", "attn.softmax.fwd", "attn.dropout.fwd",
                                               "attn.pv.fprop", "attn.context.copy"});
  CHECK(stepsim::workload::total_model_flops(rec) == 0);
  CHECK(stepsim::workload::total_flops(rec) == 262144);
  CHECK(stepsim::workload::layer_recompute(tiny_gpt("unfused", "none")).empty());
}

TEST_CASE("unfused attention without dropout for Llama layers") {
  const auto s = tiny_llama_unfused();
  CHECK_FALSE(has(stepsim::workload::layer_forward(s), "attn.dropout.fwd"));
  CHECK_FALSE(has(stepsim::workload::layer_backward(s), "attn.dropout.bwd"));
  CHECK(has(stepsim::workload::layer_forward(s), "attn.softmax.fwd"));
}

TEST_CASE("unfused attention is slower than fused on the same layer") {
  const auto flash = tiny_gpt("flash", "selective");
  const auto unfused = tiny_gpt("unfused", "selective");
  const stepsim::costmodel::ComputeModel cm(flash.cluster.gpu, flash.software);
  CHECK(cm.time_s(stepsim::workload::layer_forward(unfused)) > cm.time_s(stepsim::workload::layer_forward(flash)));
  CHECK(cm.time_s(stepsim::workload::layer_recompute(unfused)) > cm.time_s(stepsim::workload::layer_recompute(flash)));
}
