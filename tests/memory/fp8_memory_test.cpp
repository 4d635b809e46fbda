#include <doctest/doctest.h>

#include <string>

#include "stepsim/memory/estimator.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/workload/params.hpp"
#include "stepsim/workload/program.hpp"

using namespace stepsim;

namespace {

// h 64, a 4, k 2 (d_h 16), f 128 (SwiGLU), 2 layers, s 32, b 2, t 2, c 2, SP on: n = 32 tokens
// per rank. GEMM weights per layer and rank: 2 h^2 (1 + k/a) / t + 3 h f / t = 18432.
scenarios::Scenario tiny(const std::string& precision, const std::string& extra = "", const std::string& cluster = "dgx-h100") {
  return scenarios::load_scenario_text(R"({
    "model": {"layers": 2, "hidden": 64, "ffn_hidden": 128, "heads": 4, "kv_heads": 2, "vocab": 100},
    "cluster": {"preset": ")" + cluster + R"(", "nodes": 1},
    "training": {"seq_len": 32, "global_batch": 4, "micro_batch": 2, "precision": ")" + precision + "\"" + extra + R"(},
    "parallel": {"tp": 2, "cp": 2, "pp": 1}
  })");
}

std::int64_t term(const memory::StageEstimate& st, const std::string& key) {
  for (const auto& t : st.terms)
    if (t.key == key) return t.bytes;
  FAIL("no term " << key);
  return -1;
}

bool has_term(const memory::StageEstimate& st, const std::string& key) {
  for (const auto& t : st.terms)
    if (t.key == key) return true;
  return false;
}

}  // namespace

TEST_CASE("fp8 weight copies: FP8 weight and transpose per GEMM weight element (MXFP8 with 1/32 scales)") {
  // 2 layers x 18432 elements x 2 copies.
  CHECK(memory::fp8_static_bytes(tiny("fp8-delayed"), 0).weight_copies == 73728);
  CHECK(memory::fp8_static_bytes(tiny("fp8-current"), 0).weight_copies == 73728);
  CHECK(memory::fp8_static_bytes(tiny("mxfp8", "", "dgx-b200"), 0).weight_copies == 76032);  // 73728 x 33/32
  CHECK(memory::fp8_static_bytes(tiny("bf16"), 0).sum() == 0);
}

TEST_CASE("fp8 weight copies on Blackwell: per-tensor scaling keeps no transpose, MXFP8 both orientations") {
  // One FP8 copy per GEMM weight element (2 x 18432); with FP8 parameters that copy is the weight
  // itself: nothing extra.
  CHECK(memory::fp8_static_bytes(tiny("fp8-current", "", "dgx-b200"), 0).weight_copies == 36864);
  CHECK(memory::fp8_static_bytes(tiny("fp8-delayed", "", "dgx-b200"), 0).weight_copies == 36864);
  CHECK(memory::fp8_static_bytes(tiny("fp8-current", R"(, "fp8_params": true)", "dgx-b200"), 0).weight_copies == 0);
  CHECK(memory::fp8_static_bytes(tiny("mxfp8", R"(, "fp8_params": true)", "dgx-b200"), 0).weight_copies == 38016);
  CHECK(memory::fp8_static_bytes(tiny("fp8-current", R"(, "fp8_params": true)"), 0).weight_copies == 36864);  // Hopper
}

TEST_CASE("fp8 scaling state: amax history (delayed), amax and scales (current), none for MXFP8") {
  // 2 layers x 4 GEMMs x 5 tensors x 4 bytes x (1024 history + scale + inverse scale).
  CHECK(memory::fp8_static_bytes(tiny("fp8-delayed"), 0).scaling_state == 2 * 4 * 5 * 4 * 1026);
  CHECK(memory::fp8_static_bytes(tiny("fp8-delayed", R"(, "fp8_amax_history_len": 16)"), 0).scaling_state == 2 * 4 * 5 * 4 * 18);
  CHECK(memory::fp8_static_bytes(tiny("fp8-current"), 0).scaling_state == 2 * 4 * 5 * 4 * 3);
  CHECK(memory::fp8_static_bytes(tiny("mxfp8", "", "dgx-b200"), 0).scaling_state == 0);
}

TEST_CASE("fp8 activations: the saved inputs of the four GEMMs take 1 byte per element") {
  // The QKV and FC1 inputs (n h / t each, SP) and FC2's input (n f / t) are kept in FP8 instead of
  // bf16, one byte less each: 32 x (32 + 32 + 64) = 4096 elements; the projection's FP8 input
  // (n h / t = 1024 elements) is kept beside the attention's bf16 output, one byte more each.
  const double bf16 = workload::layer_program(tiny("bf16")).stored_activation_bytes;
  CHECK(bf16 - workload::layer_program(tiny("fp8-delayed")).stored_activation_bytes == 4096 - 1024);
  // MXFP8: 33/32 bytes per element.
  CHECK(bf16 - workload::layer_program(tiny("mxfp8", "", "dgx-b200")).stored_activation_bytes == 4096 * 31 / 32 - 1024 * 33 / 32);
}

