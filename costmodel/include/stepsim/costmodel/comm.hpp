#pragma once
// Collectives as NCCL runs them, on the cluster of topology/: the point-to-point flows of each
// algorithm (what the SimGrid engine replays, with contention) and their closed-form time when
// no link is shared (what the analytic engine uses). Both come from one plan, so the engines
// agree exactly wherever flows do not share a link.
//
// Algorithm and protocol of AllReduce, ReduceScatter and AllGather: NCCL's choice by its tuner
// (nccl_tuner.hpp; comm.algorithm forces one). nccl-tests size convention: S is the full buffer.
//   - Ring: AllReduce 2(n-1) rounds (reduce-scatter then all-gather); ReduceScatter, AllGather: n-1
//     rounds. In every round each member sends S/n bytes to its ring successor; the ring is the
//     members in the order given.
//   - Tree (AllReduce): a reduce round and a broadcast round, each pipelined over the whole
//     message: inside every NVLink domain a chain through the group's members (S bytes per hop,
//     towards the first member, then back), across domains NCCL's double binary tree (two binary
//     trees over the domains, the second mirrored, each carrying S/2 along its edges, split over
//     the group's NICs like ring transfers).
//   - NVLS (one NVSwitch domain): the switch reduces and multicasts, so a GPU sends and receives
//     S(n-1)/n bytes; replayed as n-1 rounds of S/n to the ring successor.
// The protocol (LL, LL128, Simple) and the algorithm's own ceilings scale the flows' bytes by the
// tuner's bus bandwidth over the graph bandwidth (Simple ring: 1), and the plan's start-up latency
// tops the route latencies of its rounds up to the tuner's latency, so that a plan's isolated time
// is the tuner's time where the tuner's bandwidth is what the links give.
//   - AllToAll: n-1 rounds; in round j (1..n-1) member i sends S/n bytes to member (i+j) mod n.
//   - SendRecv: each instance {src, dst} is one flow of S bytes; one round.
//   - n = 1 (or no instance): empty plan, zero time.
//
// Multi-node rings (channels): NCCL runs one ring per NIC, each leaving the node through a
// different NIC, so a node's NICs add up (docs/training-step.md section 8; NVIDIA/nccl issue 601).
// The plan models this by splitting every inter-node ring transfer A -> B of a round into k
// sub-flows of 1/k of the bytes, k = min(distinct NICs the group has on A's node, on B's node):
// sub-flow j goes from the group member owning the j-th of those NICs on A's node (by NIC index,
// first member in ring order) to the member owning the j-th NIC on B's node. With identical
// layouts on every node (Megatron placements) sub-flow j stays on one rail. A group with one
// member per node (k = 1) keeps its plain ring flows. AllToAll and SendRecv are not split
// (all-to-all does not aggregate NICs: nccl-tests issue 267).
//
// Protocol efficiency: NCCL moves data below line rate (H100 NVLink ~370 of 450 GB/s, A100
// NVLink ~230 of 300, NDR ~46-49 of 50, HDR ~24 of 25; docs/training-step.md section 8). A flow's
// bytes are divided by the efficiency of its path (within an NVLink domain: NVLink, else network), so
// both engines, replaying flows on line-rate links, see the same slowdown.

#include <cstdint>
#include <span>
#include <vector>

#include "stepsim/costmodel/nccl_tuner.hpp"
#include "stepsim/scenarios/scenario.hpp"
#include "stepsim/topology/cluster.hpp"
#include "stepsim/workload/collective.hpp"

namespace stepsim::costmodel {

using workload::Collective;

// One point-to-point transfer between two GPUs (global GPU indices).
struct Flow {
  std::int64_t src_gpu = 0;
  std::int64_t dst_gpu = 0;
  double bytes = 0;           // bytes on the wire, protocol efficiency included
};

// A set of flows that run concurrently, `repeat` times back to back (a ring's steps move the
// same chunk sizes along the same edges, so one Round stands for all of them).
struct Round {
  std::vector<Flow> flows;
  std::int64_t repeat = 1;
};

// A fixed start-up latency, then rounds one after the other; the flows of a round run
// concurrently and the round ends when its last flow ends.
struct CommPlan {
  double setup_s = 0;
  std::vector<Round> rounds;
  // What NCCL runs (AllReduce, ReduceScatter, AllGather; Ring/Simple for the others).
  NcclAlgorithm algorithm = NcclAlgorithm::Ring;
  NcclProtocol protocol = NcclProtocol::Simple;
};

// Rounds a plan runs, repeats counted.
[[nodiscard]] std::int64_t round_count(const CommPlan& plan);

// A plan's rounds' repeats and every flow's size, round after round: what the forms of
// contended_time_s and flow_range over sizes read.
struct FlowSizes {
  std::vector<std::int64_t> repeats;
  std::vector<double> bytes;
};
[[nodiscard]] FlowSizes flow_sizes(const CommPlan& plan);

// Knobs of the communication model: the scenario's "comm" fields (protocol efficiencies, start-up
// latencies, algorithm), declared with their defaults and sources in scenarios/params.hpp.
using CommSettings = scenarios::CommSpec;

// A collective algorithm: the rounds of point-to-point flows that AllReduce, ReduceScatter and
// AllGather of one group run. Each NCCL algorithm is one implementation, chosen by the tuner (or
// comm.algorithm); AllToAll and SendRecv are point-to-point patterns of their own.
class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;
  [[nodiscard]] virtual NcclAlgorithm kind() const = 0;
  // Appends the rounds of `kind` of `bytes` (the full buffer) over every instance (all of the same
  // size n >= 2) to plan.rounds; flow bytes include the efficiency of their path and `choice`'s
  // protocol and ceilings (its bus bandwidth against `graph_Bps`).
  virtual void plan(const topology::Cluster& cluster, Collective kind, const std::vector<std::vector<std::int64_t>>& instances,
                    double bytes, const CommSettings& settings, const TunerChoice& choice, double graph_Bps,
                    CommPlan& plan) const = 0;
};

