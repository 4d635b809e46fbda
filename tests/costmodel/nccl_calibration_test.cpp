// The communication model against published nccl-tests results: a collective over the first `ranks`
// GPUs of the row's cluster, with the default comm settings (NCCL's choice of algorithm and protocol,
// or the ring where the run forced it), predicted by the plan's time with its own flows sharing links.
// tests/costmodel/data/nccl-tests.csv: the calibration rows, each within its tolerance.
// tests/costmodel/data/nccl-tests-published.csv: published curves (message size x node count) on
// InfiniBand, RoCE, EFA and TCPXO clusters; the model's error per fabric, node count and size class,
// printed, and bounded where the model is meant to hold.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
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
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// The data rows of a CSV file under tests/costmodel/data (comment lines and the header skipped),
// each split into cells.
std::vector<std::vector<std::string>> data_rows(const std::string& name) {
  std::ifstream file(STEPSIM_SOURCE_DIR "/tests/costmodel/data/" + name);
  REQUIRE(file.good());
  std::vector<std::vector<std::string>> rows;
  std::string line;
  bool header = true;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    rows.push_back(split(line));
  }
  return rows;
}

// A row's system: arch, GPUs per node, nodes, NVLink GB/s, NICs per node, NIC Gb/s.
struct System {
  std::string arch;
  std::int64_t gpus_per_node = 0, nodes = 0, nics_per_node = 0;
  double nvlink_GBps = 0, nic_Gbps = 0;
};

// What the model predicts for `kind` of `bytes` over `ranks` GPUs of `sys`: busbw (GB/s) and time (us),
// the algorithm and protocol.
struct Prediction {
  double busbw_GBps = 0;
  double time_us = 0;
  std::string choice;
};

Prediction predict(const System& sys, Collective kind, std::int64_t ranks, double bytes, bool ring_only) {
  stepsim::scenarios::ClusterSpec spec;
  spec.gpu.architecture = sys.arch == "hopper" ? stepsim::scenarios::GpuArchitecture::Hopper : stepsim::scenarios::GpuArchitecture::Ampere;
  spec.gpus_per_node = sys.gpus_per_node;
  spec.nodes = sys.nodes;
  spec.intra_node.bw_Bps = sys.nvlink_GBps * 1e9;
  spec.intra_node.latency_s = param_default("cluster.intra_node.latency_us") * 1e-6;
  spec.inter_node.nics_per_node = sys.nics_per_node;
  spec.inter_node.nic_Bps = sys.nic_Gbps * 1e9 / 8.0;
  spec.inter_node.latency_s = param_default("cluster.inter_node.latency_us") * 1e-6;
  const stepsim::topology::Cluster cluster(spec);
  std::vector<std::int64_t> group;
  for (std::int64_t r = 0; r < ranks; ++r) group.push_back(r);
  stepsim::costmodel::CommSettings settings;
  if (ring_only) settings.algorithm = stepsim::scenarios::CollectiveAlgorithm::Ring;
  const auto plan = stepsim::costmodel::plan_collective(cluster, kind, {group}, bytes, settings);
  const double time_s = stepsim::costmodel::contended_time_s(cluster, plan);
  Prediction p;
  p.time_us = time_s * 1e6;
  p.busbw_GBps = bytes * stepsim::costmodel::bus_bandwidth_factor(kind, ranks) / time_s / 1e9;
  p.choice = stepsim::costmodel::to_string(plan.algorithm) + "/" + stepsim::costmodel::to_string(plan.protocol);
  return p;
}

Collective collective(const std::string& name) {
  if (name == "all-gather") return Collective::AllGather;
  if (name == "reduce-scatter") return Collective::ReduceScatter;
  REQUIRE(name == "all-reduce");
  return Collective::AllReduce;
}

}  // namespace

TEST_CASE("calibration: nccl-tests bus bandwidths and latencies of A100 and H100 systems") {
  int rows = 0;
  for (const auto& c : data_rows("nccl-tests.csv")) {
    REQUIRE(c.size() >= 13);
    const System sys{c[1], std::stoll(c[2]), std::stoll(c[3]), std::stoll(c[5]), std::stod(c[4]), std::stod(c[6])};
    const Collective kind = collective(c[7]);
    const std::int64_t ranks = std::stoll(c[8]);
    const double bytes = std::stod(c[9]);
    const Prediction p = predict(sys, kind, ranks, bytes, false);
    CAPTURE(c[0]);
    CAPTURE(c[9]);
    CAPTURE(p.choice);
    if (!c[10].empty()) {
      CAPTURE(p.busbw_GBps);
      CHECK(std::abs(p.busbw_GBps / std::stod(c[10]) - 1.0) <= kBandwidthTolerance);
    } else {
      CAPTURE(p.time_us);
      CHECK(std::abs(p.time_us / std::stod(c[11]) - 1.0) <= kLatencyTolerance);
    }
    ++rows;
  }
  CHECK(rows >= 6);
}

