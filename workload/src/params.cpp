#include "stepsim/workload/params.hpp"

#include "stepsim/workload/shape.hpp"

namespace stepsim::workload {

using scenarios::MlpKind;
using scenarios::NormKind;
using scenarios::Scenario;

namespace {

double d(std::int64_t x) { return static_cast<double>(x); }

}  // namespace

double fp8_element_bytes(scenarios::TrainingPrecision precision) {
  return precision == scenarios::TrainingPrecision::Mxfp8 ? 1.0 + 1.0 / 32.0 : 1.0;
}

double layer_gemm_weights(const Scenario& s) {
  const auto& m = s.model;
  const double h = d(m.hidden), f = d(m.ffn_hidden), a = d(m.heads), k = d(m.kv_heads), t = d(s.parallel.tp);
  const double mlp_mats = m.mlp == MlpKind::SwiGlu ? 3.0 : 2.0;
  return 2.0 * h * h * (1.0 + k / a) / t + mlp_mats * h * f / t;
}

double layer_params(const Scenario& s) {
  const auto& m = s.model;
  const double h = d(m.hidden), f = d(m.ffn_hidden), a = d(m.heads), k = d(m.kv_heads), t = d(s.parallel.tp);
  double layer = layer_gemm_weights(s);
  if (m.bias) {
    const double fc1_out = m.mlp == MlpKind::SwiGlu ? 2.0 * f : f;
    layer += (h * (1.0 + 2.0 * k / a) + fc1_out) / t + 2.0 * h;
  }
  return layer + layer_norm_params(s);
}

double norm_params(const Scenario& s, double width) {
  return s.model.norm == NormKind::RmsNorm ? width : 2.0 * width;
}

double norm_statistics_bytes(const Scenario& s) { return s.model.norm == NormKind::RmsNorm ? 4.0 : 8.0; }

double layer_norm_params(const Scenario& s) {
  const auto& m = s.model;
  double norms = 2.0 * final_norm_params(s);
  if (m.qk_norm) norms += 2.0 * norm_params(s, d(m.hidden) / d(m.heads));
  return norms;
}

double embedding_params(const Scenario& s) {
  return d(shape_of(s).padded_vocab) * d(s.model.hidden) / d(s.parallel.tp);
}

double final_norm_params(const Scenario& s) { return norm_params(s, d(s.model.hidden)); }

// The output layer has its own weights when untied; tied embeddings on one stage share them
// (with p > 1 the last stage keeps a copy, as Megatron does).
double output_params(const Scenario& s) {
  return (!s.model.tied_embeddings || s.parallel.pp > 1) ? embedding_params(s) : 0.0;
}

double stage_params(const Scenario& s, std::int64_t stage) {
  double P = d(scenarios::stage_layers(s, stage)) * layer_params(s);
  if (stage == 0) P += embedding_params(s);
  if (stage == s.parallel.pp - 1) P += final_norm_params(s) + output_params(s);
  return P;
}

}  // namespace stepsim::workload
