#include "stepsim/costmodel/latency.hpp"

#include <algorithm>

namespace stepsim::costmodel {

double small_allreduce_time_s(const scenarios::ClusterSpec& cluster, const CommSettings& comm) {
  TunerInput in;
  in.kind = workload::Collective::AllReduce;
  in.ranks = cluster.world_size();
  in.nodes = std::max<std::int64_t>(1, cluster.world_size() / cluster.comm_node_size());
  in.arch = cluster.gpu.architecture;
  in.intra_Bps = cluster.intra_node.bw_Bps * comm.nvlink_efficiency;
  const bool split_nodes = cluster.nvlink_domain_size() < cluster.gpus_per_node;
  if (split_nodes) in.intra_Bps = std::min(in.intra_Bps, cluster.intra_node.pcie_Bps * comm.network_efficiency);
  const double nodes_per_comm_node = static_cast<double>(cluster.comm_node_size()) / static_cast<double>(cluster.gpus_per_node);
  in.inter_Bps = nodes_per_comm_node * static_cast<double>(cluster.inter_node.nics_per_node) * cluster.inter_node.nic_Bps * comm.network_efficiency;
  in.nvswitch = cluster.intra_node.nvswitch && !split_nodes && cluster.nvlink_domain_size() > 2 && in.nodes == 1;
  return comm.collective_setup_s + choose(in, kGradNormBytes, comm.algorithm).time_s;
}

}  // namespace stepsim::costmodel
