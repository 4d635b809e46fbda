#pragma once
// Latency-bound collectives whose few bytes make bandwidth irrelevant.

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::costmodel {

// Size of the gradient-norm all-reduce for clipping: one fp32 scalar.
inline constexpr double kGradNormBytes = 4.0;

// An all-reduce of a few bytes over every rank of the cluster (the gradient norm for clipping): NCCL
// tuner's time of its choice (nccl_tuner.hpp; a tree, LL protocol, across many nodes) plus
// comm.collective_setup_us.
[[nodiscard]] double small_allreduce_time_s(const scenarios::ClusterSpec& cluster, const CommSettings& comm);

}  // namespace stepsim::costmodel
