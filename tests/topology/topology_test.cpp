#include <doctest/doctest.h>

#include "../common/cluster_spec.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>
#include <set>
#include <string>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/topology/cluster.hpp"

namespace {

using stepsim::ScenarioError;
using stepsim::scenarios::ClusterSpec;
using stepsim::scenarios::FabricTopology;
using stepsim::scenarios::ParallelSpec;
using stepsim::topology::Cluster;
using stepsim::topology::Coord;
using stepsim::topology::LinkKind;
using stepsim::topology::Placement;
using stepsim::topology::Route;
using stepsim::topology::LeafSpine;
using stepsim::topology::VertexId;
using stepsim::topology::VertexKind;

using test_support::make_spec;

ParallelSpec make_parallel(std::int64_t tp, std::int64_t cp, std::int64_t dp, std::int64_t pp) {
  ParallelSpec p;
  p.tp = tp;
  p.cp = cp;
  p.dp = dp;
  p.pp = pp;
  return p;
}

std::vector<std::int64_t> arithmetic(std::int64_t first, std::int64_t stride, std::int64_t count) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < count; ++i) v.push_back(first + i * stride);
  return v;
}

const LeafSpine& leaf_spine(const Cluster& c) { return dynamic_cast<const LeafSpine&>(c.fabric()); }

// Leaf of NIC `nic` of node `node`.
std::int32_t leaf_of(const Cluster& c, std::int64_t node, std::int64_t nic) {
  return leaf_spine(c).leaf_of(node * c.spec().inter_node.nics_per_node + nic);
}

