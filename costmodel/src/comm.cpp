#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/scenarios/error.hpp"

namespace stepsim::costmodel {

void check_settings(const CommSettings& s) {
  auto fraction = [](double v) { return v > 0.0 && v <= 1.0; };
  if (!fraction(s.nvlink_efficiency) || !fraction(s.network_efficiency) || !fraction(s.nvls_efficiency))
    throw InternalError("costmodel: protocol efficiencies must lie in (0, 1]");
  if (s.collective_setup_s < 0.0 || s.p2p_setup_s < 0.0)
    throw InternalError("costmodel: setup latencies must not be negative");
}

namespace {

// Bytes on the wire for `bytes` of payload between two GPUs: payload / efficiency of the path.
double path_efficiency(const topology::Cluster& cluster, const CommSettings& s, std::int64_t src, std::int64_t dst) {
  const bool nvlink = cluster.nvlink_domain_of(src) == cluster.nvlink_domain_of(dst);
  return nvlink ? s.nvlink_efficiency : s.network_efficiency;
}
double wire_bytes(const topology::Cluster& cluster, const CommSettings& s, std::int64_t src, std::int64_t dst,
                  double bytes) {
  return bytes / path_efficiency(cluster, s, src, dst);
}

// For each node a group touches (NCCL's node: Cluster::comm_node_of, the NVLink domain when it
// spans nodes): the group's exit GPUs, one per distinct NIC, ordered by NIC index (the first member
// in ring order that uses the NIC). Nodes in increasing order.
class Exits {
 public:
  // The exit GPUs of `node`; std::out_of_range when the group does not touch it.
  [[nodiscard]] std::span<const std::int64_t> at(std::int32_t node) const {
    const auto it = std::lower_bound(nodes_.begin(), nodes_.end(), node);
    if (it == nodes_.end() || *it != node) throw std::out_of_range("costmodel: no exit in node " + std::to_string(node));
    return of_node(static_cast<std::size_t>(it - nodes_.begin()));
  }
  [[nodiscard]] std::size_t size() const { return nodes_.size(); }
  // The exit GPUs of the i-th node touched (i < size()).
  [[nodiscard]] std::span<const std::int64_t> of_node(std::size_t i) const {
    return std::span<const std::int64_t>(gpus_).subspan(first_[i], first_[i + 1] - first_[i]);
  }

  static Exits of(const topology::Cluster& cluster, const std::vector<std::int64_t>& members) {
    // (node, NIC, GPU) of the first member that uses each (node, NIC), in member order.
    struct Use {
      std::int32_t node;
      std::int64_t nic;
      std::size_t order;  // position in `members`
      std::int64_t gpu;
    };
    std::vector<Use> uses;
    uses.reserve(members.size());
    for (std::size_t i = 0; i < members.size(); ++i)
      uses.push_back({cluster.comm_node_of(members[i]), cluster.global_nic_of(members[i]), i, members[i]});
    // By node, then NIC (a NIC appears once per node), then member order: the first of each
    // (node, NIC) is the member that uses it first.
    std::sort(uses.begin(), uses.end(), [](const Use& a, const Use& b) {
      if (a.node != b.node) return a.node < b.node;
      return a.nic != b.nic ? a.nic < b.nic : a.order < b.order;
    });
    uses.erase(std::unique(uses.begin(), uses.end(), [](const Use& a, const Use& b) { return a.node == b.node && a.nic == b.nic; }),
               uses.end());
    Exits out;
    out.gpus_.reserve(uses.size());
    for (const Use& u : uses) {
      if (out.nodes_.empty() || out.nodes_.back() != u.node) {
        out.nodes_.push_back(u.node);
        out.first_.push_back(out.gpus_.size());
      }
      out.gpus_.push_back(u.gpu);
    }
    out.first_.push_back(out.gpus_.size());
    return out;
  }

