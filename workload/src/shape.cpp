#include "stepsim/workload/shape.hpp"

#include <algorithm>

namespace stepsim::workload {

namespace {

double d(std::int64_t x) { return static_cast<double>(x); }

}  // namespace

Shape shape_of(const scenarios::Scenario& s) {
  const auto& p = s.parallel;
  Shape x;
  x.tp = std::max<std::int64_t>(1, p.tp);
  x.cp = std::max<std::int64_t>(1, p.cp);
  x.pp = std::max<std::int64_t>(1, p.pp);
  x.dp = std::max<std::int64_t>(1, p.dp);
  x.vpp = std::max<std::int64_t>(1, p.vpp);
  x.micro_batches = s.micro_batches();
  x.sequence_parallel = p.sequence_parallel;
  x.tokens_per_rank = d(s.training.seq_len) * d(s.training.micro_batch) / d(x.cp);
  x.tokens_sp_region = x.sequence_parallel ? x.tokens_per_rank / d(x.tp) : x.tokens_per_rank;
  const std::int64_t mult = 128 * x.tp;
  x.padded_vocab = (s.model.vocab + mult - 1) / mult * mult;
  x.vocab_per_tp_rank = d(x.padded_vocab) / d(x.tp);
  x.activation_precision = Precision::Bf16;
  x.grad_precision = s.training.grads_in_fp32 ? Precision::Fp32 : Precision::Bf16;
  x.activation_bytes_per_element = d(bytes_per_element(x.activation_precision));
  x.grad_bytes_per_param = d(bytes_per_element(x.grad_precision));
  x.bucket_params = std::max(40e6, 1e6 * d(x.dp_cp()));
  return x;
}

bool gpt_family(const scenarios::ModelSpec& m) {
  return m.mlp == scenarios::MlpKind::Gelu && m.norm == scenarios::NormKind::LayerNorm;
}

}  // namespace stepsim::workload
