#pragma once
// NCCL's choice of algorithm and protocol for one collective, after the model of NCCL's own tuner
// (NVIDIA/nccl src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime): for every
// (algorithm, protocol) a latency and a bus bandwidth, time = latency + S / algorithm bandwidth,
// and NCCL runs the pair with the smallest time. The tuner's constants (base and per-hop latencies
// by protocol, per-channel bandwidth ceilings of LL128 and trees by GPU generation, the LL bandwidth
// ceiling, NVLS efficiency, the tree correction by message size) are NCCL's defaults; they are
// listed with their meaning in docs/training-step.md section 8.
//
// What the model takes from the cluster instead of NCCL's topology search: the bandwidth of the
// search's graph (channels x per-channel bandwidth) is the bandwidth the collective's flows get on
// stepsim's links, NVLink x comm.nvlink_efficiency inside an NVLink domain and, across domains, the
// NICs the group has on one node x NIC rate x comm.network_efficiency; the channel count, which
// only sets the per-channel ceilings, is that bandwidth over the NVLink bandwidth NCCL assigns to
// one channel of the GPU generation (SM80 20, SM90 20.6, SM100 40.1 GB/s: src/graph/topo.h).
//
// Algorithms: ring (every collective), tree (all-reduce: a chain inside each NVLink domain, a
// double binary tree across domains), NVLS (NVSwitch reduction on Hopper and Blackwell, inside one
// NVLink domain; across nodes NCCL needs CollNet for it). Not modeled: NVLS-tree, CollNet (needs
// SHARP switches and a plugin), PAT (reduce-scatter/all-gather with one GPU per node).

#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/workload/collective.hpp"

namespace stepsim::costmodel {

enum class NcclAlgorithm { Ring, Tree, Nvls };
enum class NcclProtocol { LL, LL128, Simple };

[[nodiscard]] std::string to_string(NcclAlgorithm a);
[[nodiscard]] std::string to_string(NcclProtocol p);

// What the tuner knows about one communicator.
struct TunerInput {
  workload::Collective kind = workload::Collective::AllReduce;
  std::int64_t ranks = 0;                  // n
  std::int64_t nodes = 0;                  // NVLink domains the ranks span (NCCL's nNodes)
  scenarios::GpuArchitecture arch = scenarios::GpuArchitecture::Unknown;
  double intra_Bps = 0;                    // NVLink bandwidth a ring gets per GPU (efficiency included)
  double inter_Bps = 0;                    // network bandwidth the group has per node (0 on one node)
  bool nvswitch = false;                   // NVLink domain behind NVSwitches (NVLS possible on Hopper+)
};

// One (algorithm, protocol) pair as the tuner rates it.
struct TunerChoice {
  NcclAlgorithm algorithm = NcclAlgorithm::Ring;
  NcclProtocol protocol = NcclProtocol::Simple;
  double latency_s = 0;      // the tuner's latency (base + per-hop latencies)
  double bus_Bps = 0;        // the tuner's bus bandwidth, size correction included (0: not available)
  double time_s = 0;         // latency_s + S / algorithm bandwidth
};

// NCCL's channel count for a graph bandwidth `graph_Bps` on GPUs of `arch` (at least 1).
[[nodiscard]] std::int64_t nccl_channels(scenarios::GpuArchitecture arch, double graph_Bps);

// The bus bandwidth the flows of `algorithm` get with the Simple protocol and no ceiling: the
// graph bandwidth (min of intra_Bps and, across nodes, inter_Bps).
[[nodiscard]] double graph_bandwidth_Bps(const TunerInput& in);

// The tuner's rating of (algorithm, protocol) for `bytes` (the full buffer S); bus_Bps 0 when NCCL
// does not run that pair for this collective and communicator.
[[nodiscard]] TunerChoice rate(const TunerInput& in, NcclAlgorithm algorithm, NcclProtocol protocol, double bytes);

// Every available pair, rated; the first with the smallest time is NCCL's choice. `only`: restrict to
// one algorithm (comm.algorithm other than auto), falling back to the ring when that algorithm does
// not run this collective.
[[nodiscard]] std::vector<TunerChoice> rate_all(const TunerInput& in, double bytes);
[[nodiscard]] TunerChoice choose(const TunerInput& in, double bytes, scenarios::CollectiveAlgorithm only);

}  // namespace stepsim::costmodel
