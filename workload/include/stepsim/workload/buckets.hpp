#pragma once
// Megatron's gradient buckets (megatron/core/distributed, docs/training-step.md section 6): the
// parameters of a model chunk are reduced over DP x CP bucket by bucket. With overlap_grad_reduce
// the first chunk of the first stage is cut into buckets of at least Shape::bucket_params,
// walking its layers from the last (the first to finish its backward) to the first; every other
// chunk, and every chunk without overlap, is one bucket. The embedding joins the bucket of layer 0
// of the first stage, the output layer and final norm the bucket of the last layer of the last stage.

#include <cstdint>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::workload {

struct Bucket {
  double params = 0;
  std::int64_t lowest_layer = 0;   // first layer in forward order (inside the chunk): its forward
                                   // needs the gathered parameters, its backward completes the bucket
  std::int64_t highest_layer = 0;  // last layer
};

class BucketPlan {
 public:
  BucketPlan() = default;
  explicit BucketPlan(const scenarios::Scenario& s);
  // Buckets of (stage, chunk) in backward order (the bucket of the last layers first).
  [[nodiscard]] const std::vector<Bucket>& of(std::int64_t stage, std::int64_t chunk) const {
    return buckets_[static_cast<std::size_t>(stage * v_ + chunk)];
  }

 private:
  std::int64_t v_ = 1;
  std::vector<std::vector<Bucket>> buckets_;
};

}  // namespace stepsim::workload
