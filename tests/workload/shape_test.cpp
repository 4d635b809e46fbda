// Shape and the parameter layout against hand-computed values.
#include <doctest/doctest.h>

#include "model.hpp"
#include "stepsim/workload/buckets.hpp"
#include "stepsim/workload/params.hpp"
#include "stepsim/workload/shape.hpp"

using namespace stepsim;

namespace {

scenarios::Scenario base() {
  auto s = workload_test::small_model();
  s.training.micro_batch = 2;
  s.training.global_batch = 64;
  s.parallel.tp = 2;
  s.parallel.cp = 2;
  s.parallel.dp = 4;
  return s;
}

}  // namespace

TEST_CASE("tokens per rank: s b / c, and / t in the SP region") {
  auto s = base();
  auto x = workload::shape_of(s);
  CHECK(x.tokens_per_rank == 4096.0 * 2 / 2);
  CHECK(x.tokens_sp_region == 4096.0 * 2 / 2 / 2);
  CHECK(x.micro_batches == 64 / (2 * 4));
  s.parallel.sequence_parallel = false;
  x = workload::shape_of(s);
  CHECK(x.tokens_sp_region == 4096.0);
}

TEST_CASE("padded vocabulary: a multiple of 128 t, also for a TP that is not a power of two") {
  auto s = base();
  CHECK(workload::shape_of(s).padded_vocab == 32000);  // 32000 = 125 x 256
  s.parallel.tp = 3;                                   // multiple of 384: ceil(32000 / 384) = 84
  CHECK(workload::shape_of(s).padded_vocab == 84 * 384);
  CHECK(workload::shape_of(s).vocab_per_tp_rank == 84.0 * 128);
  s.parallel.tp = 6;                                   // multiple of 768: ceil(32000 / 768) = 42
  CHECK(workload::shape_of(s).padded_vocab == 42 * 768);
  CHECK(workload::embedding_params(s) == 42.0 * 768 * 1024 / 6);
}

TEST_CASE("gradient bytes per parameter and bytes per element follow the precisions") {
  auto s = base();
  auto x = workload::shape_of(s);
  CHECK(x.grad_precision == workload::Precision::Fp32);
  CHECK(x.grad_bytes_per_param == 4.0);
  CHECK(x.activation_bytes_per_element == 2.0);
  s.training.grads_in_fp32 = false;
  x = workload::shape_of(s);
  CHECK(x.grad_precision == workload::Precision::Bf16);
  CHECK(x.grad_bytes_per_param == 2.0);
  CHECK(workload::bytes_per_element(workload::Precision::Fp32) == 4);
}

TEST_CASE("bucket size: max(40e6, 1e6 x DP x CP) parameters") {
  auto s = base();
  CHECK(workload::shape_of(s).bucket_params == 40e6);
  s.parallel.dp = 64;
  s.parallel.cp = 2;
  CHECK(workload::shape_of(s).bucket_params == 128e6);
}

TEST_CASE("buckets: the first chunk is cut from its last layer down, the others are one bucket") {
  auto s = base();
  s.parallel.pp = 2;
  // Layer: 2h^2(1 + k/a)/t + 3hf/t + 2 norms of h = 4 h^2/2 + 3 h 4h/2 + 2h = 8 h^2 + 2h.
  const double lp = 8.0 * 1024 * 1024 + 2.0 * 1024;
  CHECK(workload::layer_params(s) == lp);
  s.model.hidden = 4096;
  s.model.ffn_hidden = 16384;
  const double big = 8.0 * 4096 * 4096 + 2.0 * 4096;  // 134 M: every layer closes a bucket
  REQUIRE(workload::layer_params(s) == big);
  const workload::BucketPlan plan(s);
  const auto& first = plan.of(0, 0);
  REQUIRE(first.size() == 4);
  CHECK(first[0].lowest_layer == 3);
  CHECK(first[0].highest_layer == 3);
  CHECK(first[0].params == big);
  CHECK(first[3].lowest_layer == 0);
  CHECK(first[3].params == big + workload::embedding_params(s));
  const auto& last = plan.of(1, 0);
  REQUIRE(last.size() == 1);
  CHECK(last[0].params == 4 * big + workload::output_params(s) + workload::final_norm_params(s));
}
