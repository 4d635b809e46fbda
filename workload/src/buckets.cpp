#include "stepsim/workload/buckets.hpp"

#include "stepsim/workload/params.hpp"
#include "stepsim/workload/shape.hpp"

namespace stepsim::workload {

BucketPlan::BucketPlan(const scenarios::Scenario& s) {
  const Shape x = shape_of(s);
  const std::int64_t p = x.pp;
  v_ = x.vpp;
  buckets_.assign(static_cast<std::size_t>(p * v_), {});
  const double lp = layer_params(s);
  const scenarios::PipelineLayout layout = scenarios::pipeline_layout(s);
  for (std::int64_t i = 0; i < p; ++i) {
    for (std::int64_t j = 0; j < v_; ++j) {
      const std::int64_t layers = layout.layers(i, j);
      auto& bs = buckets_[static_cast<std::size_t>(i * v_ + j)];
      const double extra_first = layout.is_first(i, j) ? embedding_params(s) : 0.0;
      const double extra_last = layout.is_last(i, j) ? output_params(s) + final_norm_params(s) : 0.0;
      if (layout.is_first(i, j) && layers > 0 && s.parallel.overlap_grad_reduce) {
        Bucket cur;
        cur.highest_layer = layers - 1;
        cur.params = extra_last;
        for (std::int64_t l = layers - 1; l >= 0; --l) {
          cur.params += lp;
          cur.lowest_layer = l;
          if (l == 0) {
            cur.params += extra_first;
            bs.push_back(cur);
          } else if (cur.params >= x.bucket_params) {
            bs.push_back(cur);
            cur = Bucket{};
            cur.highest_layer = l - 1;
          }
        }
      } else {
        Bucket b;
        b.params = lp * static_cast<double>(layers) + extra_first + extra_last;
        b.lowest_layer = 0;
        b.highest_layer = layers - 1;
        bs.push_back(b);
      }
    }
  }
}

}  // namespace stepsim::workload
