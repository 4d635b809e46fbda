#include "stepsim/costmodel/nccl_tuner.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace stepsim::costmodel {

namespace {

using workload::Collective;
constexpr double kUs = 1e-6;
constexpr double kGBps = 1e9;

// Indices into NCCL's tables: algorithm rows (tree, ring, NVLS), protocol columns (LL, LL128, Simple).
std::size_t row(NcclAlgorithm a) {
  switch (a) {
    case NcclAlgorithm::Tree: return 0;
    case NcclAlgorithm::Ring: return 1;
    case NcclAlgorithm::Nvls: return 2;
  }
  return 1;
}
std::size_t col(NcclProtocol p) { return static_cast<std::size_t>(p); }

using Table = std::array<std::array<double, 3>, 3>;
// Base latencies (us) and per-hop latencies (us) on NVLink and on the network, NCCL's defaults
// (ncclTunerConstantsDefaults: baseLatencies, hwLatencies[NVLINK], hwLatencies[NET]).
constexpr Table kBaseUs{{{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0.0, 0.0, 0.0}}};
constexpr Table kNvlinkUs{{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0.0, 0.0, 25.0}}};
constexpr Table kNetUs{{{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}, {0.0, 0.0, 18.0}}};

// Per-generation tables (rows Volta, Ampere, Hopper, Blackwell; columns 1, 2, more than 2 nodes), GB/s.
using GenTable = std::array<std::array<double, 3>, 4>;
// LL ceiling: one node by GPU generation; several nodes by host CPU (row 0: x86 Intel, assumed).
constexpr GenTable kLlMax{{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}};
constexpr GenTable kRingLl128PerCh{{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}}};
constexpr GenTable kTreeLl128PerCh{{{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
constexpr GenTable kTreePerCh{{{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};
// NVLS efficiency by generation (0: no NVLS).
constexpr std::array<double, 4> kNvlsEfficiency{0.0, 0.0, 0.85, 0.74};
// NVLink bandwidth NCCL's topology search assigns to one channel (src/graph/topo.h), GB/s.
constexpr std::array<double, 4> kNvlinkPerChannel{20.0, 20.0, 20.6, 40.1};
// Tree all-reduce bandwidth correction by log2(S / 64 B), per protocol (treeCorrectionFactor).
constexpr std::array<std::array<double, 24>, 3> kTreeCorrection{{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}}};
// Host network post overhead per step (us) on x86 Intel hosts, 3x with Simple (getNetOverhead).
constexpr double kNetOverheadUs = 1.0;

// NCCL's generation index; unknown GPUs are treated as Ampere (NCCL's default NVLink speed).
std::size_t generation(scenarios::GpuArchitecture arch) {
  switch (arch) {
    case scenarios::GpuArchitecture::Hopper: return 2;
    case scenarios::GpuArchitecture::Blackwell: return 3;
    case scenarios::GpuArchitecture::Ampere:
    case scenarios::GpuArchitecture::Unknown: return 1;
  }
  return 1;
}

int log2_floor(double x) { return x < 1.0 ? -1 : static_cast<int>(std::floor(std::log2(x))); }

std::int64_t steps(Collective kind, std::int64_t n) {
  return kind == Collective::AllReduce ? 2 * (n - 1) : n - 1;
}

}  // namespace

std::string to_string(NcclAlgorithm a) {
  switch (a) {
    case NcclAlgorithm::Ring: return "ring";
    case NcclAlgorithm::Tree: return "tree";
    case NcclAlgorithm::Nvls: return "nvls";
  }
  return "?";
}

std::string to_string(NcclProtocol p) {
  switch (p) {
    case NcclProtocol::LL: return "LL";
    case NcclProtocol::LL128: return "LL128";
    case NcclProtocol::Simple: return "Simple";
  }
  return "?";
}

std::int64_t nccl_channels(scenarios::GpuArchitecture arch, double graph_Bps) {
  const double per_channel_Bps = kNvlinkPerChannel[generation(arch)] * kGBps;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(graph_Bps / per_channel_Bps - 1e-9)));
}

double graph_bandwidth_Bps(const TunerInput& in) {
  return in.nodes > 1 ? std::min(in.intra_Bps, in.inter_Bps) : in.intra_Bps;
}

TunerChoice rate(const TunerInput& in, NcclAlgorithm a, NcclProtocol p, double bytes) {
  TunerChoice c{a, p, 0.0, 0.0, 0.0};
  const Collective kind = in.kind;
  const std::int64_t n = in.ranks;
  const std::int64_t nodes = std::max<std::int64_t>(1, in.nodes);
  const bool rs_ag = kind == Collective::ReduceScatter || kind == Collective::AllGather;
  if (n <= 1 || !(kind == Collective::AllReduce || rs_ag)) return c;
  if (a == NcclAlgorithm::Tree && kind != Collective::AllReduce) return c;
  const std::size_t gen = generation(in.arch);
  if (a == NcclAlgorithm::Nvls && (p != NcclProtocol::Simple || !in.nvswitch || kNvlsEfficiency[gen] == 0.0 || nodes > 1)) return c;

  const std::size_t node_col = nodes <= 2 ? static_cast<std::size_t>(nodes - 1) : 2;
  const double graph_Bps = graph_bandwidth_Bps(in);
  const auto channels = nccl_channels(in.arch, graph_Bps);
  const double nch = static_cast<double>(channels);
  const double ll_max_Bps = kLlMax[nodes == 1 ? gen : 0][node_col] * kGBps;
  const double nd = static_cast<double>(n);
  const double nsteps = static_cast<double>(steps(kind, n));
  const double ppn = nd / static_cast<double>(nodes);

  // Bus bandwidth (tuning.cc's refinements, in its order).
  double bus_Bps = graph_Bps;
  if (a == NcclAlgorithm::Nvls) {
    const double eff = kNvlsEfficiency[gen] * (nch - 1.0) / nch;
    if (channels < 2) return c;
    bus_Bps = graph_Bps * eff * (kind == Collective::AllReduce ? 2.0 : (ppn - 1.0) / ppn);
  }
  if (a == NcclAlgorithm::Ring && p == NcclProtocol::LL) bus_Bps = std::min(ll_max_Bps, bus_Bps * 0.5);
  if (a == NcclAlgorithm::Ring && p == NcclProtocol::LL128)
    bus_Bps = std::min(bus_Bps * 0.92, nch * kRingLl128PerCh[gen][node_col] * kGBps);
  if (a == NcclAlgorithm::Tree) {
    bus_Bps = std::min(bus_Bps * 0.92, nch * kTreePerCh[gen][node_col] * kGBps);
    if (p == NcclProtocol::LL) bus_Bps = std::min(bus_Bps / 3.8, ll_max_Bps);
    if (p == NcclProtocol::LL128)
      bus_Bps = std::min(bus_Bps * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nch * kTreeLl128PerCh[gen][node_col] * kGBps);
  }
  const int log_size = log2_floor(bytes / 64.0);
  if (a == NcclAlgorithm::Tree && log_size >= 0 && log_size < 23)
    bus_Bps *= kTreeCorrection[col(p)][static_cast<std::size_t>(log_size)];

  // Algorithm bandwidth: S / time. Trees move 2 S per all-reduce; NVLS reduce-scatter and
  // all-gather keep the bus bandwidth (NCCL does not convert them).
  double alg_Bps = bus_Bps;
  if (a == NcclAlgorithm::Ring || (a == NcclAlgorithm::Nvls && kind == Collective::AllReduce)) alg_Bps = bus_Bps * nd / nsteps;
  if (a == NcclAlgorithm::Tree) alg_Bps = bus_Bps * 0.5;

  // Latency.
  const std::size_t r = row(a), q = col(p);
  double lat_us = kBaseUs[r][q];
  double intra_us = kNvlinkUs[r][q];
  const double inter_us = ppn == 1.0 ? kNetUs[row(NcclAlgorithm::Tree)][q] : kNetUs[r][q];
  if (a == NcclAlgorithm::Ring) {
    if (nodes > 1) intra_us = std::max(intra_us, kNetOverheadUs * (p == NcclProtocol::Simple ? 3.0 : 1.0));
    const double inter_steps = nodes == 1 ? 0.0 : static_cast<double>(kind == Collective::AllReduce ? 2 * (nodes - 1) : nodes - 1);
    lat_us += (nsteps - inter_steps) * intra_us + inter_steps * inter_us;
    // The ring's plateau for multi-node Simple all-reduce of more than 64 bytes per channel and rank.
    if (p == NcclProtocol::Simple && nodes > 1 && kind == Collective::AllReduce && bytes / (nch * nd) >= 64.0) lat_us *= 1.4;
  } else if (a == NcclAlgorithm::Tree) {
    lat_us += 2.0 * ((ppn - 1.0) * intra_us + static_cast<double>(std::max(0, log2_floor(static_cast<double>(nodes)))) * inter_us);
  } else {
    lat_us = intra_us;
  }
  c.latency_s = lat_us * kUs;
  c.bus_Bps = bus_Bps;
  c.time_s = c.latency_s + bytes / alg_Bps;
  return c;
}

std::vector<TunerChoice> rate_all(const TunerInput& in, double bytes) {
  std::vector<TunerChoice> out;
  for (auto a : {NcclAlgorithm::Tree, NcclAlgorithm::Ring, NcclAlgorithm::Nvls})
    for (auto p : {NcclProtocol::LL, NcclProtocol::LL128, NcclProtocol::Simple}) {
      const TunerChoice c = rate(in, a, p, bytes);
      if (c.bus_Bps > 0.0) out.push_back(c);
    }
  return out;
}

TunerChoice choose(const TunerInput& in, double bytes, scenarios::CollectiveAlgorithm only) {
  const auto all = rate_all(in, bytes);
  auto allowed = [&](NcclAlgorithm a) {
    switch (only) {
      case scenarios::CollectiveAlgorithm::Auto: return true;
      case scenarios::CollectiveAlgorithm::Ring: return a == NcclAlgorithm::Ring;
      case scenarios::CollectiveAlgorithm::Tree: return a == NcclAlgorithm::Tree;
      case scenarios::CollectiveAlgorithm::Nvls: return a == NcclAlgorithm::Nvls;
    }
    return true;
  };
  const TunerChoice* best = nullptr;
  for (int pass = 0; pass < 2 && best == nullptr; ++pass)
    for (const auto& c : all)
      if ((pass == 1 ? c.algorithm == NcclAlgorithm::Ring : allowed(c.algorithm)) && (best == nullptr || c.time_s < best->time_s))
        best = &c;
  if (best == nullptr) return TunerChoice{NcclAlgorithm::Ring, NcclProtocol::Simple, 0.0, 0.0, 0.0};
  return *best;
}

}  // namespace stepsim::costmodel
