// Memory terms of the sharding strategies, the gradient dtype, optimizer offload and Megatron's
// recomputation options, each against a hand-computed value.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "stepsim/memory/estimator.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/workload/kernels.hpp"
#include "stepsim/workload/params.hpp"
#include "stepsim/workload/program.hpp"

using namespace stepsim;

namespace {

// Llama-3.1-8B TP2 (SP), seq 8192, micro-batch 1 on 8 H100 94 GB (4 per node): DP 4, one stage.
scenarios::Scenario llama8b(const std::vector<std::string>& sets) {
  const char* base = R"({"model": "llama-3.1-8b",
    "cluster": {"gpu": "h100-sxm-94gb", "gpus_per_node": 4, "nodes": 2},
    "training": {"seq_len": 8192, "global_batch": 64},
    "parallel": {"tp": 2}})";
  std::vector<scenarios::Override> ov;
  for (const auto& s : sets) ov.push_back(scenarios::parse_override(s));
  return scenarios::load_scenario_text(base, ov);
}

std::int64_t term(const memory::StepsimEstimate& e, const std::string& key) {
  for (const auto& t : e.stages.front().terms)
    if (t.key == key) return t.bytes;
  return -1;  // the sharding has no such term
}

// Parameters of a rank: 32 layers of (2 h^2 (1 + k/a) + 3 h f) / t + 2h, the embedding and the
// output layer (128,256 x 4,096 / 2 each), the final norm (4,096).
constexpr double kLayer = (2.0 * 4096 * 4096 * 1.25 + 3.0 * 4096 * 14336) / 2.0 + 2.0 * 4096;  // 109,060,096
constexpr double kVocabShard = 128256.0 * 4096 / 2;                                            // 262,668,288
constexpr double kP = 32 * kLayer + 2 * kVocabShard + 4096;                                    // 4,015,263,744
constexpr double kSbh = 8192.0 * 4096;                                                         // s b h

std::int64_t b(double x) { return static_cast<std::int64_t>(x); }

}  // namespace

TEST_CASE("sharding: weights, gradients and optimizer state divided over DP x CP as each strategy says") {
  REQUIRE(workload::stage_params(llama8b({}), 0) == kP);
  const auto none = memory::stepsim_estimate(llama8b({"parallel.sharding=none"}));
  CHECK(term(none, "weights_bytes") == b(2 * kP));
  CHECK(term(none, "grads_bytes") == b(4 * kP));
  CHECK(term(none, "optimizer_bytes") == b(12 * kP));
  CHECK(term(none, "distopt_buffer_bytes") == -1);

  const auto zero1 = memory::stepsim_estimate(llama8b({"parallel.sharding=optimizer"}));
  CHECK(term(zero1, "optimizer_bytes") == b(12 * kP / 4));
  CHECK(term(zero1, "grads_bytes") == b(4 * kP));
  // The parameters are gathered in place into the bf16 parameter buffer: no staging bucket.
  CHECK(term(zero1, "distopt_buffer_bytes") == -1);
  CHECK(term(zero1, "grad_bucket_bytes") == -1);
  CHECK(term(zero1, "gathered_params_bytes") == -1);

  const auto zero2 = memory::stepsim_estimate(llama8b({"parallel.sharding=optimizer_grads"}));
  CHECK(term(zero2, "weights_bytes") == b(2 * kP));
  CHECK(term(zero2, "grads_bytes") == b(4 * kP / 4));
  CHECK(term(zero2, "optimizer_bytes") == b(12 * kP / 4));
  CHECK(term(zero2, "grad_bucket_bytes") == b(4 * 40e6));
  CHECK(term(zero2, "gathered_params_bytes") == -1);

  const auto zero3 = memory::stepsim_estimate(llama8b({"parallel.sharding=optimizer_grads_params"}));
  CHECK(term(zero3, "weights_bytes") == b(2 * kP / 4));
  CHECK(term(zero3, "grads_bytes") == b(4 * kP / 4));
  CHECK(term(zero3, "distopt_buffer_bytes") == -1);
  // The largest unit is the output layer and final norm; two of them whole (prefetch) in bf16.
  CHECK(term(zero3, "gathered_params_bytes") == b(2 * (kVocabShard + 4096) * 2));
  const auto zero3_inline = memory::stepsim_estimate(
      llama8b({"parallel.sharding=optimizer_grads_params", "parallel.overlap_param_gather=false"}));
  CHECK(term(zero3_inline, "gathered_params_bytes") == b(2 * (kVocabShard + 4096)));
}