 private:
  std::vector<std::int32_t> nodes_;
  std::vector<std::int64_t> gpus_;   // the exits of every node, node after node
  std::vector<std::size_t> first_;   // per node, where its exits begin in gpus_; then gpus_.size()
};

Exits exits_by_node(const topology::Cluster& cluster, const std::vector<std::int64_t>& members) { return Exits::of(cluster, members); }

// The flows of one transfer from member a to member b of a group: inside a node (NVLink, or PCIe
// between the NVLink domains of a node) one flow; between nodes split over the NICs the group has
// in both (exits: exits_by_node of the group). Each as a RingFlow: its ends and how its size
// follows from the transfer's.
template <typename Out>
void transfer_flows(const topology::Cluster& cluster, const CommSettings& s, const Exits& exits, std::int64_t a, std::int64_t b, Out&& out) {
  const std::int32_t node_a = cluster.comm_node_of(a);
  const std::int32_t node_b = cluster.comm_node_of(b);
  if (node_a == node_b) {
    out(RingFlow{a, b, 0.0, path_efficiency(cluster, s, a, b)});
    return;
  }
  const auto from = exits.at(node_a);
  const auto to = exits.at(node_b);
  const std::size_t k = std::min(from.size(), to.size());
  for (std::size_t j = 0; j < k; ++j) out(RingFlow{from[j], to[j], static_cast<double>(k), path_efficiency(cluster, s, from[j], to[j])});
}

// One transfer of `bytes` from member a to member b of a group (transfer_flows), appended.
void append_transfer(const topology::Cluster& cluster, const CommSettings& s,
                     const Exits& exits, std::int64_t a, std::int64_t b,
                     double bytes, std::vector<Flow>& round) {
  transfer_flows(cluster, s, exits, a, b, [&](const RingFlow& f) { round.push_back(Flow{f.src_gpu, f.dst_gpu, f.bytes(bytes)}); });
}

// The flows of one ring step over a group's members, each to its successor (transfer_flows), to `out`.
template <typename Out>
void ring_step_flows(const topology::Cluster& cluster, const CommSettings& s, const std::vector<std::int64_t>& members, Out&& out) {
  const std::size_t n = members.size();
  const auto exits = exits_by_node(cluster, members);
  for (std::size_t i = 0; i < n; ++i) transfer_flows(cluster, s, exits, members[i], members[(i + 1) % n], out);
}

// The same flows sized for a chunk of `chunk_bytes`, appended to a round.
void append_ring_round(const topology::Cluster& cluster, const CommSettings& s,
                       const std::vector<std::int64_t>& members, double chunk_bytes, std::vector<Flow>& round) {
  ring_step_flows(cluster, s, members, [&](const RingFlow& f) { round.push_back(Flow{f.src_gpu, f.dst_gpu, f.bytes(chunk_bytes)}); });
}

// The group's members by node (Cluster::comm_node_of), nodes in order of first appearance, members
// in ring order.
std::vector<std::vector<std::int64_t>> members_by_node(const topology::Cluster& cluster, const std::vector<std::int64_t>& members) {
  std::vector<std::vector<std::int64_t>> out;
  std::map<std::int32_t, std::size_t> index;
  for (std::int64_t gpu : members) {
    const auto [it, added] = index.emplace(cluster.comm_node_of(gpu), out.size());
    if (added) out.emplace_back();
    out[it->second].push_back(gpu);
  }
  return out;
}

// Bytes of a flow plan with protocol and ceilings: the payload over choice.bus_Bps / graph_Bps.
double protocol_divisor(const TunerChoice& choice, double graph_Bps) {
  if (choice.bus_Bps <= 0.0 || graph_Bps <= 0.0) return 1.0;
  return choice.bus_Bps / graph_Bps;
}

// The slowest route latency of a round's flows (each with src_gpu and dst_gpu).
template <typename Flows>
double slowest_route_latency_s(const topology::Cluster& cluster, const Flows& flows) {
  double slowest_s = 0.0;
  for (const auto& f : flows)
    if (f.src_gpu != f.dst_gpu) slowest_s = std::max(slowest_s, cluster.route_cost(f.src_gpu, f.dst_gpu).latency_s);
  return slowest_s;
}

// Sum over the rounds of the slowest route latency: what the links alone add to a plan.
double route_latency_s(const topology::Cluster& cluster, const CommPlan& plan) {
  double total_s = 0.0;
  for (const auto& round : plan.rounds) total_s += static_cast<double>(round.repeat) * slowest_route_latency_s(cluster, round.flows);
  return total_s;
}

}  // namespace

std::int64_t ring_steps(Collective kind, std::int64_t n) {
  if (n <= 1) return 0;
  switch (kind) {
    case Collective::AllReduce: return 2 * (n - 1);
    case Collective::ReduceScatter:
    case Collective::AllGather:
    case Collective::AllToAll: return n - 1;
    case Collective::SendRecv: return 1;
    case Collective::None: return 0;
  }
  return 0;
}

double bus_bandwidth_factor(Collective kind, std::int64_t n) {
  if (n <= 0) return 0.0;
  const auto nd = static_cast<double>(n);
  switch (kind) {
    case Collective::AllReduce: return 2.0 * (nd - 1.0) / nd;
    case Collective::ReduceScatter:
    case Collective::AllGather:
    case Collective::AllToAll: return (nd - 1.0) / nd;
    case Collective::SendRecv: return 1.0;
    case Collective::None: return 0.0;
  }
  return 0.0;
}

double ring_time_s(Collective kind, std::int64_t n, double bytes, double bw_Bps, double latency_s) {
  const std::int64_t steps = ring_steps(kind, n);
  if (steps == 0) return 0.0;
  const double per_step_bytes = kind == Collective::SendRecv ? bytes : bytes / static_cast<double>(n);
  return static_cast<double>(steps) * (latency_s + per_step_bytes / bw_Bps);
}

CommPlan plan_collective(const topology::Cluster& cluster, Collective kind,
                         const std::vector<std::vector<std::int64_t>>& instances, double bytes) {
  return plan_collective(cluster, kind, instances, bytes, CommSettings{});
}

CommPlan plan_collective(const topology::Cluster& cluster, Collective kind,
                         const std::vector<std::vector<std::int64_t>>& instances, double bytes,
                         const CommSettings& settings) {
  check_settings(settings);
  if (kind == Collective::None) throw InternalError("costmodel: cannot plan a collective of kind none");
  if (bytes < 0.0) throw InternalError("costmodel: negative message size for " + workload::to_string(kind));
  CommPlan plan;
  if (instances.empty()) return plan;
  const std::size_t n = instances.front().size();
  for (const auto& inst : instances)
    if (inst.size() != n)
      throw InternalError("costmodel: " + workload::to_string(kind) + " instances of different sizes (" + std::to_string(n) +
                          " and " + std::to_string(inst.size()) + ")");

  if (kind == Collective::SendRecv) {
    if (n != 2) throw InternalError("costmodel: a send/recv instance is a pair {src, dst}, got " + std::to_string(n) + " GPUs");
    std::vector<Flow> round;
    round.reserve(instances.size());
    for (const auto& inst : instances)
      if (inst[0] != inst[1]) round.push_back(Flow{inst[0], inst[1], wire_bytes(cluster, settings, inst[0], inst[1], bytes)});
    if (round.empty()) return plan;
    plan.setup_s = settings.p2p_setup_s;
    plan.rounds.push_back(Round{std::move(round), 1});
    return plan;
  }

  if (n <= 1) return plan;
  plan.setup_s = settings.collective_setup_s;

  if (kind == Collective::AllToAll) {
    const double chunk_bytes = bytes / static_cast<double>(n);
    plan.rounds.reserve(n - 1);
    for (std::size_t j = 1; j < n; ++j) {
      std::vector<Flow> round;
      round.reserve(n * instances.size());
      for (const auto& inst : instances)
        for (std::size_t i = 0; i < n; ++i) {
          const std::int64_t a = inst[i];
          const std::int64_t b = inst[(i + j) % n];
          round.push_back(Flow{a, b, wire_bytes(cluster, settings, a, b, chunk_bytes)});
        }
      plan.rounds.push_back(Round{std::move(round), 1});
    }
    return plan;
  }

  const TunerInput in = tuner_input(cluster, kind, instances.front(), settings);
  const TunerChoice choice = choose(in, bytes, settings.algorithm);
  plan.algorithm = choice.algorithm;
  plan.protocol = choice.protocol;
  collective_algorithm(choice.algorithm).plan(cluster, kind, instances, bytes, settings, choice, graph_bandwidth_Bps(in), plan);
  // The tuner's latency where the links' own latencies fall short of it.
  plan.setup_s += std::max(0.0, choice.latency_s - route_latency_s(cluster, plan));
  return plan;
}

TunerInput tuner_input(const topology::Cluster& cluster, Collective kind, const std::vector<std::int64_t>& members,
                       const CommSettings& settings) {
  const auto& spec = cluster.spec();
  TunerInput in;
  in.kind = kind;
  in.ranks = static_cast<std::int64_t>(members.size());
  in.arch = spec.gpu.architecture;
  const bool one_domain = topology::within_nvlink_domain(cluster, members);
  in.intra_Bps = spec.intra_node.bw_Bps * settings.nvlink_efficiency;
  // Inside a node a ring that crosses NVLink domains (bridged GPUs of one node) runs at the PCIe
  // bandwidth between them.
  if (!one_domain && cluster.nvlink_domain_gpus() < cluster.comm_node_gpus())
    in.intra_Bps = std::min(in.intra_Bps, spec.intra_node.pcie_Bps * settings.network_efficiency);
  // NVLS needs NVSwitches (an NVLink domain of more than two GPUs, switched) and one domain.
  in.nvswitch = spec.intra_node.nvswitch && cluster.nvlink_domain_gpus() > 2 && one_domain;
  const auto exits = exits_by_node(cluster, members);
  in.nodes = static_cast<std::int64_t>(exits.size());
  if (in.nodes > 1) {
    std::size_t nics = std::numeric_limits<std::size_t>::max();
    for (std::size_t i = 0; i < exits.size(); ++i) nics = std::min(nics, exits.of_node(i).size());
    in.inter_Bps = static_cast<double>(nics) * spec.inter_node.nic_Bps * settings.network_efficiency;
  }
  return in;
}

void RingAlgorithm::plan(const topology::Cluster& cluster, Collective kind, const std::vector<std::vector<std::int64_t>>& instances,
                         double bytes, const CommSettings& settings, const TunerChoice& choice, double graph_Bps,
                         CommPlan& plan) const {
  // Every round moves the same chunks along the same ring.
  const std::size_t n = instances.front().size();
  const double chunk_bytes = ring_chunk_bytes(bytes, static_cast<std::int64_t>(n), choice, graph_Bps);
  std::vector<Flow> round;
  round.reserve(n * instances.size());
  for (const auto& inst : instances) append_ring_round(cluster, settings, inst, chunk_bytes, round);
  plan.rounds.push_back(Round{std::move(round), ring_steps(kind, static_cast<std::int64_t>(n))});
}

double ring_chunk_bytes(double bytes, std::int64_t ranks, const TunerChoice& choice, double graph_Bps) {
  return bytes / static_cast<double>(ranks) / protocol_divisor(choice, graph_Bps);
}

RingShape ring_shape(const topology::Cluster& cluster, Collective kind, const std::vector<std::vector<std::int64_t>>& instances,
                     const CommSettings& settings) {
  check_settings(settings);
  if (instances.empty() || instances.front().size() < 2) throw InternalError("costmodel: a ring needs instances of two ranks or more");
  RingShape shape;
  for (const auto& inst : instances) {
    if (inst.size() != instances.front().size()) throw InternalError("costmodel: ring instances of different sizes");
    ring_step_flows(cluster, settings, inst, [&](const RingFlow& f) { shape.flows.push_back(f); });
  }
  shape.slowest_route_latency_s = slowest_route_latency_s(cluster, shape.flows);
  set_ring_collective(cluster, kind, instances.front(), settings, shape);
  return shape;
}

void set_ring_collective(const topology::Cluster& cluster, Collective kind, const std::vector<std::int64_t>& members,
                         const CommSettings& settings, RingShape& shape) {
  shape.tuner = tuner_input(cluster, kind, members, settings);
  shape.graph_Bps = graph_bandwidth_Bps(shape.tuner);
  shape.ranks = static_cast<std::int64_t>(members.size());
  shape.repeat = ring_steps(kind, shape.ranks);
  shape.route_latency_s = 0.0 + static_cast<double>(shape.repeat) * shape.slowest_route_latency_s;
}

void TreeAlgorithm::plan(const topology::Cluster& cluster, Collective kind, const std::vector<std::vector<std::int64_t>>& instances,
                         double bytes, const CommSettings& settings, const TunerChoice& choice, double graph_Bps,
                         CommPlan& plan) const {
  if (kind != Collective::AllReduce) throw InternalError("costmodel: NCCL's tree runs all-reduce only");
  const double wire = bytes / protocol_divisor(choice, graph_Bps);
  // up: the reduce towards the roots; down: the broadcast back (the same edges reversed).
  std::vector<Flow> up, down;
  for (const auto& inst : instances) {
    const auto exits = exits_by_node(cluster, inst);
    const auto domains = members_by_node(cluster, inst);
    for (const auto& chain : domains)
      for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
        up.push_back(Flow{chain[i + 1], chain[i], wire_bytes(cluster, settings, chain[i + 1], chain[i], wire)});
        down.push_back(Flow{chain[i], chain[i + 1], wire_bytes(cluster, settings, chain[i], chain[i + 1], wire)});
      }
    // Two binary trees over the domains (heap order, the second over the mirrored order), S/2 each.
    const std::size_t d = domains.size();
    for (int tree = 0; tree < 2; ++tree)
      for (std::size_t i = 1; i < d; ++i) {
        const std::size_t child = tree == 0 ? i : d - 1 - i;
        const std::size_t parent = tree == 0 ? (i - 1) / 2 : d - 1 - (i - 1) / 2;
        const std::int64_t c = domains[child].front();
        const std::int64_t p = domains[parent].front();
        append_transfer(cluster, settings, exits, c, p, wire / 2.0, up);
        append_transfer(cluster, settings, exits, p, c, wire / 2.0, down);
      }
  }
  plan.rounds.push_back(Round{std::move(up), 1});
  plan.rounds.push_back(Round{std::move(down), 1});
}