// NCCL's ring (see above): ring_steps(kind, n) rounds in which every member sends S/n bytes to its
// successor, inter-node transfers split over the NICs the group has on both nodes.
class RingAlgorithm final : public CollectiveAlgorithm {
 public:
  [[nodiscard]] NcclAlgorithm kind() const override { return NcclAlgorithm::Ring; }
  void plan(const topology::Cluster& cluster, Collective kind, const std::vector<std::vector<std::int64_t>>& instances,
            double bytes, const CommSettings& settings, const TunerChoice& choice, double graph_Bps,
            CommPlan& plan) const override;
};

// NCCL's tree all-reduce (see above).
class TreeAlgorithm final : public CollectiveAlgorithm {
 public:
  [[nodiscard]] NcclAlgorithm kind() const override { return NcclAlgorithm::Tree; }
  void plan(const topology::Cluster& cluster, Collective kind, const std::vector<std::vector<std::int64_t>>& instances,
            double bytes, const CommSettings& settings, const TunerChoice& choice, double graph_Bps,
            CommPlan& plan) const override;
};

// NVLS inside one NVSwitch domain (see above).
class NvlsAlgorithm final : public CollectiveAlgorithm {
 public:
  [[nodiscard]] NcclAlgorithm kind() const override { return NcclAlgorithm::Nvls; }
  void plan(const topology::Cluster& cluster, Collective kind, const std::vector<std::vector<std::int64_t>>& instances,
            double bytes, const CommSettings& settings, const TunerChoice& choice, double graph_Bps,
            CommPlan& plan) const override;
};

// The implementation of `kind`.
[[nodiscard]] const CollectiveAlgorithm& collective_algorithm(NcclAlgorithm kind);

// One flow of a transfer, sized from the transfer's bytes: split over `parts` NIC pairs when
// parts > 0, then divided by the efficiency of its path.
struct RingFlow {
  std::int64_t src_gpu = 0;
  std::int64_t dst_gpu = 0;
  double parts = 0;
  double efficiency = 1;
  [[nodiscard]] double bytes(double transfer_bytes) const {
    return (parts > 0 ? transfer_bytes / parts : transfer_bytes) / efficiency;
  }
};

// The chunk RingAlgorithm sends per step for `bytes` over `ranks` members: S / n over the
// protocol's share of the graph bandwidth (choice.bus_Bps / graph_Bps).
[[nodiscard]] double ring_chunk_bytes(double bytes, std::int64_t ranks, const TunerChoice& choice, double graph_Bps);

// What plan_collective reads from the topology for a ring collective of a group, whatever its
// size: the tuner's input, the round's flows in plan order, its repeat and its route latency. A
// plan of `bytes` whose tuner choice (choose(tuner, bytes, ...)) is the ring has setup
// collective_setup_s + max(0, choice.latency_s - route_latency_s), one round of `repeat` with
// flows[i].bytes(ring_chunk_bytes(bytes, ranks, choice, graph_Bps)): plan_collective's plan.
struct RingShape {
  TunerInput tuner;
  double graph_Bps = 0;       // graph_bandwidth_Bps(tuner)
  std::int64_t ranks = 0;     // per instance
  std::int64_t repeat = 0;    // ring_steps(kind, ranks)
  double route_latency_s = 0;  // repeat x slowest_route_latency_s
  // The flows and the slowest route latency among them do not depend on the collective.
  double slowest_route_latency_s = 0;
  std::vector<RingFlow> flows;
};
// For AllReduce, ReduceScatter or AllGather over instances of the same size n >= 2.
[[nodiscard]] RingShape ring_shape(const topology::Cluster& cluster, Collective kind,
                                   const std::vector<std::vector<std::int64_t>>& instances, const CommSettings& settings);
// The fields of `shape` that depend on the collective (tuner, graph_Bps, ranks, repeat and
// route_latency_s) for `kind` over instances like `members`, from shape.slowest_route_latency_s:
// what ring_shape sets after the flows, so that a shape of one collective of a group serves the
// others (its flows as they are).
void set_ring_collective(const topology::Cluster& cluster, Collective kind, const std::vector<std::int64_t>& members,
                         const CommSettings& settings, RingShape& shape);

