#include "stepsim/sim/scheduler.hpp"

namespace stepsim::sim {

StreamScheduler::StreamScheduler(const StepGraph& graph) {
  const std::size_t n = graph.ops.size();
  const std::size_t num_streams = graph.devices.size() * static_cast<std::size_t>(kNumStreams);
  ops_.resize(n);
  succ_begin_.resize(n + 1);
  succ_.reserve(graph.num_edges());
  // Copied in index order: sequential reads the hardware overlaps.
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = graph.ops[i];
    const auto id = static_cast<std::int32_t>(i);
    ops_[i] = {op.duration_s,
               static_cast<std::uint32_t>(static_cast<std::size_t>(op.device) * kNumStreams +
                                          static_cast<std::size_t>(op.stream)),
               static_cast<std::int32_t>(graph.predecessors(id).size())};
    succ_begin_[i] = succ_.size();
    for (const std::int32_t next : graph.successors(id)) succ_.push_back(next);
  }
  succ_begin_[n] = succ_.size();
  ready_.resize(num_streams);
  busy_.assign(num_streams, 0);
  touched_.assign(num_streams, 0);
  events_.reserve(std::min<std::size_t>(n, num_streams + 1024));
}

}  // namespace stepsim::sim
