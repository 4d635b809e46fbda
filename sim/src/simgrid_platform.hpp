#pragma once
// The SimGrid platform of a step: built from the cluster's routes, restricted to what the step's
// flows use.
//
// prepare_platform (in the parent process, no SimGrid call) resolves every flow of every plan
// against the cluster: one host per GPU that appears in a flow, one link per directed cluster link
// used by a flow (with its bandwidth), one one-way route per (src, dst) GPU pair that appears in a
// flow, through the links of Cluster::visit_route in order, and the flow's route latency.
// build_platform (in the SimGrid process) creates them, all in one Full zone. A Full zone holds
// an N x N route table (8 bytes per entry), so prepare_platform refuses more than
// kMaxSimGridHosts hosts: use the analytic engine for larger runs.
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

#include "stepsim/sim/graph.hpp"
#include "stepsim/topology/cluster.hpp"

namespace simgrid::s4u {
class Host;
}

namespace stepsim::sim {

// Most GPU hosts one simulation may use (Full zone route table of N^2 entries).
inline constexpr std::size_t kMaxSimGridHosts = 4096;

// One flow of a plan, resolved against the platform.
struct PreparedFlow {
  std::int32_t src_host = 0;
  std::int32_t dst_host = 0;
  std::int32_t route = 0;          // index into Platform::routes
  std::uint64_t bytes = 0;         // rounded to whole bytes, at least 1 when positive
  double latency_s = 0;
};

struct PreparedPlan {
  double setup_s = 0;
  std::vector<std::size_t> round_begin;   // rounds + 1 offsets into Platform::flows
  std::vector<std::int64_t> round_repeat; // how many times each round runs back to back
};

struct PreparedRoute {
  std::int32_t src_host = 0;
  std::int32_t dst_host = 0;
  std::vector<std::int32_t> links;        // indices into Platform::link_bw_Bps
};

// Everything the SimGrid process needs to build the platform and replay the plans, checked in the
// parent. plans[i] is graph.plans[i].
struct Platform {
  std::vector<std::int64_t> host_gpu;     // GPU of each host
  std::vector<double> link_bw_Bps;        // used cluster links, renumbered densely
  std::vector<std::int32_t> link_id;      // cluster Link::id of each used link
  std::vector<PreparedRoute> routes;
  std::vector<PreparedFlow> flows;
  std::vector<PreparedPlan> plans;
};

// InternalError for a flow on a GPU outside the cluster or from a GPU to itself, a link SimGrid
// cannot take (bandwidth not finite and positive), or more than kMaxSimGridHosts hosts.
[[nodiscard]] Platform prepare_platform(const StepGraph& graph, const topology::Cluster& cluster);

// Creates the platform in the running SimGrid engine; returns the host of each Platform host.
[[nodiscard]] std::vector<simgrid::s4u::Host*> build_platform(const Platform& platform);

}  // namespace stepsim::sim
