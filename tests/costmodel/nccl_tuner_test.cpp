#include <doctest/doctest.h>

#include "../common/cluster_spec.hpp"

#include <map>

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/costmodel/nccl_tuner.hpp"

namespace {

using stepsim::costmodel::choose;
using stepsim::costmodel::Collective;
using stepsim::costmodel::CommPlan;
using stepsim::costmodel::CommSettings;
using stepsim::costmodel::Flow;
using stepsim::costmodel::isolated_time_s;
using stepsim::costmodel::NcclAlgorithm;
using stepsim::costmodel::plan_collective;
using stepsim::costmodel::NcclProtocol;
using stepsim::costmodel::rate;
using stepsim::costmodel::TunerInput;
using stepsim::scenarios::CollectiveAlgorithm;
using stepsim::scenarios::GpuArchitecture;
using stepsim::topology::Cluster;

// One DGX A100-like node: 8 GPUs, 300 GB/s NVLink at 0.8.
TunerInput a100_node(Collective kind) {
  TunerInput in;
  in.kind = kind;
  in.ranks = 8;
  in.nodes = 1;
  in.arch = GpuArchitecture::Ampere;
  in.intra_Bps = 240e9;
  in.nvswitch = true;
  return in;
}

std::vector<std::int64_t> iota(std::int64_t count) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < count; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("tuner: NCCL's latencies and bandwidths, hand-computed for one A100 node") {
  const TunerInput in = a100_node(Collective::AllReduce);
  // 240 GB/s over SM80's 20 GB/s per channel: 12 channels.
  CHECK(stepsim::costmodel::nccl_channels(GpuArchitecture::Ampere, 240e9) == 12);
  // Ring, Simple: 8.4 + 14 x 3.4 = 56 us; bus 240 GB/s; algorithm bandwidth 240 x 8/14.
  const auto simple = rate(in, NcclAlgorithm::Ring, NcclProtocol::Simple, 1e9);
  CHECK(simple.latency_s == doctest::Approx(56e-6));
  CHECK(simple.bus_Bps == doctest::Approx(240e9));
  CHECK(simple.time_s == doctest::Approx(56e-6 + 1e9 * 14.0 / 8.0 / 240e9));
  // Ring, LL: 6.6 + 14 x 0.6 = 15 us; bus min(87.7 (Ampere, one node), 240 / 2).
  const auto ll = rate(in, NcclAlgorithm::Ring, NcclProtocol::LL, 8.0);
  CHECK(ll.latency_s == doctest::Approx(15e-6));
  CHECK(ll.bus_Bps == doctest::Approx(87.7e9));
  // Ring, LL128: 14 + 14 x 1.9 = 40.6 us; bus min(0.92 x 240, 12 x 20).
  const auto ll128 = rate(in, NcclAlgorithm::Ring, NcclProtocol::LL128, 1e9);
  CHECK(ll128.latency_s == doctest::Approx(40.6e-6));
  CHECK(ll128.bus_Bps == doctest::Approx(220.8e9));
  // Tree, LL: 6.8 + 2 x 7 x 0.6 = 15.2 us; bus min(min(0.92 x 240, 12 x 24) / 3.8, 87.7); no size
  // correction below 64 bytes.
  const auto tree_ll = rate(in, NcclAlgorithm::Tree, NcclProtocol::LL, 8.0);
  CHECK(tree_ll.latency_s == doctest::Approx(15.2e-6));
  CHECK(tree_ll.bus_Bps == doctest::Approx(220.8e9 / 3.8));
  // Tree, Simple at 1 MB: log2(1e6 / 64) = 13, correction 0.5.
  const auto tree = rate(in, NcclAlgorithm::Tree, NcclProtocol::Simple, 1e6);
  CHECK(tree.latency_s == doctest::Approx(8.4e-6 + 2 * 7 * 4.0e-6));
  CHECK(tree.bus_Bps == doctest::Approx(220.8e9 * 0.5));
  CHECK(tree.time_s == doctest::Approx(tree.latency_s + 1e6 / (220.8e9 * 0.5 * 0.5)));
  // No NVLS on Ampere, no tree for reduce-scatter, LL/LL128 never for NVLS.
  CHECK(rate(in, NcclAlgorithm::Nvls, NcclProtocol::Simple, 1e9).bus_Bps == 0.0);
  CHECK(rate(a100_node(Collective::ReduceScatter), NcclAlgorithm::Tree, NcclProtocol::Simple, 1e9).bus_Bps == 0.0);
}

TEST_CASE("tuner: protocol by size on one node, tree for small all-reduces across many nodes") {
  const TunerInput node = a100_node(Collective::AllReduce);
  // LL up to ~2 MB, LL128 up to ~24 MB, Simple above (crossovers of the times above).
  const auto small = choose(node, 8.0, CollectiveAlgorithm::Auto);
  CHECK(small.algorithm == NcclAlgorithm::Ring);
  CHECK(small.protocol == NcclProtocol::LL);
  const auto mid = choose(node, 4e6, CollectiveAlgorithm::Auto);
  CHECK(mid.algorithm == NcclAlgorithm::Ring);
  CHECK(mid.protocol == NcclProtocol::LL128);
  const auto large = choose(node, 64e6, CollectiveAlgorithm::Auto);
  CHECK(large.protocol == NcclProtocol::Simple);

  // 16 nodes, one GPU each, one HDR NIC (25 GB/s x 0.94).
  TunerInput wide;
  wide.kind = Collective::AllReduce;
  wide.ranks = 16;
  wide.nodes = 16;
  wide.arch = GpuArchitecture::Ampere;
  wide.intra_Bps = 240e9;
  wide.inter_Bps = 23.5e9;
  // 8 bytes: ring LL 6.6 + 30 x 5.0 (tree's network latency, one GPU per node) = 156.6 us against
  // tree LL 6.8 + 2 x 4 x 5.0 = 46.8 us.
  CHECK(rate(wide, NcclAlgorithm::Ring, NcclProtocol::LL, 8.0).latency_s == doctest::Approx(156.6e-6));
  const auto tiny = choose(wide, 8.0, CollectiveAlgorithm::Auto);
  CHECK(tiny.algorithm == NcclAlgorithm::Tree);
  CHECK(tiny.latency_s == doctest::Approx(46.8e-6));
  // 1 GB: ring (algorithm bandwidth 23.5 x 16/30) beats the tree (0.92 x 23.5 / 2).
  CHECK(choose(wide, 1e9, CollectiveAlgorithm::Auto).algorithm == NcclAlgorithm::Ring);
}

TEST_CASE("tuner: NVLS for large all-reduces on a Hopper NVSwitch node, the ring for reduce-scatter") {
  TunerInput in = a100_node(Collective::AllReduce);
  in.arch = GpuArchitecture::Hopper;
  in.intra_Bps = 360e9;
  // 18 channels; NVLS bus 360 x 0.85 x 17/18 x 2, latency 25 us.
  const auto nvls = rate(in, NcclAlgorithm::Nvls, NcclProtocol::Simple, 1e9);
  CHECK(nvls.bus_Bps == doctest::Approx(360e9 * 0.85 * 17.0 / 18.0 * 2.0));
  CHECK(nvls.latency_s == doctest::Approx(25e-6));
  CHECK(choose(in, 1e9, CollectiveAlgorithm::Auto).algorithm == NcclAlgorithm::Nvls);
  in.kind = Collective::ReduceScatter;
  CHECK(choose(in, 1e9, CollectiveAlgorithm::Auto).algorithm == NcclAlgorithm::Ring);
  // Forced: NVLS where it runs; tree falls back to the ring for reduce-scatter.
  CHECK(choose(in, 1e9, CollectiveAlgorithm::Nvls).algorithm == NcclAlgorithm::Nvls);
  CHECK(choose(in, 1e9, CollectiveAlgorithm::Tree).algorithm == NcclAlgorithm::Ring);
  in.nodes = 2;
  in.ranks = 16;
  in.inter_Bps = 376e9;
  CHECK(rate(in, NcclAlgorithm::Nvls, NcclProtocol::Simple, 1e9).bus_Bps == 0.0);   // across nodes only with CollNet
}

TEST_CASE("tree plan: chains inside nodes, two binary trees across them, time of the tuner on one node") {
  CommSettings tree;
  tree.algorithm = CollectiveAlgorithm::Tree;
  const Cluster one(test_support::make_spec(8, 1, 8));
  const CommPlan plan = plan_collective(one, Collective::AllReduce, {iota(8)}, 64e6, tree);
  CHECK(plan.algorithm == NcclAlgorithm::Tree);
  REQUIRE(plan.rounds.size() == 2);
  CHECK(plan.rounds[0].flows.size() == 7);   // the chain up
  CHECK(plan.rounds[0].flows[0].src_gpu == 1);
  CHECK(plan.rounds[0].flows[0].dst_gpu == 0);
  CHECK(plan.rounds[1].flows[0].src_gpu == 0);   // and down
  // The links' latencies (2 x 2 us) are below the tuner's, so the plan takes the tuner's time.
  const TunerInput in = stepsim::costmodel::tuner_input(one, Collective::AllReduce, iota(8), tree);
  CHECK(isolated_time_s(one, plan) == doctest::Approx(choose(in, 64e6, CollectiveAlgorithm::Tree).time_s).epsilon(1e-9));

  // 4 nodes x 8 GPUs, 8 NICs: per round 4 x 7 chain flows and 2 trees x 3 edges x 8 NIC sub-flows.
  const Cluster four(test_support::make_spec(8, 4, 8));
  const CommPlan wide = plan_collective(four, Collective::AllReduce, {iota(32)}, 64e6, tree);
  REQUIRE(wide.rounds.size() == 2);
  CHECK(wide.rounds[0].flows.size() == 28 + 48);
  std::map<std::int32_t, double> up_from_node;
  for (const Flow& f : wide.rounds[0].flows)
    if (four.node_of(f.src_gpu) != four.node_of(f.dst_gpu)) {
      up_from_node[four.node_of(f.src_gpu)] += f.bytes;
      CHECK(four.nic_of(f.src_gpu) == four.nic_of(f.dst_gpu));
    }
  // Heap tree over nodes 0..3 (root 0) and its mirror (root 3): nodes 1 and 2 send up in both
  // trees (S/2 each), 0 and 3 in one.
  CHECK(up_from_node[1] == doctest::Approx(up_from_node[2]));
  CHECK(up_from_node[0] == doctest::Approx(up_from_node[1] / 2));
  CHECK(up_from_node.count(3) == 1);
}

TEST_CASE("NVLS plan: a GPU sends S(n-1)/n at the measured NVLS efficiency: ~480 GB/s busbw on DGX H100") {
  auto spec = test_support::make_spec(8, 1, 8);
  spec.gpu.architecture = GpuArchitecture::Hopper;
  const Cluster h100(spec);
  const CommPlan plan = plan_collective(h100, Collective::AllReduce, {iota(8)}, 1e9);
  CHECK(plan.algorithm == NcclAlgorithm::Nvls);
  CHECK(stepsim::costmodel::round_count(plan) == 7);
  const double busbw = 1e9 * 14.0 / 8.0 / isolated_time_s(h100, plan);
  // 2 x 0.8 x 450 x 0.667 = 480.2 GB/s, less the 25 us latency.
  CHECK(busbw == doctest::Approx(1e9 * 14.0 / 8.0 / (25e-6 + 1e9 * 7.0 / 8.0 / (0.8 * 450e9 * 0.667))).epsilon(1e-9));
  CHECK(busbw > 470e9);
  CHECK(busbw < 481e9);
}
