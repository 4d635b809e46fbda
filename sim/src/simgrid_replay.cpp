#include "simgrid_replay.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/sim/scheduler.hpp"

namespace stepsim::sim {

namespace {

namespace sg4 = simgrid::s4u;

std::size_t as_index(std::int32_t i) { return static_cast<std::size_t>(i); }

// Speed of the GPU hosts; no computation runs on them, only flows leave and enter them.
constexpr double kHostSpeed_flops = 1e9;

// Scheduler event kinds, in the order they are handled within one instant.
constexpr std::uint8_t kOpEnd = 0;
constexpr std::uint8_t kSetupEnd = 1;
constexpr std::uint8_t kFlowLatencyEnd = 2;   // item: index into Platform::flows

class Replay {
 public:
  Replay(const StepGraph& graph, const Platform& platform)
      : graph_(graph), platform_(platform), scheduler_(graph) {
    const std::size_t n = graph.ops.size();
    times_.resize(n);
    round_.assign(n, 0);
    repeats_done_.assign(n, 0);
    flows_left_.assign(n, 0);
  }

  void build() { hosts_ = build_platform(platform_); }

  void connect() {
    sg4::Activity::on_completion_cb([this](const sg4::Activity& a) { on_flow_done(a); });
    sg4::Engine::on_time_advance_cb([this](double) {
      grave_old_.clear();
      grave_old_.swap(grave_);
    });
  }

  void begin() {
    scheduler_.begin([this](std::int32_t op, double now_s) { start_op(op, now_s); });
    process_until(0.0);
  }

  // Checks that every op ran and returns the makespan.
  [[nodiscard]] double finish() const {
    if (scheduler_.completed() != scheduler_.num_ops()) {
      throw InternalError("simgrid engine: " + std::to_string(scheduler_.num_ops() - scheduler_.completed()) +
                          " ops never completed");
    }
    double makespan_s = 0;
    for (const OpTime& t : times_) makespan_s = std::max(makespan_s, t.end_s);
    return makespan_s;
  }

  [[nodiscard]] const std::vector<OpTime>& times() const { return times_; }

 private:
  void start_op(std::int32_t op, double now_s) {
    const Op& o = graph_.ops[as_index(op)];
    times_[as_index(op)].start_s = now_s;
    if (o.kind == OpKind::Collective || o.kind == OpKind::SendRecv) {
      const PreparedPlan& plan = platform_.plans[as_index(o.plan)];
      round_[as_index(op)] = 0;
      repeats_done_[as_index(op)] = 0;
      if (plan.setup_s > 0) {
        scheduler_.schedule({now_s + plan.setup_s, kSetupEnd, op, -1});
      } else {
        start_round(op, now_s);
      }
    } else {
      scheduler_.schedule({now_s + scheduler_.duration_s(op), kOpEnd, op, -1});
    }
  }

  // Starts round round_[op] of op's plan at now_s, skipping rounds that end at once; schedules the
  // op's end when no round is left.
  void start_round(std::int32_t op, double now_s) {
    const PreparedPlan& plan = platform_.plans[as_index(graph_.ops[as_index(op)].plan)];
    const std::size_t num_rounds = plan.round_begin.size() - 1;
    for (std::size_t& r = round_[as_index(op)]; r < num_rounds; ++r) {
      std::int32_t left = 0;
      for (std::size_t f = plan.round_begin[r]; f < plan.round_begin[r + 1]; ++f) {
        const PreparedFlow& flow = platform_.flows[f];
        if (flow.latency_s > 0) {
          scheduler_.schedule({now_s + flow.latency_s, kFlowLatencyEnd, op, static_cast<std::int32_t>(f)});
          ++left;
        } else if (flow.bytes > 0) {
          start_transfer(op, flow);
          ++left;
        }
      }
      if (left > 0) {
        flows_left_[as_index(op)] = left;
        return;
      }
    }
    scheduler_.schedule({now_s, kOpEnd, op, -1});
  }

  void start_transfer(std::int32_t op, const PreparedFlow& flow) {
    sg4::CommPtr c = sg4::Comm::sendto_init(hosts_[as_index(flow.src_host)], hosts_[as_index(flow.dst_host)]);
    c->set_payload_size(flow.bytes);
    c->set_data(reinterpret_cast<void*>(static_cast<std::intptr_t>(op)));
    c->start();
    live_.emplace(c.get(), c);
  }

  void flow_done(std::int32_t op, double now_s) {
    if (--flows_left_[as_index(op)] > 0) return;
    const PreparedPlan& plan = platform_.plans[as_index(graph_.ops[as_index(op)].plan)];
    if (++repeats_done_[as_index(op)] >= plan.round_repeat[round_[as_index(op)]]) {
      repeats_done_[as_index(op)] = 0;
      ++round_[as_index(op)];
    }
    start_round(op, now_s);
  }

  void on_flow_done(const sg4::Activity& a) {
    const auto op = static_cast<std::int32_t>(reinterpret_cast<std::intptr_t>(a.get_data<void>()));
    auto it = live_.find(&a);
    if (it != live_.end()) {
      grave_.push_back(std::move(it->second));   // released one time step later
      live_.erase(it);
    }
    flow_done(op, sg4::Engine::get_clock());
    arm();
  }

