#pragma once
// Value types every stepsim library speaks. All quantities are SI inside:
// seconds, bytes, FLOP, FLOP/s, bytes/s. Human units (GiB, GB/s, Gb/s, us) appear only in the
// JSON schema (see scenarios/README.md), and are converted once by the loader.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/scenarios/layout.hpp"
#include "stepsim/scenarios/names.hpp"
#include "stepsim/scenarios/params.hpp"

namespace stepsim::scenarios {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

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
  bool qk_norm = false;  // a norm over the head dimension of each query and key head (Megatron --qk-layernorm)
};

// Where a GPU's efficiency parameters come from: a fit to measured runs (`stepsim calibrate`), a
// derivation from another GPU's fit, or the built-in default curve (default_efficiency).
enum class EfficiencyKind { Fitted, Derived, Default };

// Parameters of the compute model for one GPU type (costmodel/compute.hpp says how they enter the
// kernel times), with their provenance: fractions of the GPU's published ceilings that the
// training kernels reach. JSON: "cluster.gpu.efficiency", an object or the path of an efficiency
// file; presets read scenarios/presets/efficiency/<gpu>.json.
struct Efficiency {
  double gemm_max = 0;         // fraction of the maximum achievable matmul throughput (matmul_bf16_flops) at full tiles and waves
  double attn_max = 0;         // fraction of the attention kernel's published throughput
  double hbm_eff = 0;          // fraction of HBM bandwidth reached by memory-bound kernels
  double comm_slowdown = 0;    // compute slowdown while communication kernels run alongside (SM sharing)
  // Fraction of the FP8 matmul ceiling (matmul_fp8_flops) that the FP8 GEMMs reach; 0: not given,
  // the FP8 GEMMs reach gemm_max as the BF16 ones do (fp8_gemm_fraction()).
  double gemm_fp8_max = 0;
  EfficiencyKind kind = EfficiencyKind::Default;
  std::string source;          // the file it came from, the scenario field, or "built-in ..."
  std::string fit;             // the fit record of its file ("source" key), empty when none
  std::vector<std::string> fitted;  // the parameters its fits set ("fitted" key, comma-separated), in efficiency_parameter_names() order

  [[nodiscard]] double fp8_gemm_fraction() const { return gemm_fp8_max > 0 ? gemm_fp8_max : gemm_max; }
};

// The parameters of Efficiency that stepsim calibrate fits, in the order of the struct.
inline const std::vector<std::string>& efficiency_parameter_names() {
  static const std::vector<std::string> names{"gemm_max", "gemm_fp8_max", "attn_max", "hbm_eff", "comm_slowdown"};
  return names;
}

// GPU architecture: which published attention-kernel figures apply (scenarios/presets/kernels/).
enum class GpuArchitecture { Unknown, Ampere, Hopper, Blackwell };

struct GpuSpec {
  std::string name;
  double memory_bytes = 0;        // device memory as the job sees it (GiB in JSON: "memory_gib")
  double peak_bf16_flops = 0;     // dense BF16 FLOP/s ("peak_bf16_tflops")
  double matmul_bf16_flops = 0;   // published maximum achievable BF16 matmul FLOP/s ("matmul_bf16_tflops"; the peak when absent)
  double peak_fp8_flops = 0;      // dense FP8 FLOP/s ("peak_fp8_tflops"); 0: no FP8 tensor cores
  // Maximum achievable FP8 matmul FLOP/s ("matmul_fp8_tflops"); when absent the FP8 peak times the
  // BF16 ratio matmul_bf16_flops / peak_bf16_flops.
  double matmul_fp8_flops = 0;
  double hbm_Bps = 0;             // HBM bandwidth ("hbm_TBps")
  double nvlink_Bps = 0;          // NVLink bandwidth per GPU per direction ("nvlink_GBps")
  std::int64_t sms = 0;           // streaming multiprocessors; 0: unknown (no wave quantization)
  std::int64_t gemm_tile_m = 0;   // GEMM output tile of the kernel library (the transposed tile is also tried);
  std::int64_t gemm_tile_n = 0;   // 0: no tile quantization
  // A square output tile the library falls back to where the large one leaves SMs idle, and its
  // throughput per SM relative to the large tile's; 0: none.
  std::int64_t gemm_small_tile = 0;
  double gemm_small_tile_efficiency = 1.0;
  // A fixed cost per output tile (its prologue, epilogue and pipeline fill), as that many more
  // elements of the contraction dimension K.
  double gemm_k_overhead = 0;
  GpuArchitecture architecture = GpuArchitecture::Unknown;
  Efficiency efficiency;          // "efficiency": the compute model's curves for this GPU
};

