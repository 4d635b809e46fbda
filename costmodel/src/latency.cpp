#include "stepsim/costmodel/latency.hpp"

#include <cmath>

namespace stepsim::costmodel {

double small_allreduce_time_s(const scenarios::ClusterSpec& cluster, const CommSettings& comm) {
  const double hops_net = std::ceil(std::log2(static_cast<double>(cluster.nodes)));
  return comm.collective_setup_s + 2.0 * (hops_net * cluster.inter_node.latency_s +
                                          static_cast<double>(cluster.gpus_per_node - 1) * cluster.intra_node.latency_s);
}

}  // namespace stepsim::costmodel
