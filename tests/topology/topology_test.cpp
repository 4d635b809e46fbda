#include <doctest/doctest.h>

#include "../common/cluster_spec.hpp"

#include <algorithm>
#include <cmath>
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
  CHECK(within_node(cluster, p.tp_group(13)));
  // CP group of size 1.
  CHECK(p.cp_group(13) == std::vector<std::int64_t>{13});
  // DP group: 16 consecutive nodes, one GPU each with the same local index (8 apart).
  CHECK(p.dp_group(13) == arithmetic(5, 8, 16));
  CHECK(p.dp_cp_group(13) == p.dp_group(13));
  CHECK_FALSE(within_node(cluster, p.dp_group(13)));
  for (std::int64_t g : p.dp_group(13)) CHECK(cluster.nic_of(g) == 5);
  // PP peers 128 ranks (16 nodes) apart.
  CHECK(p.pp_group(13) == arithmetic(13, 128, 8));
  CHECK(p.coord(13 + 128 * 3).pp == 3);
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
  }
  // Both GPUs of a NIC share its NIC -> leaf link.
  const auto r0 = c.route(0, 8);
  const auto r1 = c.route(1, 8);
  CHECK(r0.links[1] == r1.links[1]);
  CHECK(r0.links[0] != r1.links[0]);
}

TEST_CASE("cluster: vertices, dense link ids and graph agree") {
  const Cluster c(make_spec(8, 4, 8, FabricTopology::RailFatTree));
  const auto& g = c.graph();
  // 4 nodes x (1 NvSwitch + 8 GPUs + 8 NICs) + 8 rail leaves + 1 spine
  CHECK(boost::num_vertices(g) == 4 * 17 + 8 + 1);
  // per GPU 2 NVLink + 2 PCIe, per NIC 2, per leaf 2
  CHECK(c.num_links() == 32 * 4 + 32 * 2 + 8 * 2);
  CHECK(static_cast<std::int64_t>(boost::num_edges(g)) == c.num_links());
  std::set<std::int32_t> seen;
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    const auto& l = g[*it];
    seen.insert(l.id);
    CHECK(c.link(l.id).id == l.id);
    CHECK(c.link_ends(l.id).first == boost::source(*it, g));
    CHECK(c.link_ends(l.id).second == boost::target(*it, g));
  }
  CHECK(static_cast<std::int64_t>(seen.size()) == c.num_links());
  CHECK(*seen.begin() == 0);
  CHECK(*seen.rbegin() == c.num_links() - 1);
  CHECK(g[c.gpu_vertex(13)].kind == VertexKind::Gpu);
  CHECK(g[c.gpu_vertex(13)].name == "n1.gpu5");
  CHECK(g[c.gpu_vertex(13)].node == 1);
  CHECK(g[c.gpu_vertex(13)].index == 5);
  CHECK_THROWS_AS(c.link(static_cast<std::int32_t>(c.num_links())), stepsim::InternalError);
  CHECK_THROWS_AS(c.route(0, 32), stepsim::InternalError);
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
  CHECK(c.num_leaves() == 8);
  CHECK(c.has_spine());
  for (std::int32_t n = 0; n < 4; ++n) CHECK(c.leaf_of(n, 3) == 3);

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

TEST_CASE("cluster: rail groups of 32 nodes; same rail in another group crosses the spine") {
  const Cluster c(make_spec(8, 40, 8, FabricTopology::RailFatTree));
  CHECK(c.num_leaves() == 16);
  CHECK(c.leaf_of(31, 2) == 2);
  CHECK(c.leaf_of(32, 2) == 8 + 2);
  CHECK(c.route(2, 31 * 8 + 2).links.size() == 4);
  const auto r = c.route(2, 32 * 8 + 2);
  CHECK(r.links.size() == 6);
  CHECK(c.link(r.links[3]).bw_Bps == 8 * 50e9);   // second group's rail leaf has 8 nodes
}

TEST_CASE("cluster: oversubscription divides the leaf uplink") {
  // fat-tree, 8 NICs per node -> 4 nodes per 32-port leaf; 8 nodes -> 2 leaves
  const Cluster full(make_spec(8, 8, 8, FabricTopology::FatTree, 1.0));
  const Cluster half(make_spec(8, 8, 8, FabricTopology::FatTree, 2.0));
  CHECK(full.num_leaves() == 2);
  CHECK(full.leaf_of(3, 7) == 0);
  CHECK(full.leaf_of(4, 0) == 1);
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
  CHECK(c.num_leaves() == 1);
  CHECK_FALSE(c.has_spine());
  const auto r = c.route(0, 255);
  CHECK(r.links.size() == 4);
  CHECK(r.latency_s == 4e-6);
  CHECK(r.bottleneck_Bps == 50e9);
}

TEST_CASE("cluster: a large cluster builds with the expected size") {
  const Cluster c(make_spec(8, 2048, 8, FabricTopology::RailFatTree));
  CHECK(c.num_gpus() == 16384);
  CHECK(c.num_leaves() == 64 * 8);
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
