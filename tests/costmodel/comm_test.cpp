#include <doctest/doctest.h>

#include "../common/cluster_spec.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/costmodel/nccl_tuner.hpp"
#include "stepsim/scenarios/error.hpp"

namespace {

using stepsim::costmodel::bus_bandwidth_factor;
using stepsim::costmodel::Collective;
using stepsim::costmodel::CommPlan;
using stepsim::costmodel::CommSettings;
using stepsim::costmodel::Flow;
using stepsim::costmodel::isolated_time_s;
using stepsim::costmodel::plan_collective;
using stepsim::costmodel::ring_steps;
using stepsim::costmodel::round_count;
using stepsim::costmodel::ring_time_s;
using stepsim::scenarios::ClusterSpec;
using stepsim::scenarios::FabricTopology;
using stepsim::topology::Cluster;

using test_support::make_spec;

CommSettings line_rate() {
  CommSettings s;
  s.nvlink_efficiency = 1.0;
  s.network_efficiency = 1.0;
  return s;
}

std::vector<std::int64_t> arithmetic(std::int64_t first, std::int64_t stride, std::int64_t count) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < count; ++i) v.push_back(first + i * stride);
  return v;
}

std::set<std::int32_t> links_used(const Cluster& c, const CommPlan& plan) {
  std::set<std::int32_t> ids;
  for (const auto& round : plan.rounds)
    for (const Flow& f : round.flows)
      for (std::int32_t id : c.route(f.src_gpu, f.dst_gpu).links) ids.insert(id);
  return ids;
}

constexpr double kM = 1e9;

}  // namespace

TEST_CASE("comm: TP ring all-reduce of 8 over NVLink matches 2(k-1)(alpha + M/(kB)) with efficiency") {
  const Cluster c(make_spec(8, 1, 8));
  const CommPlan plan = plan_collective(c, Collective::AllReduce, {arithmetic(0, 1, 8)}, kM);
  REQUIRE(round_count(plan) == 14);
  // NCCL's choice for 1 GB on one node: ring, Simple. Tuner latency 8.4 us + 14 x 3.4 us = 56 us; the
  // 14 NVLink rounds bring 14 x 2 us, the setup the other 28 us.
  CHECK(plan.algorithm == stepsim::costmodel::NcclAlgorithm::Ring);
  CHECK(plan.protocol == stepsim::costmodel::NcclProtocol::Simple);
  CHECK(plan.setup_s == doctest::Approx(28e-6).epsilon(1e-12));
  REQUIRE(plan.rounds.size() == 1);   // one ring step, run 14 times
  for (const auto& round : plan.rounds) {
    REQUIRE(round.flows.size() == 8);
    for (std::size_t i = 0; i < 8; ++i) {
      CHECK(round.flows[i].src_gpu == static_cast<std::int64_t>(i));
      CHECK(round.flows[i].dst_gpu == static_cast<std::int64_t>((i + 1) % 8));
      CHECK(round.flows[i].bytes == doctest::Approx(1.5625e8));   // 1e9 / 8 / 0.8
    }
  }
  // 56 us + 14 * 1.25e8 B / (0.8 * 450e9 B/s) = 56e-6 + 14 * 3.4722222e-4
  const double expected_s = 56e-6 + 14.0 * 1.25e8 / 360e9;
  CHECK(isolated_time_s(c, plan) == doctest::Approx(expected_s).epsilon(1e-12));
  CHECK(isolated_time_s(c, plan) == doctest::Approx(4.9171e-3).epsilon(1e-4));
  CHECK(isolated_time_s(c, plan) ==
        doctest::Approx(28e-6 + ring_time_s(Collective::AllReduce, 8, kM, 0.8 * 450e9, 2e-6)).epsilon(1e-12));
}

TEST_CASE("comm: reduce-scatter and all-gather take half the all-reduce rounds") {
  const Cluster c(make_spec(8, 1, 8));
  const auto group = arithmetic(0, 1, 8);
  const CommPlan ar = plan_collective(c, Collective::AllReduce, {group}, kM);
  const CommPlan rs = plan_collective(c, Collective::ReduceScatter, {group}, kM);
  const CommPlan ag = plan_collective(c, Collective::AllGather, {group}, kM);
  CHECK(round_count(rs) == 7);
  CHECK(round_count(ag) == 7);
  const double ar_s = isolated_time_s(c, ar) - ar.setup_s;
  CHECK(isolated_time_s(c, rs) - rs.setup_s == doctest::Approx(ar_s / 2).epsilon(1e-12));
  CHECK(isolated_time_s(c, ag) - ag.setup_s == doctest::Approx(ar_s / 2).epsilon(1e-12));
}

