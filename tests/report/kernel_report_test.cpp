// `stepsim kernels`: the kernels of one rank as the cost model prices them.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/driver/simulate.hpp"
#include "stepsim/report/format.hpp"
#include "stepsim/report/kernel_report.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"

using namespace stepsim;
using namespace stepsim::report;

namespace {

scenarios::Scenario default_with(const std::vector<scenarios::Override>& ov = {}) { return scenarios::load_default_scenario(ov); }

const KernelSection& find_section(const KernelReport& r, const std::string& name) {
  for (const auto& sec : r.sections)
    if (sec.name == name) return sec;
  FAIL("no section " << name);
  return r.sections.front();
}

const KernelRow& find_row(const KernelSection& sec, const std::string& kernel) {
  for (const auto& row : sec.rows)
    if (row.kernel.name == kernel) return row;
  FAIL("no kernel " << kernel);
  return sec.rows.front();
}

// One GPU of an 8-GPU DGX H100 node, small Llama: nothing runs beside the compute.
scenarios::Scenario single_gpu(const std::vector<scenarios::Override>& extra = {}) {
  std::vector<scenarios::Override> ov = {{"cluster.nodes", "1"},         {"cluster.gpus_per_node", "1"}, {"model", "\"llama-3.1-8b\""},
                                         {"parallel.tp", "1"},           {"parallel.pp", "1"},           {"parallel.dp", "1"},
                                         {"training.global_batch", "4"}, {"training.seq_len", "2048"}};
  ov.insert(ov.end(), extra.begin(), extra.end());
  return default_with(ov);
}

}  // namespace

TEST_CASE("kernel report: a GEMM and a memory kernel of the default scenario, by hand") {
  const auto r = kernel_report(default_with(), 0);
  // Llama 3.1 70B, TP 8, sequence 8192: QKV projection 8192 x (64 + 2 x 8) x 128 / 8 x 8192.
  const auto& qkv = find_row(find_section(r, "layer forward"), "qkv.fprop");
  CHECK(qkv.kernel.m == 8192);
  CHECK(qkv.kernel.n == 1280);
  CHECK(qkv.kernel.k == 8192);
  // H100: 132 SMs, tiles of 128 x 256: 64 x 5 = 320 tiles in 3 waves (the 128 x 128 fallback at 0.76 would
  // take 640 tiles in 5 waves, 5 / 0.76 / 2 = 3.3 large-tile waves); each tile pays 425 more elements of K;
  // matmul ceiling 794.5 TFLOP/s x gemm_max 0.919618616 shared by the SMs; launch gap 0.9 us.
  const double sm_rate = 794.5e12 * 0.919618616 / 132;
  CHECK(qkv.time.compute_s == doctest::Approx(3 * 2.0 * 128 * 256 * (8192 + 425) / sm_rate).epsilon(1e-12));
  CHECK(qkv.time.launch_s == doctest::Approx(0.9e-6));
  CHECK(qkv.time.total_s() == doctest::Approx(0.9e-6 + 3 * 2.0 * 128 * 256 * (8192 + 425) / sm_rate).epsilon(1e-12));
  CHECK(qkv.bound == "matmul");
  // The gradient buffer's zeroing: 4 bytes per parameter of the stage at 0.85 x 3.35 TB/s.
  const auto& zero = find_row(find_section(r, "gradient buffer zeroing"), "grad_buffer.zero");
  CHECK(zero.time.memory_s == doctest::Approx(zero.kernel.bytes / (3.35e12 * 0.85)).epsilon(1e-12));
  CHECK(zero.time.compute_s == 0);
  CHECK(zero.bound == "HBM");
  CHECK(find_section(r, "gradient buffer zeroing").per_step);
  CHECK(r.gemm_rate_flops == doctest::Approx(794.5e12 * 0.919618616));
  CHECK(r.hbm_Bps == doctest::Approx(3.35e12 * 0.85));
}

TEST_CASE("kernel report: every row is the cost model's price of its kernel, and the totals add up") {
  const auto s = default_with();
  const costmodel::ComputeModel model(s.cluster.gpu, s.software);
  for (std::int64_t stage : {0, 3}) {
    const auto r = kernel_report(s, stage);
    double micro_batch_s = 0, per_step_s = 0;
    for (const auto& sec : r.sections) {
      double sum = 0, flops = 0;
      for (const auto& row : sec.rows) {
        CHECK(row.time.total_s() == model.time_s(row.kernel));
        CHECK(row.time.body_s == doctest::Approx(std::max(row.time.compute_s, row.time.memory_s)));
        sum += row.time.total_s();
        flops += row.kernel.flops;
      }
      CHECK(sec.time_s == doctest::Approx(sum).epsilon(1e-12));
      CHECK(sec.flops == doctest::Approx(flops));
      (sec.per_step ? per_step_s : micro_batch_s) += static_cast<double>(sec.count) * sec.time_s;
    }
    CHECK(r.micro_batch_s == doctest::Approx(micro_batch_s).epsilon(1e-12));
    CHECK(r.step_s == doctest::Approx(256 * micro_batch_s + per_step_s).epsilon(1e-12));
    // The embedding on the first stage, the output layer on the last; 20 layers each.
    const bool first = stage == 0;
    bool embedding = false, output = false;
    for (const auto& sec : r.sections) {
      embedding = embedding || sec.name == "embedding forward";
      output = output || sec.name == "output forward";
    }
    CHECK(embedding == first);
    CHECK(output == !first);
    CHECK(find_section(r, "layer forward").count == 20);
    CHECK(find_section(r, "layer forward").layers == (first ? "0-19" : "60-79"));
  }
}

