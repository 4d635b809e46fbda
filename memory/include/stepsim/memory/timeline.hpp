#pragma once
// Memory over time on each device, from allocation and free events on top of static memory.
// Fragmentation is charged on the dynamic part: total = static + dynamic + f * dynamic.

#include <cstdint>
#include <optional>
#include <vector>

namespace stepsim::memory {

struct MemEvent {
  double time_s = 0;
  std::int32_t device = 0;
  std::int64_t delta_bytes = 0;   // > 0 allocation, < 0 release
  std::int32_t op = -1;           // the op that causes it
};

struct TimelinePoint {
  double time_s = 0;
  std::int64_t bytes = 0;         // total after the events at this time
};

struct DeviceTimeline {
  std::int64_t static_bytes = 0;
  std::int64_t capacity_bytes = 0;
  std::int64_t peak_bytes = 0;
  double peak_time_s = 0;
  std::int32_t peak_op = -1;
  std::vector<TimelinePoint> points;   // one point per distinct event time
};

struct OomPoint {
  std::int32_t device = 0;
  double time_s = 0;
  std::int32_t op = -1;
  std::int64_t bytes_over = 0;    // how far the first excess goes above capacity
};

struct Timeline {
  std::vector<DeviceTimeline> devices;
  std::optional<OomPoint> oom;    // the earliest time any device exceeds its capacity
};

// Events at the same time on one device: releases apply before allocations (a backward that ends
// when the next forward starts frees first). Deterministic for equal inputs. Without `points` the
// devices' points stay empty (peaks and the OOM point are the same): what a sweep row needs.
// InternalError for an event on a device that static_bytes does not have.
[[nodiscard]] Timeline build_timeline(std::vector<MemEvent> events, const std::vector<std::int64_t>& static_bytes,
                        const std::vector<std::int64_t>& capacity_bytes, double fragmentation_fraction, bool points = true);
// The same from each device's events apart (events[d]: device d's, in any order; sorted in place,
// at least as many lists as devices): build_timeline of all of them.
[[nodiscard]] Timeline build_timeline_by_device(std::vector<std::vector<MemEvent>>& events, const std::vector<std::int64_t>& static_bytes,
                                                const std::vector<std::int64_t>& capacity_bytes, double fragmentation_fraction,
                                                bool points = true);

}  // namespace stepsim::memory