TEST_CASE("comm: DP ring of 4 nodes, one NIC each") {
  const Cluster c(make_spec(8, 4, 8));
  const CommPlan plan = plan_collective(c, Collective::AllReduce, {arithmetic(0, 8, 4)}, kM);
  REQUIRE(round_count(plan) == 6);
  for (const auto& round : plan.rounds) CHECK(round.flows.size() == 4);   // one GPU per node: no split
  // Ring, Simple: one GPU per node, so every step costs the tree's network latency (14 us), and the
  // multi-node ring plateau x1.4: (8.4 + 6 x 14) x 1.4 = 129.36 us, above the routes' 6 x 4 us.
  CHECK(plan.algorithm == stepsim::costmodel::NcclAlgorithm::Ring);
  const double expected_s = 129.36e-6 + 6.0 * 2.5e8 / (0.94 * 50e9);
  CHECK(isolated_time_s(c, plan) == doctest::Approx(expected_s).epsilon(1e-12));
  const CommPlan bare = plan_collective(c, Collective::AllReduce, {arithmetic(0, 8, 4)}, kM, line_rate());
  CHECK(isolated_time_s(c, bare) == doctest::Approx(129.36e-6 + 6.0 * 5e-3).epsilon(1e-12));
}

TEST_CASE("comm: a ring's shape gives plan_collective's ring plan of every size, flow by flow and bit for bit") {
  // Two GPUs per node in the group (two NICs: transfers split in two) and a one-GPU-per-node ring,
  // with and without a second instance, over sizes from latency- to bandwidth-bound.
  const Cluster c(make_spec(8, 4, 8));
  const std::vector<std::vector<std::vector<std::int64_t>>> groups{
      {arithmetic(0, 4, 8)}, {arithmetic(0, 4, 8), arithmetic(1, 4, 8)}, {arithmetic(0, 8, 4)}};
  const CommSettings settings;
  int rings = 0;
  for (const auto& instances : groups)
    for (const Collective kind : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}) {
      const auto shape = stepsim::costmodel::ring_shape(c, kind, instances, settings);
      CHECK(shape.ranks == static_cast<std::int64_t>(instances.front().size()));
      CHECK(shape.repeat == ring_steps(kind, shape.ranks));
      // The all-reduce's shape set for this collective: this collective's shape.
      auto other = stepsim::costmodel::ring_shape(c, Collective::AllReduce, instances, settings);
      stepsim::costmodel::set_ring_collective(c, kind, instances.front(), settings, other);
      CHECK(other.ranks == shape.ranks);
      CHECK(other.repeat == shape.repeat);
      CHECK(other.graph_Bps == shape.graph_Bps);
      CHECK(other.route_latency_s == shape.route_latency_s);
      CHECK(other.slowest_route_latency_s == shape.slowest_route_latency_s);
      REQUIRE(other.flows.size() == shape.flows.size());
      for (std::size_t i = 0; i < shape.flows.size(); ++i) {
        CHECK(other.flows[i].src_gpu == shape.flows[i].src_gpu);
        CHECK(other.flows[i].dst_gpu == shape.flows[i].dst_gpu);
        CHECK(other.flows[i].parts == shape.flows[i].parts);
        CHECK(other.flows[i].efficiency == shape.flows[i].efficiency);
      }
      for (const double bytes : {0.0, 4096.0, 1e6, 3.3e7, 1e9}) {
        CAPTURE(bytes);
        const CommPlan plan = plan_collective(c, kind, instances, bytes, settings);
        const auto choice = stepsim::costmodel::choose(shape.tuner, bytes, settings.algorithm);
        const auto other_choice = stepsim::costmodel::choose(other.tuner, bytes, settings.algorithm);
        CHECK(other_choice.algorithm == choice.algorithm);
        CHECK(other_choice.protocol == choice.protocol);
        CHECK(other_choice.latency_s == choice.latency_s);
        CHECK(other_choice.bus_Bps == choice.bus_Bps);
        CHECK(choice.algorithm == plan.algorithm);
        CHECK(choice.protocol == plan.protocol);
        if (plan.algorithm != stepsim::costmodel::NcclAlgorithm::Ring) continue;
        ++rings;
        const double chunk = stepsim::costmodel::ring_chunk_bytes(bytes, shape.ranks, choice, shape.graph_Bps);
        REQUIRE(plan.rounds.size() == 1);
        CHECK(plan.rounds[0].repeat == shape.repeat);
        REQUIRE(plan.rounds[0].flows.size() == shape.flows.size());
        for (std::size_t i = 0; i < shape.flows.size(); ++i) {
          CHECK(shape.flows[i].src_gpu == plan.rounds[0].flows[i].src_gpu);
          CHECK(shape.flows[i].dst_gpu == plan.rounds[0].flows[i].dst_gpu);
          CHECK(shape.flows[i].bytes(chunk) == plan.rounds[0].flows[i].bytes);
        }
        double setup_s = settings.collective_setup_s;
        setup_s += std::max(0.0, choice.latency_s - shape.route_latency_s);
        CHECK(setup_s == plan.setup_s);
      }
    }
  CHECK(rings > 10);
}

