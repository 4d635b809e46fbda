#include "stepsim/sim/scheduler.hpp"

namespace stepsim::sim {

StreamScheduler::StreamScheduler(const StepGraph& graph) {
  const std::size_t n = graph.ops.size();
  const std::size_t num_streams = graph.devices.size() * static_cast<std::size_t>(kNumStreams);
  stream_of_.resize(n);
  waiting_.resize(n);
  succ_begin_.resize(n + 1);
  succ_.reserve(graph.num_edges());
  // Copied in index order: sequential reads the hardware overlaps.
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = graph.ops[i];
    const auto id = static_cast<std::int32_t>(i);
    stream_of_[i] = static_cast<std::uint32_t>(static_cast<std::size_t>(op.device) * kNumStreams +
                                               static_cast<std::size_t>(op.stream));
    waiting_[i] = static_cast<std::int32_t>(graph.predecessors(id).size());
    succ_begin_[i] = succ_.size();
    const auto& out = graph.successors(id);
    succ_.insert(succ_.end(), out.begin(), out.end());
  }
  succ_begin_[n] = succ_.size();
  ready_.resize(num_streams);
  busy_.assign(num_streams, 0);
  touched_.assign(num_streams, 0);
  events_.reserve(std::min<std::size_t>(n, num_streams + 1024));
}

void StreamScheduler::schedule(const SchedulerEvent& e) {
  events_.push_back(e);
  std::push_heap(events_.begin(), events_.end(), Later{});
}

void StreamScheduler::complete(std::int32_t op) {
  const auto i = static_cast<std::size_t>(op);
  ++completed_;
  const std::uint32_t s = stream_of_[i];
  busy_[s] = 0;
  touch(s);
  for (std::size_t k = succ_begin_[i]; k < succ_begin_[i + 1]; ++k) {
    const std::int32_t next = succ_[k];
    if (--waiting_[static_cast<std::size_t>(next)] == 0) make_ready(next);
  }
}

void StreamScheduler::make_ready(std::int32_t op) {
  const std::uint32_t s = stream_of_[static_cast<std::size_t>(op)];
  auto& q = ready_[s];
  q.push_back(op);
  std::push_heap(q.begin(), q.end(), std::greater<std::int32_t>{});
  touch(s);
}

void StreamScheduler::touch(std::uint32_t stream) {
  if (!touched_[stream]) {
    touched_[stream] = 1;
    touched_list_.push_back(stream);
  }
}

}  // namespace stepsim::sim