void NvlsAlgorithm::plan(const topology::Cluster& cluster, Collective /*kind*/, const std::vector<std::vector<std::int64_t>>& instances,
                         double bytes, const CommSettings& settings, const TunerChoice& /*choice*/, double /*graph_Bps*/,
                         CommPlan& plan) const {
  const std::size_t n = instances.front().size();
  const double nd = static_cast<double>(n);
  for (const auto& inst : instances)
    if (!topology::within_nvlink_domain(cluster, inst)) throw InternalError("costmodel: NVLS runs inside one NVLink domain");
  // A GPU sends S(n-1)/n at the measured NVLS fraction of the ring's NVLink bandwidth (the tuner's
  // own NVLS bandwidth decides the choice, not the time).
  const double chunk_bytes = bytes / nd / settings.nvls_efficiency;
  std::vector<Flow> round;
  round.reserve(n * instances.size());
  for (const auto& inst : instances) append_ring_round(cluster, settings, inst, chunk_bytes, round);
  plan.rounds.push_back(Round{std::move(round), static_cast<std::int64_t>(n) - 1});
}

const CollectiveAlgorithm& collective_algorithm(NcclAlgorithm kind) {
  static const RingAlgorithm ring;
  static const TreeAlgorithm tree;
  static const NvlsAlgorithm nvls;
  switch (kind) {
    case NcclAlgorithm::Ring: return ring;
    case NcclAlgorithm::Tree: return tree;
    case NcclAlgorithm::Nvls: return nvls;
  }
  throw InternalError("costmodel: unknown collective algorithm");
}

