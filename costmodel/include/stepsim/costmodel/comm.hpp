#pragma once
// Collectives as NCCL runs them, on the cluster of topology/: the point-to-point flows of each
// algorithm (what the SimGrid engine replays, with contention) and their closed-form time when
// no link is shared (what the analytic engine uses). Both come from one plan, so the engines
// agree exactly wherever flows do not share a link.

#include <cstdint>
#include <vector>

#include "stepsim/topology/cluster.hpp"

namespace stepsim::costmodel {

enum class Collective : std::uint8_t { None, AllReduce, ReduceScatter, AllGather, AllToAll, SendRecv };

// One point-to-point transfer between two GPUs (global GPU indices).
struct Flow {
  std::int64_t src_gpu = 0;
  std::int64_t dst_gpu = 0;
  double bytes = 0;
};

// A fixed start-up latency, then rounds one after the other; the flows of a round run
// concurrently and the round ends when its last flow ends.
struct CommPlan {
  double setup_s = 0;
  std::vector<std::vector<Flow>> rounds;
};

// Plans `kind` of `bytes` (nccl-tests convention: the full buffer S) over every instance of a
// group at once. instances[0] is the tracked group; the others are identical collectives that
// run at the same time (symmetric ranks), included so that the link load they cause is replayed.
// For SendRecv each instance is a pair {src, dst}.
CommPlan plan_collective(const topology::Cluster& cluster, Collective kind,
                         const std::vector<std::vector<std::int64_t>>& instances, double bytes);

// Time of a plan when no two flows share a link: setup_s + sum over rounds of the slowest flow,
// a flow taking route latency + bytes / route bottleneck bandwidth.
double isolated_time_s(const topology::Cluster& cluster, const CommPlan& plan);

}  // namespace stepsim::costmodel
