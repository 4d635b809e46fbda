#include "simgrid_platform.hpp"

#include <cmath>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "stepsim/scenarios/error.hpp"

namespace stepsim::sim {

namespace {

std::uint64_t wire_bytes(double bytes) {
  if (!(bytes > 0)) return 0;
  const long long rounded = std::llround(bytes);
  return rounded < 1 ? 1U : static_cast<std::uint64_t>(rounded);
}

}  // namespace

Platform prepare_platform(const StepGraph& graph, const topology::Cluster& cluster) {
  Platform p;
  const std::int64_t num_gpus = cluster.num_gpus();
  std::unordered_map<std::int64_t, std::int32_t> host_of_gpu;
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> route_of_pair;
  std::unordered_map<std::int32_t, std::int32_t> used_link;

  auto host_for = [&](std::int64_t gpu, std::size_t plan) {
    if (gpu < 0 || gpu >= num_gpus) {
      throw InternalError("simgrid engine: plan " + std::to_string(plan) + " has a flow on GPU " + std::to_string(gpu) +
                          ", but the cluster has " + std::to_string(num_gpus) + " GPUs");
    }
    auto [it, inserted] = host_of_gpu.try_emplace(gpu, static_cast<std::int32_t>(p.host_gpu.size()));
    if (inserted) p.host_gpu.push_back(gpu);
    return it->second;
  };

  p.plans.reserve(graph.plans.size());
  for (std::size_t pi = 0; pi < graph.plans.size(); ++pi) {
    const CommPlan& plan = graph.plans[pi];
    PreparedPlan prepared;
    prepared.setup_s = plan.setup_s;
    prepared.round_begin.push_back(p.flows.size());
    for (const auto& round : plan.rounds) {
      prepared.round_repeat.push_back(round.repeat);
      for (const Flow& f : round.flows) {
        if (f.src_gpu == f.dst_gpu) {
          throw InternalError("simgrid engine: plan " + std::to_string(pi) + " has a flow from GPU " +
                              std::to_string(f.src_gpu) + " to itself");
        }
        PreparedFlow pf;
        pf.src_host = host_for(f.src_gpu, pi);
        pf.dst_host = host_for(f.dst_gpu, pi);
        pf.bytes = wire_bytes(f.bytes);
        auto [it, inserted] =
            route_of_pair.try_emplace({pf.src_host, pf.dst_host}, static_cast<std::int32_t>(p.routes.size()));
        if (inserted) {
          const topology::Route r = cluster.route(f.src_gpu, f.dst_gpu);
          if (r.links.empty()) {
            throw InternalError("simgrid engine: the cluster has no route from GPU " + std::to_string(f.src_gpu) +
                                " to GPU " + std::to_string(f.dst_gpu));
          }
          PreparedRoute pr;
          pr.src_host = pf.src_host;
          pr.dst_host = pf.dst_host;
          for (const std::int32_t id : r.links) {
            auto [lit, new_link] = used_link.try_emplace(id, static_cast<std::int32_t>(p.link_bw_Bps.size()));
            if (new_link) {
              const topology::Link& l = cluster.link(id);
              if (!std::isfinite(l.bw_Bps) || l.bw_Bps <= 0) {
                throw InternalError("simgrid engine: link " + std::to_string(id) + " has bandwidth " +
                                    std::to_string(l.bw_Bps) + " B/s; SimGrid needs a finite positive bandwidth");
              }
              p.link_bw_Bps.push_back(l.bw_Bps);
              p.link_id.push_back(id);
            }
            pr.links.push_back(lit->second);
          }
          p.routes.push_back(std::move(pr));
        }
        pf.route = it->second;
        // Route latency as the cost model sums it (see the header comment on latency).
        pf.latency_s = cluster.route_cost(f.src_gpu, f.dst_gpu).latency_s;
        p.flows.push_back(pf);
      }
      prepared.round_begin.push_back(p.flows.size());
    }
    p.plans.push_back(std::move(prepared));
  }
  if (p.host_gpu.size() > kMaxSimGridHosts) {
    throw InternalError("simgrid engine: the step's flows touch " + std::to_string(p.host_gpu.size()) +
                        " GPUs; the SimGrid platform supports at most " + std::to_string(kMaxSimGridHosts) +
                        " (its route table grows as the square). Use the analytic engine for this run");
  }
  return p;
}

}  // namespace stepsim::sim
