#pragma once
// One declaration per scenario parameter: its JSON key, type, unit, default, range, meaning and
// source. The loader (load.cpp) takes its defaults and ranges from this table, the spec structs
// take their member defaults from it, `stepsim params` prints it, and the field reference of
// scenarios/README.md is generated from it (`stepsim params --format md`).

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace stepsim::scenarios {

enum class ParamType { Integer, Number, Boolean, String, Choice, Preset, Object };

struct Param {
  std::string_view key;           // dotted JSON path: "training.micro_batch"
  ParamType type = ParamType::Number;
  std::string_view unit;          // unit of the JSON value, or the allowed values of a choice ("1f1b|gpipe|interleaved")
  std::optional<double> value;    // default in JSON units (booleans: 1 or 0); none: see default_text
  std::string_view default_text;  // the default when it is not a number: "required", "heads", "1f1b", ...
  double min = 0;                 // numbers and integers lie in [min, max] ((min, max] when min_exclusive)
  double max = 0;
  bool min_exclusive = false;
  std::string_view description;
  std::string_view source;
};

namespace param_table {
using enum ParamType;
// clang-format off
inline constexpr Param kParams[] = {
  {"name", String, "", std::nullopt, "scenario", 0, 0, false, "name of the scenario in outputs", ""},
  {"description", String, "", std::nullopt, "none", 0, 0, false, "free text, ignored", ""},
  {"model", Preset, "preset or object", std::nullopt, "required", 0, 0, false, "the transformer (a preset name, or an object that may name a \"preset\" and override its fields)", "scenarios/presets/models"},
  {"model.hf_config", String, "path", std::nullopt, "none", 0, 0, false, "a Hugging Face config.json (relative to the scenario file) whose fields give the model; the object's other fields override them", "stepsim import hf"},
  {"model.name", String, "", std::nullopt, "custom", 0, 0, false, "name of the model in outputs (a preset's name)", ""},
  {"model.layers", Integer, "layers", std::nullopt, "required", 1, 100000, false, "transformer layers", ""},
  {"model.hidden", Integer, "", std::nullopt, "required", 1, 1048576, false, "hidden size h", ""},
  {"model.ffn_hidden", Integer, "", std::nullopt, "required", 1, 4194304, false, "MLP hidden size f", ""},
  {"model.heads", Integer, "", std::nullopt, "required", 1, 65536, false, "attention heads a (divides hidden)", ""},
  {"model.kv_heads", Integer, "", std::nullopt, "heads", 1, 65536, false, "key/value heads (GQA groups; divides heads)", ""},
  {"model.vocab", Integer, "tokens", std::nullopt, "required", 1, 67108864, false, "vocabulary size (padded to a multiple of 128 tp)", "Megatron --make-vocab-size-divisible-by 128"},
  {"model.tied_embeddings", Boolean, "", 0.0, "", 0, 0, false, "input and output embeddings share their weights", ""},
  {"model.mlp", Choice, "swiglu|gelu", std::nullopt, "swiglu", 0, 0, false, "MLP kind", ""},
  {"model.norm", Choice, "rmsnorm|layernorm", std::nullopt, "rmsnorm", 0, 0, false, "normalization kind", ""},
  {"model.bias", Boolean, "", 0.0, "", 0, 0, false, "linear layers have biases", ""},
  {"model.qk_norm", Boolean, "", 0.0, "", 0, 0, false, "a norm (the model's norm kind) over the head dimension of every query and key head after the QKV projection, its weights shared by the heads", "Megatron --qk-layernorm; Hugging Face q_norm/k_norm (Qwen3, Gemma 3)"},
  {"cluster", Object, "object", std::nullopt, "required", 0, 0, false, "the machine; may name a cluster \"preset\" and override its fields", ""},
  {"cluster.preset", Choice, "dgx-a100|abci-a|dgx-h100|tsubame4|dgx-h200|h200-nvl|dgx-b200|dgx-b300|gb200-nvl72|gb300-nvl72", std::nullopt, "none", 0, 0, false, "cluster preset", "scenarios/presets/clusters"},
  {"cluster.gpu", Preset, "preset or object", std::nullopt, "from the cluster preset", 0, 0, false, "the GPU (a preset name, or an object that may name a \"preset\" and override its fields)", "scenarios/presets/gpus"},
  {"cluster.gpu.name", String, "", std::nullopt, "custom", 0, 0, false, "name of the GPU in outputs (a preset's name)", ""},
  {"cluster.gpu.memory_gib", Number, "GiB", std::nullopt, "required", 0, 1e5, true, "device memory (a vendor's \"80 GB\" is 80 GiB)", "vendor datasheets"},
  {"cluster.gpu.peak_bf16_tflops", Number, "TFLOP/s", std::nullopt, "required", 0, 1e6, true, "dense BF16 peak", "vendor datasheets"},
  {"cluster.gpu.hbm_TBps", Number, "TB/s", std::nullopt, "required", 0, 1e4, true, "HBM bandwidth", "vendor datasheets"},
  {"cluster.gpu.nvlink_GBps", Number, "GB/s", 300.0, "", 0, 1e6, true, "NVLink bandwidth per GPU per direction", "vendor datasheets (half the bidirectional figure)"},
  {"cluster.gpu.matmul_bf16_tflops", Number, "TFLOP/s", std::nullopt, "peak_bf16_tflops", 0, 1e6, true, "maximum achievable dense BF16 matmul throughput (the ceiling of the GEMM model)", "ml-engineering MAMF table (docs/hardware.md)"},
  {"cluster.gpu.peak_fp8_tflops", Number, "TFLOP/s", 0.0, "", 0, 1e6, false, "dense FP8 peak (also MXFP8 on Blackwell); 0: no FP8 tensor cores", "vendor datasheets (the dense figure: half the one with sparsity)"},
  {"cluster.gpu.matmul_fp8_tflops", Number, "TFLOP/s", std::nullopt, "peak_fp8 x matmul_bf16 / peak_bf16", 0, 1e6, true, "maximum achievable dense FP8 matmul throughput (the ceiling of the FP8 GEMM model)", "a published FP8 matmul benchmark; absent: the BF16 ratio carried over"},
  {"cluster.gpu.sms", Integer, "SMs", 0.0, "", 0, 100000, false, "streaming multiprocessors (wave quantization of GEMMs); 0: unknown, no wave quantization", "vendor architecture whitepapers"},
  {"cluster.gpu.gemm_tile_m", Integer, "rows", 0.0, "", 0, 4096, false, "GEMM output tile rows of the kernel library (the transposed tile is tried too); 0: no tile quantization", "NVIDIA Matrix Multiplication Background guide; CUTLASS tile shapes"},
  {"cluster.gpu.gemm_tile_n", Integer, "columns", 0.0, "", 0, 4096, false, "GEMM output tile columns", "as gemm_tile_m"},
  {"cluster.gpu.gemm_small_tile", Integer, "rows and columns", 0.0, "", 0, 4096, false, "side of a square GEMM output tile the kernel library falls back to when it finishes sooner than the large tile (fewer idle SMs); 0: none", "fitted to XLA's measured matmul tables (tests/costmodel/data/gemm-*-xla-*.csv, fit_gemm_shapes.py)"},
  {"cluster.gpu.gemm_small_tile_efficiency", Number, "fraction", 1.0, "", 0, 1, true, "throughput per SM of the small GEMM tile relative to the large tile's", "as gemm_small_tile"},
  {"cluster.gpu.gemm_k_overhead", Number, "elements", 0.0, "", 0, 65536, false, "fixed cost of a GEMM output tile (prologue, epilogue, pipeline fill) as that many more elements of the contraction dimension K", "as gemm_small_tile"},
  {"cluster.gpu.architecture", Choice, "unknown|ampere|hopper|blackwell", std::nullopt, "unknown", 0, 0, false, "GPU architecture: selects the published attention-kernel figures", "scenarios/presets/kernels/attention.json"},
  {"cluster.gpu.efficiency", Object, "object or file path", std::nullopt, "the GPU preset's file, else the built-in curve", 0, 0, false, "efficiency curves of the compute model; a string is an efficiency file read when the scenario loads (relative to the working directory); parameters an object omits keep the preset's (or the built-in) values", "scenarios/presets/efficiency (stepsim calibrate)"},
  {"cluster.gpu.efficiency.gemm_max", Number, "fraction", std::nullopt, "built-in: 1", 0, 1, true, "fraction of the maximum achievable matmul throughput (matmul_bf16_tflops) that the training GEMMs reach at full tiles and waves", "stepsim calibrate"},
  {"cluster.gpu.efficiency.gemm_fp8_max", Number, "fraction", std::nullopt, "gemm_max", 0, 1, true, "fraction of the FP8 matmul ceiling (matmul_fp8_tflops) that the FP8 GEMMs of training.precision fp8-* and mxfp8 reach at full tiles and waves", "stepsim calibrate"},
  {"cluster.gpu.efficiency.attn_max", Number, "fraction", std::nullopt, "built-in: 1", 0, 1, true, "fraction of the attention kernel's published throughput (scenarios/presets/kernels/attention.json) reached in training", "stepsim calibrate"},
  {"cluster.gpu.efficiency.hbm_eff", Number, "fraction", std::nullopt, "built-in: 0.85", 0, 1, true, "fraction of the HBM bandwidth reached by memory-bound kernels", "stepsim calibrate"},
  {"cluster.gpu.efficiency.comm_slowdown", Number, "fraction", std::nullopt, "built-in: 0.05", 0, 10, false, "compute slowdown while communication kernels share the SMs", "stepsim calibrate"},
  {"cluster.gpu.efficiency.kind", Choice, "fitted|derived|default", std::nullopt, "fitted", 0, 0, false, "where the numbers come from, shown in every output", ""},
  {"cluster.gpu.efficiency.fitted", String, "", std::nullopt, "none", 0, 0, false, "the parameters its fits set, comma-separated (stepsim calibrate writes it; validate --cross-validate refits them)", ""},
  {"cluster.gpu.efficiency.source", String, "", std::nullopt, "none", 0, 0, false, "the fit record (stepsim calibrate writes it)", ""},
  {"cluster.gpus_per_node", Integer, "GPUs", std::nullopt, "from the preset, else required", 1, 1024, false, "GPUs per node", ""},
  {"cluster.nodes", Integer, "nodes", std::nullopt, "from the preset, else required", 1, 1048576, false, "nodes", ""},
  {"cluster.nvlink_domain_gpus", Integer, "GPUs", 0.0, "", 0, 1048576, false, "GPUs in one NVLink domain: a multiple of gpus_per_node dividing the world size (a cluster smaller than one domain is one domain), or a divisor of gpus_per_node (NVLink-bridged GPUs of one node; between domains the GPUs talk over PCIe, intra_node.pcie_GBps); 0 means gpus_per_node", "GB200 NVL72: 72; H200 NVL with 4-way NVLink bridges: 4"},
  {"cluster.ideal_network", Boolean, "", 0.0, "", 0, 0, false, "communication takes no time (schedule checks)", ""},
  {"cluster.intra_node.bw_GBps", Number, "GB/s", std::nullopt, "the GPU's nvlink_GBps", 0, 1e6, true, "per GPU per direction into the NVLink/NVSwitch domain", ""},
  {"cluster.intra_node.latency_us", Number, "us", 0.6, "", 0, 1e6, false, "latency of one NVLink hop of a flow (NCCL's per-step latencies by algorithm and protocol come on top, from its tuner's model)", "NCCL tuner's smallest per-step NVLink latency (LL), src/graph/tuning.cc"},
  {"cluster.intra_node.nvswitch", Boolean, "", 1.0, "", 0, 0, false, "the NVLink domain is switched by NVSwitches (NCCL's NVLS algorithm possible); false for NVLink bridges", "NVIDIA H100/H200 NVL product briefs: NVLink bridges, no NVSwitch"},
  {"cluster.intra_node.pcie_GBps", Number, "GB/s", 64.0, "", 0, 1e6, true, "per GPU per direction between the NVLink domains of one node (PCIe through the host); used only when nvlink_domain_gpus is smaller than gpus_per_node", "PCIe 5.0 x16: 32 GT/s x 16 lanes, 128b/130b, about 63 GB/s per direction (PCI-SIG)"},
  {"cluster.inter_node.nics_per_node", Integer, "NICs", std::nullopt, "gpus_per_node", 1, 1024, false, "NICs per node (one rail each)", ""},
  {"cluster.inter_node.nic_Gbps", Number, "Gbit/s", 400.0, "", 0, 1e6, true, "line rate per NIC per direction", "InfiniBand NDR"},
  {"cluster.inter_node.latency_us", Number, "us", 2.7, "", 0, 1e6, false, "latency of one network hop of a flow (NCCL's per-step latencies by algorithm and protocol come on top, from its tuner's model)", "NCCL tuner's smallest per-step network latency (ring, LL), src/graph/tuning.cc"},
  {"cluster.inter_node.topology", Choice, "rail-fat-tree|fat-tree|single-switch", std::nullopt, "rail-fat-tree", 0, 0, false, "network topology", ""},
  {"cluster.inter_node.oversubscription", Number, "ratio", 1.0, "", 0, 1000, true, "leaf-to-spine oversubscription, at least 1 (1 = non-blocking)", ""},
  {"training.seq_len", Integer, "tokens", std::nullopt, "required", 1, 67108864, false, "sequence length", ""},
  {"training.global_batch", Integer, "samples", std::nullopt, "required", 1, 67108864, false, "samples per step", ""},
  {"training.micro_batch", Integer, "samples", 1.0, "", 1, 1048576, false, "samples per micro-batch", ""},
  {"training.recompute", Choice, "none|selective|full", std::nullopt, "none", 0, 0, false, "activation recomputation: selective re-runs the recompute_modules of every layer, full the whole layers the recompute_method picks", "Megatron --recompute-granularity"},
  {"training.recompute_method", Choice, "uniform|block", std::nullopt, "uniform", 0, 0, false, "full recomputation: uniform checkpoints groups of recompute_num_layers layers of each model chunk (the backward re-runs a whole group); block recomputes only the first recompute_num_layers layers of each chunk", "Megatron --recompute-method"},
  {"training.recompute_num_layers", Integer, "layers", 1.0, "", 1, 100000, false, "full recomputation: layers per checkpoint group (uniform) or recomputed layers per model chunk (block)", "Megatron --recompute-num-layers"},
  {"training.recompute_modules", String, "list of core_attn|mlp|layernorm", std::nullopt, "[\"core_attn\"]", 0, 0, false, "selective recomputation: the modules re-run in the backward (core_attn: the attention core; mlp: FC1, activation and FC2 from the MLP input; layernorm: both norms, whose outputs are then not stored); Megatron's MoE and MLA modules do not exist here", "Megatron --recompute-modules"},
  {"training.grad_dtype", Choice, "fp32|bf16", std::nullopt, "fp32", 0, 0, false, "main-gradient buffer and the data-parallel gradient reduction (bytes per gradient of the reduce-scatter or all-reduce)", "Megatron --accumulate-allreduce-grads-in-fp32 / DDP grad_reduce_in_fp32; Apex grad_sync_dtype"},
  {"training.optimizer_offload_fraction", Number, "fraction", 0.0, "", 0, 1, false, "fraction of the optimizer state (fp32 master weights, Adam m and v) kept and updated on the host: it leaves GPU memory; not priced: the copies of that fraction's gradients to the host and of its updated weights back, and the host's Adam step (the step keeps the GPU optimizer's time)", "Megatron --optimizer-cpu-offload --optimizer-offload-fraction"},
  {"training.attention", Choice, "flash|unfused", std::nullopt, "flash", 0, 0, false, "fused FlashAttention (no s x s tensors) or Megatron's unfused scores + softmax + dropout path", ""},
  {"training.precision", Choice, "bf16|fp8-delayed|fp8-current|mxfp8", std::nullopt, "bf16", 0, 0, false, "the layers' GEMMs as TransformerEngine runs them: BF16, FP8 with per-tensor delayed or current scaling (Hopper, Blackwell), MXFP8 (Blackwell); attention and the output layer stay BF16", "TransformerEngine recipes; Megatron --fp8-format, --fp8-recipe"},
  {"training.fp8_amax_history_len", Integer, "steps", 1024.0, "", 1, 1048576, false, "amax history kept per FP8 tensor with fp8-delayed", "TE DelayedScaling.amax_history_len; Megatron --fp8-amax-history-len (default 1)"},
  {"training.fp8_params", Boolean, "", 0.0, "", 0, 0, false, "the GEMM weights are kept in FP8 only (TransformerEngine's FP8 parameters: the FP8 data and the transpose it caches, no bf16 copy); needs an FP8 precision; memory only (the distributed optimizer's parameter all-gather stays priced in bf16)", "Megatron --fp8-param-gather; NeMo MegatronMixedPrecision fp8_params (set by NeMo 2.0's bf16_with_fp8_mixed, nemo/collections/llm/recipes/precision/mixed_precision.py)"},
  {"training.train_tokens", Number, "tokens", std::nullopt, "none", 0, 1e18, true, "token budget for the time and cost to train", ""},
  {"parallel.tp", Integer, "GPUs", 1.0, "", 1, 65536, false, "tensor parallelism (divides heads, kv_heads, ffn_hidden)", ""},
  {"parallel.cp", Integer, "GPUs", 1.0, "", 1, 65536, false, "context parallelism (2 cp divides seq_len)", ""},
  {"parallel.pp", Integer, "stages", 1.0, "", 1, 65536, false, "pipeline parallelism", ""},
  {"parallel.dp", Integer, "GPUs", std::nullopt, "world / (tp cp pp)", 1, 4194304, false, "data parallelism; must equal world / (tp cp pp) when given", ""},
  {"parallel.vpp", Integer, "chunks", 1.0, "", 1, 1024, false, "model chunks per stage (interleaved only)", ""},
  {"parallel.first_stage_layers", Integer, "layers", std::nullopt, "layers / pp", 1, 100000, false, "transformer layers on the first stage; the other stages share the rest evenly; each stage's layers split evenly over its vpp chunks", "Megatron --decoder-first-pipeline-num-layers"},
  {"parallel.last_stage_layers", Integer, "layers", std::nullopt, "layers / pp", 1, 100000, false, "transformer layers on the last stage", "Megatron --decoder-last-pipeline-num-layers"},
  {"parallel.account_for_embedding_in_pipeline_split", Boolean, "", 0.0, "", 0, 0, false, "the embedding counts as one layer when splitting: (layers + 1 [+ 1]) / (pp vpp) per chunk, the first chunk of stage 0 holding one transformer layer less", "Megatron --account-for-embedding-in-pipeline-split"},
  {"parallel.account_for_loss_in_pipeline_split", Boolean, "", 0.0, "", 0, 0, false, "the loss counts as one layer when splitting: the last chunk of the last stage holds one transformer layer less", "Megatron --account-for-loss-in-pipeline-split"},
  {"parallel.pipeline_layout", String, "layout", std::nullopt, "none", 0, 0, false, "which stage and chunk holds which layers: pp x vpp virtual stages in model order separated by '|' (chunk j of stage i is the (j pp + i)-th), E embedding, t transformer layer, L loss, x*n and (...)*n repeat, e.g. \"Et*7|(t*8|)*14,t*7L\"; sets vpp when vpp is not given", "Megatron --pipeline-model-parallel-layout"},
  {"parallel.microbatch_group_size", Integer, "micro-batches", std::nullopt, "pp", 1, 1048576, false, "interleaved schedule: micro-batches that run through a model chunk before the next chunk (the last group takes the rest); between pp and the micro-batch count, and the rest (micro-batches mod this) 0 or at least pp", "Megatron --microbatch-group-size-per-virtual-pipeline-stage (schedules.py get_schedule_table)"},
  {"parallel.schedule", Choice, "1f1b|gpipe|interleaved", std::nullopt, "1f1b", 0, 0, false, "pipeline schedule", ""},
  {"parallel.sequence_parallel", Boolean, "", 1.0, "", 0, 0, false, "sequence parallelism in the TP region", ""},
  {"parallel.sharding", Choice, "none|optimizer|optimizer_grads|optimizer_grads_params", std::nullopt, "optimizer", 0, 0, false, "what is sharded over DP x CP: nothing; the optimizer state (Megatron's distributed optimizer, ZeRO-1); also the gradients, each micro-batch's reduce-scattered into the kept shard (ZeRO-2); also the parameters, all-gathered before each layer's forward and backward and freed after (ZeRO-3)", "Megatron-FSDP strategies no_shard, optim, optim_grads, optim_grads_params"},
  {"parallel.distributed_optimizer_instances", Integer, "instances", 1.0, "", 1, 65536, false, "copies of the sharded state: what sharding shards is sharded over DP x CP / instances ranks (one instance) and replicated over the instances; a gradient bucket is reduce-scattered within an instance, then its shard all-reduced across the instances; parameters are gathered within an instance; must divide DP x CP, and above 1 needs a sharding other than none", "Megatron --num-distributed-optimizer-instances"},
  {"parallel.distributed_optimizer", Boolean, "", std::nullopt, "from sharding", 0, 0, false, "deprecated alias of sharding: true is \"optimizer\", false is \"none\"; given with sharding, they must agree (true: any sharding but none)", "Megatron --use-distributed-optimizer"},
  {"parallel.overlap_grad_reduce", Boolean, "", 1.0, "", 0, 0, false, "gradient reduce-scatter overlapped with the backward pass", ""},
  {"parallel.overlap_param_gather", Boolean, "", std::nullopt, "true when both of the above are", 0, 0, false, "parameter all-gather overlapped; needs a sharded optimizer and overlap_grad_reduce", "Megatron's rule"},
  {"parallel.overlap_p2p_comm", Boolean, "", std::nullopt, "interleaved: software.overlap_p2p_comm; else false", 0, 0, false, "interleaved schedule: a pass starts after the previous pass's compute, its pipeline send running beside it; the stage's next pass in the same direction waits for that send (false: every pass waits for the previous pass's send, as the other schedules do)", "Megatron-LM arguments.py (--no-overlap-p2p-communication; off unless interleaved), schedules.py forward_backward_pipelining_with_interleaving (fwd_wait_handles, bwd_wait_handles); NeMo 2 MegatronCommOverlapCallback (on with virtual pipeline stages)"},
  {"parallel.tp_comm_overlap", Boolean, "", 0.0, "", 0, 0, false, "TP/SP collectives overlapped with the GEMMs (needs SP); its userbuffers take 20 S h bytes per GPU (14 in FP8, S = s b / c)", "TransformerEngine userbuffers (module/base.py initialize_ub)"},
  {"parallel.cp_comm_type", Choice, "p2p|all_gather|a2a|a2a+p2p", std::nullopt, "p2p", 0, 0, false, "how CP shares keys and values: p2p, a ring of K, V (and dK, dV) beside each step's attention; all_gather, K, V gathered before the attention, dK, dV reduce-scattered after it; a2a (Ulysses), all-to-alls of Q, K, V before and of the output after, the attention then over all s tokens with heads / cp; a2a+p2p, a2a within groups, p2p across them", "Megatron --cp-comm-type (one for every layer); TransformerEngine cp_comm_type (dot_product_attention/context_parallel.py)"},
  {"parallel.hierarchical_cp_sizes", String, "list of 2 sizes", std::nullopt, "none", 0, 0, false, "[all-to-all group size, ring size], product cp, used by a2a+p2p (needed there); the all-to-all groups are consecutive CP ranks (the size divides heads / tp and kv_heads / tp)", "Megatron --hierarchical-context-parallel-sizes"},
  {"parallel.rank_order", String, "order", std::nullopt, "tp-cp-dp-pp", 0, 0, false, "Megatron rank order, fastest first", "Megatron"},
  {"memory.cuda_context_gib", Number, "GiB", 0.5, "", 0, 1e4, false, "CUDA context and library workspaces per GPU", "0.3-0.5 GB per the paper author's tool (docs/memory-model.md section 5)"},
  {"memory.workspaces_mib", Number, "MiB", std::nullopt, "96 from Hopper on, 68 on Ampere; with parallel.tp_comm_overlap 160 and 76", 0, 1e6, false, "library workspaces that torch's caching allocator holds (so counted in its allocated bytes): the cuBLAS and cuBLASLt workspaces of the compute stream and TransformerEngine's cuBLAS workspace (three of them with userbuffers TP overlap)", "CUBLAS_WORKSPACE_CONFIG :4096:8, PyTorch's default from Hopper on (2 x 32 MiB); TransformerEngine get_cublas_workspace_size_bytes (transformer_engine/pytorch/module/base.py): 32 MiB from Hopper on, 4 MiB before, repeated _NUM_MAX_UB_STREAMS = 3 times by initialize_ub"},
  {"memory.nccl_buffer_gib_per_group", Number, "GiB", 0.5, "", 0, 1e4, false, "NCCL buffers per process group of size > 1", "~0.5 GB per communicator (the paper author's tool)"},
  {"memory.fragmentation_fraction", Number, "fraction", 0.10, "", 0, 10, false, "caching-allocator overhead on dynamic memory", ""},
  {"memory.usable_fraction", Number, "fraction", 0.8, "", 0, 1, true, "the paper's rule (`sweep --prune paper-usable-fraction`): the paper estimate fits when <= this x GPU memory", "the paper's 80 % rule"},
  {"memory.headroom_gib", Number, "GiB", 0.0, "", 0, 1e4, false, "memory the default sweep prune (`--prune stepsim`) keeps free: a layout fits when its stepsim peak <= GPU memory - this", ""},
  {"cost.usd_per_gpu_hour", Number, "USD", std::nullopt, "none", 0, 1e6, false, "price of one GPU-hour", ""},
  {"comm.algorithm", Choice, "auto|ring|tree|nvls", std::nullopt, "auto", 0, 0, false, "collective algorithm of AllReduce, ReduceScatter and AllGather: auto is NCCL's choice by its tuner's predicted time; another forces it (NCCL_ALGO), the ring where it does not run the collective", "NVIDIA/nccl src/graph/tuning.cc"},
  {"comm.nvlink_efficiency", Number, "fraction", 0.80, "", 0, 1, true, "fraction of NVLink line rate a ring reaches", "~370/450 GB/s on H100 (nccl-tests issue 212), ~230/300 on A100 (nccl-tests issue 149)"},
  {"comm.network_efficiency", Number, "fraction", 0.94, "", 0, 1, true, "fraction of NIC line rate a ring reaches", "~46-49/50 GB/s on NDR (nccl-tests issues 267, 290), ~24/25 on HDR (NVIDIA/nccl issue 412)"},
  {"comm.nvls_efficiency", Number, "fraction", 0.667, "", 0, 1, true, "NVLS all-reduce bus bandwidth over twice the ring's NVLink bandwidth (per GPU, efficiency included)", "~480 GB/s NVLS all-reduce busbw, DGX H100 (nccl-tests 212, 290), over 2 x 0.8 x 450 GB/s"},
  {"comm.collective_setup_us", Number, "us", 0.0, "", 0, 1e6, false, "start-up latency of a collective beyond NCCL's modeled latency (base and per-step latencies of its tuner)", ""},
  {"comm.p2p_setup_us", Number, "us", 0.0, "", 0, 1e6, false, "start-up latency of a send/recv beyond its route latency", ""},
  {"software", Preset, "preset or object", std::nullopt, "megatron-core-0.20", 0, 0, false, "the software stack (a preset name, or an object that may name a \"preset\" and override its fields; an object without one overrides the default preset)", "scenarios/presets/software"},
  {"software.name", String, "", std::nullopt, "custom", 0, 0, false, "name of the stack in outputs (a preset's name)", ""},
  {"software.attention", Choice, "auto|flash-attention-2|flash-attention-3|cudnn", std::nullopt, "from the preset", 0, 0, false, "fused attention kernel (auto: TransformerEngine's choice, cuDNN on Hopper and Blackwell, FlashAttention-2 on Ampere); priced from its published figures", "FlashAttention-2/3 papers (docs/hardware.md)"},
  {"software.fused_rope", Boolean, "", std::nullopt, "from the preset", 0, 0, false, "fused RoPE kernel (one pass over Q and K) instead of Megatron's unfused rotary ops (five passes)", "Megatron --no-rope-fusion"},
  {"software.fused_swiglu", Boolean, "", std::nullopt, "from the preset", 0, 0, false, "bias-SwiGLU fusion (one pass) instead of SiLU and multiply (two); unfused also keeps the SiLU output for the backward (2 s b f / t more per layer)", "Megatron --no-bias-swiglu-fusion; fusions/fused_bias_swiglu.py"},
  {"software.fused_cross_entropy", Boolean, "", std::nullopt, "from the preset", 0, 0, false, "fused vocab-parallel cross-entropy (logits read once per pass) instead of the fp32 op-by-op loss", "Megatron --cross-entropy-loss-fusion"},
  {"software.grad_accum_fusion", Boolean, "", std::nullopt, "from the preset", 0, 0, false, "weight-gradient GEMMs accumulate into the fp32 main gradient (else a bf16 gradient and a separate add)", "Megatron --no-gradient-accumulation-fusion"},
  {"software.fused_norm_gemm", Boolean, "", std::nullopt, "from the preset", 0, 0, false, "TransformerEngine's LayerNormLinear (carried: in BF16 it runs the norm and the GEMM as two kernels)", "TransformerEngine"},
  {"software.cuda_graphs", Boolean, "", std::nullopt, "from the preset", 0, 0, false, "CUDA graphs (carried; the launch gap of the preset is the one of its launch mode)", "Megatron --cuda-graph-impl"},
  {"software.tp_comm_overlap", Boolean, "", std::nullopt, "from the preset", 0, 0, false, "the stack runs TP communication overlap (carried; parallel.tp_comm_overlap switches the modeled overlap)", "TransformerEngine userbuffers"},
  {"software.overlap_p2p_comm", Boolean, "", std::nullopt, "from the preset", 0, 0, false, "the stack overlaps the interleaved schedule's pipeline sends and receives with the next pass (the default of parallel.overlap_p2p_comm)", "Megatron-LM f9283c5a8a (2023-05-31, the option) and 4eeff55d1f (2023-10-12, the default); NeMo 2 MegatronCommOverlapCallback"},
  {"software.tp_backward_overlap", Boolean, "", std::nullopt, "from the preset", 0, 0, false, "in the backward, the TP communication of the column-parallel linears (QKV, FC1) runs beside their GEMMs: with sequence parallelism the all-gather of the saved input beside the dgrad GEMM and the dgrad reduce-scatter beside the wgrad GEMM, without it the dgrad all-reduce beside the wgrad GEMM (the row-parallel gathers and recomputed forwards stay in line)", "TransformerEngine Linear/LayerNormLinear backward (async_op=True); Megatron-LM async TP all-reduce, September 2021 (commits 6e1bde1e0f, b462d2545d)"},
  {"software.kernel_launch_us", Number, "us", std::nullopt, "from the preset", 0, 1e6, false, "GPU idle between two consecutive kernels of a stream", "NVIDIA CUDA Graphs blog (docs/hardware.md)"},
  {"software.microbatch_host_us", Number, "us", std::nullopt, "from the preset", 0, 1e9, false, "host time per micro-batch and pass (forward or backward) of each model chunk that the GPU waits for (0 in every preset: no published figure)", ""},
  {"software.source", String, "", std::nullopt, "none", 0, 0, false, "where the preset's values come from", ""},
  {"engine.auto_simgrid_max_gpus", Integer, "GPUs", 1024.0, "", 0, 16384, false, "largest cluster the automatic engine choice simulates with SimGrid (analytic beyond; at most the SimGrid engine's limit of 16,384 GPUs)", "the default is from before SimGrid replayed flow classes, when a step took minutes beyond ~1,000 GPUs; with them 0.08-0.33 CPU-s per step from 512 to 16,384 GPUs (bench/results/perf-2026-12-01-simscale.txt)"},
};
// clang-format on
}  // namespace param_table

// Every parameter, in the order of the README.
[[nodiscard]] std::span<const Param> parameters();

// The parameter at `key`; throws InternalError for a key the table does not declare.
[[nodiscard]] const Param& parameter(std::string_view key);

// The declaration of `key`, at compile time (a key the table lacks does not compile).
[[nodiscard]] consteval const Param& declared_param(std::string_view key) {
  for (const Param& p : param_table::kParams)
    if (p.key == key) return p;
  throw "no such parameter";
}

// The default of `key` in JSON units, at compile time (for the spec structs' member defaults).
[[nodiscard]] consteval double param_default(std::string_view key) { return declared_param(key).value.value(); }

[[nodiscard]] std::string to_string(ParamType t);
// The default as a reader sees it: "required", "0.5", "true", "1f1b", ...
[[nodiscard]] std::string default_text(const Param& p);
// The range of a number or an integer: "1 .. 100000", "(0, 1]", "[0, 10]"; empty for the others.
[[nodiscard]] std::string range_text(const Param& p);

}  // namespace stepsim::scenarios
