#pragma once
// Latency-bound collectives whose few bytes make bandwidth irrelevant.

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::costmodel {

// An all-reduce of a few bytes over every rank of the cluster (the gradient norm for clipping): a
// double binary tree across nodes and a chain inside them (NCCL tuner, training-step.md section 8),
// up and down: setup + 2 (ceil(log2 nodes) inter-node latency + (gpus_per_node - 1) intra-node latency).
[[nodiscard]] double small_allreduce_time_s(const scenarios::ClusterSpec& cluster, const CommSettings& comm);

}  // namespace stepsim::costmodel