// What NCCL's tuner sees of a communicator over `members` (in ring order) for `kind`: the ranks,
// the NVLink domains they span, the NVLink bandwidth of a GPU and the network bandwidth of the
// group's NICs on one node (the fewest over its domains), both at the settings' efficiencies.
[[nodiscard]] TunerInput tuner_input(const topology::Cluster& cluster, Collective kind,
                                     const std::vector<std::int64_t>& members, const CommSettings& settings);

// Throws InternalError unless the settings' efficiencies lie in (0, 1] and their setups are not
// negative (what plan_collective and ring_shape check first).
void check_settings(const CommSettings& settings);

// Plans `kind` of `bytes` (nccl-tests convention: the full buffer S) over every instance of a
// group at once. instances[0] is the tracked group; the others are identical collectives that
// run at the same time (symmetric ranks), included so that the link load they cause is replayed.
// For SendRecv each instance is a pair {src, dst}. All instances must have the same size
// (InternalError otherwise).
[[nodiscard]] CommPlan plan_collective(const topology::Cluster& cluster, Collective kind,
                         const std::vector<std::vector<std::int64_t>>& instances, double bytes,
                         const CommSettings& settings);
// Same with CommSettings{} (the defaults of the scenario's "comm" fields).
[[nodiscard]] CommPlan plan_collective(const topology::Cluster& cluster, Collective kind,
                         const std::vector<std::vector<std::int64_t>>& instances, double bytes);

// Time of a plan when no two flows share a link: setup_s + sum over rounds of the slowest flow,
// a flow taking route latency + bytes / route bottleneck bandwidth. O(flows).
[[nodiscard]] double isolated_time_s(const topology::Cluster& cluster, const CommPlan& plan);

// Time of a plan when its own flows share links but nothing else runs: in every round a flow gets
// the smallest share bw / (flows of the round on that link) along its route (the max-min share
// when the competing flows are alike, as the symmetric instances of one collective are).
// Equals isolated_time_s when no two flows of a round share a link.
[[nodiscard]] double contended_time_s(const topology::Cluster& cluster, const CommPlan& plan);

// What the times of a plan take from its routes, per flow, independent of the flows' bytes: the
// route's latency and bottleneck (isolated_time_s) and, with the round's other flows on its
// links, the contended latency and share (contended_time_s). Plans of the same flows (sources and
// destinations, round by round) and any bytes share them: plans of one collective and group that
// differ only in size.
struct RouteCost {
  double latency_s = 0;       // route latency (route_cost)
  double bottleneck_Bps = 0;  // route bottleneck; +infinity from a GPU to itself
  double share_Bps = 0;       // smallest bw / (flows of the round on the link); +infinity from a GPU to itself
};
// A flow's ends and the index of its route's costs in PlanRoutes::costs (a plan's flows have few
// distinct costs, so that they are stored once).
struct FlowRoute {
  std::int32_t src_gpu = 0;
  std::int32_t dst_gpu = 0;
  std::int32_t cost = 0;
};
struct PlanRoutes {
  std::vector<RouteCost> costs;                // distinct, bit for bit
  std::vector<std::vector<FlowRoute>> rounds;  // per round of the plan, per flow
  [[nodiscard]] const RouteCost& cost(const FlowRoute& f) const { return costs[static_cast<std::size_t>(f.cost)]; }
  // The plan's flows go between the same GPUs, round by round, in the same order.
  [[nodiscard]] bool matches(const CommPlan& plan) const;
};
[[nodiscard]] PlanRoutes plan_routes(const topology::Cluster& cluster, const CommPlan& plan);
// contended_time_s(cluster, plan) from the plan's routes (routes.matches(plan)).
[[nodiscard]] double contended_time_s(const CommPlan& plan, const PlanRoutes& routes);
// The same from a setup, the rounds' repeats and every flow's size, round after round, in the
// order of `routes` (the flows of a plan that routes.matches).
[[nodiscard]] double contended_time_s(double setup_s, std::span<const std::int64_t> repeats, std::span<const double> flow_bytes,
                                      const PlanRoutes& routes);

// Ring steps of a collective over n members: 2(n-1) for AllReduce, n-1 for ReduceScatter,
// AllGather and AllToAll, 1 for SendRecv, 0 for None or n <= 1 (NCCL ring; docs/training-step.md 8).
[[nodiscard]] std::int64_t ring_steps(Collective kind, std::int64_t n);

// Closed-form alpha-beta ring time: steps * (latency_s + (S/n) / bw_Bps); SendRecv:
// latency_s + S / bw_Bps. No setup latency and no efficiency: pass the effective bandwidth.
// Equals S * bus_bandwidth_factor / bw_Bps + steps * latency_s.
[[nodiscard]] double ring_time_s(Collective kind, std::int64_t n, double bytes, double bw_Bps, double latency_s);

// nccl-tests bus bandwidth factor (doc/PERFORMANCE.md): busbw = algbw * factor, with
// 2(n-1)/n for AllReduce, (n-1)/n for ReduceScatter, AllGather and AllToAll, 1 for SendRecv,
// 0 for None.
[[nodiscard]] double bus_bandwidth_factor(Collective kind, std::int64_t n);

}  // namespace stepsim::costmodel
