#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/topology/cluster.hpp"

#include "random_graph.hpp"

namespace sim = stepsim::sim;
namespace topology = stepsim::topology;
namespace scenarios = stepsim::scenarios;

namespace {

sim::Op make_op(sim::OpKind kind, std::int32_t device, sim::Stream stream, double duration_s,
                const std::string& label = "op") {
  sim::Op op;
  op.kind = kind;
  op.device = device;
  op.stream = stream;
  op.duration_s = duration_s;
  op.label = label;
  return op;
}

sim::Op compute(std::int32_t device, double duration_s, const std::string& label = "fwd") {
  return make_op(sim::OpKind::Compute, device, sim::Stream::Compute, duration_s, label);
}

// A communication op replaying `plan` (added to the graph) and lasting `duration_s` analytically.
std::int32_t add_comm(sim::StepGraph& g, std::int32_t device, sim::Stream stream, sim::CommPlan plan,
                      double duration_s) {
  g.plans.push_back(std::move(plan));
  sim::Op op = make_op(sim::OpKind::Collective, device, stream, duration_s, "comm");
  op.collective = sim::Collective::AllReduce;
  op.plan = static_cast<std::int32_t>(g.plans.size() - 1);
  return g.add_op(op);
}

// A zero-byte, zero-duration send/recv between pipeline stages.
std::int32_t add_p2p(sim::StepGraph& g, std::int32_t from, std::int32_t to) {
  g.plans.emplace_back();
  sim::Op op = make_op(sim::OpKind::SendRecv, from, sim::Stream::PpComm, 0.0, "pp.send");
  op.collective = sim::Collective::SendRecv;
  op.peer_device = to;
  op.plan = static_cast<std::int32_t>(g.plans.size() - 1);
  return g.add_op(op);
}

scenarios::ClusterSpec single_node(std::int64_t gpus) {
  scenarios::ClusterSpec spec;
  spec.gpu.name = "test-gpu";
  spec.gpu.memory_bytes = 80e9;
  spec.gpu.peak_bf16_flops = 1e15;
  spec.gpu.hbm_Bps = 3e12;
  spec.gpu.nvlink_Bps = 450e9;
  spec.gpus_per_node = gpus;
  spec.nodes = 1;
  spec.intra_node.bw_Bps = 450e9;
  spec.intra_node.latency_s = 2e-6;
  spec.inter_node.nics_per_node = 1;
  spec.inter_node.nic_Bps = 50e9;
  spec.inter_node.latency_s = 5e-6;
  spec.inter_node.topology = scenarios::FabricTopology::SingleSwitch;
  return spec;
}

// Two nodes of two GPUs sharing one NIC per node.
scenarios::ClusterSpec two_nodes_one_nic() {
  scenarios::ClusterSpec spec = single_node(2);
  spec.nodes = 2;
  return spec;
}

// Ring all-reduce of `bytes` over `ring` as 2(n-1) rounds of n flows of bytes/n.
sim::CommPlan ring_all_reduce(const std::vector<std::int64_t>& ring, double bytes, double setup_s) {
  sim::CommPlan plan;
  plan.setup_s = setup_s;
  const std::size_t n = ring.size();
  for (std::size_t r = 0; r < 2 * (n - 1); ++r) {
    std::vector<sim::Flow> round;
    for (std::size_t i = 0; i < n; ++i) round.push_back({ring[i], ring[(i + 1) % n], bytes / static_cast<double>(n)});
    plan.rounds.push_back(sim::Round{round, 1});
  }
  return plan;
}

// Time of a plan whose flows share no link: setup + per round the slowest latency + bytes / bw.
double isolated_time(const topology::Cluster& cluster, const sim::CommPlan& plan) {
  double t = plan.setup_s;
  for (const auto& round : plan.rounds) {
    double slowest = 0;
    for (const sim::Flow& f : round.flows) {
      const topology::Route r = cluster.route(f.src_gpu, f.dst_gpu);
      double bw = INFINITY;
      for (const std::int32_t id : r.links) bw = std::min(bw, cluster.link(id).bw_Bps);
      slowest = std::max(slowest, r.latency_s + f.bytes / bw);
    }
    t += static_cast<double>(round.repeat) * slowest;
  }
  return t;
}

void check_close(double a, double b, double rel) { CHECK(std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b))); }

}  // namespace

