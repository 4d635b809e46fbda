// Speed of the two engines on synthetic step graphs.
//
//   engine_bench [analytic_ops] [simgrid_phases]
//
// analytic: 64 devices, each a chain of compute ops with a TP collective after every third op
// (on the TP stream) and a dependency on the previous pipeline stage's matching op; about
// analytic_ops ops in all (default 1,000,000).
// simgrid: 8 nodes x 8 GPUs; per phase every GPU computes, then every group of 8 ring-all-reduces
// 64 MB (112 flows); phases alternate between groups inside a node (NVLink) and rail groups
// across nodes (NICs). Default 100 phases.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/topology/cluster.hpp"

namespace sim = stepsim::sim;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

sim::StepGraph analytic_graph(std::int64_t target_ops) {
  constexpr std::int32_t kDevices = 64;
  sim::StepGraph g;
  g.devices.resize(kDevices);
  g.plans.emplace_back();
  const std::int64_t per_device = target_ops / kDevices;
  g.ops.reserve(static_cast<std::size_t>(per_device * kDevices));
  std::vector<std::int32_t> prev_stage_ops;
  std::vector<std::int32_t> this_stage_ops;
  for (std::int32_t d = 0; d < kDevices; ++d) {
    this_stage_ops.clear();
    std::int32_t last = -1;
    for (std::int64_t k = 0; k < per_device; ++k) {
      sim::Op op;
      if (k % 4 == 3) {
        op.kind = sim::OpKind::Collective;
        op.stream = sim::Stream::TpComm;
        op.plan = 0;
        op.duration_s = 2e-5;
      } else {
        op.kind = sim::OpKind::Compute;
        op.duration_s = 1e-4 + 1e-6 * static_cast<double>((k * 7 + d) % 13);
      }
      op.device = d;
      const std::int32_t id = g.add_op(op);
      if (last >= 0) g.add_edge(last, id);
      if (!prev_stage_ops.empty() && static_cast<std::size_t>(k) < prev_stage_ops.size() && k % 4 == 0) {
        g.add_edge(prev_stage_ops[static_cast<std::size_t>(k)], id);
      }
      this_stage_ops.push_back(id);
      last = id;
    }
    prev_stage_ops.swap(this_stage_ops);
  }
  return g;
}

stepsim::scenarios::ClusterSpec bench_cluster() {
  stepsim::scenarios::ClusterSpec spec;
  spec.gpu.name = "bench-gpu";
  spec.gpus_per_node = 8;
  spec.nodes = 8;
  spec.intra_node.bw_Bps = 450e9;
  spec.intra_node.latency_s = 2e-6;
  spec.inter_node.nics_per_node = 8;
  spec.inter_node.nic_Bps = 50e9;
  spec.inter_node.latency_s = 5e-6;
  spec.inter_node.topology = stepsim::scenarios::FabricTopology::RailFatTree;
  return spec;
}

sim::StepGraph simgrid_graph(const stepsim::topology::Cluster& cluster, int phases, std::int64_t* num_flows) {
  constexpr std::int32_t kGpus = 64;
  constexpr double kBytes = 64e6;
  sim::StepGraph g;
  g.devices.resize(kGpus);
  for (std::int32_t d = 0; d < kGpus; ++d) g.devices[static_cast<std::size_t>(d)].gpu = d;
  std::vector<std::int32_t> gate(kGpus, -1);   // op each device's next compute waits for
  *num_flows = 0;
  for (int phase = 0; phase < phases; ++phase) {
    std::vector<std::int32_t> computed(kGpus);
    for (std::int32_t d = 0; d < kGpus; ++d) {
      sim::Op op;
      op.device = d;
      op.duration_s = 1e-3;
      computed[static_cast<std::size_t>(d)] = g.add_op(op);
      if (gate[static_cast<std::size_t>(d)] >= 0) g.add_edge(gate[static_cast<std::size_t>(d)], computed[static_cast<std::size_t>(d)]);
    }
    for (std::int32_t group = 0; group < 8; ++group) {
      std::vector<std::int64_t> members;
      for (std::int32_t i = 0; i < 8; ++i) members.push_back(phase % 2 == 0 ? group * 8 + i : i * 8 + group);
      sim::CommPlan plan;
      for (int r = 0; r < 14; ++r) {
        std::vector<sim::Flow> round;
        for (std::size_t i = 0; i < 8; ++i) round.push_back({members[i], members[(i + 1) % 8], kBytes / 8});
        plan.rounds.push_back(sim::Round{round, 1});
      }
      *num_flows += 14 * 8;
      sim::Op op;
      op.kind = sim::OpKind::Collective;
      op.stream = sim::Stream::DpComm;
      op.device = static_cast<std::int32_t>(members[0]);
      op.duration_s = 0;
      op.plan = static_cast<std::int32_t>(g.plans.size());
      g.plans.push_back(plan);
      const std::int32_t ar = g.add_op(op);
      for (const std::int64_t m : members) {
        g.add_edge(computed[static_cast<std::size_t>(m)], ar);
        gate[static_cast<std::size_t>(m)] = ar;
      }
    }
  }
  (void)cluster;
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t analytic_ops = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  const int simgrid_phases = argc > 2 ? std::atoi(argv[2]) : 100;

  auto t0 = std::chrono::steady_clock::now();
  const sim::StepGraph ga = analytic_graph(analytic_ops);
  const double build_s = seconds_since(t0);
  sim::Trace ta;
  double analytic_s = 1e300;
  for (int rep = 0; rep < 3; ++rep) {   // best of three
    t0 = std::chrono::steady_clock::now();
    ta = sim::run_analytic(ga);
    analytic_s = std::min(analytic_s, seconds_since(t0));
  }
  std::printf("analytic: %zu ops, %zu edges, build %.3f s, run %.3f s (%.1f M ops/s), makespan %.6f s\n",
              ga.ops.size(), ga.num_edges(), build_s, analytic_s, static_cast<double>(ga.ops.size()) / analytic_s / 1e6,
              ta.makespan_s);

  if (simgrid_phases > 0) {
    const stepsim::topology::Cluster cluster(bench_cluster());
    std::int64_t flows = 0;
    const sim::StepGraph gs = simgrid_graph(cluster, simgrid_phases, &flows);
    t0 = std::chrono::steady_clock::now();
    const sim::Trace ts = sim::run_simgrid(gs, cluster);
    const double simgrid_s = seconds_since(t0);
    // No two flows share a link, so the analytic engine with isolated plan times must agree.
    sim::StepGraph gi = gs;
    for (auto& op : gi.ops) {
      if (op.plan >= 0) op.duration_s = stepsim::costmodel::isolated_time_s(cluster, gi.plans[static_cast<std::size_t>(op.plan)]);
    }
    const sim::Trace ti = sim::run_analytic(gi);
    std::printf("simgrid: %zu ops, %lld flows on 64 GPUs, run %.3f s (%.0f k flows/s), makespan %.9f s (analytic %.9f s)\n",
                gs.ops.size(), static_cast<long long>(flows), simgrid_s, static_cast<double>(flows) / simgrid_s / 1e3,
                ts.makespan_s, ti.makespan_s);
  }
  return 0;
}
