#pragma once
// Value types every stepsim library speaks. All quantities are SI inside:
// seconds, bytes, FLOP, FLOP/s, bytes/s. Human units (GiB, GB/s, Gb/s, us) appear only in the
// JSON schema (see scenarios/README.md), and are converted once by the loader.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stepsim::scenarios {

enum class MlpKind { SwiGlu, Gelu };
enum class NormKind { RmsNorm, LayerNorm };

// Transformer shape. Llama-family defaults (SwiGLU, RMSNorm, no bias, untied embeddings).
struct ModelSpec {
  std::string name;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t ffn_hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;
  std::int64_t vocab = 0;
  bool tied_embeddings = false;
  MlpKind mlp = MlpKind::SwiGlu;
  NormKind norm = NormKind::RmsNorm;
  bool bias = false;
};

struct GpuSpec {
  std::string name;
  double memory_bytes = 0;        // device memory as the job sees it (GiB in JSON: "memory_gib")
  double peak_bf16_flops = 0;     // dense BF16 FLOP/s ("peak_bf16_tflops")
  double hbm_Bps = 0;             // HBM bandwidth ("hbm_TBps")
  double nvlink_Bps = 0;          // NVLink bandwidth per GPU per direction ("nvlink_GBps")
};

struct IntraNodeSpec {
  double bw_Bps = 0;              // per GPU, per direction, into the NVLink/NVSwitch domain ("bw_GBps")
  double latency_s = 0;           // "latency_us"
};

enum class FabricTopology { RailFatTree, FatTree, SingleSwitch };

struct InterNodeSpec {
  std::int64_t nics_per_node = 0;
  double nic_Bps = 0;             // per NIC per direction ("nic_Gbps", line rate in Gbit/s)
  double latency_s = 0;           // "latency_us"
  FabricTopology topology = FabricTopology::RailFatTree;
  double oversubscription = 1.0;  // leaf-to-spine oversubscription ratio (1 = non-blocking)
};

struct ClusterSpec {
  std::string preset;             // cluster preset name, empty when none
  GpuSpec gpu;
  std::int64_t gpus_per_node = 0;
  std::int64_t nodes = 0;
  // GPUs that share one NVLink/NVSwitch domain: whole consecutive nodes (72 for an NVL72 rack of
  // 18 trays of 4); 0 means one node (gpus_per_node).
  std::int64_t nvlink_domain_gpus = 0;
  IntraNodeSpec intra_node;
  InterNodeSpec inter_node;
  bool ideal_network = false;     // communication takes no time (schedule checks)

  std::int64_t world_size() const { return gpus_per_node * nodes; }
  [[nodiscard]] std::int64_t nvlink_domain_size() const { return nvlink_domain_gpus > 0 ? nvlink_domain_gpus : gpus_per_node; }
};

enum class Recompute { None, Selective, Full };
// Attention kernel: fused FlashAttention (no s x s tensors; Megatron with TransformerEngine), or
// Megatron's unfused path (scores, fused scale-mask-softmax, dropout; the 2021-22 papers' runs).
enum class Attention { Flash, Unfused };

struct TrainingSpec {
  std::int64_t seq_len = 0;
  std::int64_t global_batch = 0;
  std::int64_t micro_batch = 1;
  Recompute recompute = Recompute::None;
  bool grads_in_fp32 = true;                    // "grad_dtype": "fp32" | "bf16"
  Attention attention = Attention::Flash;       // "attention": "flash" | "unfused"
  std::optional<double> train_tokens;           // token budget for time/cost to train
};

enum class Schedule { GPipe, OneFOneB, Interleaved };

struct ParallelSpec {
  std::int64_t tp = 1;
  std::int64_t cp = 1;
  std::int64_t pp = 1;
  std::int64_t dp = 1;                          // derived from the world size when omitted
  std::int64_t vpp = 1;                         // model chunks per stage (interleaved only)
  // Uneven pipelines (Megatron's --decoder-first/last-pipeline-num-layers): layers on the first
  // and last stage; the others share the rest evenly. Unset: every stage holds layers / pp.
  std::optional<std::int64_t> first_stage_layers;
  std::optional<std::int64_t> last_stage_layers;
  Schedule schedule = Schedule::OneFOneB;
  bool sequence_parallel = true;
  bool distributed_optimizer = true;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool tp_comm_overlap = false;                 // TransformerEngine's TP/SP communication overlap (needs SP)
  std::string rank_order = "tp-cp-dp-pp";       // first token varies fastest (Megatron)
};

// Terms the paper leaves to its 80 % margin; each is a scenario field ("memory": {...}).
struct MemorySpec {
  double cuda_context_bytes = 0;                // CUDA context + cuBLAS/cuDNN workspaces
  double nccl_buffer_bytes_per_group = 0;       // NCCL communicator buffers per process group the rank is in
  double fragmentation_fraction = 0;            // caching-allocator reserved/allocated - 1, on dynamic memory
  double usable_fraction = 0.8;                 // paper's 80 % rule
};

struct CostSpec {
  std::optional<double> usd_per_gpu_hour;
};

struct Scenario {
  std::string name;
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelSpec parallel;
  MemorySpec memory;
  CostSpec cost;

  std::int64_t world_size() const { return cluster.world_size(); }
  // Micro-batches per pipeline per step: global_batch / (micro_batch * dp).
  std::int64_t micro_batches() const { return training.global_batch / (training.micro_batch * parallel.dp); }
};

// Transformer layers on pipeline stage `stage` (uneven first/last stages included).
std::int64_t stage_layers(const Scenario& s, std::int64_t stage);

std::string to_string(Schedule s);
std::string to_string(Recompute r);
std::string to_string(Attention a);
std::string to_string(FabricTopology t);

}  // namespace stepsim::scenarios