TEST_CASE("CP a2a+p2p: the all-to-all groups and the ring across them are two more NCCL groups") {
  // TP 2 x CP 4 on 8 GPUs: TP, CP and DP x CP; a2a+p2p [2, 2] adds its two groups, [4, 1] the
  // all-to-all groups only; the other types none.
  const std::vector<std::string> cp4{"parallel.cp=4"};
  const auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), cp4.begin(), cp4.end());
    return term(memory::stepsim_estimate(llama8b(more)), "nccl_buffers_bytes");
  };
  CHECK(with({}) == b(3 * 0.5 * memory::kGiB));
  CHECK(with({"parallel.cp_comm_type=a2a"}) == b(3 * 0.5 * memory::kGiB));
  CHECK(with({"parallel.cp_comm_type=a2a+p2p", "parallel.hierarchical_cp_sizes=[2, 2]"}) == b(5 * 0.5 * memory::kGiB));
  CHECK(with({"parallel.cp_comm_type=a2a+p2p", "parallel.hierarchical_cp_sizes=[4, 1]"}) == b(4 * 0.5 * memory::kGiB));
}

TEST_CASE("distributed-optimizer instances: the sharded state divided over DP x CP / N, two more NCCL groups") {
  // DP 4, N = 2: each instance of 2 ranks holds the whole optimizer state, 12 P / 2 per rank.
  const auto one = memory::stepsim_estimate(llama8b({}));
  const auto two = memory::stepsim_estimate(llama8b({"parallel.distributed_optimizer_instances=2"}));
  CHECK(term(two, "optimizer_bytes") == b(12 * kP / 2));
  CHECK(term(two, "grads_bytes") == b(4 * kP));
  CHECK(term(two, "weights_bytes") == b(2 * kP));
  // TP and DP x CP, and with two instances the group within an instance and the one across them.
  CHECK(term(one, "nccl_buffers_bytes") == b(2 * 0.5 * memory::kGiB));
  CHECK(term(two, "nccl_buffers_bytes") == b(4 * 0.5 * memory::kGiB));
  // N = 4: instances of one rank each (no group within), the state whole on every rank.
  const auto four = memory::stepsim_estimate(llama8b({"parallel.distributed_optimizer_instances=4"}));
  CHECK(term(four, "optimizer_bytes") == b(12 * kP));
  CHECK(term(four, "nccl_buffers_bytes") == b(3 * 0.5 * memory::kGiB));
  // ZeRO-3 with two instances: weights and gradients also divided by 2, not 4.
  const auto zero3 = memory::stepsim_estimate(
      llama8b({"parallel.sharding=optimizer_grads_params", "parallel.distributed_optimizer_instances=2"}));
  CHECK(term(zero3, "weights_bytes") == b(2 * kP / 2));
  CHECK(term(zero3, "grads_bytes") == b(4 * kP / 2));
  // The paper's formula knows one instance.
  CHECK(memory::paper_estimate(llama8b({"parallel.distributed_optimizer_instances=2"})).optimizer_bytes ==
        memory::paper_estimate(llama8b({})).optimizer_bytes);
  // Errors name the field.
  CHECK_THROWS_WITH_AS((void)llama8b({"parallel.distributed_optimizer_instances=3"}),
                       "parallel.distributed_optimizer_instances: distributed_optimizer_instances=3 does not divide DP x CP (4)",
                       stepsim::ScenarioError);
  CHECK_THROWS_WITH_AS((void)llama8b({"parallel.distributed_optimizer_instances=2", "parallel.sharding=none"}),
                       "parallel.distributed_optimizer_instances: distributed_optimizer_instances=2 needs a sharded optimizer "
                       "(sharding not \"none\")",
                       stepsim::ScenarioError);
  CHECK_THROWS_AS((void)llama8b({"parallel.distributed_optimizer_instances=0"}), stepsim::ScenarioError);
}

TEST_CASE("sharding: the paper's formula stays the paper's (it knows only the optimizer sharding)") {
  const auto zero1 = memory::paper_estimate(llama8b({"parallel.sharding=optimizer"}));
  for (const char* strategy : {"optimizer_grads", "optimizer_grads_params"}) {
    const auto e = memory::paper_estimate(llama8b({std::string("parallel.sharding=") + strategy}));
    CHECK(e.bytes_per_param == 2.0 + 4.0 + 12.0 / 4.0);
    CHECK(e.total_bytes == zero1.total_bytes);
  }
  CHECK(memory::paper_estimate(llama8b({"parallel.sharding=none"})).bytes_per_param == 18.0);
}