TEST_CASE("analytic: a chain adds durations") {
  sim::StepGraph g;
  g.devices.resize(2);
  const auto a = g.add_op(compute(0, 1.5));
  const auto b = g.add_op(compute(1, 2.25));
  const auto c = g.add_op(compute(0, 0.25));
  g.add_edge(a, b);
  g.add_edge(b, c);
  const sim::Trace t = sim::run_analytic(g);
  CHECK(t.engine == sim::EngineKind::Analytic);
  CHECK(t.ops[0].start_s == 0.0);
  CHECK(t.ops[0].end_s == 1.5);
  CHECK(t.ops[1].start_s == 1.5);
  CHECK(t.ops[1].end_s == 3.75);
  CHECK(t.ops[2].start_s == 3.75);
  CHECK(t.ops[2].end_s == 4.0);
  CHECK(t.makespan_s == 4.0);
}

TEST_CASE("analytic: ops of one stream serialize in index order, streams overlap") {
  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(compute(0, 2.0));                                                      // 0
  g.add_op(compute(0, 3.0));                                                      // 1
  g.add_op(make_op(sim::OpKind::Delay, 0, sim::Stream::TpComm, 4.0, "tp"));     // 2
  g.add_op(make_op(sim::OpKind::Delay, 0, sim::Stream::DpComm, 1.0, "dp"));     // 3
  const sim::Trace t = sim::run_analytic(g);
  CHECK(t.ops[0].start_s == 0.0);
  CHECK(t.ops[0].end_s == 2.0);
  CHECK(t.ops[1].start_s == 2.0);
  CHECK(t.ops[1].end_s == 5.0);
  CHECK(t.ops[2].start_s == 0.0);
  CHECK(t.ops[3].start_s == 0.0);
  CHECK(t.makespan_s == 5.0);
}

TEST_CASE("analytic: ops released at the same instant start lowest index first") {
  // Op 3 is released by op 0 at t = 1; op 2 (lower index) by op 1, also at t = 1. The compute
  // stream of device 1 must run op 2 first although op 0 is completed first.
  sim::StepGraph g;
  g.devices.resize(2);
  g.add_op(compute(0, 1.0));                                                     // 0
  g.add_op(make_op(sim::OpKind::Delay, 0, sim::Stream::TpComm, 1.0, "tp"));    // 1
  g.add_op(compute(1, 2.0));                                                     // 2
  g.add_op(compute(1, 3.0));                                                     // 3
  g.add_edge(0, 3);
  g.add_edge(1, 2);
  const sim::Trace t = sim::run_analytic(g);
  CHECK(t.ops[2].start_s == 1.0);
  CHECK(t.ops[3].start_s == 3.0);
  CHECK(t.makespan_s == 6.0);
}

TEST_CASE("analytic: zero-duration ops end when they start and free their stream") {
  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(compute(0, 1.0));   // 0
  g.add_op(compute(0, 0.0));   // 1
  g.add_op(compute(0, 0.0));   // 2
  g.add_op(compute(0, 2.0));   // 3
  g.add_edge(0, 1);
  g.add_edge(1, 2);
  const sim::Trace t = sim::run_analytic(g);
  CHECK(t.ops[1].start_s == 1.0);
  CHECK(t.ops[1].end_s == 1.0);
  CHECK(t.ops[2].start_s == 1.0);
  CHECK(t.ops[2].end_s == 1.0);
  // Op 3 was ready at 0 but the stream was busy with op 0 (lower index).
  CHECK(t.ops[3].start_s == 1.0);
  CHECK(t.makespan_s == 3.0);
}