TEST_CASE("fp8 terms appear in the stage breakdown (and the static bytes) only for FP8 runs") {
  const auto b = memory::stepsim_estimate(tiny("bf16"));
  const auto f = memory::stepsim_estimate(tiny("fp8-delayed"));
  CHECK_FALSE(has_term(b.stages[0], "fp8_weights_bytes"));
  CHECK(term(f.stages[0], "fp8_weights_bytes") == 73728);
  CHECK(term(f.stages[0], "fp8_scaling_bytes") == 2 * 4 * 5 * 4 * 1026);
  CHECK(memory::static_bytes(tiny("fp8-delayed"), 0) - memory::static_bytes(tiny("bf16"), 0) == 73728 + 2 * 4 * 5 * 4 * 1026);
  CHECK(term(f.stages[0], "weights_bytes") == term(b.stages[0], "weights_bytes"));
}

TEST_CASE("fp8 parameters: the GEMM weights are kept in FP8 only, the transpose is the one extra copy") {
  // 2 layers x 18432 GEMM elements: the bf16 copy of them (2 bytes each) becomes their FP8 data
  // (1 byte; MXFP8 33/32 with its block scales), and of the two FP8 copies only the transpose stays.
  const auto f = memory::stepsim_estimate(tiny("fp8-delayed"));
  const auto p = memory::stepsim_estimate(tiny("fp8-delayed", R"(, "fp8_params": true)"));
  CHECK(term(p.stages[0], "fp8_weights_bytes") == 36864);
  CHECK(term(f.stages[0], "weights_bytes") - term(p.stages[0], "weights_bytes") == 2 * 36864 - 36864);
  CHECK(p.stages[0].total_bytes == f.stages[0].total_bytes - 2 * 36864);
  const auto mf = memory::stepsim_estimate(tiny("mxfp8", "", "dgx-b200"));
  const auto mp = memory::stepsim_estimate(tiny("mxfp8", R"(, "fp8_params": true)", "dgx-b200"));
  CHECK(term(mp.stages[0], "fp8_weights_bytes") == 38016);  // 36864 x 33/32
  CHECK(term(mf.stages[0], "weights_bytes") - term(mp.stages[0], "weights_bytes") == 2 * 36864 - 38016);
  // Blackwell keeps no transpose of a per-tensor scaled weight: no FP8 copy beside the weights,
  // which still hold the FP8 data of the GEMM weights (1 byte each in place of 2).
  const auto bf = memory::stepsim_estimate(tiny("fp8-current", "", "dgx-b200"));
  const auto bp = memory::stepsim_estimate(tiny("fp8-current", R"(, "fp8_params": true)", "dgx-b200"));
  CHECK(term(bp.stages[0], "fp8_weights_bytes") == 0);
  CHECK(term(bf.stages[0], "weights_bytes") - term(bp.stages[0], "weights_bytes") == 36864);
  CHECK(term(bf.stages[0], "fp8_weights_bytes") == 36864);
  CHECK(bp.stages[0].total_bytes == bf.stages[0].total_bytes - 36864 - 36864);
  CHECK_THROWS_WITH_AS(tiny("bf16", R"(, "fp8_params": true)"),
                       doctest::Contains("training.fp8_params: needs an FP8 precision"), ScenarioError);
}

TEST_CASE("fp8: the MLP's backward working set releases FC2's FP8 input, 1 byte per element") {
  // n f / t = 32 x 128 / 2 = 2048 elements: the gradients of FC2's input (2 bytes) and of FC1's
  // output (2 x 2 bytes) less FC2's released input: 4 x 2048 in bf16, 5 x 2048 in FP8.
  CHECK(workload::layer_program(tiny("bf16")).backward_transient_bytes == 4 * 2048);
  CHECK(workload::layer_program(tiny("fp8-current")).backward_transient_bytes == 5 * 2048);
  // MXFP8: FC2's saved input takes 33/32 bytes per element (its block scales), 6 - 33/32 in all.
  CHECK(workload::layer_program(tiny("mxfp8", "", "dgx-b200")).backward_transient_bytes == 6 * 2048 - 2048 * 33 / 32);
  // GeLU: FC1's output is one half (2 bytes): 2 x 2048 in bf16, 3 x 2048 in FP8.
  const auto gelu = [](const std::string& precision) {
    return scenarios::load_scenario_text(R"({
      "model": {"layers": 2, "hidden": 64, "ffn_hidden": 128, "heads": 4, "kv_heads": 2, "vocab": 100, "mlp": "gelu"},
      "cluster": {"preset": "dgx-h100", "nodes": 1},
      "training": {"seq_len": 32, "global_batch": 4, "micro_batch": 2, "precision": ")" + precision + R"("},
      "parallel": {"tp": 2, "cp": 2, "pp": 1}
    })");
  };
  CHECK(workload::layer_program(gelu("bf16")).backward_transient_bytes == 2 * 2048);
  CHECK(workload::layer_program(gelu("fp8-current")).backward_transient_bytes == 3 * 2048);
}