TEST_CASE("comm: two DP instances on distinct rails use disjoint links") {
  const Cluster c(make_spec(8, 4, 8));
  const auto rail0 = arithmetic(0, 8, 4);
  const auto rail1 = arithmetic(1, 8, 4);
  const CommPlan both = plan_collective(c, Collective::ReduceScatter, {rail0, rail1}, kM);
  REQUIRE(round_count(both) == 3);
  CHECK(both.rounds[0].flows.size() == 8);
  const auto a = links_used(c, plan_collective(c, Collective::ReduceScatter, {rail0}, kM));
  const auto b = links_used(c, plan_collective(c, Collective::ReduceScatter, {rail1}, kM));
  CHECK_FALSE(a.empty());
  for (std::int32_t id : a) CHECK(b.count(id) == 0);
  // Disjoint links: the pair takes as long as one instance.
  CHECK(isolated_time_s(c, both) ==
        doctest::Approx(isolated_time_s(c, plan_collective(c, Collective::ReduceScatter, {rail0}, kM))));
}

TEST_CASE("comm: bytes conservation, each member sends (n-1)/n S for RS and AG, 2(n-1)/n S for AR") {
  const Cluster c(make_spec(8, 1, 8));
  const auto group = arithmetic(0, 1, 8);
  for (Collective kind : {Collective::ReduceScatter, Collective::AllGather, Collective::AllReduce}) {
    const CommPlan plan = plan_collective(c, kind, {group}, kM, line_rate());
    std::map<std::int64_t, double> sent;
    for (const auto& round : plan.rounds)
      for (const Flow& f : round.flows) sent[f.src_gpu] += f.bytes * static_cast<double>(round.repeat);
    REQUIRE(sent.size() == 8);
    for (const auto& [gpu, bytes] : sent) CHECK(bytes == doctest::Approx(kM * bus_bandwidth_factor(kind, 8)));
  }
}

TEST_CASE("comm: multi-node ring splits inter-node transfers over the group's NICs") {
  // 16 GPUs on 2 nodes, 8 NICs each: every round, each node boundary becomes 8 flows of S/16/8.
  const Cluster c(make_spec(8, 2, 8));
  const auto group = arithmetic(0, 1, 16);
  const CommPlan plan = plan_collective(c, Collective::AllGather, {group}, kM, line_rate());
  REQUIRE(round_count(plan) == 15);
  const auto& round = plan.rounds[0].flows;
  CHECK(round.size() == 14 + 2 * 8);
  double total = 0;
  int inter = 0;
  for (const Flow& f : round) {
    total += f.bytes;
    if (c.node_of(f.src_gpu) != c.node_of(f.dst_gpu)) {
      ++inter;
      CHECK(f.bytes == doctest::Approx(kM / 16 / 8));
      CHECK(c.nic_of(f.src_gpu) == c.nic_of(f.dst_gpu));   // stays on its rail
    }
  }
  CHECK(inter == 16);
  CHECK(total == doctest::Approx(kM));   // n flows of S/n in every round
  // Round time: max(NVLink 2 us + 62.5 MB / 450 GB/s, network 4 us + 7.8125 MB / 50 GB/s). Ring,
  // Simple: tuner latency 8.4 + 14 x 3.4 + 1 x 14 = 70 us, 60 us of it in the 15 rounds' routes.
  const double round_s = std::max(2e-6 + 6.25e7 / 450e9, 4e-6 + 7.8125e6 / 50e9);
  CHECK(isolated_time_s(c, plan) == doctest::Approx(10e-6 + 15 * round_s).epsilon(1e-12));

  // ABCI-like: 4 NICs per node -> 4 sub-flows per boundary.
  const Cluster abci(make_spec(8, 2, 4));
  const CommPlan p4 = plan_collective(abci, Collective::AllGather, {group}, kM, line_rate());
  int inter4 = 0;
  for (const Flow& f : p4.rounds[0].flows)
    if (abci.node_of(f.src_gpu) != abci.node_of(f.dst_gpu)) {
      ++inter4;
      CHECK(f.bytes == doctest::Approx(kM / 16 / 4));
    }
  CHECK(inter4 == 8);
}