std::int64_t round_count(const CommPlan& plan) {
  std::int64_t n = 0;
  for (const auto& r : plan.rounds) n += r.repeat;
  return n;
}

double isolated_time_s(const topology::Cluster& cluster, const CommPlan& plan) {
  double total_s = plan.setup_s;
  for (const auto& round : plan.rounds) {
    double slowest_s = 0.0;
    for (const Flow& f : round.flows) {
      if (f.src_gpu == f.dst_gpu) continue;
      const topology::Route r = cluster.route_cost(f.src_gpu, f.dst_gpu);
      slowest_s = std::max(slowest_s, r.latency_s + f.bytes / r.bottleneck_Bps);
    }
    total_s += static_cast<double>(round.repeat) * slowest_s;
  }
  return total_s;
}

double contended_time_s(const topology::Cluster& cluster, const CommPlan& plan) {
  return contended_time_s(plan, plan_routes(cluster, plan));
}

bool PlanRoutes::matches(const CommPlan& plan) const {
  if (rounds.size() != plan.rounds.size()) return false;
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    const auto& routes = rounds[r];
    const auto& flows = plan.rounds[r].flows;
    if (routes.size() != flows.size()) return false;
    for (std::size_t i = 0; i < flows.size(); ++i)
      if (routes[i].src_gpu != flows[i].src_gpu || routes[i].dst_gpu != flows[i].dst_gpu) return false;
  }
  return true;
}

