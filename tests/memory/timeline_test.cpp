// The memory timeline: events of any order give the timeline of their (device, time, delta, op) order.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "stepsim/memory/round.hpp"
#include "stepsim/memory/timeline.hpp"
#include "stepsim/scenarios/error.hpp"

using namespace stepsim;

namespace {

// The timeline of events already in (device, time, delta, op) order, point by point.
memory::Timeline reference(std::vector<memory::MemEvent> ev, const std::vector<std::int64_t>& stat, const std::vector<std::int64_t>& cap,
                           double frag) {
  std::sort(ev.begin(), ev.end(), [](const memory::MemEvent& a, const memory::MemEvent& b) {
    return std::make_tuple(a.device, a.time_s, a.delta_bytes, a.op) < std::make_tuple(b.device, b.time_s, b.delta_bytes, b.op);
  });
  return memory::build_timeline(ev, stat, cap, frag);
}

}  // namespace

TEST_CASE("build_timeline: shuffled events across devices, equal times and releases before allocations give one timeline") {
  std::mt19937 rng(7);
  const std::vector<std::int64_t> stat{100, 200, 300};
  const std::vector<std::int64_t> cap{1000, 700, 2000};
  std::vector<memory::MemEvent> ev;
  std::int32_t op = 0;
  for (int k = 0; k < 300; ++k, ++op) {
    const auto dev = static_cast<std::int32_t>(rng() % 3);
    const double start_s = static_cast<double>(rng() % 20) * 0.5;  // many equal times
    const double end_s = start_s + static_cast<double>(rng() % 4) * 0.5;
    const std::int64_t bytes = 1 + static_cast<std::int64_t>(rng() % 50);
    ev.push_back({start_s, dev, bytes, op});
    ev.push_back({end_s, dev, -bytes, op});
  }
  const auto want = reference(ev, stat, cap, 0.1);
  for (int round = 0; round < 5; ++round) {
    std::shuffle(ev.begin(), ev.end(), rng);
    const auto got = memory::build_timeline(ev, stat, cap, 0.1);
    // Without points: the same peaks and OOM point, no points.
    const auto bare = memory::build_timeline(ev, stat, cap, 0.1, false);
    REQUIRE(got.devices.size() == want.devices.size());
    REQUIRE(bare.devices.size() == want.devices.size());
    CHECK(bare.oom.has_value() == want.oom.has_value());
    if (bare.oom && want.oom) {
      CHECK(bare.oom->time_s == want.oom->time_s);
      CHECK(bare.oom->op == want.oom->op);
      CHECK(bare.oom->bytes_over == want.oom->bytes_over);
    }
    for (std::size_t d = 0; d < want.devices.size(); ++d) {
      const auto& g = got.devices[d];
      const auto& w = want.devices[d];
      CHECK(g.peak_bytes == w.peak_bytes);
      CHECK(g.peak_time_s == w.peak_time_s);
      CHECK(g.peak_op == w.peak_op);
      CHECK(bare.devices[d].peak_bytes == w.peak_bytes);
      CHECK(bare.devices[d].peak_time_s == w.peak_time_s);
      CHECK(bare.devices[d].peak_op == w.peak_op);
      CHECK(bare.devices[d].points.empty());
      REQUIRE(g.points.size() == w.points.size());
      for (std::size_t i = 0; i < w.points.size(); ++i) {
        CHECK(g.points[i].time_s == w.points[i].time_s);
        CHECK(g.points[i].bytes == w.points[i].bytes);
      }
    }
    REQUIRE(got.oom.has_value() == want.oom.has_value());
    if (want.oom) {
      CHECK(got.oom->device == want.oom->device);
      CHECK(got.oom->time_s == want.oom->time_s);
      CHECK(got.oom->op == want.oom->op);
      CHECK(got.oom->bytes_over == want.oom->bytes_over);
    }
    // The same events given device by device (a spare fourth list, empty): the same timeline.
    std::vector<std::vector<memory::MemEvent>> split(4);
    for (const auto& e : ev) split[static_cast<std::size_t>(e.device)].push_back(e);
    const auto by_device = memory::build_timeline_by_device(split, stat, cap, 0.1);
    REQUIRE(by_device.devices.size() == want.devices.size());
    for (std::size_t d = 0; d < want.devices.size(); ++d) {
      CAPTURE(d);
      CHECK(by_device.devices[d].peak_bytes == want.devices[d].peak_bytes);
      CHECK(by_device.devices[d].peak_time_s == want.devices[d].peak_time_s);
      CHECK(by_device.devices[d].peak_op == want.devices[d].peak_op);
      REQUIRE(by_device.devices[d].points.size() == want.devices[d].points.size());
      for (std::size_t i = 0; i < want.devices[d].points.size(); ++i) {
        CHECK(by_device.devices[d].points[i].time_s == want.devices[d].points[i].time_s);
        CHECK(by_device.devices[d].points[i].bytes == want.devices[d].points[i].bytes);
      }
    }
    REQUIRE(by_device.oom.has_value() == want.oom.has_value());
    if (want.oom) {
      CHECK(by_device.oom->device == want.oom->device);
      CHECK(by_device.oom->time_s == want.oom->time_s);
      CHECK(by_device.oom->op == want.oom->op);
    }
  }
  // An event on a device the timeline does not have, or in another device's list: refused.
  auto bad = ev;
  bad.push_back({1.0, 3, 5, 999});
  CHECK_THROWS_AS((void)memory::build_timeline(bad, stat, cap, 0.1), InternalError);
  std::vector<std::vector<memory::MemEvent>> misplaced(3);
  misplaced[0].push_back({1.0, 1, 5, 0});
  CHECK_THROWS_AS((void)memory::build_timeline_by_device(misplaced, stat, cap, 0.1), InternalError);
  std::vector<std::vector<memory::MemEvent>> too_few(2);
  CHECK_THROWS_AS((void)memory::build_timeline_by_device(too_few, stat, cap, 0.1), InternalError);
}

TEST_CASE("round_bytes is std::llround: halfway cases, the largest fraction below a half, large and random values") {
  const double cases[] = {0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994,
                          4503599627370495.5, -4503599627370495.5, 4503599627370497.0, 9007199254740993.0,
                          1e18, -1e18, 4611686018427387904.0, -4611686018427387904.0, 9.2e18, -9.2e18,
                          123456789.49999999, 123456789.5, 7.999999999999999e9};
  for (const double x : cases) {
    CAPTURE(x);
    CHECK(memory::round_bytes(x) == std::llround(x));
  }
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int i = 0; i < 100000; ++i) {
    const double x = unit(rng) * std::ldexp(1.0, static_cast<int>(rng() % 64));
    CAPTURE(x);
    REQUIRE(memory::round_bytes(x) == std::llround(x));
  }
}