// The efficiency of a GPU without efficiency data: the published ceilings themselves (gemm_max and
// attn_max 1), HBM at 0.85, SM sharing 0.05. Kind Default.
[[nodiscard]] Efficiency default_efficiency(const GpuSpec& gpu);

struct IntraNodeSpec {
  double bw_Bps = 0;              // per GPU, per direction, into the NVLink/NVSwitch domain ("bw_GBps")
  double latency_s = 0;           // "latency_us"
  // The NVLink domain is switched (NVSwitch: NVLS possible); false for NVLink bridges (H100/H200 NVL).
  bool nvswitch = true;
  // Per GPU, per direction, between the NVLink domains of one node (PCIe through the host; used
  // only when the NVLink domain is smaller than the node) ("pcie_GBps").
  double pcie_Bps = 0;
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
  // 18 trays of 4), or consecutive GPUs of one node joined by NVLink bridges (4 of the 8 GPUs of an
  // H200 NVL server); 0 means one node (gpus_per_node).
  std::int64_t nvlink_domain_gpus = 0;
  IntraNodeSpec intra_node;
  InterNodeSpec inter_node;
  bool ideal_network = false;     // communication takes no time (schedule checks)

  [[nodiscard]] std::int64_t world_size() const { return gpus_per_node * nodes; }
  [[nodiscard]] std::int64_t nvlink_domain_size() const { return nvlink_domain_gpus > 0 ? nvlink_domain_gpus : gpus_per_node; }
  // GPUs of what NCCL treats as one node: the NVLink domain when it spans nodes (multi-node
  // NVLink), else the node.
  [[nodiscard]] std::int64_t comm_node_size() const { return std::max(nvlink_domain_size(), gpus_per_node); }
};

enum class Recompute { None, Selective, Full };
// Megatron's --recompute-method under full recomputation: uniform checkpoints groups of
// recompute_num_layers layers of every model chunk (each group keeps its input, its backward
// re-runs the whole group); block recomputes the first recompute_num_layers layers of every chunk
// (one checkpoint each) and stores the others' activations.
enum class RecomputeMethod { Uniform, Block };
// Megatron's --recompute-modules under selective recomputation (the dense-model ones).
struct RecomputeModules {
  bool core_attn = true;   // the attention core (its s x s tensors when unfused)
  bool mlp = false;        // the whole MLP (FC1, activation, FC2) from its input
  bool layernorm = false;  // the two norms (their outputs, the QKV and FC1 inputs, are not stored)
  bool operator==(const RecomputeModules&) const = default;
};
// Precision of the transformer layers' GEMMs, as TransformerEngine runs them: BF16, or FP8 with
// per-tensor delayed scaling (scales from an amax history), per-tensor current scaling (an amax
// pass before every cast), or MXFP8 (one E8M0 scale per 32 elements; Blackwell). Attention and the
// output layer stay BF16 in every recipe.
enum class TrainingPrecision { Bf16, Fp8Delayed, Fp8Current, Mxfp8 };
// Attention kernel: fused FlashAttention (no s x s tensors; Megatron with TransformerEngine), or
// Megatron's unfused path (scores, fused scale-mask-softmax, dropout; the 2021-22 papers' runs).
enum class Attention { Flash, Unfused };

struct TrainingSpec {
  std::int64_t seq_len = 0;
  std::int64_t global_batch = 0;
  std::int64_t micro_batch = static_cast<std::int64_t>(param_default("training.micro_batch"));
  Recompute recompute = Recompute::None;
  RecomputeMethod recompute_method = RecomputeMethod::Uniform;  // full recomputation only
  std::int64_t recompute_num_layers = static_cast<std::int64_t>(param_default("training.recompute_num_layers"));
  RecomputeModules recompute_modules;           // selective recomputation only
  bool grads_in_fp32 = true;                    // "grad_dtype": "fp32" | "bf16": main-grad buffer and DP gradient sync
  // Fraction of the optimizer (fp32 master weights, Adam moments and its step) held and run on the
  // host (Megatron --optimizer-cpu-offload --optimizer-offload-fraction).
  double optimizer_offload_fraction = param_default("training.optimizer_offload_fraction");
  Attention attention = Attention::Flash;       // "attention": "flash" | "unfused"
  TrainingPrecision precision = TrainingPrecision::Bf16;  // "precision"
  std::int64_t fp8_amax_history_len = static_cast<std::int64_t>(param_default("training.fp8_amax_history_len"));
  bool fp8_params = param_default("training.fp8_params") != 0;  // GEMM weights kept in FP8 only (no bf16 copy)

