#pragma once
// A Llama-like model written out field by field, so that the suites' expected values can be
// checked by hand: 8 layers, h = 1024, f = 4096, 8 heads, vocabulary 32000, s = 4096.
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::workload_test {

inline scenarios::Scenario small_model() {
  scenarios::Scenario s;
  s.model.layers = 8;
  s.model.hidden = 1024;
  s.model.ffn_hidden = 4096;
  s.model.heads = 8;
  s.model.kv_heads = 8;
  s.model.vocab = 32000;
  s.training.seq_len = 4096;
  s.training.micro_batch = 1;
  s.training.global_batch = 16;
  return s;
}

}  // namespace stepsim::workload_test
