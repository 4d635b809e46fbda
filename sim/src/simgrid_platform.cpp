#include "simgrid_platform.hpp"

#include <algorithm>
#include <bit>
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

std::size_t as_index(std::int32_t i) { return static_cast<std::size_t>(i); }

// Every flow of every plan, resolved: its round, size, latency and the links it loads.
struct RawFlows {
  std::vector<std::int32_t> round;         // global round index (plan rounds numbered in order)
  std::vector<std::uint64_t> bytes;
  std::vector<double> latency_s;
  std::vector<std::size_t> link_begin;     // flows + 1 offsets into links; no links for zero bytes
  std::vector<std::int32_t> links;         // local link indices
  std::vector<double> link_bw_Bps;         // per local link
  std::vector<std::int32_t> link_id;       // cluster Link::id per local link

  [[nodiscard]] std::size_t size() const { return round.size(); }
};

// Relabels signatures densely, in order of first appearance.
class Palette {
 public:
  std::int32_t colour(const std::vector<std::int64_t>& signature) {
    auto [it, inserted] = ids_.try_emplace(signature, static_cast<std::int32_t>(ids_.size()));
    return it->second;
  }
  [[nodiscard]] std::size_t size() const { return ids_.size(); }

 private:
  std::map<std::vector<std::int64_t>, std::int32_t> ids_;
};

