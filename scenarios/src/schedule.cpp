#include "stepsim/scenarios/schedule.hpp"

#include <algorithm>

namespace stepsim::scenarios {

namespace {

// k-th chunk pass of an interleaved stage (Megatron's get_model_chunk_id and micro-batch table
// with micro-batch group size p): groups of p micro-batches run through all chunks in turn.
Pass interleaved_pass(std::int64_t k, std::int64_t p, std::int64_t v, bool forward) {
  const std::int64_t group = k / (p * v);
  const std::int64_t within = k % (p * v);
  std::int64_t chunk = within / p;
  if (!forward) chunk = v - 1 - chunk;
  return Pass{forward, static_cast<std::int32_t>(group * p + within % p), static_cast<std::int32_t>(chunk)};
}

}  // namespace

std::vector<Pass> stage_schedule(Schedule schedule, std::int64_t p, std::int64_t m, std::int64_t v,
                                 std::int64_t stage) {
  std::vector<Pass> out;
  out.reserve(static_cast<std::size_t>(2 * m * v));
  auto fwd = [&](std::int64_t mb) { out.push_back(Pass{true, static_cast<std::int32_t>(mb), 0}); };
  auto bwd = [&](std::int64_t mb) { out.push_back(Pass{false, static_cast<std::int32_t>(mb), 0}); };
  switch (schedule) {
    case Schedule::GPipe:
      for (std::int64_t i = 0; i < m; ++i) fwd(i);
      for (std::int64_t i = 0; i < m; ++i) bwd(i);
      break;
    case Schedule::OneFOneB: {
      const std::int64_t warmup = std::min(p - stage - 1, m);
      for (std::int64_t i = 0; i < warmup; ++i) fwd(i);
      for (std::int64_t j = 0; j < m - warmup; ++j) {
        fwd(warmup + j);
        bwd(j);
      }
      for (std::int64_t j = m - warmup; j < m; ++j) bwd(j);
      break;
    }
    case Schedule::Interleaved: {
      const std::int64_t total = m * v;
      const std::int64_t warmup = std::min(2 * (p - stage - 1) + (v - 1) * p, total);
      for (std::int64_t k = 0; k < warmup; ++k) out.push_back(interleaved_pass(k, p, v, true));
      for (std::int64_t k = 0; k < total - warmup; ++k) {
        out.push_back(interleaved_pass(warmup + k, p, v, true));
        out.push_back(interleaved_pass(k, p, v, false));
      }
      for (std::int64_t k = total - warmup; k < total; ++k) out.push_back(interleaved_pass(k, p, v, false));
      break;
    }
  }
  return out;
}

}  // namespace stepsim::scenarios