  [[nodiscard]] bool fp8() const { return precision != TrainingPrecision::Bf16; }
  std::optional<double> train_tokens;           // token budget for time/cost to train
};

enum class Schedule { GPipe, OneFOneB, Interleaved };

// How the ranks of a CP group share the keys and values of attention (Megatron --cp-comm-type,
// TransformerEngine's cp_comm_type): P2P passes K and V around a ring beside the attention of each
// step (and dK, dV in the backward); AllGather gathers K and V before the attention and
// reduce-scatters dK and dV after it; A2A (DeepSpeed-Ulysses) trades the sequence split for a head
// split by all-to-alls of Q, K and V before the attention and of its output after it; A2AP2P
// (hierarchical) runs A2A within groups of consecutive CP ranks and the P2P ring across them.
enum class CpCommType { P2P, AllGather, A2A, A2AP2P };

// What is sharded over the data-parallel group (DP x CP), in Megatron-FSDP's names: nothing;
// the optimizer state (Megatron's distributed optimizer, ZeRO-1); also the main gradients, each
// micro-batch's gradients reduce-scattered into the shard (ZeRO-2); also the parameters, gathered
// before each layer's forward and backward and freed after (ZeRO-3, Megatron-FSDP / FSDP2).
enum class Sharding { None, Optimizer, OptimizerGrads, OptimizerGradsParams };

// Megatron's rank order ("tp-cp-dp-pp", fastest first; "ep" is skipped, EP = 1) as dimension ids
// 0 = tp, 1 = cp, 2 = dp, 3 = pp. Throws ScenarioError("parallel.rank_order", ...) unless the
// order is a permutation of the four.
[[nodiscard]] std::vector<int> rank_order_dims(const std::string& order);

struct ParallelSpec {
  std::int64_t tp = static_cast<std::int64_t>(param_default("parallel.tp"));
  std::int64_t cp = static_cast<std::int64_t>(param_default("parallel.cp"));
  std::int64_t pp = static_cast<std::int64_t>(param_default("parallel.pp"));
  std::int64_t dp = 1;                          // derived from the world size when omitted
  std::int64_t vpp = static_cast<std::int64_t>(param_default("parallel.vpp"));  // model chunks per stage (interleaved only)
  // How the layers are split over stages and chunks (layout.hpp; pipeline_layout(s) resolves them):
  // Megatron's --decoder-first/last-pipeline-num-layers, --account-for-embedding/loss-in-pipeline-
  // split, or --pipeline-model-parallel-layout (empty: none). None set: layers / (pp vpp) each.
  std::optional<std::int64_t> first_stage_layers;
  std::optional<std::int64_t> last_stage_layers;
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  std::string pipeline_layout;
  Schedule schedule = Schedule::OneFOneB;
  std::optional<std::int64_t> microbatch_group_size;  // interleaved: micro-batches per chunk group; none: pp
  bool sequence_parallel = param_default("parallel.sequence_parallel") != 0;
  Sharding sharding = Sharding::Optimizer;      // "sharding"; "distributed_optimizer" is its alias
  // Megatron's --num-distributed-optimizer-instances: the sharded state is sharded within each of
  // this many groups of DP x CP / instances ranks and replicated across them.
  std::int64_t distributed_optimizer_instances = static_cast<std::int64_t>(param_default("parallel.distributed_optimizer_instances"));
  bool overlap_grad_reduce = param_default("parallel.overlap_grad_reduce") != 0;
  bool overlap_param_gather = true;             // follows the two above when not given (the loader)
  bool tp_comm_overlap = param_default("parallel.tp_comm_overlap") != 0;  // TransformerEngine's TP/SP communication overlap (needs SP)
  // Megatron's overlap_p2p_comm: the interleaved schedule's pipeline sends and receives run beside the
  // next pass (not given: with that schedule, the software stack's software.overlap_p2p_comm; false
  // with the others).
  bool overlap_p2p_comm = false;
  bool overlap_p2p_comm_given = false;  // set in the scenario (the loader resolves the default)
  CpCommType cp_comm_type = CpCommType::P2P;
  // The sizes of a2a+p2p's all-to-all groups and of the ring across them (Megatron
  // --hierarchical-context-parallel-sizes; as there, they may be given with another type, unused);
  // their product is cp. Empty when not given.
  std::vector<std::int64_t> hierarchical_cp_sizes;
  std::string rank_order = "tp-cp-dp-pp";       // first token varies fastest (Megatron)