namespace {

// Both replays of the analytic engine give the same times, bit for bit.
void check_same_times(const sim::Trace& a, const sim::Trace& b) {
  REQUIRE(a.ops.size() == b.ops.size());
  CHECK(a.makespan_s == b.makespan_s);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.ops.size(); ++i)
    if (a.ops[i].start_s != b.ops[i].start_s || a.ops[i].end_s != b.ops[i].end_s) ++differ;
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("analytic: the replay in index order declines a stream that would start a later ready op") {
  // Device 0's compute stream runs op 0, then waits for op 2 (ready when op 1 ends at 2), while
  // op 3 (no predecessor) is ready: the scheduler starts op 3 at 1.
  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(compute(0, 1.0));                                                   // 0
  g.add_op(make_op(sim::OpKind::Delay, 0, sim::Stream::TpComm, 2.0, "tp"));  // 1
  g.add_op(compute(0, 1.0));                                                   // 2
  g.add_op(compute(0, 1.0));                                                   // 3
  g.add_edge(1, 2);
  CHECK_FALSE(sim::replay_in_index_order(g).has_value());
  const sim::Trace t = sim::run_analytic(g);
  CHECK(t.ops[3].start_s == 1.0);
  CHECK(t.ops[2].start_s == 2.0);
  check_same_times(t, sim::run_analytic_scheduled(g));
  // With op 3 after op 2 (an edge), index order is the scheduler's order and is taken.
  g.add_edge(2, 3);
  const auto ordered = sim::replay_in_index_order(g);
  REQUIRE(ordered.has_value());
  CHECK(ordered->ops[2].start_s == 2.0);
  CHECK(ordered->ops[3].start_s == 3.0);
  CHECK(ordered->makespan_s == 4.0);
  check_same_times(*ordered, sim::run_analytic_scheduled(g));
}

TEST_CASE("analytic: the replay in index order orders one instant by the scheduler's passes") {
  // At t = 1 op 0 ends: op 3 is ready in that pass, op 2 only one pass later (after op 1, of zero
  // duration). The idle compute stream starts op 3 first although op 2 has the lower index.
  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(make_op(sim::OpKind::Delay, 0, sim::Stream::TpComm, 1.0, "tp"));  // 0
  g.add_op(make_op(sim::OpKind::Delay, 0, sim::Stream::CpComm, 0.0, "cp"));  // 1
  g.add_op(compute(0, 1.0));                                                   // 2
  g.add_op(compute(0, 1.0));                                                   // 3
  g.add_edge(0, 1);
  g.add_edge(1, 2);
  g.add_edge(0, 3);
  CHECK_FALSE(sim::replay_in_index_order(g).has_value());
  const sim::Trace t = sim::run_analytic(g);
  CHECK(t.ops[3].start_s == 1.0);
  CHECK(t.ops[2].start_s == 2.0);
  // Ready in the same pass (op 2 straight after op 0), the lower index goes first: taken.
  sim::StepGraph same;
  same.devices.resize(1);
  same.add_op(make_op(sim::OpKind::Delay, 0, sim::Stream::TpComm, 1.0, "tp"));  // 0
  same.add_op(compute(0, 1.0));                                                   // 1
  same.add_op(compute(0, 1.0));                                                   // 2
  same.add_edge(0, 1);
  same.add_edge(0, 2);
  const auto ordered = sim::replay_in_index_order(same);
  REQUIRE(ordered.has_value());
  CHECK(ordered->ops[1].start_s == 1.0);
  CHECK(ordered->ops[2].start_s == 2.0);
  check_same_times(*ordered, sim::run_analytic_scheduled(same));
}

TEST_CASE("analytic: the replay in index order declines a predecessor of higher index") {
  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(compute(0, 1.0));                                                   // 0
  g.add_op(make_op(sim::OpKind::Delay, 0, sim::Stream::TpComm, 2.0, "tp"));  // 1
  g.add_edge(1, 0);
  CHECK_FALSE(sim::replay_in_index_order(g).has_value());
  const sim::Trace t = sim::run_analytic(g);
  CHECK(t.ops[0].start_s == 2.0);
  CHECK(t.makespan_s == 3.0);
}

TEST_CASE("analytic: where the replay in index order is taken it equals the scheduler's, on random graphs") {
  // Small random graphs (many ties: durations in eighths, zeros among them), some of which the
  // check declines; every taken replay must be the scheduler's to the bit, and run_analytic too.
  int taken = 0, declined = 0;
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    const int devices = 1 + static_cast<int>(seed % 3);
    const int ops = 2 + static_cast<int>(seed % 23);
    const sim::StepGraph g = test_support::random_delay_graph(seed, devices, ops, 1 + static_cast<std::uint32_t>(seed % 5), 3);
    const sim::Trace reference = sim::run_analytic_scheduled(g);
    const auto ordered = sim::replay_in_index_order(g);
    if (ordered) {
      ++taken;
      check_same_times(*ordered, reference);
    } else {
      ++declined;
    }
    check_same_times(sim::run_analytic(g), reference);
  }
  CHECK(taken > 300);
  CHECK(declined > 300);
}