// Step 1 of the header: marks redundant links (kept[l] == false), returns how many.
std::int64_t drop_redundant_links(const RawFlows& raw, std::vector<char>& kept) {
  const std::size_t num_links = raw.link_bw_Bps.size();
  std::vector<char> pinned(num_links, 0);
  std::int64_t dropped_total = 0;
  std::vector<std::int32_t> route;
  for (bool changed = true; changed;) {
    changed = false;
    // Neighbours of every kept link along the routes with the left-out links removed.
    std::vector<char> first(num_links, 0), last(num_links, 0);
    std::vector<std::pair<std::int32_t, std::int32_t>> before, after;   // (link, neighbour)
    for (std::size_t f = 0; f < raw.size(); ++f) {
      route.clear();
      for (std::size_t k = raw.link_begin[f]; k < raw.link_begin[f + 1]; ++k)
        if (kept[as_index(raw.links[k])]) route.push_back(raw.links[k]);
      if (route.empty()) continue;
      first[as_index(route.front())] = 1;
      last[as_index(route.back())] = 1;
      for (std::size_t k = 0; k + 1 < route.size(); ++k) {
        after.emplace_back(route[k], route[k + 1]);
        before.emplace_back(route[k + 1], route[k]);
      }
    }
    for (auto* v : {&before, &after}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    std::vector<char> dropped_now(num_links, 0);
    // Tries to leave out l on the strength of its neighbours nb[lo, hi) (all of l's flows pass one).
    auto try_drop = [&](std::int32_t l, const std::vector<std::pair<std::int32_t, std::int32_t>>& nb) {
      auto lo = std::lower_bound(nb.begin(), nb.end(), std::make_pair(l, std::int32_t{-1}));
      double sum_Bps = 0;
      for (auto it = lo; it != nb.end() && it->first == l; ++it) {
        if (dropped_now[as_index(it->second)]) return false;
        sum_Bps += raw.link_bw_Bps[as_index(it->second)];
      }
      if (!(sum_Bps <= raw.link_bw_Bps[as_index(l)])) return false;
      for (auto it = lo; it != nb.end() && it->first == l; ++it) pinned[as_index(it->second)] = 1;
      return true;
    };
    for (std::size_t l = 0; l < num_links; ++l) {
      if (!kept[l] || pinned[l]) continue;
      const auto li = static_cast<std::int32_t>(l);
      const bool drop = (!first[l] && try_drop(li, before)) || (!last[l] && try_drop(li, after));
      if (drop) {
        kept[l] = 0;
        dropped_now[l] = 1;
        ++dropped_total;
        changed = true;
      }
    }
  }
  return dropped_total;
}

// Step 2 of the header: colour refinement of flows and kept links until no class splits.
void refine(const RawFlows& raw, const std::vector<char>& kept, std::vector<std::int32_t>& flow_colour,
            std::vector<std::int32_t>& link_colour) {
  const std::size_t num_links = raw.link_bw_Bps.size();
  // Flows crossing each kept link (CSR).
  std::vector<std::size_t> by_link_begin(num_links + 1, 0);
  for (const std::int32_t l : raw.links)
    if (kept[as_index(l)]) ++by_link_begin[as_index(l) + 1];
  for (std::size_t l = 0; l < num_links; ++l) by_link_begin[l + 1] += by_link_begin[l];
  std::vector<std::int32_t> by_link(by_link_begin.back());
  {
    std::vector<std::size_t> fill(by_link_begin.begin(), by_link_begin.end() - 1);
    for (std::size_t f = 0; f < raw.size(); ++f)
      for (std::size_t k = raw.link_begin[f]; k < raw.link_begin[f + 1]; ++k)
        if (kept[as_index(raw.links[k])]) by_link[fill[as_index(raw.links[k])]++] = static_cast<std::int32_t>(f);
  }
  // Signature: own colour, then (colour, count) of the neighbours' colours, sorted.
  std::vector<std::int32_t> neighbours;
  std::vector<std::int64_t> signature;
  auto sign = [&](std::int32_t own) {
    std::sort(neighbours.begin(), neighbours.end());
    signature.assign(1, own);
    for (std::size_t i = 0; i < neighbours.size();) {
      std::size_t j = i;
      while (j < neighbours.size() && neighbours[j] == neighbours[i]) ++j;
      signature.push_back(neighbours[i]);
      signature.push_back(static_cast<std::int64_t>(j - i));
      i = j;
    }
  };
  std::size_t flow_classes = 0, link_classes = 0;
  for (;;) {
    Palette links;
    std::vector<std::int32_t> next_link(num_links, -1);
    for (std::size_t l = 0; l < num_links; ++l) {
      if (!kept[l]) continue;
      neighbours.clear();
      for (std::size_t k = by_link_begin[l]; k < by_link_begin[l + 1]; ++k)
        neighbours.push_back(flow_colour[as_index(by_link[k])]);
      sign(link_colour[l]);
      next_link[l] = links.colour(signature);
    }
    Palette flows;
    std::vector<std::int32_t> next_flow(raw.size());
    for (std::size_t f = 0; f < raw.size(); ++f) {
      neighbours.clear();
      for (std::size_t k = raw.link_begin[f]; k < raw.link_begin[f + 1]; ++k)
        if (kept[as_index(raw.links[k])]) neighbours.push_back(next_link[as_index(raw.links[k])]);
      sign(flow_colour[f]);
      next_flow[f] = flows.colour(signature);
    }
    link_colour.swap(next_link);
    flow_colour.swap(next_flow);
    if (flows.size() == flow_classes && links.size() == link_classes) return;
    flow_classes = flows.size();
    link_classes = links.size();
  }
}

RawFlows resolve_flows(const StepGraph& graph, const topology::Cluster& cluster) {
  RawFlows raw;
  const std::int64_t num_gpus = cluster.num_gpus();
  std::vector<std::int32_t> local_link(static_cast<std::size_t>(cluster.num_links()), -1);
  raw.link_begin.push_back(0);
  std::int32_t round_id = 0;
  for (std::size_t pi = 0; pi < graph.plans.size(); ++pi) {
    for (const auto& round : graph.plans[pi].rounds) {
      for (const Flow& f : round.flows) {
        for (const std::int64_t gpu : {f.src_gpu, f.dst_gpu}) {
          if (gpu < 0 || gpu >= num_gpus) {
            throw InternalError("simgrid engine: plan " + std::to_string(pi) + " has a flow on GPU " +
                                std::to_string(gpu) + ", but the cluster has " + std::to_string(num_gpus) + " GPUs");
          }
        }
        if (f.src_gpu == f.dst_gpu) {
          throw InternalError("simgrid engine: plan " + std::to_string(pi) + " has a flow from GPU " +
                              std::to_string(f.src_gpu) + " to itself");
        }
        const std::uint64_t bytes = wire_bytes(f.bytes);
        raw.round.push_back(round_id);
        raw.bytes.push_back(bytes);
        // Route latency as the cost model sums it (see the header comment on latency).
        raw.latency_s.push_back(cluster.route_cost(f.src_gpu, f.dst_gpu).latency_s);
        if (bytes > 0) {
          const std::size_t before = raw.links.size();
          cluster.visit_route(f.src_gpu, f.dst_gpu, [&](std::int32_t id) {
            std::int32_t& local = local_link[static_cast<std::size_t>(id)];
            if (local < 0) {
              const topology::Link& l = cluster.link(id);
              if (!std::isfinite(l.bw_Bps) || l.bw_Bps <= 0) {
                throw InternalError("simgrid engine: link " + std::to_string(id) + " has bandwidth " +
                                    std::to_string(l.bw_Bps) + " B/s; SimGrid needs a finite positive bandwidth");
              }
              local = static_cast<std::int32_t>(raw.link_bw_Bps.size());
              raw.link_bw_Bps.push_back(l.bw_Bps);
              raw.link_id.push_back(id);
            }
            raw.links.push_back(local);
          });
          if (raw.links.size() == before) {
            throw InternalError("simgrid engine: the cluster has no route from GPU " + std::to_string(f.src_gpu) +
                                " to GPU " + std::to_string(f.dst_gpu));
          }
        }
        raw.link_begin.push_back(raw.links.size());
      }
      ++round_id;
    }
  }
  return raw;
}

}  // namespace