TEST_CASE("grad_dtype bf16 halves the main gradients, offload moves a fraction of the optimizer state to the host") {
  const auto e = memory::stepsim_estimate(llama8b({"training.grad_dtype=bf16", "parallel.sharding=optimizer_grads"}));
  CHECK(term(e, "grads_bytes") == b(2 * kP / 4));
  CHECK(term(e, "grad_bucket_bytes") == b(2 * 40e6));
  const auto off = memory::stepsim_estimate(llama8b({"training.optimizer_offload_fraction=0.25"}));
  CHECK(term(off, "optimizer_bytes") == b(12 * kP * 0.75 / 4));
  CHECK(term(memory::stepsim_estimate(llama8b({"training.optimizer_offload_fraction=1"})), "optimizer_bytes") == 0);
}

TEST_CASE("selective recomputation of named modules: each drops its stored tensors and re-runs its kernels") {
  // Without recomputation a layer stores 34 sbh / t (flash attention, SP): norm inputs and outputs
  // 2 x 4 sbh / t, attention (4 + 4 k/a) sbh / t = 5 sbh / t, MLP 6 sbf / t = 21 sbh / t (FC1's
  // output, the fused SwiGLU's input, 4 sbf / t; FC2's input 2 sbf / t). The MLP's backward holds
  // 4 sbf / t = 14 sbh / t of gradients beyond them.
  const double ws = 34 * kSbh / 2, grads = 14 * kSbh / 2;
  CHECK(workload::layer_program(llama8b({})).stored_activation_bytes == ws);
  CHECK(workload::layer_program(llama8b({"training.recompute=selective"})).stored_activation_bytes == ws);  // core_attn: nothing with flash
  const auto mlp = workload::layer_program(llama8b({"training.recompute=selective", R"(training.recompute_modules=["mlp"])"}));
  CHECK(mlp.stored_activation_bytes == ws - 21 * kSbh / 2);
  // The recomputed MLP's tensors live again during its backward, beside the gradients.
  CHECK(mlp.backward_transient_bytes == 21 * kSbh / 2 + grads);
  const auto norm = workload::layer_program(llama8b({"training.recompute=selective", R"(training.recompute_modules=["layernorm"])"}));
  CHECK(norm.stored_activation_bytes == ws - 4 * kSbh / 2);
  const auto both = workload::layer_program(
      llama8b({"training.recompute=selective", R"(training.recompute_modules=["layernorm", "mlp", "core_attn"])"}));
  CHECK(both.stored_activation_bytes == 9 * kSbh / 2);
  // ... and the second norm's output (FC1's input, 2 sbh / t) with the norms recomputed.
  CHECK(both.backward_transient_bytes == 21 * kSbh / 2 + 2 * kSbh / 2 + grads);

  // Re-run kernels: the MLP's FC1, activation and FC2 (and the MLP's all-gather and reduce-scatter
  // again under SP); the norms.
  std::vector<std::string> names;
  for (const auto& k : mlp.recompute) names.push_back(k.name);
  CHECK(names == std::vector<std::string>{"fc1.fprop", "swiglu.fwd", "fc2.fprop"});
  // FC1 2 n (2f/t) h + FC2 2 n h (f/t), n = 8192, t = 2.
  CHECK(workload::total_flops(mlp.recompute) == 2.0 * 8192 * 14336 * 4096 + 2.0 * 8192 * 4096 * 7168);
  CHECK(workload::total_model_flops(mlp.recompute) == 0);
  double ag = 0, rs = 0;
  for (const auto& c : mlp.backward.collectives) {
    if (c.collective == workload::Collective::AllGather) ag += c.count;
    if (c.collective == workload::Collective::ReduceScatter) rs += c.count;
  }
  CHECK(ag == 5);
  CHECK(rs == 3);
  names.clear();
  for (const auto& k : norm.recompute) names.push_back(k.name);
  CHECK(names == std::vector<std::string>{"norm1.fwd", "norm2.fwd"});
}