TEST_CASE("published nccl-tests curves: the model's error by fabric, node count and message size") {
  // Error of a row: the model's speed over the measured one - 1 (positive: predicted too fast), on
  // the time where the source gives it for a size under 1 MB (latency-bound; its busbw has few
  // digits) or gives no busbw: measured / predicted time - 1; else on busbw: predicted / measured
  // busbw - 1. Classes: fabric (with "+collnet" where the run enabled NCCL's CollNet/SHARP, which
  // the model does not have) x nodes (1, 2, 3 and more) x size (small < 1 MB, mid < 256 MB, large),
  // and whether NCCL's default choice ran or the ring was forced.
  struct Class {
    int rows = 0;
    double abs_sum = 0, max_abs = 0, sum = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Class> classes;
  int rows = 0, evaluated = 0;
  for (const auto& c : data_rows("nccl-tests-published.csv")) {
    REQUIRE(c.size() == 16);
    ++rows;
    CAPTURE(c[0]);
    CAPTURE(c[10]);
    CHECK(!c[15].empty());  // every row names its source
    CHECK((c[1] == "ampere" || c[1] == "hopper"));
    const bool has_busbw = !c[11].empty(), has_time = !c[12].empty();
    CHECK((has_busbw || has_time));
    if (c[2].empty() || c[3].empty() || c[4].empty() || c[5].empty() || c[6].empty()) continue;  // system not given
    const System sys{c[1], std::stoll(c[2]), std::stoll(c[3]), std::stoll(c[5]), std::stod(c[4]), std::stod(c[6])};
    const Collective kind = collective(c[8]);
    const std::int64_t ranks = std::stoll(c[9]);
    const double bytes = std::stod(c[10]);
    REQUIRE(ranks == sys.gpus_per_node * sys.nodes);
    const bool ring_forced = c[13].find("NCCL_ALGO=Ring") != std::string::npos;
    const Prediction p = predict(sys, kind, ranks, bytes, ring_forced);
    const bool by_time = has_time && (!has_busbw || bytes < 1048576.0);
    const double error = by_time ? std::stod(c[12]) / p.time_us - 1.0 : p.busbw_GBps / std::stod(c[11]) - 1.0;
    const std::string nodes = sys.nodes == 1 ? "1" : sys.nodes == 2 ? "2" : ">=3";
    const std::string size = bytes < 1048576.0 ? "small" : bytes < 268435456.0 ? "mid" : "large";
    const bool collnet = c[13].find("NCCL_COLLNET_ENABLE=1") != std::string::npos;
    Class& k = classes[{c[7] + (collnet ? "+collnet" : ""), nodes, size, ring_forced ? "ring forced" : "default"}];
    ++k.rows;
    k.abs_sum += std::abs(error);
    k.sum += error;
    k.max_abs = std::max(k.max_abs, std::abs(error));
    ++evaluated;
  }
  CHECK(rows >= 90);
  CHECK(evaluated >= 85);
  std::printf("published nccl-tests curves, predicted over measured speed - 1 (mean error, mean |error|, max |error|):\n");
  for (const auto& [key, k] : classes)
    std::printf("  %-13s nodes %-3s %-5s %-11s %3d rows  mean %+6.1f %%  MAPE %6.1f %%  max %6.1f %%\n", std::get<0>(key).c_str(),
                std::get<1>(key).c_str(), std::get<2>(key).c_str(), std::get<3>(key).c_str(), k.rows, 100.0 * k.sum / k.rows,
                100.0 * k.abs_sum / k.rows, 100.0 * k.max_abs);
  // Where the model is meant to hold: large messages on InfiniBand, over 3 nodes and more or with
  // the ring forced on 2 (bandwidth-bound, NIC-limited), and one node's NVLink.
  const auto mape = [&](const std::string& fabric, const std::string& nodes, const std::string& size, const std::string& run) {
    const Class& k = classes[{fabric, nodes, size, run}];
    REQUIRE(k.rows > 0);
    return k.abs_sum / k.rows;
  };
  CHECK(mape("ib", ">=3", "large", "default") <= 0.15);
  CHECK(mape("ib", "2", "large", "ring forced") <= 0.15);
  CHECK(mape("none", "1", "large", "default") <= 0.10);
}
