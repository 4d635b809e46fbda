// The pipeline schedules: pass orders as drawn in schedule.hpp, warm-up counts, the virtual-stage layout.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "stepsim/workload/schedule.hpp"

using namespace stepsim;
using scenarios::Schedule;

namespace {

std::string passes(const std::vector<workload::Pass>& v, bool chunks) {
  std::string out;
  for (const auto& p : v) {
    if (!out.empty()) out += ' ';
    out += (p.kind == workload::PassKind::Forward ? "F" : "B") + std::to_string(p.micro_batch);
    if (chunks) out += "." + std::to_string(p.chunk);
  }
  return out;
}

}  // namespace

TEST_CASE("1F1B order on each stage (p = 4, m = 6), as drawn in schedule.hpp") {
  CHECK(passes(workload::stage_schedule(Schedule::OneFOneB, 4, 6, 1, 0), false) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  CHECK(passes(workload::stage_schedule(Schedule::OneFOneB, 4, 6, 1, 1), false) == "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5");
  CHECK(passes(workload::stage_schedule(Schedule::OneFOneB, 4, 6, 1, 3), false) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
  CHECK(passes(workload::stage_schedule(Schedule::OneFOneB, 4, 2, 1, 0), false) == "F0 F1 B0 B1");
  CHECK(passes(workload::stage_schedule(Schedule::GPipe, 2, 3, 1, 1), false) == "F0 F1 F2 B0 B1 B2");
}

TEST_CASE("interleaved order (p = 2, v = 2, m = 4, stage 0), as drawn in schedule.hpp") {
  CHECK(passes(workload::stage_schedule(Schedule::Interleaved, 2, 4, 2, 0), true) ==
        "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
}

TEST_CASE("interleaved order with a micro-batch group of 3 and m = 5, not a multiple of p = 2") {
  // Megatron's get_schedule_table for PP2 VP2, group 3, 5 micro-batches (model_parallel_config.py's
  // example): micro-batches 0 1 2 0 1 2 3 4 3 4 on chunks 0 0 0 1 1 1 0 0 1 1; the backward takes the
  // same table with the chunks reversed. Stage 0 warms up with 2(2 - 0 - 1) + (2 - 1) 3 = 5 chunk
  // forwards, stage 1 with 3; then one forward and one backward in turn.
  CHECK(passes(workload::stage_schedule(Schedule::Interleaved, 2, 5, 2, 0, 3), true) ==
        "F0.0 F1.0 F2.0 F0.1 F1.1 F2.1 B0.1 F3.0 B1.1 F4.0 B2.1 F3.1 B0.0 F4.1 B1.0 B2.0 B3.1 B4.1 B3.0 B4.0");
  CHECK(passes(workload::stage_schedule(Schedule::Interleaved, 2, 5, 2, 1, 3), true) ==
        "F0.0 F1.0 F2.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.0 B0.0 F4.0 B1.0 F3.1 B2.0 F4.1 B3.1 B4.1 B3.0 B4.0");
  CHECK(workload::warmup_passes(Schedule::Interleaved, 2, 5, 2, 0, 3) == 5);
  CHECK(workload::in_flight_passes(Schedule::Interleaved, 2, 5, 2, 0, 3) == 6);
  CHECK(workload::in_flight_passes(Schedule::Interleaved, 2, 5, 2, 1, 3) == 4);
  // The group defaults to p: the same order as without it.
  CHECK(passes(workload::stage_schedule(Schedule::Interleaved, 2, 4, 2, 0, 2), true) ==
        passes(workload::stage_schedule(Schedule::Interleaved, 2, 4, 2, 0), true));
  // One group of all 5 micro-batches on p = 4, v = 3 (the CI's tunable-overlap runs): the last stage
  // warms up with (3 - 1) 5 = 10 chunk forwards, the first with all 15.
  CHECK(workload::in_flight_passes(Schedule::Interleaved, 4, 5, 3, 3, 5) == 11);
  CHECK(workload::in_flight_passes(Schedule::Interleaved, 4, 5, 3, 0, 5) == 15);
}

TEST_CASE("every schedule runs each (micro-batch, chunk) forward once, then its backward once") {
  for (auto sch : {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved}) {
    const std::int64_t v = sch == Schedule::Interleaved ? 3 : 1;
    for (std::int64_t stage = 0; stage < 4; ++stage) {
      std::set<std::pair<int, int>> fwd, bwd;
      for (const auto& p : workload::stage_schedule(sch, 4, 8, v, stage)) {
        const auto key = std::make_pair(p.micro_batch, p.chunk);
        if (p.kind == workload::PassKind::Forward) {
          CHECK(fwd.insert(key).second);
        } else {
          CHECK(fwd.count(key) == 1);
          CHECK(bwd.insert(key).second);
        }
      }
      CHECK(fwd.size() == static_cast<std::size_t>(8 * v));
      CHECK(bwd.size() == fwd.size());
    }
  }
}

TEST_CASE("warm-up and in-flight passes follow Megatron's formulas") {
  // 1F1B: min(p - i - 1, m) warm-up forwards, min(p - i, m) in flight.
  CHECK(workload::warmup_passes(Schedule::OneFOneB, 4, 6, 1, 0) == 3);
  CHECK(workload::in_flight_passes(Schedule::OneFOneB, 4, 6, 1, 0) == 4);
  CHECK(workload::in_flight_passes(Schedule::OneFOneB, 4, 2, 1, 0) == 2);
  CHECK(workload::in_flight_passes(Schedule::OneFOneB, 4, 6, 1, 3) == 1);
  // GPipe holds every micro-batch.
  CHECK(workload::in_flight_passes(Schedule::GPipe, 4, 6, 1, 2) == 6);
  // Interleaved p = 2, v = 2, m = 4, stage 0: 2(2 - 0 - 1) + (2 - 1) 2 = 4 warm-up chunk passes
  // (F0.0 F1.0 F0.1 F1.1 above), 5 in flight; capped at m v.
  CHECK(workload::warmup_passes(Schedule::Interleaved, 2, 4, 2, 0) == 4);
  CHECK(workload::in_flight_passes(Schedule::Interleaved, 2, 4, 2, 0) == 5);
  CHECK(workload::in_flight_passes(Schedule::Interleaved, 4, 1, 2, 0) == 2);
}

TEST_CASE("the pipeline layout walks virtual stages through stages, then chunks") {
  const workload::PipelineLayout l(4, 2);
  CHECK(l.virtual_stages() == 8);
  CHECK(l.virtual_stage(1, 1) == 5);
  CHECK(l.at(5).stage == 1);
  CHECK(l.at(5).chunk == 1);
  CHECK(l.is_first(0, 0));
  CHECK(l.is_last(3, 1));
  CHECK_FALSE(l.previous(0, 0).has_value());
  CHECK_FALSE(l.next(3, 1).has_value());
  CHECK(l.next(3, 0)->stage == 0);
  CHECK(l.next(3, 0)->chunk == 1);
  CHECK(l.previous(0, 1)->stage == 3);
  CHECK(l.previous(0, 1)->chunk == 0);
  CHECK(l.next(1, 0)->stage == 2);
}

TEST_CASE("the neighbours of every stage and chunk are those of the virtual stage before and after") {
  for (std::int64_t p = 1; p <= 5; ++p)
    for (std::int64_t v = 1; v <= 4; ++v) {
      const workload::PipelineLayout l(p, v);
      for (std::int64_t k = 0; k < p * v; ++k) {
        const auto here = l.at(k);
        CAPTURE(p);
        CAPTURE(v);
        CAPTURE(k);
        const auto before = l.previous(here.stage, here.chunk);
        const auto after = l.next(here.stage, here.chunk);
        REQUIRE(before.has_value() == (k > 0));
        REQUIRE(after.has_value() == (k + 1 < p * v));
        if (before) CHECK(l.virtual_stage(before->stage, before->chunk) == k - 1);
        if (after) CHECK(l.virtual_stage(after->stage, after->chunk) == k + 1);
      }
    }
}
