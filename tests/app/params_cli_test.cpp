// `stepsim params`: the parameter table, and scenarios/README.md's field reference generated from it.
#include <doctest/doctest.h>

#include <string>

#include "cli_util.hpp"

namespace {

const std::string kBegin = "<!-- BEGIN generated: stepsim params --format md -->\n";
const std::string kEnd = "<!-- END generated -->\n";

}  // namespace

TEST_CASE("scenarios/README.md's field reference is the output of stepsim params --format md") {
  const auto r = cli::run("params --format md");
  REQUIRE(r.status == 0);
  const std::string readme = cli::slurp(std::string(STEPSIM_SOURCE_DIR) + "/scenarios/README.md");
  const auto b = readme.find(kBegin);
  const auto e = readme.find(kEnd);
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  const std::string section = readme.substr(b + kBegin.size(), e - b - kBegin.size());
  // On a difference: stepsim params --format md, pasted between the markers.
  CHECK(section == "\n" + r.out + "\n");
}

TEST_CASE("stepsim params: every format names every parameter with its default") {
  const auto md = cli::run("params");
  CHECK(md.status == 0);
  CHECK(md.out.find("`memory.cuda_context_gib`") != std::string::npos);
  const auto json = cli::run("params --format json");
  CHECK(json.status == 0);
  CHECK(json.out.find("\"key\": \"comm.nvlink_efficiency\"") != std::string::npos);
  CHECK(json.out.find("\"key\": \"engine.auto_simgrid_max_gpus\"") != std::string::npos);
  CHECK(json.out.find("\"key\": \"cluster.nvlink_domain_gpus\"") != std::string::npos);
  const auto csv = cli::run("params --format csv");
  CHECK(csv.status == 0);
  CHECK(csv.out.rfind("field,type,unit / values,default,range,description,source\n", 0) == 0);
  CHECK(cli::run("params --format xml").status == 2);
}

TEST_CASE("stepsim import: hf prints a model and warns on stderr, megatron prints a scenario that loads, bad input exits 2") {
  const std::string data = std::string(STEPSIM_SOURCE_DIR) + "/tests/data/hf";
  const auto hf = cli::run("import hf " + data + "/qwen2-7b/config.json");
  CHECK(hf.status == 0);
  CHECK(hf.out.find("\"ffn_hidden\": 18944") != std::string::npos);
  CHECK(hf.err == "stepsim import hf: warning: attention biases: the Q, K and V biases are not modelled (4608 parameters per layer)\n");
  const std::string args = " -- --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --vocab-size 128256 --seq-length 4096 "
                           "--global-batch-size 64 --tensor-model-parallel-size 8 --sequence-parallel";
  const auto mg = cli::run("import megatron --nodes 2" + args);
  CHECK(mg.status == 0);
  CHECK(mg.err.empty());
  const auto file = cli::write_file("imported.json", mg.out);
  CHECK(cli::run("run " + file + " --engine analytic").status == 0);
  const auto missing = cli::run("import hf " + data + "/none.json");
  CHECK(missing.status == 2);
  CHECK(missing.err.find("cannot open the Hugging Face config (no such file)") != std::string::npos);
  const auto heads = cli::run("import megatron --nodes 2" + args + " --tensor-model-parallel-size 5");
  CHECK(heads.status == 2);
  CHECK(heads.err.find("parallel.tp") != std::string::npos);
}
