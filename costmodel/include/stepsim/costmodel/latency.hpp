#pragma once
// Latency-bound collectives whose few bytes make bandwidth irrelevant.

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::costmodel {

// An all-reduce of a few bytes over every rank of the cluster (the gradient norm for clipping): a
// double binary tree across NVLink domains and a chain inside them (NCCL tuner,
// docs/training-step.md section 8), up and down: setup + 2 (ceil(log2 domains) network latency +
// (GPUs per domain - 1) NVLink latency).
[[nodiscard]] double small_allreduce_time_s(const scenarios::ClusterSpec& cluster, const CommSettings& comm);

}  // namespace stepsim::costmodel
