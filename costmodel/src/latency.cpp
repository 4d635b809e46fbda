#include "stepsim/costmodel/latency.hpp"

#include <cmath>

namespace stepsim::costmodel {

double small_allreduce_time_s(const scenarios::ClusterSpec& cluster, const CommSettings& comm) {
  // A double binary tree across NVLink domains and a chain inside each (NCCL tuner,
  // docs/training-step.md section 8).
  const double domain_gpus = static_cast<double>(cluster.nvlink_domain_size());
  const double hops_net = std::ceil(std::log2(static_cast<double>(cluster.world_size()) / domain_gpus));
  return comm.collective_setup_s + 2.0 * (hops_net * cluster.inter_node.latency_s + (domain_gpus - 1.0) * cluster.intra_node.latency_s);
}

}  // namespace stepsim::costmodel
