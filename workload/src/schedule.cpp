#include "stepsim/workload/schedule.hpp"

#include <algorithm>

namespace stepsim::workload {

namespace {

// k-th chunk pass of an interleaved stage (Megatron's get_schedule_table): groups of g micro-batches
// run through all chunks in turn, the last group taking the micro-batches that remain; a backward
// runs the chunks in reverse.
Pass interleaved_pass(std::int64_t k, std::int64_t m, std::int64_t v, std::int64_t g, PassKind kind) {
  const std::int64_t full_groups = (m - 1) / g;  // groups before the last
  std::int64_t first = 0, size = g, within = k;
  if (k < full_groups * g * v) {
    first = k / (g * v) * g;
    within = k % (g * v);
  } else {
    first = full_groups * g;
    size = m - first;
    within = k - full_groups * g * v;
  }
  std::int64_t chunk = within / size;
  if (kind != PassKind::Forward) chunk = v - 1 - chunk;
  return Pass{kind, static_cast<std::int32_t>(first + within % size), static_cast<std::int32_t>(chunk)};
}

std::int64_t group_or_p(std::int64_t group, std::int64_t p) { return group > 0 ? group : p; }

}  // namespace

std::int64_t warmup_passes(Schedule schedule, std::int64_t p, std::int64_t m, std::int64_t v, std::int64_t stage,
                           std::int64_t group) {
  switch (schedule) {
    case Schedule::GPipe: return m;
    case Schedule::OneFOneB: return std::min(p - stage - 1, m);
    case Schedule::Interleaved: return std::min(2 * (p - stage - 1) + (v - 1) * group_or_p(group, p), m * v);
  }
  return 0;
}

std::int64_t in_flight_passes(Schedule schedule, std::int64_t p, std::int64_t m, std::int64_t v, std::int64_t stage,
                              std::int64_t group) {
  const std::int64_t passes = schedule == Schedule::Interleaved ? m * v : m;
  return std::min(warmup_passes(schedule, p, m, v, stage, group) + 1, passes);
}

std::vector<Pass> stage_schedule(Schedule schedule, std::int64_t p, std::int64_t m, std::int64_t v,
                                 std::int64_t stage, std::int64_t group) {
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
      const std::int64_t g = group_or_p(group, p);
      const std::int64_t warmup = warmup_passes(schedule, p, m, v, stage, g);
      for (std::int64_t k = 0; k < warmup; ++k) out.push_back(interleaved_pass(k, m, v, g, PassKind::Forward));
      for (std::int64_t k = 0; k < total - warmup; ++k) {
        out.push_back(interleaved_pass(warmup + k, m, v, g, PassKind::Forward));
        out.push_back(interleaved_pass(k, m, v, g, PassKind::Backward));
      }
      for (std::int64_t k = total - warmup; k < total; ++k) out.push_back(interleaved_pass(k, m, v, g, PassKind::Backward));
      break;
    }
  }
  return out;
}

}  // namespace stepsim::workload