TEST_CASE("comm: send/recv is a single flow of S bytes") {
  const Cluster c(make_spec(8, 2, 8));
  const CommPlan plan = plan_collective(c, Collective::SendRecv, {{3, 11}}, 16777216.0);
  REQUIRE(plan.rounds.size() == 1);
  REQUIRE(plan.rounds[0].flows.size() == 1);
  CHECK(plan.rounds[0].flows[0].src_gpu == 3);
  CHECK(plan.rounds[0].flows[0].dst_gpu == 11);
  CHECK(plan.rounds[0].flows[0].bytes == doctest::Approx(16777216.0 / 0.94));
  CHECK(plan.setup_s == 0.0);
  CHECK(isolated_time_s(c, plan) == doctest::Approx(4e-6 + 16777216.0 / (0.94 * 50e9)).epsilon(1e-12));
  // Identical pairs on the other rails travel alongside.
  const CommPlan eight = plan_collective(c, Collective::SendRecv, {{0, 8}, {1, 9}, {2, 10}, {3, 11}}, 1e6);
  CHECK(eight.rounds[0].flows.size() == 4);
}

TEST_CASE("comm: all-to-all sends S/n to member i+j in round j") {
  const Cluster c(make_spec(8, 1, 8));
  const CommPlan plan = plan_collective(c, Collective::AllToAll, {{0, 2, 4, 6}}, 4e6, line_rate());
  REQUIRE(round_count(plan) == 3);
  const std::vector<std::int64_t> m = {0, 2, 4, 6};
  for (std::size_t j = 0; j < 3; ++j)
    for (std::size_t i = 0; i < 4; ++i) {
      CHECK(plan.rounds[j].flows[i].src_gpu == m[i]);
      CHECK(plan.rounds[j].flows[i].dst_gpu == m[(i + j + 1) % 4]);
      CHECK(plan.rounds[j].flows[i].bytes == 1e6);
    }
}

TEST_CASE("comm: a group of one is an empty plan") {
  const Cluster c(make_spec(8, 1, 8));
  for (Collective kind : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::AllToAll}) {
    const CommPlan plan = plan_collective(c, kind, {{5}, {6}}, kM);
    CHECK(plan.rounds.empty());
    CHECK(plan.setup_s == 0.0);
    CHECK(isolated_time_s(c, plan) == 0.0);
  }
  CHECK(plan_collective(c, Collective::AllReduce, {}, kM).rounds.empty());
  CHECK(plan_collective(c, Collective::SendRecv, {{2, 2}}, kM).rounds.empty());
}

TEST_CASE("comm: closed forms") {
  CHECK(ring_steps(Collective::AllReduce, 8) == 14);
  CHECK(ring_steps(Collective::ReduceScatter, 8) == 7);
  CHECK(ring_steps(Collective::AllGather, 8) == 7);
  CHECK(ring_steps(Collective::AllToAll, 8) == 7);
  CHECK(ring_steps(Collective::SendRecv, 2) == 1);
  CHECK(ring_steps(Collective::AllReduce, 1) == 0);
  CHECK(bus_bandwidth_factor(Collective::AllReduce, 8) == 14.0 / 8.0);
  CHECK(bus_bandwidth_factor(Collective::ReduceScatter, 16) == 15.0 / 16.0);
  CHECK(bus_bandwidth_factor(Collective::AllGather, 4) == 0.75);
  CHECK(bus_bandwidth_factor(Collective::SendRecv, 2) == 1.0);
  // Reference figure: 2(k-1)(alpha + M/(kB)) for k = 8, alpha 2 us, B 450 GB/s, M 1 GB = 3.916889 ms.
  CHECK(ring_time_s(Collective::AllReduce, 8, kM, 450e9, 2e-6) == doctest::Approx(3.916889e-3).epsilon(1e-6));
  // k = 4 over one 50 GB/s NIC, alpha 4 us: 30.024 ms.
  CHECK(ring_time_s(Collective::AllReduce, 4, kM, 50e9, 4e-6) == doctest::Approx(30.024e-3).epsilon(1e-9));
  CHECK(ring_time_s(Collective::SendRecv, 2, kM, 50e9, 4e-6) == doctest::Approx(4e-6 + 0.02));
  CHECK(ring_time_s(Collective::AllGather, 1, kM, 50e9, 4e-6) == 0.0);
}