  [[nodiscard]] std::int64_t microbatch_group() const { return microbatch_group_size.value_or(pp); }
  // The CP ranks that exchange Q, K, V and O all-to-all (Ulysses) and those that pass K and V
  // around a ring: (cp, 1) for a2a, (1, cp) for p2p, the hierarchical sizes for a2a+p2p, (1, 1)
  // for all_gather (neither).
  [[nodiscard]] std::int64_t cp_a2a_size() const {
    switch (cp_comm_type) {
      case CpCommType::A2A: return cp;
      case CpCommType::A2AP2P: return hierarchical_cp_sizes.size() == 2 ? hierarchical_cp_sizes[0] : 1;
      default: return 1;
    }
  }
  [[nodiscard]] std::int64_t cp_ring_size() const {
    switch (cp_comm_type) {
      case CpCommType::P2P: return cp;
      case CpCommType::A2AP2P: return hierarchical_cp_sizes.size() == 2 ? hierarchical_cp_sizes[1] : 1;
      default: return 1;
    }
  }
  [[nodiscard]] bool shards_optimizer() const { return sharding != Sharding::None; }
  [[nodiscard]] bool shards_grads() const { return sharding == Sharding::OptimizerGrads || sharding == Sharding::OptimizerGradsParams; }
  [[nodiscard]] bool shards_params() const { return sharding == Sharding::OptimizerGradsParams; }
  // Ranks one shard group spans (one distributed-optimizer instance): DP x CP / instances.
  [[nodiscard]] std::int64_t shard_group_size() const { return dp * cp / distributed_optimizer_instances; }
};

// Terms the paper leaves to its 80 % margin; each is a scenario field ("memory": {...}).
struct MemorySpec {
  double cuda_context_bytes = param_default("memory.cuda_context_gib") * kGiB;  // CUDA context + cuBLAS/cuDNN workspaces
  std::optional<double> workspaces_bytes;  // library workspaces in the allocator; none: by GPU architecture (memory.workspaces_mib)
  double nccl_buffer_bytes_per_group = param_default("memory.nccl_buffer_gib_per_group") * kGiB;  // NCCL communicator buffers per process group the rank is in
  double fragmentation_fraction = param_default("memory.fragmentation_fraction");  // caching-allocator reserved/allocated - 1, on dynamic memory
  double usable_fraction = param_default("memory.usable_fraction");               // paper's 80 % rule
  double headroom_bytes = param_default("memory.headroom_gib") * kGiB;             // kept free by the stepsim prune rule
};

// Collective algorithm of AllReduce, ReduceScatter and AllGather (costmodel/comm.hpp): NCCL's
// choice by its tuner's predicted time (Auto), or one algorithm (NCCL_ALGO), the ring where that
// algorithm does not run the collective.
enum class CollectiveAlgorithm { Auto, Ring, Tree, Nvls };

// How NCCL runs collectives, as the communication model sees it ("comm": {...}).
struct CommSpec {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  double nvlink_efficiency = param_default("comm.nvlink_efficiency");    // fraction of NVLink line rate a ring reaches
  double network_efficiency = param_default("comm.network_efficiency");  // fraction of NIC line rate
  double nvls_efficiency = param_default("comm.nvls_efficiency");        // NVLS all-reduce busbw / (2 x ring NVLink bandwidth)
  double collective_setup_s = param_default("comm.collective_setup_us") * 1e-6;  // start-up latency of a collective beyond NCCL's modeled latency
  double p2p_setup_s = param_default("comm.p2p_setup_us") * 1e-6;                // of a send/recv beyond its route
};

// Choice of the simulation engine ("engine": {...}).
struct EngineSpec {
  // The automatic choice simulates clusters up to this many GPUs with SimGrid, larger ones analytically.
  std::int64_t auto_simgrid_max_gpus = static_cast<std::int64_t>(param_default("engine.auto_simgrid_max_gpus"));
};