TEST_CASE("full recomputation: uniform groups and block layers, their stored bytes, working set and FLOPs") {
  // A layer's working set 34 sbh / t; its MLP's backward adds 14 sbh / t of gradients (see above).
  const double ws = 34 * kSbh / 2, input = 2 * kSbh / 2, grads = 14 * kSbh / 2;
  const double layer_flops = workload::total_flops(workload::layer_forward(llama8b({})));
  const auto sum = [](const workload::StepProgram& p, auto field) {
    double x = 0;
    for (const auto& l : p.layers) x += field(*l);
    return x;
  };
  const auto stored = [](const workload::LayerProgram& l) { return l.stored_activation_bytes; };
  const auto rec_flops = [](const workload::LayerProgram& l) { return workload::total_flops(l.recompute); };

  // Uniform, groups of 4 of the 32 layers: 8 inputs stored, one group's 4 layers rebuilt at once.
  const auto u = llama8b({"training.recompute=full", "training.recompute_num_layers=4"});
  const auto up = workload::step_program(u);
  CHECK(sum(up, stored) == 8 * input);
  CHECK(memory::chunk_backward_transient_bytes(up, 0, 0) == b(4 * ws + grads));
  CHECK(sum(up, rec_flops) == 32 * layer_flops);
  // Groups of 5: six of 5 and a last one of 2.
  const auto u5 = workload::step_program(llama8b({"training.recompute=full", "training.recompute_num_layers=5"}));
  CHECK(sum(u5, stored) == 7 * input);
  CHECK(u5.layers[30]->backward_transient_bytes == 2 * ws + grads);

  // Block, 4 layers: those 4 store their input, the other 28 everything; 4 layers re-run.
  const auto k = llama8b({"training.recompute=full", "training.recompute_method=block", "training.recompute_num_layers=4"});
  const auto kp = workload::step_program(k);
  CHECK(sum(kp, stored) == 4 * input + 28 * ws);
  CHECK(memory::chunk_backward_transient_bytes(kp, 0, 0) == b(ws + grads));
  CHECK(sum(kp, rec_flops) == 4 * layer_flops);
  // One stage is also the loss's: its backward first releases the output layer's fp32 logits,
  // 4 sbh/t (1 + v/h) = 2.17 GB, and the bf16 copy of their gradient, 2 s v / t = 1.05 GB, is
  // larger than the working set: no bytes beyond that copy.
  CHECK(term(memory::stepsim_estimate(k), "recompute_bytes") == 0);
  // Two stages: the first holds the working set on top of its activations.
  const auto k2 = llama8b({"training.recompute=full", "training.recompute_method=block", "training.recompute_num_layers=4", "parallel.pp=2"});
  CHECK(term(memory::stepsim_estimate(k2), "recompute_bytes") == b(ws + grads));

  // The default (uniform, 1 layer) is the per-layer checkpoint of before.
  const auto one = workload::step_program(llama8b({"training.recompute=full"}));
  CHECK(sum(one, stored) == 32 * input);
  CHECK(memory::chunk_backward_transient_bytes(one, 0, 0) == b(ws + grads));
}

TEST_CASE("library workspaces in torch's allocator: cuBLAS and cuBLASLt 32 MiB each, TransformerEngine's 32 MiB from Hopper on, 4 MiB on Ampere") {
  constexpr std::int64_t kMiB = 1024 * 1024;
  CHECK(term(memory::stepsim_estimate(llama8b({})), "workspaces_bytes") == (32 + 32 + 32) * kMiB);  // H100
  CHECK(term(memory::stepsim_estimate(llama8b({"cluster.gpu=a100-sxm-80gb"})), "workspaces_bytes") == (32 + 32 + 4) * kMiB);
  // Userbuffers TP overlap: TransformerEngine's workspace three times (initialize_ub).
  CHECK(term(memory::stepsim_estimate(llama8b({"parallel.tp=2", "parallel.tp_comm_overlap=true"})), "workspaces_bytes") ==
        (32 + 32 + 3 * 32) * kMiB);
  CHECK(term(memory::stepsim_estimate(llama8b({"cluster.gpu=a100-sxm-80gb", "parallel.tp=2", "parallel.tp_comm_overlap=true"})),
             "workspaces_bytes") == (32 + 32 + 3 * 4) * kMiB);
  // memory.workspaces_mib replaces the default (CUBLAS_WORKSPACE_CONFIG=:16:8 would give 2 x 64 KiB + 32 MiB).
  CHECK(term(memory::stepsim_estimate(llama8b({"memory.workspaces_mib=32.125"})), "workspaces_bytes") == 32 * kMiB + 128 * 1024);
  CHECK(term(memory::stepsim_estimate(llama8b({"memory.workspaces_mib=0"})), "workspaces_bytes") == 0);
}