TEST_CASE("comm: bad requests are internal errors") {
  const Cluster c(make_spec(8, 1, 8));
  CHECK_THROWS_WITH_AS(plan_collective(c, Collective::AllReduce, {{0, 1}, {2, 3, 4}}, kM),
                       "costmodel: all-reduce instances of different sizes (2 and 3)", stepsim::InternalError);
  CHECK_THROWS_WITH_AS(plan_collective(c, Collective::SendRecv, {{0, 1, 2}}, kM),
                       "costmodel: a send/recv instance is a pair {src, dst}, got 3 GPUs", stepsim::InternalError);
  CHECK_THROWS_WITH_AS(plan_collective(c, Collective::None, {{0, 1}}, kM),
                       "costmodel: cannot plan a collective of kind none", stepsim::InternalError);
  CommSettings bad;
  bad.network_efficiency = 1.5;
  CHECK_THROWS_WITH_AS(plan_collective(c, Collective::AllReduce, {{0, 1}}, kM, bad),
                       "costmodel: protocol efficiencies must lie in (0, 1]", stepsim::InternalError);
}

TEST_CASE("contended time: instances sharing a NIC split it, without sharing it equals the isolated time") {
  using stepsim::costmodel::contended_time_s;
  // 2 nodes x 2 GPUs, one 50 GB/s NIC per node: DP rings {0, 2} and {1, 3} cross the same two NICs.
  const Cluster shared(make_spec(2, 2, 1));
  const auto both = plan_collective(shared, Collective::AllReduce, {{0, 2}, {1, 3}}, 10 * kM, line_rate());
  const auto one = plan_collective(shared, Collective::AllReduce, {{0, 2}}, 10 * kM, line_rate());
  // 2 rounds of 5 GB at 50 GB/s, 4 us each: alone 2 (4e-6 + 0.1); two rings per NIC 2 (4e-6 + 0.2)
  CHECK(contended_time_s(shared, one) == doctest::Approx(one.setup_s + 2 * (4e-6 + 0.1)).epsilon(1e-12));
  CHECK(contended_time_s(shared, both) == doctest::Approx(both.setup_s + 2 * (4e-6 + 0.2)).epsilon(1e-12));
  CHECK(isolated_time_s(shared, both) == doctest::Approx(isolated_time_s(shared, one)).epsilon(1e-12));
  // one NIC per GPU: the rings use different rails, nothing is shared
  const Cluster rails(make_spec(2, 2, 2));
  const auto apart = plan_collective(rails, Collective::AllReduce, {{0, 2}, {1, 3}}, 10 * kM, line_rate());
  CHECK(contended_time_s(rails, apart) == doctest::Approx(isolated_time_s(rails, apart)).epsilon(1e-12));
}

TEST_CASE("comm: a ring inside an NVLink domain of two nodes runs over NVLink like one node") {
  // 4 GPUs as one node, and as 2 nodes of 2 GPUs in one NVLink domain: same plan, same time.
  const Cluster one_node(make_spec(4, 1, 1));
  auto spec = make_spec(2, 2, 1);
  spec.nvlink_domain_gpus = 4;
  const Cluster domain(spec);
  const std::vector<std::int64_t> ring = arithmetic(0, 1, 4);
  const CommPlan a = plan_collective(one_node, Collective::AllReduce, {ring}, kM);
  const CommPlan b = plan_collective(domain, Collective::AllReduce, {ring}, kM);
  REQUIRE(b.rounds.size() == 1);
  CHECK(b.rounds[0].flows.size() == 4);   // not split over NICs
  CHECK(b.rounds[0].flows[1].bytes == a.rounds[0].flows[1].bytes);   // NVLink efficiency
  CHECK(isolated_time_s(domain, b) == isolated_time_s(one_node, a));
  CHECK(stepsim::costmodel::contended_time_s(domain, b) == isolated_time_s(domain, b));
  // Without the domain, GPU 1 -> GPU 2 crosses the network.
  const Cluster two_nodes(make_spec(2, 2, 1));
  CHECK(isolated_time_s(two_nodes, plan_collective(two_nodes, Collective::AllReduce, {ring}, kM)) > isolated_time_s(domain, b));
}