// Fused attention kernel of the software stack. Auto: TransformerEngine's backend choice (cuDNN
// fused attention on Hopper and Blackwell, FlashAttention-2 on Ampere).
enum class AttentionKernel { Auto, FlashAttention2, FlashAttention3, CuDnn };

// The kernel that runs: Auto resolved as TransformerEngine's backend selection does
// (dot_product_attention/utils.py, get_attention_backend: cuDNN preferred from sm90 on,
// FlashAttention-2 on sm80), cuDNN for an unknown architecture.
[[nodiscard]] inline AttentionKernel resolved_attention_kernel(GpuArchitecture arch, AttentionKernel k) {
  if (k != AttentionKernel::Auto) return k;
  return arch == GpuArchitecture::Ampere ? AttentionKernel::FlashAttention2 : AttentionKernel::CuDnn;
}

// Published throughput of one attention implementation on one GPU architecture (FLOP/s as the
// FlashAttention papers count them: causal forward 2 s^2 d_h per head and sequence, backward 2.5 x
// forward), by sequence length, per pass, causal mask and head dimension.
struct AttentionSeries {
  bool backward = false;
  bool causal = true;
  std::int64_t head_dim = 0;
  std::vector<double> flops_per_s;  // one per AttentionCurves::seq_len
};

struct AttentionCurves {
  std::string implementation;       // "flash-attention-2", ...
  std::string source;               // figures and derivations
  std::vector<double> seq_len;      // ascending
  std::vector<AttentionSeries> series;  // every (pass, causal) pair present for each head dim
};

// The software stack ("software": a preset name or an object, scenarios/presets/software/): which
// kernels run and which fusions the framework does; each field's source is in the preset files.
struct SoftwareSpec {
  std::string name;                      // preset name or "custom"
  AttentionKernel attention = AttentionKernel::Auto;
  bool fused_rope = true;                // TransformerEngine's fused RoPE (one pass) vs Megatron's unfused rotary ops
  bool fused_swiglu = true;              // Megatron's bias-SwiGLU fusion (one pass) vs SiLU and multiply
  bool fused_cross_entropy = false;      // Megatron's fused vocab-parallel cross-entropy
  bool grad_accum_fusion = true;         // wgrad GEMMs accumulate into the fp32 main gradient
  bool fused_norm_gemm = true;           // TransformerEngine LayerNormLinear (carried; no BF16 time effect)
  bool cuda_graphs = false;              // carried
  bool tp_comm_overlap = false;          // TE userbuffers TP overlap (carried; the next issue prices it)
  bool tp_backward_overlap = true;       // backward TP comm of column-parallel linears beside their dgrad/wgrad GEMMs
  bool overlap_p2p_comm = true;          // the stack overlaps the interleaved schedule's pipeline sends (parallel.overlap_p2p_comm's default)
  double kernel_launch_s = 0;            // GPU idle between two kernels of a stream
  double microbatch_host_s = 0;          // host time per micro-batch and pass not hidden behind the GPU
  AttentionCurves attention_curves;      // resolved for the scenario's GPU architecture at load time
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
  CommSpec comm;
  EngineSpec engine;
  SoftwareSpec software;

  [[nodiscard]] std::int64_t world_size() const { return cluster.world_size(); }
  // Micro-batches per pipeline per step: global_batch / (micro_batch * dp).
  [[nodiscard]] std::int64_t micro_batches() const { return training.global_batch / (training.micro_batch * parallel.dp); }
};

// The names of the enumerations, in the order the loader's messages list them.
inline constexpr NameTable<MlpKind, 2> kMlpNames{{{"swiglu", MlpKind::SwiGlu}, {"gelu", MlpKind::Gelu}}};
inline constexpr NameTable<NormKind, 2> kNormNames{{{"rmsnorm", NormKind::RmsNorm}, {"layernorm", NormKind::LayerNorm}}};
inline constexpr NameTable<EfficiencyKind, 3> kEfficiencyKindNames{
    {{"fitted", EfficiencyKind::Fitted}, {"derived", EfficiencyKind::Derived}, {"default", EfficiencyKind::Default}}};
inline constexpr NameTable<GpuArchitecture, 4> kGpuArchitectureNames{{{"unknown", GpuArchitecture::Unknown},
                                                                       {"ampere", GpuArchitecture::Ampere},
                                                                       {"hopper", GpuArchitecture::Hopper},
                                                                       {"blackwell", GpuArchitecture::Blackwell}}};
