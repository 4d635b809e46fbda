#include "stepsim/memory/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include "stepsim/memory/round.hpp"
#include "stepsim/scenarios/error.hpp"

namespace stepsim::memory {

namespace {

// A device's events in the order they apply: by time, releases before allocations at one time,
// then by op (a total order: an op has at most one allocation and one release, of opposite signs).
bool earlier_in_device(const MemEvent& a, const MemEvent& b) {
  if (a.time_s != b.time_s) return a.time_s < b.time_s;
  if (a.delta_bytes != b.delta_bytes) return a.delta_bytes < b.delta_bytes;
  return a.op < b.op;
}

Timeline empty_timeline(const std::vector<std::int64_t>& static_bytes, const std::vector<std::int64_t>& capacity_bytes) {
  if (capacity_bytes.size() != static_bytes.size())
    throw InternalError("memory timeline: " + std::to_string(static_bytes.size()) + " devices with static memory, " +
                        std::to_string(capacity_bytes.size()) + " with a capacity");
  Timeline tl;
  tl.devices.resize(static_bytes.size());
  for (std::size_t i = 0; i < static_bytes.size(); ++i) {
    auto& d = tl.devices[i];
    d.static_bytes = static_bytes[i];
    d.capacity_bytes = capacity_bytes[i];
    d.peak_bytes = static_bytes[i];
  }
  return tl;
}

// Device `dev`'s events (its own, in any order: sorted here) applied to its timeline and to the
// timeline's OOM point. The devices are walked in device order, so that of two devices that
// exceed their capacity at the same time the first is the OOM point.
void walk_device(Timeline& tl, std::size_t dev, MemEvent* first, MemEvent* last, double fragmentation_fraction, bool points) {
  if (!std::is_sorted(first, last, earlier_in_device)) std::sort(first, last, earlier_in_device);
  auto& d = tl.devices[dev];
  if (points) {
    // A point per event at most, and the start.
    d.points.reserve(static_cast<std::size_t>(last - first) + 1);
    d.points.push_back({0.0, d.static_bytes});
  }
  std::int64_t dynamic = 0;
  for (const MemEvent* e = first; e != last; ++e) {
    if (e->device < 0 || static_cast<std::size_t>(e->device) != dev)
      throw InternalError("memory timeline: an event of device " + std::to_string(e->device) + " among those of device " + std::to_string(dev));
    dynamic += e->delta_bytes;
    const std::int64_t frag = round_bytes(static_cast<double>(dynamic) * fragmentation_fraction);
    const std::int64_t now = d.static_bytes + dynamic + frag;
    if (now > d.peak_bytes) {
      d.peak_bytes = now;
      d.peak_time_s = e->time_s;
      d.peak_op = e->op;
    }
    if (now > d.capacity_bytes && e->delta_bytes > 0 && (!tl.oom || e->time_s < tl.oom->time_s))
      tl.oom = OomPoint{e->device, e->time_s, e->op, now - d.capacity_bytes};
    if (!points) continue;
    const bool last_at_time = e + 1 == last || e[1].time_s != e->time_s;
    if (last_at_time) d.points.push_back({e->time_s, now});
  }
}

}  // namespace

Timeline build_timeline(std::vector<MemEvent> events, const std::vector<std::int64_t>& static_bytes,
                        const std::vector<std::int64_t>& capacity_bytes, double fragmentation_fraction, bool points) {
  Timeline tl = empty_timeline(static_bytes, capacity_bytes);
  const std::size_t devices = static_bytes.size();
  // Grouped by device (stably: each device's events keep their order), unless they already are.
  std::vector<std::size_t> begin(devices + 1, 0);  // where each device's events begin
  bool in_device_order = true;                     // device numbers never decrease
  for (std::size_t k = 0; k < events.size(); ++k) {
    const auto& e = events[k];
    if (e.device < 0 || static_cast<std::size_t>(e.device) >= devices)
      throw InternalError("memory timeline: an event of device " + std::to_string(e.device) + " of " + std::to_string(devices));
    if (k > 0 && e.device < events[k - 1].device) in_device_order = false;
    ++begin[static_cast<std::size_t>(e.device) + 1];
  }
  for (std::size_t dv = 0; dv < devices; ++dv) begin[dv + 1] += begin[dv];
  if (!in_device_order) {
    std::vector<MemEvent> by_device(events.size());
    std::vector<std::size_t> next(begin.begin(), begin.end() - 1);
    for (const auto& e : events) by_device[next[static_cast<std::size_t>(e.device)]++] = e;
    events = std::move(by_device);
  }
  for (std::size_t dv = 0; dv < devices; ++dv)
    walk_device(tl, dv, events.data() + begin[dv], events.data() + begin[dv + 1], fragmentation_fraction, points);
  return tl;
}

Timeline build_timeline_by_device(std::vector<std::vector<MemEvent>>& events, const std::vector<std::int64_t>& static_bytes,
                                  const std::vector<std::int64_t>& capacity_bytes, double fragmentation_fraction, bool points) {
  Timeline tl = empty_timeline(static_bytes, capacity_bytes);
  if (events.size() < static_bytes.size())
    throw InternalError("memory timeline: the events of " + std::to_string(events.size()) + " devices for " +
                        std::to_string(static_bytes.size()));
  for (std::size_t dv = 0; dv < static_bytes.size(); ++dv)
    walk_device(tl, dv, events[dv].data(), events[dv].data() + events[dv].size(), fragmentation_fraction, points);
  return tl;
}

}  // namespace stepsim::memory
