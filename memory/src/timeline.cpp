#include "stepsim/memory/timeline.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <tuple>

#include "stepsim/memory/round.hpp"

namespace stepsim::memory {

Timeline build_timeline(std::vector<MemEvent> events, const std::vector<std::int64_t>& static_bytes,
                        const std::vector<std::int64_t>& capacity_bytes, double fragmentation_fraction, bool points) {
  // Sorted by (device, time, delta, op), a total order (an op has at most one allocation and one
  // release, of opposite signs): the events grouped by device first, each device's sorted apart.
  const std::size_t devices = static_bytes.size();
  std::vector<std::size_t> begin(devices + 1, 0);  // where each device's events begin (when grouped)
  bool grouped = true;
  {
    bool in_device_order = true;  // already grouped: device numbers never decrease
    for (std::size_t k = 0; k < events.size(); ++k) {
      const auto& e = events[k];
      if (e.device < 0 || static_cast<std::size_t>(e.device) >= devices) {
        grouped = false;
        break;
      }
      if (k > 0 && e.device < events[k - 1].device) in_device_order = false;
      ++begin[static_cast<std::size_t>(e.device) + 1];
    }
    const auto earlier_in_device = [](const MemEvent& a, const MemEvent& b) {
      if (a.time_s != b.time_s) return a.time_s < b.time_s;
      if (a.delta_bytes != b.delta_bytes) return a.delta_bytes < b.delta_bytes;
      return a.op < b.op;
    };
    if (grouped) {
      for (std::size_t dv = 0; dv < devices; ++dv) begin[dv + 1] += begin[dv];
      if (!in_device_order) {
        // Stable: each device's events keep their order.
        std::vector<MemEvent> by_device(events.size());
        std::vector<std::size_t> next(begin.begin(), begin.end() - 1);
        for (const auto& e : events) by_device[next[static_cast<std::size_t>(e.device)]++] = e;
        events = std::move(by_device);
      }
      for (std::size_t dv = 0; dv < devices; ++dv) {
        const auto first = events.begin() + static_cast<std::ptrdiff_t>(begin[dv]);
        const auto last = events.begin() + static_cast<std::ptrdiff_t>(begin[dv + 1]);
        if (!std::is_sorted(first, last, earlier_in_device)) std::sort(first, last, earlier_in_device);
      }
    } else {
      std::sort(events.begin(), events.end(), [](const MemEvent& a, const MemEvent& b) {
        return std::make_tuple(a.device, a.time_s, a.delta_bytes, a.op) < std::make_tuple(b.device, b.time_s, b.delta_bytes, b.op);
      });
    }
  }
  Timeline tl;
  tl.devices.resize(static_bytes.size());
  for (std::size_t i = 0; i < static_bytes.size(); ++i) {
    auto& d = tl.devices[i];
    d.static_bytes = static_bytes[i];
    d.capacity_bytes = capacity_bytes[i];
    d.peak_bytes = static_bytes[i];
    if (!points) continue;
    // A point per event at most, and the start.
    if (grouped) d.points.reserve(begin[i + 1] - begin[i] + 1);
    d.points.push_back({0.0, static_bytes[i]});
  }
  auto total = [&](std::size_t dev, std::int64_t dynamic) {
    const std::int64_t frag = round_bytes(static_cast<double>(dynamic) * fragmentation_fraction);
    return tl.devices[dev].static_bytes + dynamic + frag;
  };
  std::vector<std::int64_t> dynamic(static_bytes.size(), 0);
  for (std::size_t k = 0; k < events.size(); ++k) {
    const auto& e = events[k];
    const auto dev = static_cast<std::size_t>(e.device);
    dynamic[dev] += e.delta_bytes;
    const std::int64_t now = total(dev, dynamic[dev]);
    auto& d = tl.devices[dev];
    if (now > d.peak_bytes) {
      d.peak_bytes = now;
      d.peak_time_s = e.time_s;
      d.peak_op = e.op;
    }
    if (now > d.capacity_bytes && e.delta_bytes > 0 && (!tl.oom || e.time_s < tl.oom->time_s))
      tl.oom = OomPoint{e.device, e.time_s, e.op, now - d.capacity_bytes};
    if (!points) continue;
    const bool last_at_time = k + 1 == events.size() || events[k + 1].device != e.device || events[k + 1].time_s != e.time_s;
    if (last_at_time) d.points.push_back({e.time_s, now});
  }
  return tl;
}

}  // namespace stepsim::memory
