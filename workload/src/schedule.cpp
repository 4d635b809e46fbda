#include "stepsim/workload/schedule.hpp"

#include <algorithm>

namespace stepsim::workload {

namespace {

// k-th chunk pass of an interleaved stage (Megatron's get_model_chunk_id and micro-batch table
// with micro-batch group size p): groups of p micro-batches run through all chunks in turn.
Pass interleaved_pass(std::int64_t k, std::int64_t p, std::int64_t v, PassKind kind) {
  const std::int64_t group = k / (p * v);
  const std::int64_t within = k % (p * v);
  std::int64_t chunk = within / p;
  if (kind != PassKind::Forward) chunk = v - 1 - chunk;
  return Pass{kind, static_cast<std::int32_t>(group * p + within % p), static_cast<std::int32_t>(chunk)};
}

}  // namespace

std::int64_t warmup_passes(Schedule schedule, std::int64_t p, std::int64_t m, std::int64_t v, std::int64_t stage) {
  switch (schedule) {
    case Schedule::GPipe: return m;
    case Schedule::OneFOneB: return std::min(p - stage - 1, m);
    case Schedule::Interleaved: return std::min(2 * (p - stage - 1) + (v - 1) * p, m * v);
  }
  return 0;
}

std::int64_t in_flight_passes(Schedule schedule, std::int64_t p, std::int64_t m, std::int64_t v, std::int64_t stage) {
  const std::int64_t passes = schedule == Schedule::Interleaved ? m * v : m;
  return std::min(warmup_passes(schedule, p, m, v, stage) + 1, passes);
}

std::vector<Pass> stage_schedule(Schedule schedule, std::int64_t p, std::int64_t m, std::int64_t v,
                                 std::int64_t stage) {
  std::vector<Pass> out;
  out.reserve(static_cast<std::size_t>(2 * m * v));
  auto pass = [&](PassKind kind, std::int64_t mb) { out.push_back(Pass{kind, static_cast<std::int32_t>(mb), 0}); };
  switch (schedule) {
    case Schedule::GPipe:
      for (std::int64_t i = 0; i < m; ++i) pass(PassKind::Forward, i);
      for (std::int64_t i = 0; i < m; ++i) pass(PassKind::Backward, i);
      break;
    case Schedule::OneFOneB: {
      const std::int64_t warmup = warmup_passes(schedule, p, m, v, stage);
      for (std::int64_t i = 0; i < warmup; ++i) pass(PassKind::Forward, i);
      for (std::int64_t j = 0; j < m - warmup; ++j) {
        pass(PassKind::Forward, warmup + j);
        pass(PassKind::Backward, j);
      }
      for (std::int64_t j = m - warmup; j < m; ++j) pass(PassKind::Backward, j);
      break;
    }
    case Schedule::Interleaved: {
      const std::int64_t total = m * v;
      const std::int64_t warmup = warmup_passes(schedule, p, m, v, stage);
      for (std::int64_t k = 0; k < warmup; ++k) out.push_back(interleaved_pass(k, p, v, PassKind::Forward));
      for (std::int64_t k = 0; k < total - warmup; ++k) {
        out.push_back(interleaved_pass(warmup + k, p, v, PassKind::Forward));
        out.push_back(interleaved_pass(k, p, v, PassKind::Backward));
      }
      for (std::int64_t k = total - warmup; k < total; ++k) out.push_back(interleaved_pass(k, p, v, PassKind::Backward));
      break;
    }
  }
  return out;
}

}  // namespace stepsim::workload