Platform prepare_platform(const StepGraph& graph, const topology::Cluster& cluster, SimGridFlows mode) {
  const RawFlows raw = resolve_flows(graph, cluster);
  const std::size_t num_links = raw.link_bw_Bps.size();
  Platform p;
  p.plan_flows = static_cast<std::int64_t>(raw.size());
  p.cluster_links = static_cast<std::int64_t>(num_links);

  std::vector<char> kept(num_links, 1);
  std::vector<std::int32_t> flow_colour(raw.size()), link_colour(num_links);
  if (mode == SimGridFlows::Exact) {
    for (std::size_t f = 0; f < raw.size(); ++f) flow_colour[f] = static_cast<std::int32_t>(f);
    for (std::size_t l = 0; l < num_links; ++l) link_colour[l] = static_cast<std::int32_t>(l);
  } else {
    p.redundant_links = drop_redundant_links(raw, kept);
    Palette flows, links;
    for (std::size_t f = 0; f < raw.size(); ++f)
      flow_colour[f] = flows.colour({raw.round[f], static_cast<std::int64_t>(raw.bytes[f]),
                                     std::bit_cast<std::int64_t>(raw.latency_s[f])});
    for (std::size_t l = 0; l < num_links; ++l)
      link_colour[l] = links.colour({std::bit_cast<std::int64_t>(raw.link_bw_Bps[l])});
    refine(raw, kept, flow_colour, link_colour);
  }

  // SimGrid links: one per class of kept links, with the class's size.
  std::unordered_map<std::int32_t, std::int32_t> sg_link_of_colour;
  std::vector<std::int64_t> class_size;
  std::vector<std::int32_t> sg_link(num_links, -1);
  for (std::size_t l = 0; l < num_links; ++l) {
    if (!kept[l]) continue;
    auto [it, inserted] = sg_link_of_colour.try_emplace(link_colour[l], static_cast<std::int32_t>(p.link_bw_Bps.size()));
    if (inserted) {
      p.link_bw_Bps.push_back(raw.link_bw_Bps[l]);
      p.link_id.push_back(raw.link_id[l]);
      class_size.push_back(0);
    }
    sg_link[l] = it->second;
    ++class_size[as_index(it->second)];
  }

  // Members of every flow class, in flow order.
  std::unordered_map<std::int32_t, std::vector<std::int32_t>> members;
  for (std::size_t f = 0; f < raw.size(); ++f) members[flow_colour[f]].push_back(static_cast<std::int32_t>(f));

  std::map<std::vector<std::int32_t>, std::int32_t> route_of_links;
  std::vector<std::int32_t> crossed;
  std::size_t f = 0;
  for (std::size_t pi = 0; pi < graph.plans.size(); ++pi) {
    const CommPlan& plan = graph.plans[pi];
    PreparedPlan prepared;
    prepared.setup_s = plan.setup_s;
    prepared.round_begin.push_back(p.flows.size());
    for (const auto& round : plan.rounds) {
      prepared.round_repeat.push_back(round.repeat);
      const std::size_t end = f + round.flows.size();
      for (; f < end; ++f) {
        const std::vector<std::int32_t>& same = members[flow_colour[f]];
        if (same.front() != static_cast<std::int32_t>(f)) continue;   // represented by an earlier flow
        PreparedFlow pf;
        pf.bytes = raw.bytes[f];
        pf.latency_s = raw.latency_s[f];
        pf.multiplicity = static_cast<std::int64_t>(same.size());
        if (pf.bytes > 0) {
          // Link class L crossed n(L, F) = (crossings of L by the class) / |L| times.
          crossed.clear();
          for (const std::int32_t m : same)
            for (std::size_t k = raw.link_begin[as_index(m)]; k < raw.link_begin[as_index(m) + 1]; ++k)
              if (kept[as_index(raw.links[k])]) crossed.push_back(sg_link[as_index(raw.links[k])]);
          std::sort(crossed.begin(), crossed.end());
          std::vector<std::int32_t> route_links;
          for (std::size_t i = 0; i < crossed.size();) {
            std::size_t j = i;
            while (j < crossed.size() && crossed[j] == crossed[i]) ++j;
            const auto n = static_cast<std::int64_t>(j - i);
            const std::int64_t size = class_size[as_index(crossed[i])];
            if (n % size != 0) {
              throw InternalError("simgrid engine: flow class of plan " + std::to_string(pi) + " crosses link class " +
                                  std::to_string(crossed[i]) + " " + std::to_string(n) + " times over " +
                                  std::to_string(size) + " links (not an equitable partition)");
            }
            route_links.insert(route_links.end(), static_cast<std::size_t>(n / size), crossed[i]);
            i = j;
          }
          // Leaving a link out pins a link of each of its flows, so no flow loses all its links.
          if (route_links.empty()) {
            throw InternalError("simgrid engine: a flow of plan " + std::to_string(pi) + " lost every link");
          }
          auto [it, inserted] = route_of_links.try_emplace(route_links, static_cast<std::int32_t>(p.routes.size()));
          if (inserted) {
            PreparedRoute r;
            r.links = std::move(route_links);
            p.routes.push_back(std::move(r));
          }
          pf.route = it->second;
        }
        p.flows.push_back(pf);
      }
      prepared.round_begin.push_back(p.flows.size());
    }
    p.plans.push_back(std::move(prepared));
  }

  // Endpoints: route r joins host pair r of the smallest H with H (H - 1) >= routes.
  const auto num_routes = static_cast<std::int64_t>(p.routes.size());
  std::int64_t h = 0;
  if (num_routes > 0) {
    h = 2;
    while (h * (h - 1) < num_routes) ++h;
  }
  p.num_hosts = static_cast<std::int32_t>(h);
  for (std::int64_t r = 0; r < num_routes; ++r) {
    const std::int64_t src = r / (h - 1), j = r % (h - 1);
    auto& route = p.routes[static_cast<std::size_t>(r)];
    route.src_host = static_cast<std::int32_t>(src);
    route.dst_host = static_cast<std::int32_t>(j < src ? j : j + 1);
  }
  for (PreparedFlow& pf : p.flows) {
    if (pf.route < 0) continue;
    pf.src_host = p.routes[as_index(pf.route)].src_host;
    pf.dst_host = p.routes[as_index(pf.route)].dst_host;
  }
  return p;
}

}  // namespace stepsim::sim