PlanRoutes plan_routes(const topology::Cluster& cluster, const CommPlan& plan) {
  PlanRoutes out;
  out.rounds.reserve(plan.rounds.size());
  // The index of a cost in out.costs, equal bit for bit, by a hash of its bits; most flows repeat
  // the cost of the flow before them.
  const auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
  const auto same = [&bits](const RouteCost& a, const RouteCost& b) {
    return bits(a.latency_s) == bits(b.latency_s) && bits(a.bottleneck_Bps) == bits(b.bottleneck_Bps) && bits(a.share_Bps) == bits(b.share_Bps);
  };
  std::unordered_map<std::uint64_t, std::vector<std::int32_t>> index;
  std::int32_t last = -1;
  const auto cost_of = [&](const RouteCost& c) {
    if (last >= 0 && same(out.costs[static_cast<std::size_t>(last)], c)) return last;
    const std::uint64_t h = (bits(c.latency_s) * 0x9e3779b97f4a7c15ULL ^ bits(c.bottleneck_Bps)) * 0xbf58476d1ce4e5b9ULL ^ bits(c.share_Bps);
    auto& candidates = index[h];
    for (const std::int32_t i : candidates)
      if (same(out.costs[static_cast<std::size_t>(i)], c)) return last = i;
    last = static_cast<std::int32_t>(out.costs.size());
    out.costs.push_back(c);
    candidates.push_back(last);
    return last;
  };
  // The links of every flow of the round, flow i's from hops[hop_begin[i]] to hops[hop_begin[i + 1]].
  std::vector<std::int32_t> hops;
  std::vector<std::size_t> hop_begin;
  // Flows per link in the current round; entries are reset after each round (touched links only).
  thread_local std::vector<std::int32_t> load;
  if (load.size() < static_cast<std::size_t>(cluster.num_links())) load.assign(static_cast<std::size_t>(cluster.num_links()), 0);
  for (const auto& round : plan.rounds) {
    const auto& flows = round.flows;
    hops.clear();
    hop_begin.assign(1, 0);
    for (const Flow& f : flows) {
      cluster.visit_route(f.src_gpu, f.dst_gpu, [&](std::int32_t id) {
        hops.push_back(id);
        ++load[static_cast<std::size_t>(id)];
      });
      hop_begin.push_back(hops.size());
    }
    auto& routes = out.rounds.emplace_back();
    routes.reserve(flows.size());
    for (std::size_t i = 0; i < flows.size(); ++i) {
      RouteCost c;
      c.bottleneck_Bps = std::numeric_limits<double>::infinity();
      c.share_Bps = std::numeric_limits<double>::infinity();
      for (std::size_t h = hop_begin[i]; h < hop_begin[i + 1]; ++h) {
        const std::int32_t id = hops[h];
        const auto& link = cluster.link(id);
        c.share_Bps = std::min(c.share_Bps, link.bw_Bps / static_cast<double>(load[static_cast<std::size_t>(id)]));
        c.latency_s += link.latency_s;
        c.bottleneck_Bps = std::min(c.bottleneck_Bps, link.bw_Bps);
      }
      // GPU numbers fit: a cluster has at most 2^22 GPUs (scenario loading refuses more).
      routes.push_back(FlowRoute{static_cast<std::int32_t>(flows[i].src_gpu), static_cast<std::int32_t>(flows[i].dst_gpu), cost_of(c)});
    }
    for (const auto id : hops) load[static_cast<std::size_t>(id)] = 0;
  }
  return out;
}