TEST_CASE("comm: each NCCL algorithm has its implementation") {
  using stepsim::costmodel::NcclAlgorithm;
  const auto& ring = stepsim::costmodel::collective_algorithm(NcclAlgorithm::Ring);
  CHECK(ring.kind() == NcclAlgorithm::Ring);
  CHECK(dynamic_cast<const stepsim::costmodel::RingAlgorithm*>(&ring) != nullptr);
  CHECK(stepsim::costmodel::collective_algorithm(NcclAlgorithm::Tree).kind() == NcclAlgorithm::Tree);
  CHECK(stepsim::costmodel::collective_algorithm(NcclAlgorithm::Nvls).kind() == NcclAlgorithm::Nvls);
}

TEST_CASE("comm: a ring across the NVLink domains of one node runs at the PCIe bandwidth between them") {
  // One node of 8 GPUs in two bridged NVLink domains of 4 (H200 NVL), PCIe 32 GB/s between them.
  auto spec = make_spec(8, 1, 4);
  spec.nvlink_domain_gpus = 4;
  spec.intra_node.pcie_Bps = 32e9;
  spec.intra_node.nvswitch = false;
  const Cluster c(spec);
  const std::vector<std::int64_t> ring = arithmetic(0, 1, 8);
  const CommSettings s = line_rate();
  const auto in = stepsim::costmodel::tuner_input(c, Collective::AllReduce, ring, s);
  CHECK(in.nodes == 1);            // NCCL's node is the server
  CHECK(in.intra_Bps == 32e9);     // the ring's slowest hop
  CHECK_FALSE(in.nvswitch);        // NVLink bridges: no NVLS
  // Inside one domain: NVLink, and no NVLS either without NVSwitches.
  const auto in4 = stepsim::costmodel::tuner_input(c, Collective::AllReduce, arithmetic(0, 1, 4), s);
  CHECK(in4.intra_Bps == 450e9);
  CHECK_FALSE(in4.nvswitch);
  spec.intra_node.nvswitch = true;
  CHECK(stepsim::costmodel::tuner_input(Cluster(spec), Collective::AllReduce, arithmetic(0, 1, 4), s).nvswitch);
  CHECK_FALSE(stepsim::costmodel::tuner_input(Cluster(spec), Collective::AllReduce, ring, s).nvswitch);
  // The plan: one flow per ring hop (the two crossings between domains are not split over NICs),
  // and the crossings go over PCIe through the host.
  const CommPlan plan = plan_collective(c, Collective::ReduceScatter, {ring}, 8 * kM, s);
  REQUIRE(plan.rounds.size() == 1);
  REQUIRE(plan.rounds[0].flows.size() == 8);
  CHECK(plan.rounds[0].repeat == 7);
  const Flow& cross = plan.rounds[0].flows[3];   // GPU 3 -> GPU 4
  CHECK(cross.src_gpu == 3);
  CHECK(cross.dst_gpu == 4);
  CHECK(c.route(3, 4).bottleneck_Bps == 32e9);
  for (std::int32_t id : c.route(3, 4).links) CHECK(c.link(id).kind == stepsim::topology::LinkKind::PcieToHost);
  // Bandwidth-bound: 7 steps of 1 GB each at 32 GB/s dominate, far slower than all-NVLink.
  auto switched = make_spec(8, 1, 4);
  const Cluster dgx(switched);
  const double t_nvl = isolated_time_s(c, plan);
  CHECK(t_nvl > 7.0 * 1e9 / 32e9);
  CHECK(t_nvl > 5.0 * isolated_time_s(dgx, plan_collective(dgx, Collective::ReduceScatter, {ring}, 8 * kM, s)));
}
