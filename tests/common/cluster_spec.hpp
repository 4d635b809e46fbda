#pragma once
// A hand-built cluster for tests: H100-like NVLink (450 GB/s per direction, 2 us), NDR NICs
// (50 GB/s, 4 us), rail-optimized by default.

#include <cstdint>

#include "stepsim/scenarios/scenario.hpp"

namespace test_support {

inline stepsim::scenarios::ClusterSpec make_spec(
    std::int64_t gpus_per_node, std::int64_t nodes, std::int64_t nics,
    stepsim::scenarios::FabricTopology fabric = stepsim::scenarios::FabricTopology::RailFatTree, double oversubscription = 1.0) {
  stepsim::scenarios::ClusterSpec s;
  s.gpus_per_node = gpus_per_node;
  s.nodes = nodes;
  s.intra_node.bw_Bps = 450e9;
  s.intra_node.latency_s = 2e-6;
  s.inter_node.nics_per_node = nics;
  s.inter_node.nic_Bps = 50e9;
  s.inter_node.latency_s = 4e-6;
  s.inter_node.topology = fabric;
  s.inter_node.oversubscription = oversubscription;
  return s;
}

}  // namespace test_support