TEST_CASE("analytic: empty graph and cycle") {
  sim::StepGraph g;
  CHECK(sim::run_analytic(g).makespan_s == 0.0);
  g.devices.resize(1);
  g.add_op(compute(0, 1.0));
  g.add_op(compute(0, 1.0));
  g.add_edge(0, 1);
  g.add_edge(1, 0);
  CHECK_THROWS_WITH_AS(sim::run_analytic(g),
                       "step graph has a dependency cycle of 2 ops: op 0 (fwd (device 0)) -> op 1 (fwd (device 0)) "
                       "-> back to op 0",
                       stepsim::InternalError);
}

namespace {

// Pipeline toy on p devices and m micro-batches with forward time tf and backward time tb. Stage
// s runs its F and B ops in the schedule's order (chained by edges); F(s, j) needs F(s-1, j) and
// B(s, j) needs B(s+1, j) through zero-byte send/recv ops.
sim::StepGraph pipeline(int p, int m, double tf, double tb, bool one_f_one_b) {
  sim::StepGraph g;
  g.devices.resize(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) g.devices[static_cast<std::size_t>(s)].gpu = s;
  std::vector<std::vector<std::int32_t>> f(static_cast<std::size_t>(p)), b(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    for (int j = 0; j < m; ++j) {
      sim::Op op = compute(s, tf, "fwd");
      op.micro_batch = j;
      op.stage = s;
      f[static_cast<std::size_t>(s)].push_back(g.add_op(op));
      op = compute(s, tb, "bwd");
      op.micro_batch = j;
      op.stage = s;
      b[static_cast<std::size_t>(s)].push_back(g.add_op(op));
    }
  }
  for (int s = 0; s < p; ++s) {
    const auto us = static_cast<std::size_t>(s);
    for (int j = 0; j < m; ++j) {
      const auto uj = static_cast<std::size_t>(j);
      if (s > 0) {
        const auto send = add_p2p(g, s - 1, s);
        g.add_edge(f[us - 1][uj], send);
        g.add_edge(send, f[us][uj]);
      }
      if (s + 1 < p) {
        const auto send = add_p2p(g, s + 1, s);
        g.add_edge(b[us + 1][uj], send);
        g.add_edge(send, b[us][uj]);
      }
      g.add_edge(f[us][uj], b[us][uj]);
    }
    // Order of the stage's compute ops.
    std::vector<std::int32_t> order;
    if (one_f_one_b) {
      const int warmup = std::min(p - s - 1, m);
      for (int j = 0; j < warmup; ++j) order.push_back(f[us][static_cast<std::size_t>(j)]);
      for (int j = 0; j < m; ++j) {
        if (j + warmup < m) order.push_back(f[us][static_cast<std::size_t>(j + warmup)]);
        order.push_back(b[us][static_cast<std::size_t>(j)]);
      }
    } else {
      for (int j = 0; j < m; ++j) order.push_back(f[us][static_cast<std::size_t>(j)]);
      for (int j = 0; j < m; ++j) order.push_back(b[us][static_cast<std::size_t>(j)]);
    }
    for (std::size_t i = 1; i < order.size(); ++i) g.add_edge(order[i - 1], order[i]);
  }
  return g;
}

}  // namespace