  void handle(const SchedulerEvent& e) {
    switch (e.kind) {
      case kOpEnd:
        times_[as_index(e.op)].end_s = e.time_s;
        scheduler_.complete(e.op);
        break;
      case kSetupEnd: start_round(e.op, e.time_s); break;
      case kFlowLatencyEnd: {
        const PreparedFlow& flow = platform_.flows[as_index(e.item)];
        if (flow.bytes > 0) {
          start_transfer(e.op, flow);
        } else {
          flow_done(e.op, e.time_s);
        }
        break;
      }
      default: throw InternalError("simgrid engine: unknown event kind " + std::to_string(e.kind));
    }
  }

  void process_until(double date_s) {
    scheduler_.run_until(
        date_s, [this](const SchedulerEvent& e) { handle(e); },
        [this](std::int32_t op, double now_s) { start_op(op, now_s); });
    arm();
  }

  // Makes sure a SimGrid timer wakes the replay at its earliest pending event.
  void arm() {
    if (!scheduler_.has_events()) return;
    const double next_s = scheduler_.next_event_s();
    if (!timer_dates_.empty() && timer_dates_.front() <= next_s) return;
    timer_dates_.push_back(next_s);
    std::push_heap(timer_dates_.begin(), timer_dates_.end(), std::greater<double>{});
    simgrid::kernel::timer::Timer::set(next_s, [this, next_s]() { on_timer(next_s); });
  }

  void on_timer(double date_s) {
    // Timers fire in date order, so this one is the earliest pending.
    std::pop_heap(timer_dates_.begin(), timer_dates_.end(), std::greater<double>{});
    timer_dates_.pop_back();
    process_until(date_s);
  }

  const StepGraph& graph_;
  const Platform& platform_;
  StreamScheduler scheduler_;
  std::vector<sg4::Host*> hosts_;

  std::vector<OpTime> times_;
  std::vector<std::size_t> round_;
  std::vector<std::int64_t> repeats_done_;  // repeats of the current round already run
  std::vector<std::int32_t> flows_left_;
  std::vector<double> timer_dates_;

  std::unordered_map<const sg4::Activity*, sg4::CommPtr> live_;
  std::vector<sg4::CommPtr> grave_;
  std::vector<sg4::CommPtr> grave_old_;
};

}  // namespace

std::vector<sg4::Host*> build_platform(const Platform& platform) {
  auto* zone = sg4::create_full_zone("cluster");
  std::vector<sg4::Host*> hosts;
  hosts.reserve(static_cast<std::size_t>(platform.num_hosts));
  for (std::int32_t i = 0; i < platform.num_hosts; ++i) {
    sg4::Host* h = zone->create_host("host" + std::to_string(i), kHostSpeed_flops);
    h->seal();
    hosts.push_back(h);
  }
  std::vector<sg4::Link*> links;
  links.reserve(platform.link_bw_Bps.size());
  for (std::size_t i = 0; i < platform.link_bw_Bps.size(); ++i) {
    sg4::Link* l = zone->create_link("link" + std::to_string(i) + "_" + std::to_string(platform.link_id[i]),
                                     platform.link_bw_Bps[i]);
    l->set_latency(0);
    l->seal();
    links.push_back(l);
  }
  for (const PreparedRoute& r : platform.routes) {
    std::vector<sg4::LinkInRoute> hops;
    hops.reserve(r.links.size());
    for (const std::int32_t l : r.links) hops.emplace_back(links[as_index(l)]);
    zone->add_route(hosts[as_index(r.src_host)]->get_netpoint(), hosts[as_index(r.dst_host)]->get_netpoint(),
                    nullptr, nullptr, hops, false);
  }
  zone->seal();
  return hosts;
}

Trace replay_on_simgrid(const StepGraph& graph, const Platform& platform) {
  xbt_log_control_set("root.thresh:critical");
  int argc = 1;
  char program[] = "stepsim";
  char* argv[] = {program, nullptr};
  // Engine and replay are never destroyed: SimGrid's callbacks and timers keep pointers to the
  // replay until the process ends.
  auto* engine = new sg4::Engine(&argc, argv);
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");

  auto* replay = new Replay(graph, platform);
  replay->build();
  replay->connect();
  replay->begin();
  engine->run();

  Trace trace;
  trace.engine = EngineKind::SimGrid;
  trace.makespan_s = replay->finish();
  trace.ops = replay->times();
  return trace;
}

}  // namespace stepsim::sim

extern "C" __attribute__((visibility("default"))) int stepsim_simgrid_replay(const stepsim::sim::StepGraph* graph,
                                                                             const stepsim::sim::Platform* platform,
                                                                             stepsim::sim::Trace* trace, std::string* error) {
  try {
    *trace = stepsim::sim::replay_on_simgrid(*graph, *platform);
    return stepsim::sim::kReplayOk;
  } catch (const std::bad_alloc&) {
    return stepsim::sim::kReplayOutOfMemory;
  } catch (const std::exception& e) {
    *error = e.what();
  } catch (...) {
    *error = "unknown exception in the SimGrid replay";
  }
  return stepsim::sim::kReplayError;
}
