#include "stepsim/workload/kernels.hpp"

#include <algorithm>
#include <cmath>

#include "stepsim/workload/params.hpp"
#include "stepsim/workload/shape.hpp"

namespace stepsim::workload {

using scenarios::MlpKind;
using scenarios::NormKind;
using scenarios::Recompute;
using scenarios::Scenario;

namespace {

double d(std::int64_t x) { return static_cast<double>(x); }

// The sizes every kernel list needs, as doubles (notation of kernels.hpp).
struct Dims {
  double s = 0, b = 0, c = 0, t = 0;
  double h = 0, a = 0, kv = 0, dh = 0, f = 0;
  double n = 0;         // tokens per rank in the TP region: s b / c
  double n_sp = 0;      // tokens per rank in the SP region: n / t with SP, n without
  double v_t = 0;       // padded vocabulary rows per TP rank
  double grad_bytes = 4;  // bytes per main-gradient element (fp32 or bf16)
  bool swiglu = true;
  bool layernorm = false;
  bool bias = false;
  bool qk_norm = false;  // norms over the head dimension of the queries and keys
  double norm_stats = 4;  // fp32 statistics per normalized row (norm_statistics_bytes)
  bool gpt = false;     // learned positions and dropout, no RoPE
  bool unfused = false;  // Megatron's unfused attention: s x s scores, softmax, dropout in memory
  scenarios::CpCommType cp_type = scenarios::CpCommType::P2P;  // how the CP group shares K and V
  double cp_a2a = 1;   // CP ranks exchanging all-to-all (Ulysses): heads split this many ways
  double cp_ring = 1;  // CP ranks passing K and V around a ring: the attention's steps
  scenarios::TrainingPrecision precision = scenarios::TrainingPrecision::Bf16;
  bool fp8 = false;     // the layers' GEMMs in FP8 (any FP8 recipe)
  double micro_batches = 1;  // per pipeline per step (the weights' FP8 cast is once per step)
  const scenarios::SoftwareSpec* sw = nullptr;  // the fusions of the software stack
};

Dims dims(const Scenario& s) {
  const Shape shape = shape_of(s);
  Dims x;
  x.s = d(s.training.seq_len);
  x.b = d(s.training.micro_batch);
  x.c = d(shape.cp);
  x.t = d(shape.tp);
  x.h = d(s.model.hidden);
  x.a = d(s.model.heads);
  x.kv = d(s.model.kv_heads > 0 ? s.model.kv_heads : s.model.heads);
  x.dh = x.h / x.a;
  x.f = d(s.model.ffn_hidden);
  x.n = shape.tokens_per_rank;
  x.n_sp = shape.tokens_sp_region;
  x.v_t = shape.vocab_per_tp_rank;
  x.grad_bytes = shape.grad_bytes_per_param;
  x.swiglu = s.model.mlp == MlpKind::SwiGlu;
  x.layernorm = s.model.norm == NormKind::LayerNorm;
  x.bias = s.model.bias;
  x.qk_norm = s.model.qk_norm;
  x.norm_stats = norm_statistics_bytes(s);
  x.gpt = gpt_family(s.model);
  x.unfused = s.training.attention == scenarios::Attention::Unfused;
  x.cp_type = s.parallel.cp_comm_type;
  x.cp_a2a = d(s.parallel.cp_a2a_size());
  x.cp_ring = d(s.parallel.cp_ring_size());
  x.precision = s.training.precision;
  x.fp8 = s.training.fp8();
  x.micro_batches = d(std::max<std::int64_t>(s.micro_batches(), 1));
  x.sw = &s.software;
  return x;
}

// fprop or dgrad GEMM Y[m,n] = X[m,k] W[k,n]: 2mnk FLOPs, bf16 operands and result.
Kernel gemm(std::string name, double m, double n, double k) {
  Kernel g;
  g.name = std::move(name);
  g.kind = KernelKind::Gemm;
  g.m = m;
  g.n = n;
  g.k = k;
  g.flops = 2.0 * m * n * k;
  g.model_flops = g.flops;
  g.bytes = 2.0 * (m * k + k * n + m * n);
  return g;
}

Kernel memory(std::string name, double bytes) {
  Kernel g;
  g.name = std::move(name);
  g.kind = KernelKind::Memory;
  g.bytes = bytes;
  return g;
}

// wgrad GEMM appended to `ks`. With gradient-accumulation fusion it accumulates into the main
// gradient: bf16 inputs 2(mk + kn), result read and written in the main-gradient type, 2 g mn.
// Without: it writes a bf16 gradient (2 mn) and "<name>.accum" adds it to the main gradient
// (read 2 mn + g mn, write g mn).
// `fp8`: FP8 operands (1 byte per element; a GEMM of the layers under an FP8 recipe).
void wgrad(std::vector<Kernel>& ks, const std::string& name, double m, double n, double k, const Dims& x, bool fp8 = false) {
  Kernel g = gemm(name, m, n, k);
  g.fp8 = fp8;
  const double operand = fp8 ? 1.0 : 2.0;
  if (x.sw->grad_accum_fusion) {
    g.bytes = operand * (m * k + k * n) + 2.0 * x.grad_bytes * m * n;
    ks.push_back(std::move(g));
    return;
  }
  g.bytes = operand * (m * k + k * n) + 2.0 * m * n;
  ks.push_back(std::move(g));
  ks.push_back(memory(name + ".accum", (2.0 + 2.0 * x.grad_bytes) * m * n));
}

// Norm forward on `rows` rows of `width` elements: read x, write y (bf16), write the fp32
// statistics of each row (norm_statistics_bytes), read the weights (and LayerNorm bias).
// `out_bytes`: bytes written per output element (2: bf16; an FP8 cast fused into the norm writes
// the quantized output instead, fp8_norm_out_bytes).
Kernel norm_forward(std::string name, double rows, double width, const Dims& x, double out_bytes = 2.0) {
  const double weights = (x.layernorm ? 4.0 : 2.0) * width;
  return memory(std::move(name), (2.0 + out_bytes) * rows * width + x.norm_stats * rows + weights);
}

// Norm backward on `rows` rows of `width`: read dy and x (4 per element) and the statistics, write
// dx (2); fused with the residual-gradient add (the norms on the residual stream) it also reads the
// residual gradient (2). The weight-gradient partial sums are small.
Kernel norm_backward(std::string name, double rows, double width, const Dims& x, bool residual_add) {
  return memory(std::move(name), ((residual_add ? 8.0 : 6.0) * width + x.norm_stats) * rows);
}

// The norms of the residual stream on [n_sp, h].
Kernel norm_forward(std::string name, const Dims& x, double out_bytes = 2.0) {
  return norm_forward(std::move(name), x.n_sp, x.h, x, out_bytes);
}
Kernel norm_backward(std::string name, const Dims& x) { return norm_backward(std::move(name), x.n_sp, x.h, x, true); }

// model.qk_norm: the query and key norms over the head dimension, one row per token and head of
// this rank: n a / t query rows and n k / t key rows of d_h (heads are split by TP, so SP does not
// change them). Forward after the QKV projection, backward before its dgrad; no residual add.
void qk_norm_forward(std::vector<Kernel>& ks, const Dims& x) {
  if (!x.qk_norm) return;
  ks.push_back(norm_forward("q_norm.fwd", x.n * x.a / x.t, x.dh, x));
  ks.push_back(norm_forward("k_norm.fwd", x.n * x.kv / x.t, x.dh, x));
}
void qk_norm_backward(std::vector<Kernel>& ks, const Dims& x) {
  if (!x.qk_norm) return;
  ks.push_back(norm_backward("k_norm.bwd", x.n * x.kv / x.t, x.dh, x, false));
  ks.push_back(norm_backward("q_norm.bwd", x.n * x.a / x.t, x.dh, x, false));
}

// Residual add after a row-parallel GEMM on [n_sp, h]: read both inputs, write the sum. GPT:
// bias-dropout-add, which also reads the bias and writes a 1-byte dropout mask per element.
Kernel residual_forward(std::string name, const Dims& x) {
  double bytes = 6.0 * x.n_sp * x.h;
  if (x.bias) bytes += 2.0 * x.h;
  if (x.gpt) bytes += x.n_sp * x.h;
  return memory(std::move(name), bytes);
}

// GPT only: backward of the dropout in bias-dropout-add: read the gradient and the mask, write
// the masked gradient. (Llama: the residual gradient passes unchanged; its add is in the norm backward.)
Kernel dropout_backward(std::string name, const Dims& x) {
  return memory(std::move(name), 5.0 * x.n_sp * x.h);
}

// ---- FP8 (TransformerEngine). Bytes per element of the quantization passes of a recipe:
// - amax: current scaling reads the bf16 tensor once to find its amax before every cast (delayed
//   scaling takes the scale from the amax history; MXFP8 computes its block scales in the cast).
// - one orientation: the FP8 copy, 1 byte; MXFP8 adds its E8M0 block scale, 1 byte per 32.
// - forward casts of GEMM inputs write one orientation; MXFP8 writes the row-wise and the
//   column-wise copy in the same pass (the column-wise one is what wgrad reads).
// - output gradients: cast + transpose, both orientations (dgrad reads one, wgrad the other).
// - Hopper recipes transpose the saved FP8 input for wgrad in the backward (read 1, write 1).
double fp8_amax_read_bytes(const Dims& x) { return x.precision == scenarios::TrainingPrecision::Fp8Current ? 2.0 : 0.0; }
double fp8_orientation_bytes(const Dims& x) { return fp8_element_bytes(x.precision); }
double fp8_forward_write_bytes(const Dims& x) {
  return (x.precision == scenarios::TrainingPrecision::Mxfp8 ? 2.0 : 1.0) * fp8_orientation_bytes(x);
}
double fp8_input_transpose_bytes(const Dims& x) { return x.precision == scenarios::TrainingPrecision::Mxfp8 ? 0.0 : 2.0; }
// The norm before QKV and FC1 writes the FP8 GEMM input itself (TE's LayerNormLinear), except
// under current scaling, which needs the amax of the whole output first: bf16 output, amax, cast.
bool fp8_cast_in_norm(const Dims& x) { return x.fp8 && x.precision != scenarios::TrainingPrecision::Fp8Current; }
double fp8_norm_out_bytes(const Dims& x) { return fp8_cast_in_norm(x) ? fp8_forward_write_bytes(x) : 2.0; }

// A GEMM of the transformer layers: FP8 operands (1 byte per element, BF16 result) under an FP8
// recipe, bf16 otherwise.
Kernel layer_gemm(std::string name, double m, double n, double k, const Dims& x) {
  Kernel g = gemm(std::move(name), m, n, k);
  if (!x.fp8) return g;
  g.fp8 = true;
  g.bytes = (m * k + k * n) + 2.0 * m * n;
  return g;
}

// Forward cast of a bf16 GEMM input of `elems` elements (amax pass, read 2, write).
void fp8_input_cast(std::vector<Kernel>& ks, const std::string& name, double elems, const Dims& x) {
  if (!x.fp8) return;
  ks.push_back(memory(name, (fp8_amax_read_bytes(x) + 2.0 + fp8_forward_write_bytes(x)) * elems));
}

// Backward: cast + transpose of the output gradient feeding dgrad and wgrad (`grad_elems`), and
// the transpose of the saved FP8 input for wgrad (`input_elems`; Hopper recipes).
void fp8_backward_casts(std::vector<Kernel>& ks, const std::string& gemm, double grad_elems, double input_elems, const Dims& x) {
  if (!x.fp8) return;
  ks.push_back(memory(gemm + ".grad_cast", (fp8_amax_read_bytes(x) + 2.0 + 2.0 * fp8_orientation_bytes(x)) * grad_elems));
  if (fp8_input_transpose_bytes(x) > 0) ks.push_back(memory(gemm + ".input_t", fp8_input_transpose_bytes(x) * input_elems));
}

// RoPE on Q and K ((a + k)/t heads). Fused: read and write once, 2 * 2 n (a + k) d_h / t.
// Unfused (Megatron's _apply_rotary_pos_emb_bshd: t * cos + rotate_half(t) * sin, with
// rotate_half = cat(-x2, x1)): negate (half read, half write), cat, two multiplies and an add read
// 5.5 and write 4.5 tensors of that size, five times the fused bytes; the backward alike.
Kernel rope(std::string name, const Dims& x) {
  const double passes = x.sw->fused_rope ? 1.0 : 5.0;
  return memory(std::move(name), passes * 4.0 * x.n * (x.a + x.kv) * x.dh / x.t);
}

// Causal attention core forward per rank: 2 b s^2 a d_h / (t c) (docs/training-step.md 1.4; each CP
// rank does 1/c of the causal work). FlashAttention's partly masked diagonal tiles (+1.6 % at
// s = 8192) are not added: the count is the model count, the extra work lies in attn_max.
double attention_forward_flops(const Dims& x) {
  return 2.0 * x.b * x.s * x.s * x.a * x.dh / (x.t * x.c);
}

// How a rank's attention sees the sequence under CP: the c steps of the p2p ring (its s/c queries
// against each rank's s/c keys in turn), its s/c queries against all s gathered keys (all_gather),
// all s queries and keys with a/c of its heads (a2a, Ulysses), or, with a2a+p2p, the ring's r
// steps over s/r queries and keys with a/u of its heads (u the all-to-all groups' size, u r = c).
// Without CP: all of it.
bool cp_ring(const Dims& x) { return x.cp_ring > 1; }
bool cp_ulysses(const Dims& x) { return x.cp_a2a > 1; }
bool cp_gathered(const Dims& x) { return x.c > 1 && x.cp_type == scenarios::CpCommType::AllGather; }
// Q, K and V the attention reads: the rank's own, 2 n (a + 2k) d_h / t, and with gathered keys
// (allgather) the K and V of the other c - 1 ranks too.
double attention_qkv_bytes(const Dims& x) {
  const double own = 2.0 * x.n * (x.a + 2.0 * x.kv) * x.dh / x.t;
  if (cp_gathered(x)) return own + (x.c - 1.0) * 2.0 * x.n * 2.0 * x.kv * x.dh / x.t;
  return own;
}
// The p2p ring's c steps each read the rank's Q and a K, V block and write a partial output.
double ring_steps(const Dims& x) { return cp_ring(x) ? x.cp_ring : 1.0; }
// Query rows of one attention product: s / c gathered or on the p2p ring, s / r with a2a+p2p, s
// under Ulysses.
double attention_queries(const Dims& x) {
  if (cp_gathered(x)) return x.s / x.c;
  return x.s / x.cp_ring;
}
// Products of one rank: b a / t, the heads split u ways after the all-to-all.
double attention_batch(const Dims& x) { return cp_ulysses(x) ? x.b * x.a / (x.t * x.cp_a2a) : x.b * x.a / x.t; }

// Forward: read Q, K and V (attention_qkv_bytes), write O (2 n a d_h / t) and the fp32 LSE
// (4 n a / t), once per ring step.
Kernel attention_kernel(std::string name, const Dims& x) {
  Kernel g;
  g.name = std::move(name);
  g.kind = KernelKind::Attention;
  g.m = attention_queries(x);
  g.n = cp_ring(x) ? x.s : g.m;
  g.k = x.dh;
  g.batch = attention_batch(x);
  return g;
}

Kernel attention_forward(const Dims& x) {
  Kernel g = attention_kernel("attn.fwd", x);
  g.flops = attention_forward_flops(x);
  g.model_flops = g.flops;
  const double qkv = attention_qkv_bytes(x);
  const double out = 2.0 * x.n * x.a * x.dh / x.t + 4.0 * x.n * x.a / x.t;
  g.bytes = ring_steps(x) * (qkv + out);
  return g;
}

// The p2p ring only: merging the partial outputs of its r steps with their LSE; each of the r - 1
// merges reads two partial outputs and LSEs and writes one.
Kernel attention_cp_merge(std::string name, const Dims& x) {
  const double one = 2.0 * x.n * x.a * x.dh / x.t + 4.0 * x.n * x.a / x.t;
  return memory(std::move(name), (x.cp_ring - 1.0) * 3.0 * one);
}

// Backward: recompute S = QK^T and P, then dV, dP, dQ, dK: 2.5 x forward executed, 2 x forward in
// model FLOPs (Dao-AILab/flash-attention benchmarks). Bytes: read Q, K, V, O, dO, LSE, write dQ, dK,
// dV; plus FlashAttention-2's preprocessing D = rowsum(dO * O) (read O, dO, write 4 n a / t) and
// its fp32 dQ accumulator (write 4, read 4 bytes per dQ element). Once per p2p ring step; with
// gathered keys (allgather) K, V, dK and dV are those of all c ranks.
Kernel attention_backward(const Dims& x) {
  Kernel g = attention_kernel("attn.bwd", x);
  g.backward = true;
  const double fwd = attention_forward_flops(x);
  g.flops = 2.5 * fwd;
  g.model_flops = 2.0 * fwd;
  const double qkv = attention_qkv_bytes(x);
  const double o = 2.0 * x.n * x.a * x.dh / x.t;
  const double lse = 4.0 * x.n * x.a / x.t;
  const double main_pass = qkv + 2.0 * o + lse + qkv;
  const double preprocess = 2.0 * o + lse;
  const double dq_accum = 4.0 * o;
  g.bytes = ring_steps(x) * (main_pass + preprocess + dq_accum);
  return g;
}

// ---- Unfused attention (Megatron's CoreAttention before FlashAttention, 2021-22). Per rank the
// a/t heads of b sequences form a batch of b a / t matrix products over s/c query rows and all s
// keys; the scores are computed in full (the causal mask is applied afterwards by the softmax), so
// the executed FLOPs are twice the causal count. Batched GEMMs carry the shape of one matrix
// product in m, n, k; flops and bytes are those of the whole batch. model_flops is half of the
// executed FLOPs (the causal count), so that the layer's model_flops equal the fused path's.

// Elements of the scores of one rank: b a s^2 / (t c).
double score_elems(const Dims& x) { return attention_batch(x) * attention_queries(x) * x.s; }

// A batched GEMM of `batch` products Y[m,n] = X[m,k] W[k,n]: 2 batch m n k FLOPs, bf16 operands
// and result, 2 batch (mk + kn + mn) bytes.
Kernel batched_gemm(std::string name, double batch, double m, double n, double k) {
  Kernel g = gemm(std::move(name), m, n, k);
  g.batch = batch;
  g.flops = batch * g.flops;
  g.model_flops = 0.5 * g.flops;
  g.bytes = batch * g.bytes;
  return g;
}

// Forward: S = Q K^T (baddbmm with the 1/sqrt(d_h) scale as alpha; m = s/c, n = s, k = d_h);
// fused scale-mask-softmax (read S, write P, bf16); GPT: attention dropout (read P, write the
// dropped P and a 1-byte mask); O = P V (m = s/c, n = d_h, k = s); the copy of O from
// [b, a/t, s/c, d_h] to [s/c, b, a d_h / t] (read and write 2 n a d_h / t).
std::vector<Kernel> unfused_attention_forward(const Dims& x) {
  const double batch = attention_batch(x), sq = attention_queries(x), elems = score_elems(x);
  std::vector<Kernel> ks;
  ks.push_back(batched_gemm("attn.scores.fprop", batch, sq, x.s, x.dh));
  ks.push_back(memory("attn.softmax.fwd", 4.0 * elems));
  if (x.gpt) ks.push_back(memory("attn.dropout.fwd", 5.0 * elems));
  ks.push_back(batched_gemm("attn.pv.fprop", batch, sq, x.dh, x.s));
  ks.push_back(memory("attn.context.copy", 4.0 * x.n * x.a * x.dh / x.t));
  return ks;
}

// Backward, in execution order: the copy of dO back to the batched layout; dP = dO V^T
// (m = s/c, n = s, k = d_h) and dV = P^T dO (m = s, n = d_h, k = s/c); GPT: dropout backward (read
// dP and the mask, write); softmax backward (read dP and P, write dS in place: 6 bytes per score);
// dQ = dS K (m = s/c, n = d_h, k = s) and dK = dS^T Q (m = s, n = d_h, k = s/c).
std::vector<Kernel> unfused_attention_backward(const Dims& x) {
  const double batch = attention_batch(x), sq = attention_queries(x), elems = score_elems(x);
  std::vector<Kernel> ks;
  ks.push_back(memory("attn.context.copy_bwd", 4.0 * x.n * x.a * x.dh / x.t));
  ks.push_back(batched_gemm("attn.pv.dgrad", batch, sq, x.s, x.dh));
  ks.push_back(batched_gemm("attn.pv.wgrad", batch, x.s, x.dh, sq));
  if (x.gpt) ks.push_back(memory("attn.dropout.bwd", 5.0 * elems));
  ks.push_back(memory("attn.softmax.bwd", 6.0 * elems));
  ks.push_back(batched_gemm("attn.scores.dgrad_q", batch, sq, x.dh, x.s));
  ks.push_back(batched_gemm("attn.scores.dgrad_k", batch, x.s, x.dh, sq));
  return ks;
}

// The attention core of the forward (fused or unfused), CP merge included.
std::vector<Kernel> attention_core_forward(const Dims& x) {
  if (x.unfused) return unfused_attention_forward(x);
  std::vector<Kernel> ks{attention_forward(x)};
  if (cp_ring(x)) ks.push_back(attention_cp_merge("attn.cp_merge", x));
  return ks;
}

std::vector<Kernel> attention_core_backward(const Dims& x) {
  if (x.unfused) return unfused_attention_backward(x);
  return {attention_backward(x)};
}

void append(std::vector<Kernel>& to, std::vector<Kernel> from) {
  for (Kernel& k : from) to.push_back(std::move(k));
}

double qkv_width(const Dims& x) { return (x.a + 2.0 * x.kv) * x.dh / x.t; }
double fc1_width(const Dims& x) { return (x.swiglu ? 2.0 : 1.0) * x.f / x.t; }

std::vector<Kernel> zero_model_flops(std::vector<Kernel> ks) {
  for (Kernel& k : ks) k.model_flops = 0;
  return ks;
}

}  // namespace

// Forward of one layer (docs/training-step.md 1.1, GPT variant 1.3): F1 norm, F3 QKV (then the
// query and key norms with model.qk_norm), F4 RoPE, F5 attention, F6 proj, F8 residual, F9 norm,
// F11 FC1, F12 activation, F13 FC2, F15 residual.
std::vector<Kernel> layer_forward(const Scenario& s) {
  const Dims x = dims(s);
  const double q_t = x.a * x.dh / x.t;
  std::vector<Kernel> ks;
  if (x.fp8) {
    // The weights' FP8 copies and transposes, cast once per step (TE caches them across the
    // micro-batches): read bf16, write both orientations; spread over the step's micro-batches.
    ks.push_back(memory("fp8.weight_cast", (fp8_amax_read_bytes(x) + 2.0 + 2.0 * fp8_orientation_bytes(x)) *
                                               layer_gemm_weights(s) / x.micro_batches));
  }
  ks.push_back(norm_forward("norm1.fwd", x, fp8_norm_out_bytes(x)));
  if (!fp8_cast_in_norm(x)) fp8_input_cast(ks, "qkv.input_cast", x.n_sp * x.h, x);
  ks.push_back(layer_gemm("qkv.fprop", x.n, qkv_width(x), x.h, x));
  qk_norm_forward(ks, x);
  if (!x.gpt) ks.push_back(rope("rope.fwd", x));
  append(ks, attention_core_forward(x));
  fp8_input_cast(ks, "proj.input_cast", x.n * q_t, x);
  ks.push_back(layer_gemm("proj.fprop", x.n, x.h, q_t, x));
  ks.push_back(residual_forward("residual1.fwd", x));
  ks.push_back(norm_forward("norm2.fwd", x, fp8_norm_out_bytes(x)));
  if (!fp8_cast_in_norm(x)) fp8_input_cast(ks, "fc1.input_cast", x.n_sp * x.h, x);
  ks.push_back(layer_gemm("fc1.fprop", x.n, fc1_width(x), x.h, x));
  // SwiGLU fused: read gate and up (4 n f / t), write 2 n f / t; unfused: SiLU (read 2, write 2)
  // and multiply (read 4, write 2), 10 n f / t. GeLU (bias fused): read and write 2 n f / t.
  const double swiglu = x.sw->fused_swiglu ? 6.0 : 10.0;
  const double act = x.swiglu ? swiglu * x.n * x.f / x.t : 4.0 * x.n * x.f / x.t;
  ks.push_back(memory(x.swiglu ? "swiglu.fwd" : "gelu.fwd", act));
  fp8_input_cast(ks, "fc2.input_cast", x.n * x.f / x.t, x);
  ks.push_back(layer_gemm("fc2.fprop", x.n, x.h, x.f / x.t, x));
  ks.push_back(residual_forward("residual2.fwd", x));
  return ks;
}

// Backward of one layer in execution order (docs/training-step.md 1.2): B2 FC2 dgrad, B3 FC2 wgrad,
// B4 activation backward, B6 FC1 dgrad, B8 FC1 wgrad, B9 norm backward, B11 proj dgrad / wgrad,
// B12 attention backward, B13 RoPE backward (then the key and query norms' backward with
// model.qk_norm), B14 QKV dgrad / wgrad, B15 norm backward.
std::vector<Kernel> layer_backward(const Scenario& s) {
  const Dims x = dims(s);
  const double q_t = x.a * x.dh / x.t;
  std::vector<Kernel> ks;
  if (x.gpt) ks.push_back(dropout_backward("residual2.bwd", x));
  fp8_backward_casts(ks, "fc2", x.n * x.h, x.n * x.f / x.t, x);
  ks.push_back(layer_gemm("fc2.dgrad", x.n, x.f / x.t, x.h, x));
  wgrad(ks, "fc2.wgrad", x.f / x.t, x.h, x.n, x, x.fp8);
  // SwiGLU fused: read dy, gate, up (6 n f / t), write dgate, dup (4 n f / t); unfused: the
  // multiply's two gradients (read 4, write 2 each) and the SiLU backward (read 4, write 2), 18 n f / t.
  // GeLU: read dy and the input (4 n f / t), write dx (2 n f / t).
  const double swiglu = x.sw->fused_swiglu ? 10.0 : 18.0;
  const double act = x.swiglu ? swiglu * x.n * x.f / x.t : 6.0 * x.n * x.f / x.t;
  ks.push_back(memory(x.swiglu ? "swiglu.bwd" : "gelu.bwd", act));
  fp8_backward_casts(ks, "fc1", x.n * fc1_width(x), x.n * x.h, x);
  ks.push_back(layer_gemm("fc1.dgrad", x.n, x.h, fc1_width(x), x));
  wgrad(ks, "fc1.wgrad", x.h, fc1_width(x), x.n, x, x.fp8);
  ks.push_back(norm_backward("norm2.bwd", x));
  if (x.gpt) ks.push_back(dropout_backward("residual1.bwd", x));
  fp8_backward_casts(ks, "proj", x.n * x.h, x.n * q_t, x);
  ks.push_back(layer_gemm("proj.dgrad", x.n, q_t, x.h, x));
  wgrad(ks, "proj.wgrad", q_t, x.h, x.n, x, x.fp8);
  append(ks, attention_core_backward(x));
  if (!x.gpt) ks.push_back(rope("rope.bwd", x));
  qk_norm_backward(ks, x);
  fp8_backward_casts(ks, "qkv", x.n * qkv_width(x), x.n * x.h, x);
  ks.push_back(layer_gemm("qkv.dgrad", x.n, x.h, qkv_width(x), x));
  wgrad(ks, "qkv.wgrad", x.h, qkv_width(x), x.n, x, x.fp8);
  ks.push_back(norm_backward("norm1.bwd", x));
  return ks;
}

// docs/training-step.md section 3: selective re-runs the forward kernels of the recomputed modules
// before their backward: core_attn the attention core (F5; unfused: scores, softmax, dropout, P V and
// the output copy), mlp FC1, the activation and FC2 (F11-F13), layernorm both norms (F1, F9); full
// re-runs F1-F15 before the backward of each layer the recompute method picks. Not model FLOPs.
std::vector<Kernel> layer_recompute(const Scenario& s, bool recomputed_layer) {
  switch (s.training.recompute) {
    case Recompute::None:
      return {};
    case Recompute::Selective: {
      const auto& mods = s.training.recompute_modules;
      std::vector<Kernel> ks;
      if (mods.layernorm || mods.mlp)
        for (Kernel& k : layer_forward(s)) {
          const bool norm = k.name == "norm1.fwd" || k.name == "norm2.fwd";
          const bool mlp = k.name == "fc1.fprop" || k.name == "swiglu.fwd" || k.name == "gelu.fwd" || k.name == "fc2.fprop";
          if ((norm && mods.layernorm) || (mlp && mods.mlp)) ks.push_back(std::move(k));
        }
      if (mods.core_attn) append(ks, attention_core_forward(dims(s)));
      return zero_model_flops(std::move(ks));
    }
    case Recompute::Full: {
      if (!recomputed_layer) return {};
      // The recomputed forward uses the FP8 weights cast in the first forward.
      std::vector<Kernel> ks = zero_model_flops(layer_forward(s));
      std::erase_if(ks, [](const Kernel& k) { return k.name == "fp8.weight_cast"; });
      return ks;
    }
  }
  return {};
}

// docs/training-step.md section 2. Lookup of n tokens in the v/t rows of this TP rank: read the ids
// (8 n bytes, int64) and the rows (2 n h), write [n, h] (2 n h). GPT then (after the TP all-reduce)
// adds the learned position rows on [n, h] (read 4 n h, write 2 n h) and applies the embedding
// dropout on the SP shard (read 2 n_sp h, write 2 n_sp h and a 1-byte mask).
std::vector<Kernel> embedding_forward(const Scenario& s) {
  const Dims x = dims(s);
  std::vector<Kernel> ks;
  ks.push_back(memory("embed.lookup", 4.0 * x.n * x.h + 8.0 * x.n));
  if (x.gpt) {
    ks.push_back(memory("embed.pos_add", 6.0 * x.n * x.h));
    ks.push_back(memory("embed.dropout", 5.0 * x.n_sp * x.h));
  }
  return ks;
}

// Backward of the embedding. GPT first undoes the dropout on the SP shard and, after the gradient
// all-gather, sums the position-embedding gradient (read 2 n h, read + write s/c rows in the
// main-gradient type). Then PyTorch's dense embedding backward zero-fills a bf16 [v/t, h] gradient
// (2 v h / t), reads the ids and the incoming gradient (8 n + 2 n h) and adds into the touched rows
// (read + write 4 n h); Megatron's gradient hook then adds it to the main gradient
// (read 2 v h / t, read + write 2 g v h / t).
std::vector<Kernel> embedding_backward(const Scenario& s) {
  const Dims x = dims(s);
  std::vector<Kernel> ks;
  if (x.gpt) {
    ks.push_back(memory("embed.dropout_bwd", 5.0 * x.n_sp * x.h));
    ks.push_back(memory("embed.pos_grad", 2.0 * x.n * x.h + 2.0 * x.grad_bytes * (x.n / x.b) * x.h));
  }
  ks.push_back(memory("embed.wgrad", 2.0 * x.v_t * x.h + 8.0 * x.n + 6.0 * x.n * x.h));
  ks.push_back(memory("embed.grad_accum", (2.0 + 2.0 * x.grad_bytes) * x.v_t * x.h));
  return ks;
}

// Last stage forward: final norm on [n_sp, h]; logits GEMM (M n, N v/t, K h) after the sequence
// all-gather; Megatron's vocab-parallel cross-entropy in fp32 over [n, v/t], with V = n v/t elements.
// Unfused (megatron/core/tensor_parallel/cross_entropy.py, op by op): cast to fp32 and row max
// (read 2V + 4V, write 4V); [TP all-reduce of the max] subtract the max, exp in place, row sum
// (read 12V, write 8V); [TP all-reduces of the target logit and the sum] divide by the sum in
// place, the softmax kept for backward (read 4V, write 4V). Fused
// (megatron/core/fusions/fused_cross_entropy.py, one kernel per jit-fused function): cast and max
// (read 2V, write the fp32 copy 4V), exp and sums (read 4V, write 4V), divide (read 4V, write 4V).
std::vector<Kernel> output_forward(const Scenario& s) {
  const Dims x = dims(s);
  const double elems = x.n * x.v_t;
  const bool fused = x.sw->fused_cross_entropy;
  std::vector<Kernel> ks;
  ks.push_back(norm_forward("final_norm.fwd", x));
  ks.push_back(gemm("logits.fprop", x.n, x.v_t, x.h));
  ks.push_back(memory("ce.max", (fused ? 6.0 : 10.0) * elems));
  ks.push_back(memory("ce.exp_sum", (fused ? 8.0 : 20.0) * elems));
  ks.push_back(memory("ce.softmax", 8.0 * elems));
  return ks;
}

// Last stage backward: unfused, softmax minus one-hot times the loss gradient in place (read 4V,
// write 4V), cast to bf16 for the GEMMs (read 4V, write 2V); fused, one kernel reads the softmax
// and writes the bf16 gradient (read 4V, write 2V). Then logits dgrad (M n, N h, K v/t) and wgrad
// (M h, N v/t, K n) into the main gradient; final norm backward.
std::vector<Kernel> output_backward(const Scenario& s) {
  const Dims x = dims(s);
  const double elems = x.n * x.v_t;
  std::vector<Kernel> ks;
  ks.push_back(memory("ce.bwd", (x.sw->fused_cross_entropy ? 6.0 : 14.0) * elems));
  ks.push_back(gemm("logits.dgrad", x.n, x.h, x.v_t));
  wgrad(ks, "logits.wgrad", x.h, x.v_t, x.n, x);
  ks.push_back(norm_backward("final_norm.bwd", x));
  return ks;
}

// Adam on the fp32 shard (Megatron's DistributedOptimizer / Float16OptimizerWithFloat16Params with
// apex/TE multi-tensor kernels), per parameter: with bf16 main gradients a copy into fp32
// (read 2, write 4); the gradient-norm pass for clipping (read 4); Adam (read param, grad, m, v:
// 16; write param, m, v: 12); the copy of the fp32 master into the bf16 model parameter (read 4,
// write 2). 38 bytes per parameter with fp32 gradients. The clip-scaling pass (read 4, write 4),
// which runs only when the norm exceeds the threshold, is not included.
std::vector<Kernel> optimizer_step(const Scenario& s, double params) {
  std::vector<Kernel> ks;
  if (shape_of(s).grad_precision != Precision::Fp32) ks.push_back(memory("opt.grad_to_fp32", 6.0 * params));
  ks.push_back(memory("opt.grad_norm", 4.0 * params));
  ks.push_back(memory("opt.adam", 28.0 * params));
  ks.push_back(memory("opt.param_copy", 6.0 * params));
  return ks;
}

std::vector<Kernel> zero_grad_buffer(const Scenario& s, double params) {
  return {memory("grad_buffer.zero", shape_of(s).grad_bytes_per_param * params)};
}


std::vector<Kernel> host_pass() {
  Kernel k;
  k.name = "host.pass";
  k.kind = KernelKind::Host;
  return {k};
}

double total_flops(const std::vector<Kernel>& ks) {
  double f = 0;
  for (const Kernel& k : ks) f += k.flops;
  return f;
}

double total_model_flops(const std::vector<Kernel>& ks) {
  double f = 0;
  for (const Kernel& k : ks) f += k.model_flops;
  return f;
}

double total_bytes(const std::vector<Kernel>& ks) {
  double b = 0;
  for (const Kernel& k : ks) b += k.bytes;
  return b;
}

}  // namespace stepsim::workload