TEST_CASE("analytic: GPipe and 1F1B toys take (m + p - 1)(tf + tb)") {
  const double tf = 1.0, tb = 2.0;
  for (const bool one_f_one_b : {false, true}) {
    for (const auto& [p, m] : std::vector<std::pair<int, int>>{{1, 1}, {2, 4}, {4, 8}, {4, 3}, {8, 16}}) {
      CAPTURE(one_f_one_b);
      CAPTURE(p);
      CAPTURE(m);
      const sim::Trace t = sim::run_analytic(pipeline(p, m, tf, tb, one_f_one_b));
      CHECK(t.makespan_s == (m + p - 1) * (tf + tb));
    }
  }
}

TEST_CASE("simgrid: pipeline toy matches the analytic engine") {
  const topology::Cluster cluster(single_node(4));
  const sim::StepGraph g = pipeline(4, 8, 1e-3, 2e-3, true);
  const sim::Trace a = sim::run_analytic(g);
  const sim::Trace s = sim::run_simgrid(g, cluster);
  CHECK(s.engine == sim::EngineKind::SimGrid);
  REQUIRE(s.ops.size() == g.ops.size());
  CHECK(s.makespan_s == doctest::Approx(11 * 3e-3).epsilon(1e-12));
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    CHECK(s.ops[i].start_s == doctest::Approx(a.ops[i].start_s).epsilon(1e-12));
    CHECK(s.ops[i].end_s == doctest::Approx(a.ops[i].end_s).epsilon(1e-12));
  }
}

TEST_CASE("engines: agree on compute and a ring all-reduce over one node") {
  const topology::Cluster cluster(single_node(8));
  std::vector<std::int64_t> ring(8);
  for (std::int64_t i = 0; i < 8; ++i) ring[static_cast<std::size_t>(i)] = i;
  const sim::CommPlan plan = ring_all_reduce(ring, 256e6, 8.4e-6);
  REQUIRE(plan.rounds.size() == 14);
  // Closed form: setup + 14 (latency + (S/8) / bw), every flow crossing GPU -> NvSwitch -> GPU.
  const topology::Route r01 = cluster.route(0, 1);
  const double closed_s = 8.4e-6 + 14 * (r01.latency_s + 32e6 / r01.bottleneck_Bps);
  check_close(isolated_time(cluster, plan), closed_s, 1e-12);

  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(compute(0, 3e-3));                                             // 0
  const auto ar = add_comm(g, 0, sim::Stream::DpComm, plan, closed_s);    // 1
  g.add_op(compute(0, 1e-3, "bwd"));                                      // 2: overlaps the all-reduce
  g.add_op(compute(0, 2e-3, "opt"));                                      // 3
  g.add_edge(0, ar);
  g.add_edge(ar, 3);
  g.add_edge(2, 3);

  const sim::Trace a = sim::run_analytic(g);
  const sim::Trace s = sim::run_simgrid(g, cluster);
  CHECK(a.makespan_s == 3e-3 + closed_s + 2e-3);
  check_close(s.makespan_s, a.makespan_s, 1e-6);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    CAPTURE(i);
    check_close(s.ops[i].start_s, a.ops[i].start_s, 1e-6);
    check_close(s.ops[i].end_s, a.ops[i].end_s, 1e-6);
  }
}

TEST_CASE("simgrid: two rings sharing one NIC take twice as long, analytic does not see it") {
  const topology::Cluster cluster(two_nodes_one_nic());
  REQUIRE(cluster.num_gpus() == 4);
  REQUIRE(cluster.nic_of(0) == cluster.nic_of(1));
  const double bytes = 2e9;
  const sim::CommPlan ring_a = ring_all_reduce({0, 2}, bytes, 0.0);
  const sim::CommPlan ring_b = ring_all_reduce({1, 3}, bytes, 0.0);
  const double alone_s = isolated_time(cluster, ring_a);
  check_close(isolated_time(cluster, ring_b), alone_s, 1e-12);

  sim::StepGraph one;
  one.devices.resize(2);
  one.devices[1].gpu = 1;
  add_comm(one, 0, sim::Stream::DpComm, ring_a, alone_s);
  sim::StepGraph two = one;
  add_comm(two, 1, sim::Stream::DpComm, ring_b, alone_s);

  const sim::Trace one_sg = sim::run_simgrid(one, cluster);
  const sim::Trace two_sg = sim::run_simgrid(two, cluster);
  const sim::Trace two_an = sim::run_analytic(two);
  check_close(one_sg.makespan_s, alone_s, 1e-6);
  check_close(two_sg.ops[0].end_s, 2 * alone_s, 1e-3);
  check_close(two_sg.ops[1].end_s, 2 * alone_s, 1e-3);
  // Latency is not doubled: 2 rounds of latency + (bytes / 2) / (bw / 2).
  const topology::Route r = cluster.route(0, 2);
  check_close(two_sg.makespan_s, 2 * (r.latency_s + bytes / r.bottleneck_Bps), 1e-6);
  CHECK(two_an.ops[0].end_s == alone_s);
  CHECK(two_an.ops[1].end_s == alone_s);
}