template <typename F>
void check_scenario_error(F&& f, const std::string& path, const std::string& fragment) {
  try {
    f();
    FAIL("no ScenarioError thrown");
  } catch (const ScenarioError& e) {
    CHECK(e.path() == path);
    CHECK(std::string(e.what()).find(fragment) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("placement: Megatron rank formula on a hand case and round trip") {
  const Placement p(make_parallel(2, 2, 3, 2), "tp-cp-dp-pp");
  CHECK(p.world_size() == 24);
  // rank = tp + t*(cp + c*(dp + d*pp)) = 1 + 2*(1 + 2*(2 + 3*1)) = 23
  CHECK(p.rank(Coord{1, 1, 2, 1}) == 23);
  // 0 + 2*(1 + 2*(2 + 0)) = 10
  CHECK(p.rank(Coord{0, 1, 2, 0}) == 10);
  for (std::int64_t r = 0; r < p.world_size(); ++r) CHECK(p.rank(p.coord(r)) == r);
  const Coord c = p.coord(23);
  CHECK(c.tp == 1);
  CHECK(c.cp == 1);
  CHECK(c.dp == 2);
  CHECK(c.pp == 1);
}

TEST_CASE("placement: tp-cp-pp-dp swaps the two slowest dimensions") {
  const Placement p(make_parallel(2, 2, 3, 2), "tp-cp-pp-dp");
  // rank = tp + t*(cp + c*(pp + p*dp)) = 0 + 2*(1 + 2*(0 + 2*2)) = 18
  CHECK(p.rank(Coord{0, 1, 2, 0}) == 18);
  for (std::int64_t r = 0; r < p.world_size(); ++r) CHECK(p.rank(p.coord(r)) == r);
  CHECK(p.pp_group(0) == std::vector<std::int64_t>{0, 4});
  CHECK(p.dp_group(0) == std::vector<std::int64_t>{0, 8, 16});
}

TEST_CASE("placement: any permutation, ep token ignored") {
  const Placement a(make_parallel(2, 2, 3, 2), "pp-dp-cp-tp");
  // rank = pp + 2*(dp + 3*(cp + 2*tp)) = 1 + 2*(2 + 3*(1 + 2*1)) = 23
  CHECK(a.rank(Coord{1, 1, 2, 1}) == 23);
  CHECK(a.rank(Coord{0, 1, 2, 0}) == 2 * (2 + 3 * 1));
  const Placement b(make_parallel(2, 2, 3, 2), "tp-cp-ep-dp-pp");
  CHECK(b.rank(Coord{1, 1, 2, 1}) == 23);
}

TEST_CASE("placement: bad rank order strings") {
  const ParallelSpec par = make_parallel(2, 1, 2, 2);
  check_scenario_error([&] { Placement(par, "tp-cp-dp"); }, "parallel.rank_order", "lacks pp");
  check_scenario_error([&] { Placement(par, "tp-cp-dp-xx"); }, "parallel.rank_order", "unknown token 'xx'");
  check_scenario_error([&] { Placement(par, "tp-tp-dp-pp"); }, "parallel.rank_order", "'tp' repeated");
  check_scenario_error([&] { Placement(par, ""); }, "parallel.rank_order", "unknown token ''");
  check_scenario_error([&] { Placement(par, "tp-cp-dp-pp-"); }, "parallel.rank_order", "unknown token ''");
  check_scenario_error([&] { Placement(make_parallel(0, 1, 1, 1), "tp-cp-dp-pp"); }, "parallel.tp", "at least 1");
}

TEST_CASE("placement: Llama-3.1-70B on DGX H100 groups (TP8 CP1 DP16 PP8)") {
  const Placement p(make_parallel(8, 1, 16, 8), "tp-cp-dp-pp");
  const Cluster cluster(make_spec(8, 128, 8, FabricTopology::RailFatTree));
  CHECK(p.world_size() == cluster.num_gpus());

  // TP group = one node.
  CHECK(p.tp_group(0) == arithmetic(0, 1, 8));
  CHECK(p.tp_group(13) == arithmetic(8, 1, 8));
  CHECK(within_nvlink_domain(cluster, p.tp_group(13)));
  // CP group of size 1.
  CHECK(p.cp_group(13) == std::vector<std::int64_t>{13});
  // DP group: 16 consecutive nodes, one GPU each with the same local index (8 apart).
  CHECK(p.dp_group(13) == arithmetic(5, 8, 16));
  CHECK(p.dp_cp_group(13) == p.dp_group(13));
  CHECK_FALSE(within_nvlink_domain(cluster, p.dp_group(13)));
  for (std::int64_t g : p.dp_group(13)) CHECK(cluster.nic_of(g) == 5);
  // PP peers 128 ranks (16 nodes) apart.
  CHECK(p.pp_group(13) == arithmetic(13, 128, 8));
  CHECK(p.coord(13 + 128 * 3).pp == 3);
}

TEST_CASE("placement: distributed-optimizer instances split the DP x CP group into consecutive blocks") {
  auto par = make_parallel(2, 2, 2, 2);
  par.distributed_optimizer_instances = 2;
  const Placement p(par, "tp-cp-dp-pp");
  // dp_cp_group(1) = {1, 3, 5, 7}: instances {1, 3} and {5, 7}, replicas {1, 5} and {3, 7}.
  CHECK(p.dp_cp_instance_group(5) == std::vector<std::int64_t>{5, 7});
  CHECK(p.dp_cp_instance_group(3) == std::vector<std::int64_t>{1, 3});
  CHECK(p.dp_cp_replica_group(3) == std::vector<std::int64_t>{3, 7});
  CHECK(p.dp_cp_replica_group(1) == std::vector<std::int64_t>{1, 5});
  const Placement one(make_parallel(2, 2, 2, 2), "tp-cp-dp-pp");
  CHECK(one.dp_cp_instance_group(1) == one.dp_cp_group(1));
  CHECK(one.dp_cp_replica_group(1) == std::vector<std::int64_t>{1});
  par.distributed_optimizer_instances = 3;
  CHECK_THROWS_AS(Placement(par, "tp-cp-dp-pp"), stepsim::ScenarioError);
}

TEST_CASE("placement: dp_cp_group holds the c*d ranks sharing tp and pp") {
  const Placement p(make_parallel(2, 2, 2, 2), "tp-cp-dp-pp");
  // rank = tp + 2*(cp + 2*(dp + 2*pp)); rank 1: tp = 1, pp = 0 -> 1 + 2*(cp + 2*dp)
  CHECK(p.dp_cp_group(1) == std::vector<std::int64_t>{1, 3, 5, 7});
  // rank 15: tp = 1, pp = 1 -> 1 + 2*(cp + 2*dp + 4)
  CHECK(p.dp_cp_group(15) == std::vector<std::int64_t>{9, 11, 13, 15});
  CHECK(p.cp_group(9) == std::vector<std::int64_t>{9, 11});
  CHECK(p.dp_group(9) == std::vector<std::int64_t>{9, 13});
}

TEST_CASE("cluster: node_of and nic_of with 8 GPUs and 4 NICs (ABCI A)") {
  const Cluster c(make_spec(8, 3, 4, FabricTopology::FatTree));
  CHECK(c.num_gpus() == 24);
  const std::vector<std::int32_t> nic = {0, 0, 1, 1, 2, 2, 3, 3};
  for (std::int64_t g = 0; g < 24; ++g) {
    CHECK(c.node_of(g) == static_cast<std::int32_t>(g / 8));
    CHECK(c.nic_of(g) == nic[static_cast<std::size_t>(g % 8)]);
    CHECK(c.global_nic_of(g) == (g / 8) * 4 + nic[static_cast<std::size_t>(g % 8)]);
    CHECK(c.comm_node_of(g) == static_cast<std::int32_t>(g / 8));
  }
  CHECK_THROWS_AS((void)c.global_nic_of(24), stepsim::InternalError);
  CHECK_THROWS_AS((void)c.comm_node_of(-1), stepsim::InternalError);
  // Both GPUs of a NIC share its NIC -> leaf link.
  const auto r0 = c.route(0, 8);
  const auto r1 = c.route(1, 8);
  CHECK(r0.links[1] == r1.links[1]);
  CHECK(r0.links[0] != r1.links[0]);
}

TEST_CASE("cluster: vertices and dense link ids") {
  const Cluster c(make_spec(8, 4, 8, FabricTopology::RailFatTree));
  // 4 nodes x (8 GPUs + 8 NICs) + 4 NvSwitches + 8 rail leaves + 1 spine
  CHECK(c.network().num_vertices() == 4 * 16 + 4 + 8 + 1);
  // per GPU 2 NVLink + 2 PCIe, per NIC 2, per leaf 2
  CHECK(c.num_links() == 32 * 4 + 32 * 2 + 8 * 2);
  for (std::int32_t id = 0; id < c.num_links(); ++id) {
    CHECK(c.link(id).id == id);
    // Cables are two directed links with consecutive ids: up (even), then down.
    const auto up = c.link_ends(id - id % 2);
    const auto down = c.link_ends(id - id % 2 + 1);
    CHECK(up.first == down.second);
    CHECK(up.second == down.first);
  }
  CHECK(c.vertex(c.gpu_vertex(13)).kind == VertexKind::Gpu);
  CHECK(c.vertex(c.gpu_vertex(13)).name == "n1.gpu5");
  CHECK(c.vertex(c.gpu_vertex(13)).node == 1);
  CHECK(c.vertex(c.gpu_vertex(13)).index == 5);
  CHECK_THROWS_AS((void)c.link(static_cast<std::int32_t>(c.num_links())), stepsim::InternalError);
  CHECK_THROWS_AS((void)c.vertex(static_cast<VertexId>(c.network().num_vertices())), stepsim::InternalError);
  CHECK_THROWS_AS((void)c.route(0, 32), stepsim::InternalError);
}

TEST_CASE("cluster: intra-node route is GPU -> NvSwitch -> GPU") {
  const Cluster c(make_spec(8, 2, 8, FabricTopology::RailFatTree));
  const auto r = c.route(1, 6);
  REQUIRE(r.links.size() == 2);
  CHECK(c.link(r.links[0]).kind == LinkKind::NvLink);
  CHECK(c.link(r.links[1]).kind == LinkKind::NvLink);
  CHECK(c.link_ends(r.links[0]).first == c.gpu_vertex(1));
  CHECK(c.link_ends(r.links[1]).second == c.gpu_vertex(6));
  CHECK(r.latency_s == 2e-6);
  CHECK(r.bottleneck_Bps == 450e9);
  // Opposite direction uses the other directed links.
  const auto back = c.route(6, 1);
  CHECK(back.links[0] != r.links[1]);
  CHECK(back.latency_s == 2e-6);
}

TEST_CASE("cluster: same GPU gives an empty route") {
  const Cluster c(make_spec(8, 1, 8, FabricTopology::RailFatTree));
  const auto r = c.route(3, 3);
  CHECK(r.links.empty());
  CHECK(r.latency_s == 0.0);
  CHECK(std::isinf(r.bottleneck_Bps));
}

TEST_CASE("cluster: rail fabric, same rail stays in the leaf, other rail crosses the spine") {
  const Cluster c(make_spec(8, 4, 8, FabricTopology::RailFatTree));
  CHECK(leaf_spine(c).num_leaves() == 8);
  CHECK(leaf_spine(c).has_spine());
  for (std::int32_t n = 0; n < 4; ++n) CHECK(leaf_of(c, n, 3) == 3);

  const auto same = c.route(3, 3 + 16);   // node 0 -> node 2, both GPU 3 on rail 3
  REQUIRE(same.links.size() == 4);
  CHECK(c.link(same.links[0]).kind == LinkKind::PcieToNic);
  CHECK(c.link(same.links[1]).kind == LinkKind::NicToLeaf);
  CHECK(c.link(same.links[2]).kind == LinkKind::NicToLeaf);
  CHECK(c.link(same.links[3]).kind == LinkKind::PcieToNic);
  CHECK(same.latency_s == 4e-6);
  CHECK(same.bottleneck_Bps == 50e9);

  const auto cross = c.route(3, 4 + 16);  // rail 3 -> rail 4
  REQUIRE(cross.links.size() == 6);
  CHECK(c.link(cross.links[2]).kind == LinkKind::LeafToSpine);
  CHECK(c.link(cross.links[3]).kind == LinkKind::LeafToSpine);
  CHECK(cross.latency_s == 4e-6);
  CHECK(cross.bottleneck_Bps == 50e9);
  // leaf uplink = 4 NIC ports x 50 GB/s
  CHECK(c.link(cross.links[2]).bw_Bps == 200e9);
}

TEST_CASE("cluster: rail groups of 32 nodes, same rail in another group crosses the spine") {
  const Cluster c(make_spec(8, 40, 8, FabricTopology::RailFatTree));
  CHECK(leaf_spine(c).num_leaves() == 16);
  CHECK(leaf_of(c, 31, 2) == 2);
  CHECK(leaf_of(c, 32, 2) == 8 + 2);
  CHECK(c.route(2, 31 * 8 + 2).links.size() == 4);
  const auto r = c.route(2, 32 * 8 + 2);
  CHECK(r.links.size() == 6);
  CHECK(c.link(r.links[3]).bw_Bps == 8 * 50e9);   // second group's rail leaf has 8 nodes
}

TEST_CASE("cluster: oversubscription divides the leaf uplink") {
  // fat-tree, 8 NICs per node -> 4 nodes per 32-port leaf; 8 nodes -> 2 leaves
  const Cluster full(make_spec(8, 8, 8, FabricTopology::FatTree, 1.0));
  const Cluster half(make_spec(8, 8, 8, FabricTopology::FatTree, 2.0));
  CHECK(leaf_spine(full).num_leaves() == 2);
  CHECK(leaf_of(full, 3, 7) == 0);
  CHECK(leaf_of(full, 4, 0) == 1);
  CHECK(full.route(0, 3 * 8 + 5).links.size() == 4);   // same leaf, any NIC
  const auto rf = full.route(0, 4 * 8);
  const auto rh = half.route(0, 4 * 8);
  REQUIRE(rf.links.size() == 6);
  CHECK(full.link(rf.links[2]).bw_Bps == 32 * 50e9);
  CHECK(half.link(rh.links[2]).bw_Bps == 16 * 50e9);
  CHECK(half.link(rh.links[3]).bw_Bps == 16 * 50e9);
}

TEST_CASE("cluster: bottleneck is the slowest hop") {
  // Oversubscription 64: the leaf uplink (32 x 50 / 64 = 25 GB/s) is slower than the NIC.
  const Cluster c(make_spec(8, 8, 8, FabricTopology::FatTree, 64.0));
  CHECK(c.route(0, 40).bottleneck_Bps == 25e9);
  CHECK(c.route(0, 8).bottleneck_Bps == 50e9);
}

TEST_CASE("cluster: single switch has one leaf and no spine") {
  const Cluster c(make_spec(4, 64, 4, FabricTopology::SingleSwitch, 4.0));
  CHECK(leaf_spine(c).num_leaves() == 1);
  CHECK_FALSE(leaf_spine(c).has_spine());
  const auto r = c.route(0, 255);
  CHECK(r.links.size() == 4);
  CHECK(r.latency_s == 4e-6);
  CHECK(r.bottleneck_Bps == 50e9);
}

TEST_CASE("cluster: a large cluster builds with the expected size") {
  const Cluster c(make_spec(8, 2048, 8, FabricTopology::RailFatTree));
  CHECK(c.num_gpus() == 16384);
  CHECK(leaf_spine(c).num_leaves() == 64 * 8);
  CHECK(c.num_links() == 16384 * 4 + 16384 * 2 + 512 * 2);
  CHECK(c.route(0, 16383).links.size() == 6);
}

TEST_CASE("cluster: bad specs name the field") {
  check_scenario_error([] { Cluster(make_spec(0, 1, 1, FabricTopology::RailFatTree)); }, "cluster.gpus_per_node",
                       "at least 1");
  check_scenario_error([] { Cluster(make_spec(8, 0, 1, FabricTopology::RailFatTree)); }, "cluster.nodes", "at least 1");
  check_scenario_error([] { Cluster(make_spec(8, 2, 0, FabricTopology::RailFatTree)); },
                       "cluster.inter_node.nics_per_node", "at least one NIC");
  check_scenario_error([] { Cluster(make_spec(8, 2, 8, FabricTopology::RailFatTree, 0.0)); },
                       "cluster.inter_node.oversubscription", "positive");
  // A single node needs no NIC.
  const Cluster single(make_spec(8, 1, 0, FabricTopology::RailFatTree));
  CHECK(single.num_links() == 16);
  CHECK(single.route(0, 7).links.size() == 2);
}

namespace {

// Every route is a chain of links from the source GPU's vertex to the destination GPU's, and
// route_cost agrees with route.
void check_routes_chain(const Cluster& c) {
  for (std::int64_t a = 0; a < c.num_gpus(); ++a)
    for (std::int64_t b = 0; b < c.num_gpus(); ++b) {
      const Route r = c.route(a, b);
      const Route cost = c.route_cost(a, b);
      CHECK(cost.links.empty());
      CHECK(cost.latency_s == r.latency_s);
      CHECK(cost.bottleneck_Bps == r.bottleneck_Bps);
      if (a == b) {
        CHECK(r.links.empty());
        continue;
      }
      REQUIRE_FALSE(r.links.empty());
      VertexId at = c.gpu_vertex(a);
      for (const std::int32_t id : r.links) {
        CHECK(c.link_ends(id).first == at);
        at = c.link_ends(id).second;
      }
      CHECK(at == c.gpu_vertex(b));
    }
}

}  // namespace

TEST_CASE("fabric: single switch, link list and cost by hand") {
  // 2 nodes x 2 GPUs, one NIC per node. Links: per GPU NVLink (4g, 4g+1) and PCIe (4g+2, 4g+3);
  // then NIC k -> leaf (16 + 2k, back 17 + 2k).
  const Cluster c(make_spec(2, 2, 1, FabricTopology::SingleSwitch));
  CHECK(c.fabric().name() == "single-switch");
  CHECK(c.num_links() == 20);
  CHECK(c.route(0, 1).links == std::vector<std::int32_t>{0, 5});
  CHECK(c.route(0, 3).links == std::vector<std::int32_t>{2, 16, 19, 15});
  CHECK(c.route(3, 0).links == std::vector<std::int32_t>{14, 18, 17, 3});
  CHECK(c.route(0, 3).latency_s == 4e-6);
  CHECK(c.route(0, 3).bottleneck_Bps == 50e9);
  CHECK(c.route(0, 1).latency_s == 2e-6);
  CHECK(c.route(0, 1).bottleneck_Bps == 450e9);
  check_routes_chain(c);
}

TEST_CASE("fabric: plain fat tree, whole nodes per leaf, link list and cost by hand") {
  // 33 nodes x 2 GPUs, one NIC each: 32 nodes on leaf 0, node 32 alone on leaf 1. GPU links
  // 0..263, NIC k -> leaf 264 + 2k, leaf l -> spine 330 + 2l.
  const Cluster c(make_spec(2, 33, 1, FabricTopology::FatTree, 2.0));
  CHECK(c.fabric().name() == "fat-tree");
  CHECK(leaf_spine(c).num_leaves() == 2);
  CHECK(c.num_links() == 334);
  CHECK(c.route(0, 63).links == std::vector<std::int32_t>{2, 264, 327, 63 * 4 + 3});   // same leaf
  const Route r = c.route(0, 64);
  CHECK(r.links == std::vector<std::int32_t>{2, 264, 330, 333, 329, 259});
  CHECK(r.latency_s == 4e-6);
  // leaf 1 has one NIC port: uplink 50 / 2 = 25 GB/s; leaf 0: 32 x 50 / 2.
  CHECK(r.bottleneck_Bps == 25e9);
  CHECK(c.link(330).bw_Bps == 800e9);
  CHECK(c.link(330).kind == LinkKind::LeafToSpine);
}

TEST_CASE("fabric: rail fat tree, link list and cost by hand") {
  // 2 nodes x 2 GPUs, 2 NICs each (GPU i on NIC i): rail leaves 0 and 1 under one spine.
  // GPU links 0..15, NIC k (node * 2 + i) -> leaf 16 + 2k, leaf l -> spine 24 + 2l.
  const Cluster c(make_spec(2, 2, 2, FabricTopology::RailFatTree));
  CHECK(c.fabric().name() == "rail-fat-tree");
  CHECK(c.num_links() == 28);
  CHECK(c.route(0, 2).links == std::vector<std::int32_t>{2, 16, 21, 11});           // rail 0
  CHECK(c.route(0, 3).links == std::vector<std::int32_t>{2, 16, 24, 27, 23, 15});   // rail 0 -> rail 1
  CHECK(c.route(0, 3).latency_s == 4e-6);
  CHECK(c.route(0, 3).bottleneck_Bps == 50e9);
  CHECK(c.link(24).bw_Bps == 100e9);
  check_routes_chain(c);
  check_routes_chain(Cluster(make_spec(4, 3, 2, FabricTopology::FatTree)));
}

TEST_CASE("NVLink domain of two nodes: their GPUs talk over NVLink, other domains over the fabric") {
  auto spec = make_spec(2, 4, 1, FabricTopology::SingleSwitch);
  spec.nvlink_domain_gpus = 4;
  const Cluster c(spec);
  CHECK(c.nvlink_domain_gpus() == 4);
  CHECK(c.num_nvlink_domains() == 2);
  CHECK(c.node_of(3) == 1);
  CHECK(c.nvlink_domain_of(3) == 0);
  CHECK(c.nvlink_domain_of(4) == 1);
  // GPU 0 (node 0) -> GPU 3 (node 1): GPU -> NvSwitch -> GPU.
  const Route r = c.route(0, 3);
  REQUIRE(r.links.size() == 2);
  CHECK(c.link(r.links[0]).kind == LinkKind::NvLink);
  CHECK(c.link(r.links[1]).kind == LinkKind::NvLink);
  CHECK(c.vertex(c.link_ends(r.links[0]).second).kind == VertexKind::NvSwitch);
  CHECK(r.latency_s == 2e-6);
  CHECK(r.bottleneck_Bps == 450e9);
  // GPU 3 -> GPU 4 leave the domain through their NICs.
  const Route out = c.route(3, 4);
  REQUIRE(out.links.size() == 4);
  CHECK(c.link(out.links[1]).kind == LinkKind::NicToLeaf);
  CHECK(out.latency_s == 4e-6);
  CHECK(within_nvlink_domain(c, {0, 1, 2, 3}));
  CHECK_FALSE(within_nvlink_domain(c, {2, 3, 4, 5}));
  // One NvSwitch per domain, shared by both nodes' GPUs.
  CHECK(c.link_ends(c.route(0, 3).links[0]).second == c.link_ends(c.route(2, 1).links[0]).second);
  check_routes_chain(c);
}

TEST_CASE("NVLink domain: bad sizes name the field") {
  auto spec = make_spec(2, 4, 1, FabricTopology::SingleSwitch);
  spec.nvlink_domain_gpus = 3;
  check_scenario_error([&] { Cluster{spec}; }, "cluster.nvlink_domain_gpus", "divide gpus_per_node");
  spec.nvlink_domain_gpus = 6;
  check_scenario_error([&] { Cluster{spec}; }, "cluster.nvlink_domain_gpus", "does not divide");
  spec.nvlink_domain_gpus = 0;
  CHECK(Cluster(spec).nvlink_domain_gpus() == 2);
  // Domains smaller than a node need a PCIe path between them.
  spec.nvlink_domain_gpus = 1;
  spec.intra_node.pcie_Bps = 0;
  check_scenario_error([&] { Cluster{spec}; }, "cluster.intra_node.pcie_GBps", "must be positive");
}

TEST_CASE("NVLink domains smaller than a node: bridged GPUs over NVLink, the node's other domain over PCIe") {
  // 2 nodes x 8 GPUs in NVLink domains of 4 (H200 NVL with 4-way bridges), 4 NICs per node.
  // Links: per GPU NVLink (2 ids), PCIe to its NIC (2), PCIe to the host (2): GPU g's host
  // cable is 6g + 4; then the fabric.
  auto spec = make_spec(8, 2, 4);
  spec.nvlink_domain_gpus = 4;
  spec.intra_node.pcie_Bps = 32e9;
  const Cluster c(spec);
  CHECK(c.num_nvlink_domains() == 4);
  CHECK(c.comm_node_gpus() == 8);
  CHECK(c.nvlink_domain_of(5) == 1);
  CHECK(c.comm_node_of(5) == 0);
  CHECK(c.comm_node_of(8) == 1);
  // Same domain: NVLink through the domain's switch vertex.
  const Route nv = c.route(1, 3);
  REQUIRE(nv.links.size() == 2);
  CHECK(c.link(nv.links[0]).kind == LinkKind::NvLink);
  CHECK(nv.bottleneck_Bps == 450e9);
  // Other domain of the node: GPU 1 -> host -> GPU 6, at the PCIe bandwidth, the intra-node latency.
  const Route pcie = c.route(1, 6);
  CHECK(pcie.links == std::vector<std::int32_t>{6 * 1 + 4, 6 * 6 + 5});
  CHECK(c.link(pcie.links[0]).kind == LinkKind::PcieToHost);
  CHECK(c.vertex(c.link_ends(pcie.links[0]).second).kind == VertexKind::Host);
  CHECK(c.vertex(c.link_ends(pcie.links[0]).second).node == 0);
  CHECK(pcie.bottleneck_Bps == 32e9);
  CHECK(pcie.latency_s == 2e-6);
  // Another node: through the NICs (GPUs 0-1 share NIC 0: 4 NICs for 8 GPUs).
  CHECK(c.nic_of(1) == 0);
  const Route net = c.route(1, 9);
  CHECK(c.link(net.links.front()).kind == LinkKind::PcieToNic);
  CHECK(net.bottleneck_Bps == 50e9);
  CHECK_FALSE(within_nvlink_domain(c, {0, 1, 2, 3, 4}));
  check_routes_chain(c);
  // Domains of a node's size or larger add no host vertex: the link list is unchanged.
  auto whole = make_spec(8, 2, 4);
  whole.intra_node.pcie_Bps = 32e9;
  CHECK(Cluster(whole).num_links() == Cluster(make_spec(8, 2, 4)).num_links());
  CHECK(Cluster(whole).num_links() == c.num_links() - 2 * 16);
}

namespace {

// Counts allocations made while `counting` is set (global operator new of this test binary).
thread_local bool counting = false;
thread_local long allocations = 0;

}  // namespace

[[gnu::noinline]] void* operator new(std::size_t size) {
  if (counting) ++allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

TEST_CASE("route helpers do not allocate, whatever the route's length") {
  for (const auto fabric : {FabricTopology::RailFatTree, FabricTopology::FatTree, FabricTopology::SingleSwitch}) {
    const Cluster c(make_spec(8, 40, 8, fabric, 2.0));
    double latency_s = 0;
    std::int64_t hops = 0;
    counting = true;
    allocations = 0;
    for (std::int64_t dst = 0; dst < c.num_gpus(); ++dst) {
      latency_s += c.route_cost(3, dst).latency_s;
      c.visit_route(3, dst, [&](std::int32_t) { ++hops; });
    }
    counting = false;
    CHECK(allocations == 0);
    CHECK(hops > 0);
    CHECK(latency_s > 0);
  }
  // The counter sees allocations: route() lists its links in a vector.
  const Cluster c(make_spec(8, 2, 8));
  counting = true;
  allocations = 0;
  CHECK(c.route(0, 8).links.size() == 4);
  counting = false;
  CHECK(allocations > 0);
}