FlowSizes flow_sizes(const CommPlan& plan) {
  FlowSizes out;
  out.repeats.reserve(plan.rounds.size());
  for (const auto& round : plan.rounds) {
    out.repeats.push_back(round.repeat);
    for (const Flow& f : round.flows) out.bytes.push_back(f.bytes);
  }
  return out;
}

double contended_time_s(const CommPlan& plan, const PlanRoutes& routes) {
  const FlowSizes sizes = flow_sizes(plan);
  return contended_time_s(plan.setup_s, sizes.repeats, sizes.bytes, routes);
}

double contended_time_s(double setup_s, std::span<const std::int64_t> repeats, std::span<const double> flow_bytes, const PlanRoutes& routes) {
  double total_s = setup_s;
  std::size_t k = 0;
  for (std::size_t r = 0; r < routes.rounds.size(); ++r) {
    double slowest_s = 0.0;
    for (const FlowRoute& fr : routes.rounds[r]) {
      const double bytes = flow_bytes[k++];
      const RouteCost& c = routes.cost(fr);
      if (c.share_Bps == std::numeric_limits<double>::infinity()) continue;  // same GPU: no transfer
      slowest_s = std::max(slowest_s, c.latency_s + bytes / c.share_Bps);
    }
    total_s += static_cast<double>(repeats[r]) * slowest_s;
  }
  return total_s;
}

}  // namespace stepsim::costmodel