TEST_CASE("simgrid: same results on repeated runs, empty plans and zero-byte flows") {
  const topology::Cluster cluster(single_node(4));
  sim::StepGraph g;
  g.devices.resize(2);
  g.devices[1].gpu = 1;
  const auto c0 = g.add_op(compute(0, 1e-3));
  const auto empty = add_comm(g, 0, sim::Stream::TpComm, sim::CommPlan{}, 0.0);
  const auto setup_only = add_comm(g, 0, sim::Stream::TpComm, sim::CommPlan{5e-6, {}}, 5e-6);
  const double lat_s = cluster.route(0, 1).latency_s;
  const auto zero_bytes = add_comm(g, 1, sim::Stream::TpComm, sim::CommPlan{0.0, {sim::Round{{{0, 1, 0.0}}, 1}, sim::Round{{{1, 0, 0.0}}, 1}}},
                                   2 * lat_s);
  const auto c1 = g.add_op(compute(1, 2e-3));
  g.add_edge(c0, empty);
  g.add_edge(empty, setup_only);
  g.add_edge(setup_only, zero_bytes);
  g.add_edge(zero_bytes, c1);
  const sim::Trace a = sim::run_analytic(g);
  const sim::Trace s1 = sim::run_simgrid(g, cluster);
  const sim::Trace s2 = sim::run_simgrid(g, cluster);
  CHECK(a.makespan_s == 1e-3 + 5e-6 + 2 * lat_s + 2e-3);
  CHECK(s1.ops[static_cast<std::size_t>(empty)].start_s == 1e-3);
  CHECK(s1.ops[static_cast<std::size_t>(empty)].end_s == 1e-3);
  check_close(s1.makespan_s, a.makespan_s, 1e-9);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    CHECK(s1.ops[i].start_s == s2.ops[i].start_s);
    CHECK(s1.ops[i].end_s == s2.ops[i].end_s);
  }
}

