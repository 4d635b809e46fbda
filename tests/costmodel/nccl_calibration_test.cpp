// The communication model against published nccl-tests results (tests/costmodel/data/nccl-tests.csv):
// a collective over the first `ranks` GPUs of the row's cluster, with the default comm settings (NCCL's
// choice of algorithm and protocol), predicted by the plan's time with its own flows sharing links.

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/scenarios/params.hpp"

namespace {

using stepsim::costmodel::Collective;
using stepsim::scenarios::param_default;

// Bandwidth-bound rows within 15 %, latency-bound rows (a time) within 25 %.
constexpr double kBandwidthTolerance = 0.15;
constexpr double kLatencyTolerance = 0.25;

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  return out;
}

}  // namespace

TEST_CASE("calibration: nccl-tests bus bandwidths and latencies of A100 and H100 systems") {
  std::ifstream file(STEPSIM_SOURCE_DIR "/tests/costmodel/data/nccl-tests.csv");
  REQUIRE(file.good());
  std::string line;
  int rows = 0;
  bool header = true;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    const auto c = split(line);
    REQUIRE(c.size() >= 13);
    stepsim::scenarios::ClusterSpec spec;
    spec.gpu.architecture = c[1] == "hopper" ? stepsim::scenarios::GpuArchitecture::Hopper : stepsim::scenarios::GpuArchitecture::Ampere;
    spec.gpus_per_node = std::stoll(c[2]);
    spec.nodes = std::stoll(c[3]);
    spec.intra_node.bw_Bps = std::stod(c[4]) * 1e9;
    spec.intra_node.latency_s = param_default("cluster.intra_node.latency_us") * 1e-6;
    spec.inter_node.nics_per_node = std::stoll(c[5]);
    spec.inter_node.nic_Bps = std::stod(c[6]) * 1e9 / 8.0;
    spec.inter_node.latency_s = param_default("cluster.inter_node.latency_us") * 1e-6;
    const stepsim::topology::Cluster cluster(spec);
    const Collective kind = c[7] == "all-gather" ? Collective::AllGather : Collective::AllReduce;
    const std::int64_t ranks = std::stoll(c[8]);
    const double bytes = std::stod(c[9]);
    std::vector<std::int64_t> group;
    for (std::int64_t r = 0; r < ranks; ++r) group.push_back(r);
    const auto plan = stepsim::costmodel::plan_collective(cluster, kind, {group}, bytes);
    const double time_s = stepsim::costmodel::contended_time_s(cluster, plan);
    CAPTURE(line);
    CAPTURE(stepsim::costmodel::to_string(plan.algorithm));
    CAPTURE(stepsim::costmodel::to_string(plan.protocol));
    if (!c[10].empty()) {
      const double busbw_GBps = bytes * stepsim::costmodel::bus_bandwidth_factor(kind, ranks) / time_s / 1e9;
      CAPTURE(busbw_GBps);
      CHECK(std::abs(busbw_GBps / std::stod(c[10]) - 1.0) <= kBandwidthTolerance);
    } else {
      const double time_us = time_s * 1e6;
      CAPTURE(time_us);
      CHECK(std::abs(time_us / std::stod(c[11]) - 1.0) <= kLatencyTolerance);
    }
    ++rows;
  }
  CHECK(rows >= 6);
}