inline constexpr NameTable<AttentionKernel, 4> kAttentionKernelNames{{{"auto", AttentionKernel::Auto},
                                                                     {"flash-attention-2", AttentionKernel::FlashAttention2},
                                                                     {"flash-attention-3", AttentionKernel::FlashAttention3},
                                                                     {"cudnn", AttentionKernel::CuDnn}}};
inline constexpr NameTable<FabricTopology, 3> kFabricTopologyNames{{{"rail-fat-tree", FabricTopology::RailFatTree},
                                                                     {"fat-tree", FabricTopology::FatTree},
                                                                     {"single-switch", FabricTopology::SingleSwitch}}};
inline constexpr NameTable<Recompute, 3> kRecomputeNames{
    {{"none", Recompute::None}, {"selective", Recompute::Selective}, {"full", Recompute::Full}}};
inline constexpr NameTable<RecomputeMethod, 2> kRecomputeMethodNames{
    {{"uniform", RecomputeMethod::Uniform}, {"block", RecomputeMethod::Block}}};
inline constexpr NameTable<Sharding, 4> kShardingNames{{{"none", Sharding::None},
                                                       {"optimizer", Sharding::Optimizer},
                                                       {"optimizer_grads", Sharding::OptimizerGrads},
                                                       {"optimizer_grads_params", Sharding::OptimizerGradsParams}}};
inline constexpr NameTable<TrainingPrecision, 4> kTrainingPrecisionNames{{{"bf16", TrainingPrecision::Bf16},
                                                                         {"fp8-delayed", TrainingPrecision::Fp8Delayed},
                                                                         {"fp8-current", TrainingPrecision::Fp8Current},
                                                                         {"mxfp8", TrainingPrecision::Mxfp8}}};
inline constexpr NameTable<Attention, 2> kAttentionNames{{{"flash", Attention::Flash}, {"unfused", Attention::Unfused}}};
inline constexpr NameTable<CpCommType, 4> kCpCommTypeNames{
    {{"p2p", CpCommType::P2P}, {"all_gather", CpCommType::AllGather}, {"a2a", CpCommType::A2A}, {"a2a+p2p", CpCommType::A2AP2P}}};
inline constexpr NameTable<Schedule, 3> kScheduleNames{
    {{"1f1b", Schedule::OneFOneB}, {"gpipe", Schedule::GPipe}, {"interleaved", Schedule::Interleaved}}};
inline constexpr NameTable<CollectiveAlgorithm, 4> kCollectiveAlgorithmNames{{{"auto", CollectiveAlgorithm::Auto},
                                                                              {"ring", CollectiveAlgorithm::Ring},
                                                                              {"tree", CollectiveAlgorithm::Tree},
                                                                              {"nvls", CollectiveAlgorithm::Nvls}}};

[[nodiscard]] inline std::string to_string(Schedule s) { return name_of(kScheduleNames, s); }
[[nodiscard]] inline std::string to_string(CpCommType c) { return name_of(kCpCommTypeNames, c); }
[[nodiscard]] inline std::string to_string(Recompute r) { return name_of(kRecomputeNames, r); }
[[nodiscard]] inline std::string to_string(RecomputeMethod r) { return name_of(kRecomputeMethodNames, r); }
[[nodiscard]] inline std::string to_string(Sharding x) { return name_of(kShardingNames, x); }
[[nodiscard]] inline std::string to_string(Attention a) { return name_of(kAttentionNames, a); }
[[nodiscard]] inline std::string to_string(TrainingPrecision p) { return name_of(kTrainingPrecisionNames, p); }
[[nodiscard]] inline std::string to_string(FabricTopology t) { return name_of(kFabricTopologyNames, t); }
[[nodiscard]] inline std::string to_string(GpuArchitecture a) { return name_of(kGpuArchitectureNames, a); }
[[nodiscard]] inline std::string to_string(AttentionKernel a) { return name_of(kAttentionKernelNames, a); }
[[nodiscard]] inline std::string to_string(EfficiencyKind k) { return name_of(kEfficiencyKindNames, k); }
[[nodiscard]] inline std::string to_string(CollectiveAlgorithm a) { return name_of(kCollectiveAlgorithmNames, a); }

}  // namespace stepsim::scenarios