TEST_CASE("simgrid: random DAG of delays matches the analytic engine exactly") {
  // Durations are multiples of 1/8 so that every sum is exact in binary floating point.
  const topology::Cluster cluster(single_node(2));
  const sim::StepGraph g = test_support::random_delay_graph(12345, 3, 400, 5, 4);
  const sim::Trace a = sim::run_analytic(g);
  const sim::Trace s = sim::run_simgrid(g, cluster);
  CHECK(s.makespan_s == a.makespan_s);
  int mismatches = 0;
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if (s.ops[i].start_s != a.ops[i].start_s || s.ops[i].end_s != a.ops[i].end_s) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("simgrid: a bad graph or plan throws in the parent") {
  const topology::Cluster cluster(single_node(2));
  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(compute(0, 1.0));
  g.add_op(compute(0, 1.0));
  g.add_edge(0, 1);
  g.add_edge(1, 0);
  CHECK_THROWS_WITH_AS(sim::run_simgrid(g, cluster),
                       "step graph has a dependency cycle of 2 ops: op 0 (fwd (device 0)) -> op 1 (fwd (device 0)) "
                       "-> back to op 0",
                       stepsim::InternalError);

  sim::StepGraph bad_plan;
  bad_plan.devices.resize(1);
  add_comm(bad_plan, 0, sim::Stream::TpComm, sim::CommPlan{0.0, {sim::Round{{{0, 9, 1.0}}, 1}}}, 0.0);
  CHECK_THROWS_WITH_AS(sim::run_simgrid(bad_plan, cluster),
                       "simgrid engine: plan 0 has a flow on GPU 9, but the cluster has 2 GPUs", stepsim::InternalError);
  CHECK(sim::run_analytic(bad_plan).makespan_s == 0.0);
}

TEST_CASE("simgrid: a ring over 4104 GPUs replays as two flow classes, as every flow does") {
  scenarios::ClusterSpec spec = single_node(8);
  spec.nodes = 513;
  spec.inter_node.nics_per_node = 8;
  const topology::Cluster cluster(spec);
  REQUIRE(cluster.num_gpus() == 4104);
  sim::CommPlan plan;
  plan.rounds.emplace_back();
  plan.rounds[0].repeat = 3;
  for (std::int64_t i = 0; i < cluster.num_gpus(); ++i) plan.rounds[0].flows.push_back({i, (i + 1) % cluster.num_gpus(), 1e6});
  sim::StepGraph g;
  g.devices.resize(1);
  add_comm(g, 0, sim::Stream::DpComm, plan, 1e-3);
  // Within a node over NVLink (7 of 8 flows), between nodes over the NICs: every link carries
  // one flow, and each flow's links but one are redundant (its neighbour has no more bandwidth).
  const sim::SimGridPlatformStats classes = sim::simgrid_platform_stats(g, cluster);
  CHECK(classes.plan_flows == 4104);
  CHECK(classes.replayed_flows == 2);
  CHECK(classes.step_replayed_flows == 2 * 3);   // the round runs 3 times
  CHECK(classes.simgrid_links == 2);
  const sim::SimGridPlatformStats exact = sim::simgrid_platform_stats(g, cluster, sim::SimGridFlows::Exact);
  CHECK(exact.replayed_flows == 4104);
  CHECK(exact.step_replayed_flows == 4104 * 3);
  CHECK(exact.redundant_links == 0);
  CHECK(exact.simgrid_links == 7 * 513 * 2 + 513 * 4);
  const double expected_s = 3 * std::max(2e-6 + 1e6 / 450e9, 5e-6 + 1e6 / 50e9);
  check_close(sim::run_simgrid(g, cluster).makespan_s, expected_s, 1e-9);
  check_close(sim::run_simgrid(g, cluster, sim::SimGridFlows::Exact).makespan_s, expected_s, 1e-9);
}

TEST_CASE("simgrid: flows of one round split into classes where their links' loads differ") {
  // Three nodes of two GPUs, one NIC (50 GB/s, 5 us) each. Plan P sends 600 MB 0->2 (node 0's
  // NIC out, node 1's in) and 4->1 (node 2's out, node 0's in); Q sends 600 MB 1->3 along P's
  // first flow; R sends 200 MB 5->0 along P's second flow. All start at 0 and move after 5 us.
  scenarios::ClusterSpec spec = single_node(2);
  spec.nodes = 3;
  const topology::Cluster cluster(spec);
  sim::StepGraph g;
  g.devices.resize(3);
  add_comm(g, 0, sim::Stream::DpComm, sim::CommPlan{0.0, {sim::Round{{{0, 2, 6e8}, {4, 1, 6e8}}, 1}}}, 1e-3);
  add_comm(g, 1, sim::Stream::DpComm, sim::CommPlan{0.0, {sim::Round{{{1, 3, 6e8}}, 1}}}, 1e-3);
  add_comm(g, 2, sim::Stream::DpComm, sim::CommPlan{0.0, {sim::Round{{{5, 0, 2e8}}, 1}}}, 1e-3);
  const sim::SimGridPlatformStats st = sim::simgrid_platform_stats(g, cluster);
  CHECK(st.plan_flows == 4);
  CHECK(st.replayed_flows == 4);   // P's two flows do not move alike: two classes
  const sim::Trace classes = sim::run_simgrid(g, cluster);
  const sim::Trace exact = sim::run_simgrid(g, cluster, sim::SimGridFlows::Exact);
  // By hand: every NIC link carries two flows at 25 GB/s. R ends after 200 MB (8 ms); P's second
  // flow then runs alone at 50 GB/s (400 MB, 8 ms more); P's first flow and Q share node 0's NIC
  // to the end (600 MB at 25 GB/s: 24 ms).
  for (const sim::Trace* t : {&classes, &exact}) {
    check_close(t->ops[0].end_s, 5e-6 + 0.024, 1e-9);
    check_close(t->ops[1].end_s, 5e-6 + 0.024, 1e-9);
    check_close(t->ops[2].end_s, 5e-6 + 0.008, 1e-9);
  }
}

TEST_CASE("simgrid: flows through one shared NIC merge into one flow that loads it twice") {
  // GPUs 0 and 1 (node 0, one NIC) send 600 MB each to GPUs 2 and 3 (node 1), and GPU 2 sends
  // 200 MB back to GPU 0: node 0's NIC carries two flows at 25 GB/s (24 ms).
  const topology::Cluster cluster(two_nodes_one_nic());
  sim::StepGraph g;
  g.devices.resize(2);
  add_comm(g, 0, sim::Stream::DpComm, sim::CommPlan{0.0, {sim::Round{{{0, 2, 6e8}, {1, 3, 6e8}}, 1}}}, 1e-3);
  add_comm(g, 1, sim::Stream::DpComm, sim::CommPlan{0.0, {sim::Round{{{2, 0, 2e8}}, 1}}}, 1e-3);
  const sim::SimGridPlatformStats st = sim::simgrid_platform_stats(g, cluster);
  CHECK(st.plan_flows == 3);
  CHECK(st.replayed_flows == 2);
  CHECK(st.step_replayed_flows == 2);
  // A plan replayed by two ops counts twice in the step.
  sim::StepGraph twice = g;
  const sim::Op again = twice.ops[0];
  twice.add_op(again);
  CHECK(sim::simgrid_platform_stats(twice, cluster).step_replayed_flows == 3);
  for (const auto mode : {sim::SimGridFlows::Classes, sim::SimGridFlows::Exact}) {
    const sim::Trace t = sim::run_simgrid(g, cluster, mode);
    check_close(t.ops[0].end_s, 5e-6 + 6e8 / 25e9, 1e-9);
    check_close(t.ops[1].end_s, 5e-6 + 2e8 / 50e9, 1e-9);
  }
}

TEST_CASE("engines: run dispatches on the engine kind") {
  const topology::Cluster cluster(single_node(2));
  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(compute(0, 0.5));
  CHECK(sim::run(sim::EngineKind::Analytic, g, cluster).engine == sim::EngineKind::Analytic);
  const sim::Trace s = sim::run(sim::EngineKind::SimGrid, g, cluster);
  CHECK(s.engine == sim::EngineKind::SimGrid);
  CHECK(s.makespan_s == 0.5);
  CHECK(sim::to_string(sim::EngineKind::Analytic) == "analytic");
  CHECK(sim::to_string(sim::EngineKind::SimGrid) == "simgrid");
}

TEST_CASE("simgrid: a round repeated 14 times replays like 14 separate rounds") {
  const topology::Cluster cluster(single_node(8));
  std::vector<std::int64_t> ring(8);
  for (std::int64_t i = 0; i < 8; ++i) ring[static_cast<std::size_t>(i)] = i;
  const sim::CommPlan separate = ring_all_reduce(ring, 256e6, 8.4e-6);
  sim::CommPlan repeated;
  repeated.setup_s = separate.setup_s;
  repeated.rounds.push_back(sim::Round{separate.rounds[0].flows, 14});
  double makespan[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    sim::StepGraph g;
    g.devices.resize(1);
    const auto& plan = k == 0 ? separate : repeated;
    add_comm(g, 0, sim::Stream::DpComm, plan, isolated_time(cluster, plan));
    makespan[k] = sim::run_simgrid(g, cluster).makespan_s;
  }
  CHECK(makespan[0] > 0);
  check_close(makespan[0], makespan[1], 1e-9);
  check_close(makespan[1], isolated_time(cluster, repeated), 1e-6);
}
