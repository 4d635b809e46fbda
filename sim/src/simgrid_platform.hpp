#pragma once
// The SimGrid platform of a step: the links the step's flows load and one representative flow per
// class of flows that always move at the same rate.
//
// prepare_platform (in the parent process, no SimGrid call) resolves every flow of every plan
// against the cluster (Cluster::visit_route), then, with SimGridFlows::Classes (the default):
//
//   1. Redundant links are left out. A link l is redundant when every flow that crosses it also
//      crosses (just before it, or just after it) one of a set S of kept links whose bandwidths
//      sum to at most l's: whatever flows run, l then carries at most what S carries, so its
//      capacity never binds and max-min fairness gives every flow the same rate without it. (A
//      leaf's aggregated uplink of a fabric without oversubscription is redundant: its NIC ports
//      feed it.) The links of S are kept for good, so no redundancy argument rests on another
//      left-out link.
//   2. Flows and links are partitioned by colour refinement: a flow starts coloured by (plan,
//      round, bytes, route latency), a link by its bandwidth; a link's next colour adds how many
//      flows of each colour cross it, a flow's next colour how many links of each colour it
//      crosses; until no class splits. The result is an equitable partition: every link of a
//      class carries the same number n(L, F) of flows of each class F, and the flows of a class
//      cross the same number of links of each class.
//   3. One SimGrid link per link class (its bandwidth), one flow per flow class (the plan round's
//      flows of one class), whose route crosses link class L n(L, F) times: SimGrid's max-min
//      solver counts a link that appears n times in a route n times, so the representative flow
//      loads its links as the n flows it stands for, and gets the rate each of them would get.
//
// Why this is exact. The flows of a round start together with equal bytes and latency, and a
// round's flows are started and stopped together by the replay, so the flows in flight are always
// whole classes (or several copies of one, for one plan replayed by two ops at once). Max-min
// fairness by progressive filling then fixes the rates of whole classes at a time: as long as the
// rates are constant on classes, every link of a class has the same remaining capacity and the
// same unfixed load, so links of a class saturate together and a flow class crosses either all or
// none of them. Flows of a class thus always move at the same rate and end at the same time, and
// the representative flow replays them with the same links' loads. SimGridFlows::Exact replays
// every flow on every link it crosses (no step 1-3), the reference the classes are tested against.
//
// Hosts. SimGrid only needs two endpoints per route (no computation runs on hosts): routes are
// numbered and route r joins host pair r of H hosts, H the smallest with H (H - 1) >= routes. The
// Full zone's route table (H^2 entries) then grows as the number of routes, not of GPUs.
//
// Latency. CM02 shares a bottleneck among flows in proportion to 1 / (route latency), which would
// make competing routes of unequal latency unfair (and starve zero-latency routes). The SimGrid
// links therefore carry no latency; the replay makes each flow first wait its route latency (the
// sum of the cluster links' latencies) and then transfer its bytes. A lone flow takes exactly
// latency + bytes / bottleneck bandwidth, as in the cost model, and flows sharing a link get equal
// shares whatever their route latencies.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/graph.hpp"
#include "stepsim/topology/cluster.hpp"

namespace simgrid::s4u {
class Host;
}

namespace stepsim::sim {

// One flow replayed by SimGrid: a representative of `multiplicity` flows of one plan round.
struct PreparedFlow {
  std::int32_t src_host = 0;       // endpoints of its route
  std::int32_t dst_host = 0;
  std::int32_t route = -1;         // index into Platform::routes, -1 for a zero-byte flow
  std::uint64_t bytes = 0;         // rounded to whole bytes, at least 1 when positive
  double latency_s = 0;
  std::int64_t multiplicity = 1;   // plan flows it stands for
};

struct PreparedPlan {
  double setup_s = 0;
  std::vector<std::size_t> round_begin;   // rounds + 1 offsets into Platform::flows
  std::vector<std::int64_t> round_repeat; // how many times each round runs back to back
};

struct PreparedRoute {
  std::int32_t src_host = 0;
  std::int32_t dst_host = 0;
  std::vector<std::int32_t> links;        // indices into Platform::link_bw_Bps; a link n times loads it n times
};

// Everything the SimGrid process needs to build the platform and replay the plans, checked in the
// parent. plans[i] is graph.plans[i].
struct Platform {
  std::int32_t num_hosts = 0;
  std::vector<double> link_bw_Bps;        // SimGrid links (link classes), numbered densely
  std::vector<std::int32_t> link_id;      // cluster Link::id of a link of each class
  std::vector<PreparedRoute> routes;
  std::vector<PreparedFlow> flows;
  std::vector<PreparedPlan> plans;
  std::int64_t plan_flows = 0;            // flows of the plans (sum of multiplicities)
  std::int64_t cluster_links = 0;         // cluster links the flows load, redundant ones included
  std::int64_t redundant_links = 0;       // of those, left out (step 1)
};

// InternalError for a flow on a GPU outside the cluster or from a GPU to itself, or a link SimGrid
// cannot take (bandwidth not finite and positive).
[[nodiscard]] Platform prepare_platform(const StepGraph& graph, const topology::Cluster& cluster,
                                        SimGridFlows mode = SimGridFlows::Classes);

// Creates the platform in the running SimGrid engine; returns the host of each Platform host.
[[nodiscard]] std::vector<simgrid::s4u::Host*> build_platform(const Platform& platform);

}  // namespace stepsim::sim