TEST_CASE("kernel report: its step is the step graph's compute when nothing runs beside the compute") {
  SUBCASE("one GPU") {
    const auto s = single_gpu();
    driver::SimulateOptions so;
    so.engine = sim::EngineKind::Analytic;
    const auto sim = driver::simulate(s, so);
    CHECK(kernel_report(s, 0).step_s == doctest::Approx(sim.report.stages.at(0).compute_s).epsilon(1e-9));
  }
  SUBCASE("two pipeline stages, full recomputation of the first two layers of each") {
    const auto s = single_gpu({{"cluster.gpus_per_node", "2"},
                               {"parallel.pp", "2"},
                               {"training.recompute", "full"},
                               {"training.recompute_method", "block"},
                               {"training.recompute_num_layers", "2"}});
    driver::SimulateOptions so;
    so.engine = sim::EngineKind::Analytic;
    const auto sim = driver::simulate(s, so);
    for (std::int64_t stage : {0, 1}) {
      const auto r = kernel_report(s, stage);
      CHECK(r.step_s == doctest::Approx(sim.report.stages.at(static_cast<std::size_t>(stage)).compute_s).epsilon(1e-9));
      // Two programs per stage: the recomputed layers and the others.
      int recompute = 0, forward = 0;
      for (const auto& sec : r.sections) {
        recompute += sec.name == "layer recompute";
        forward += sec.name == "layer forward";
        if (sec.name == "layer recompute") CHECK(sec.layers == (stage == 0 ? "0-1" : "16-17"));
      }
      CHECK(recompute == 1);
      CHECK(forward == 2);
    }
  }
}

TEST_CASE("kernel report: layers that run the same kernels share a section, and FP8 names its GEMM ceiling") {
  // Uniform full recomputation in groups of 3: the groups' first layers keep their input, the
  // others nothing, but every layer runs the same kernels.
  const auto r = kernel_report(default_with({{"training.recompute", "full"}, {"training.recompute_num_layers", "3"}}), 0);
  int forward = 0;
  for (const auto& sec : r.sections) forward += sec.name == "layer forward";
  CHECK(forward == 1);
  CHECK(find_section(r, "layer recompute").layers == "0-19");
  CHECK(r.gemm_fp8_rate_flops == 0);
  const auto fp8 = kernel_report(default_with({{"training.precision", "fp8-delayed"}}), 0);
  CHECK(fp8.gemm_fp8_rate_flops > fp8.gemm_rate_flops);
  CHECK(kernel_text(fp8).find("(FP8 " + fixed(fp8.gemm_fp8_rate_flops / 1e12, 1) + ")") != std::string::npos);
}

TEST_CASE("kernel report: writers") {
  const auto r = kernel_report(default_with(), 0);
  const auto j = nlohmann::json::parse(kernel_json(r));
  CHECK(j["stage"] == 0);
  CHECK(j["stages"] == 4);
  CHECK(j["micro_batches"] == 256);
  CHECK(j["sections"].size() == r.sections.size());
  CHECK(j["step_s"].get<double>() == r.step_s);
  const auto& k0 = j["sections"][1]["kernels"][1];
  CHECK(k0["name"] == "qkv.fprop");
  CHECK(k0["m"] == 8192);
  const std::string csv = kernel_csv(r);
  CHECK(csv.rfind("stage,section,layers,per,count,runs_per_step,kernel,kind,m,n,k,batch,flops,model_flops,bytes,launch_s,compute_s,memory_s,"
                  "kernel_s,time_s,bound\n",
                  0) == 0);
  std::size_t rows = 0;
  for (const auto& sec : r.sections) rows += sec.rows.size();
  CHECK(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')) == rows + 1);
  const std::string text = kernel_text(r);
  CHECK(text.find("qkv.fprop") != std::string::npos);
  CHECK(text.find("one step (256 micro-batches)") != std::string::npos);
  CHECK(kernel_markdown(r).find("| qkv.fprop ") != std::string::npos);
  CHECK(text.find("CP ring") == std::string::npos);
  const auto ring = kernel_report(default_with({{"parallel.cp", "2"}, {"parallel.dp", "2"}}), 0);
  CHECK(kernel_text(ring).find("With the CP ring an attention row stands for the kernels of all its steps") != std::string::npos);
  CHECK(nlohmann::json::parse(kernel_json(ring))["cp_comm_type"] == "p2p");
  CHECK_THROWS_AS((void)kernel_report(default_with(), 4), ScenarioError);
  CHECK_THROWS_AS((void)kernel_report(default_with(), -1), ScenarioError);
}
