#pragma once
// The vocabulary of communication work: which collective, over which process group, and how it
// sits beside the compute it belongs to.

#include <cstdint>
#include <string>

namespace stepsim::workload {

// Collective operations (nccl-tests size convention: bytes = the full buffer S).
enum class Collective : std::uint8_t { None, AllReduce, ReduceScatter, AllGather, AllToAll, SendRecv };
[[nodiscard]] std::string to_string(Collective c);   // "all-reduce", "reduce-scatter", ..., "send/recv", "none"

// The process group a collective runs over (rank layout: topology::Placement).
enum class GroupKind : std::uint8_t {
  Tensor,        // the TP group of a stage
  Context,       // the CP group
  DataContext,   // DP x CP: gradient reduction and parameter gathers
  DataContextInstance,  // one distributed-optimizer instance, DP x CP / N ranks (N > 1): reduce-scatter, parameter gathers
  DataContextReplicas,  // one rank of each of the N instances: the all-reduce of the reduce-scattered shard
  ContextRing,   // the CP ring: each rank sends to its successor in its CP group
  EmbeddingTie,  // the first and the last stage (tied embedding gradient)
  Pipeline,      // a rank and the same rank of a neighbouring stage
  World,         // every rank
  ContextA2A,    // a2a+p2p: an all-to-all group of consecutive ranks of the CP group
};
[[nodiscard]] std::string to_string(GroupKind g);

// AfterCompute: runs once the compute it belongs to has ended and blocks what follows (Megatron's
// TP collectives between GEMMs). WithCompute: starts with the compute and runs beside it (the CP
// ring; TP with tp_comm_overlap); the pass ends when both have.
enum class Overlap : std::uint8_t { AfterCompute, WithCompute };

struct CollectiveWork {
  GroupKind group = GroupKind::Tensor;
  Collective collective = Collective::None;
  double bytes = 0;   // one collective's message size S
  double count = 1;   // identical collectives back to back
  Overlap overlap = Overlap::AfterCompute;
};

}  // namespace stepsim::workload
