#pragma once
// A random step graph of delays for engine tests: compute ops and communication ops with an empty
// plan whose setup equals their duration (no flow: an ideal network). Durations are multiples of
// 1/8 s (every sum is exact in binary floating point) below duration_steps / 8, so many ops
// become ready at the same instant.

#include <cstdint>

#include "stepsim/sim/graph.hpp"

namespace test_support {

inline stepsim::sim::StepGraph random_delay_graph(std::uint64_t seed, int devices, int ops, std::uint32_t duration_steps,
                                                  std::uint32_t comm_one_in) {
  namespace sim = stepsim::sim;
  sim::StepGraph g;
  g.devices.resize(static_cast<std::size_t>(devices));
  std::uint64_t state = seed;
  auto next = [&state]() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::uint32_t>(state >> 33);
  };
  for (int i = 0; i < ops; ++i) {
    sim::Op op;
    op.device = static_cast<std::int32_t>(next() % static_cast<std::uint32_t>(devices));
    op.stream = static_cast<sim::Stream>(next() % sim::kNumStreams);
    op.duration_s = static_cast<double>(next() % duration_steps) / 8.0;
    op.label = "op";
    if (next() % comm_one_in == 0) {
      g.plans.push_back(sim::CommPlan{op.duration_s, {}});
      op.kind = sim::OpKind::Collective;
      op.collective = sim::Collective::AllReduce;
      op.plan = static_cast<std::int32_t>(g.plans.size() - 1);
      op.label = "comm";
    }
    g.add_op(op);
    const int num_preds = static_cast<int>(next() % 3);
    for (int k = 0; k < num_preds && i > 0; ++k) g.add_edge(static_cast<std::int32_t>(next() % static_cast<std::uint32_t>(i)), i);
  }
  return g;
}

}  // namespace test_support
