// The SimGrid engine: replays the step graph on a SimGrid platform derived from the cluster, so
// that flows which share a link share its bandwidth (max-min fairness, SimGrid's CM02 model with
// the alpha-beta settings: no cross-traffic, no TCP window bound).
//
// Process model. SimGrid 3.32 allows one engine per process and keeps global state, so every
// simulation runs in a fork()ed child. The parent checks the graph and the cluster, prepares the
// platform description, forks, and reads the child's answer from a pipe: a status byte, then
// either the trace (start/end of every op and the makespan, as raw doubles) or an error message.
// Call run_simgrid from a single-threaded process (parallel sweeps should use processes).
//
// Platform. One SimGrid host per GPU that appears in a flow, all in one Full zone; one SimGrid
// link (SHARED) per directed topology link used by a flow, with the link's bandwidth; one
// one-way route per (src, dst) GPU pair that appears in a flow, through the links of
// Cluster::route in order. A Full zone holds an N x N route table (8 bytes per entry), so the
// engine refuses more than kMaxSimGridHosts hosts: use the analytic engine for larger runs.
//
// Latency. CM02 shares a bottleneck among flows in proportion to 1 / (route latency), which would
// make competing routes of unequal latency unfair (and starve zero-latency routes). The SimGrid
// links therefore carry no latency; each flow first waits its route latency (the sum of the
// topology links' latencies) and then transfers its bytes. A lone flow takes exactly
// latency + bytes / bottleneck bandwidth, as in the cost model, and flows sharing a link get equal
// shares whatever their route latencies.
//
// Replay. The graph stays in the engine's arrays; SimGrid only sees the flows in flight (the
// just-in-time pattern: SimGrid 3.32 scans a list of all live activities on every completion).
// Pure delays (compute and delay ops, plan setup, route latency) are entries of the engine's own
// event heap, woken by SimGrid kernel timers; their times are exact sums as in the analytic
// engine. As in the analytic engine, all events of one instant are handled before any stream
// starts its next op, and a stream starts its lowest-index ready op. A communication op waits
// setup_s, then runs its plan's rounds one after the other; a round starts all its flows at once
// and ends when the last one ends. Zero-duration ops and empty plans use no SimGrid activity.

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/support/subprocess.hpp"

namespace stepsim::sim {

namespace {

namespace sg4 = simgrid::s4u;

// Most GPU hosts one simulation may use (Full zone route table of N^2 entries).
constexpr std::size_t kMaxSimGridHosts = 4096;
// Speed of the GPU hosts; no computation runs on them, only flows leave and enter them.
constexpr double kHostSpeed_flops = 1e9;

std::size_t as_index(std::int32_t i) { return static_cast<std::size_t>(i); }

// One flow of a plan, resolved against the platform.
struct PreparedFlow {
  std::int32_t src_host = 0;
  std::int32_t dst_host = 0;
  std::int32_t route = 0;          // index into Platform::routes
  std::uint64_t bytes = 0;
  double latency_s = 0;
};

struct PreparedPlan {
  double setup_s = 0;
  std::vector<std::size_t> round_begin;   // rounds + 1 offsets into Platform::flows
  std::vector<std::int64_t> round_repeat; // how many times each round runs back to back
};

struct PreparedRoute {
  std::int32_t src_host = 0;
  std::int32_t dst_host = 0;
  std::vector<std::int32_t> links;        // indices into Platform::link_bw_Bps
};

// Everything the child needs to build the SimGrid platform, checked in the parent.
struct Platform {
  std::vector<std::int64_t> host_gpu;     // GPU of each host
  std::vector<double> link_bw_Bps;        // used topology links, renumbered densely
  std::vector<std::int32_t> link_id;      // topology Link::id of each used link
  std::vector<PreparedRoute> routes;
  std::vector<PreparedFlow> flows;
  std::vector<PreparedPlan> plans;
};

std::uint64_t wire_bytes(double bytes) {
  if (!(bytes > 0)) return 0;
  const long long rounded = std::llround(bytes);
  return rounded < 1 ? 1U : static_cast<std::uint64_t>(rounded);
}

Platform prepare_platform(const StepGraph& graph, const topology::Cluster& cluster) {
  Platform p;
  const std::int64_t num_gpus = cluster.num_gpus();
  std::unordered_map<std::int64_t, std::int32_t> host_of_gpu;
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> route_of_pair;
  std::unordered_map<std::int32_t, std::int32_t> used_link;

  auto host_for = [&](std::int64_t gpu, std::size_t plan) {
    if (gpu < 0 || gpu >= num_gpus) {
      throw InternalError("simgrid engine: plan " + std::to_string(plan) + " has a flow on GPU " + std::to_string(gpu) +
                          ", but the cluster has " + std::to_string(num_gpus) + " GPUs");
    }
    auto [it, inserted] = host_of_gpu.try_emplace(gpu, static_cast<std::int32_t>(p.host_gpu.size()));
    if (inserted) p.host_gpu.push_back(gpu);
    return it->second;
  };

  p.plans.reserve(graph.plans.size());
  for (std::size_t pi = 0; pi < graph.plans.size(); ++pi) {
    const CommPlan& plan = graph.plans[pi];
    PreparedPlan prepared;
    prepared.setup_s = plan.setup_s;
    prepared.round_begin.push_back(p.flows.size());
    for (const auto& round : plan.rounds) {
      prepared.round_repeat.push_back(round.repeat);
      for (const Flow& f : round.flows) {
        if (f.src_gpu == f.dst_gpu) {
          throw InternalError("simgrid engine: plan " + std::to_string(pi) + " has a flow from GPU " +
                              std::to_string(f.src_gpu) + " to itself");
        }
        PreparedFlow pf;
        pf.src_host = host_for(f.src_gpu, pi);
        pf.dst_host = host_for(f.dst_gpu, pi);
        pf.bytes = wire_bytes(f.bytes);
        auto [it, inserted] =
            route_of_pair.try_emplace({pf.src_host, pf.dst_host}, static_cast<std::int32_t>(p.routes.size()));
        if (inserted) {
          const topology::Route r = cluster.route(f.src_gpu, f.dst_gpu);
          if (r.links.empty()) {
            throw InternalError("simgrid engine: the cluster has no route from GPU " + std::to_string(f.src_gpu) +
                                " to GPU " + std::to_string(f.dst_gpu));
          }
          PreparedRoute pr;
          pr.src_host = pf.src_host;
          pr.dst_host = pf.dst_host;
          for (const std::int32_t id : r.links) {
            auto [lit, new_link] = used_link.try_emplace(id, static_cast<std::int32_t>(p.link_bw_Bps.size()));
            if (new_link) {
              const topology::Link& l = cluster.link(id);
              if (!std::isfinite(l.bw_Bps) || l.bw_Bps <= 0) {
                throw InternalError("simgrid engine: link " + std::to_string(id) + " has bandwidth " +
                                    std::to_string(l.bw_Bps) + " B/s; SimGrid needs a finite positive bandwidth");
              }
              p.link_bw_Bps.push_back(l.bw_Bps);
              p.link_id.push_back(id);
            }
            pr.links.push_back(lit->second);
          }
          p.routes.push_back(std::move(pr));
        }
        pf.route = it->second;
        // Route latency as the cost model sums it (see the header comment on latency).
        pf.latency_s = cluster.route(f.src_gpu, f.dst_gpu).latency_s;
        p.flows.push_back(pf);
      }
      prepared.round_begin.push_back(p.flows.size());
    }
    p.plans.push_back(std::move(prepared));
  }
  if (p.host_gpu.size() > kMaxSimGridHosts) {
    throw InternalError("simgrid engine: the step's flows touch " + std::to_string(p.host_gpu.size()) +
                        " GPUs; the SimGrid platform supports at most " + std::to_string(kMaxSimGridHosts) +
                        " (its route table grows as the square). Use the analytic engine for this run");
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// The replay, run inside the child process.

enum class EventKind : std::uint8_t { OpEnd = 0, SetupEnd = 1, FlowLatencyEnd = 2 };

struct Event {
  double time_s;
  EventKind kind;
  std::int32_t op;
  std::int32_t flow;   // FlowLatencyEnd: index into Platform::flows
};

struct LaterEvent {
  bool operator()(const Event& a, const Event& b) const {
    if (a.time_s != b.time_s) return a.time_s > b.time_s;
    if (a.kind != b.kind) return a.kind > b.kind;
    if (a.op != b.op) return a.op > b.op;
    return a.flow > b.flow;
  }
};

class Replay {
 public:
  Replay(const StepGraph& graph, const Platform& platform) : graph_(graph), platform_(platform) {
    const std::size_t n = graph.ops.size();
    const std::size_t num_streams = graph.devices.size() * static_cast<std::size_t>(kNumStreams);
    times_.resize(n);
    waiting_.resize(n);
    stream_of_.resize(n);
    round_.assign(n, 0);
    repeats_done_.assign(n, 0);
    flows_left_.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const Op& op = graph.ops[i];
      waiting_[i] = static_cast<std::int32_t>(graph.predecessors(static_cast<std::int32_t>(i)).size());
      stream_of_[i] = static_cast<std::uint32_t>(static_cast<std::size_t>(op.device) * kNumStreams +
                                                 static_cast<std::size_t>(op.stream));
    }
    ready_.resize(num_streams);
    busy_.assign(num_streams, 0);
    touched_.assign(num_streams, 0);
  }

  void build_platform() {
    auto* zone = sg4::create_full_zone("cluster");
    hosts_.reserve(platform_.host_gpu.size());
    for (const std::int64_t gpu : platform_.host_gpu) {
      sg4::Host* h = zone->create_host("gpu" + std::to_string(gpu), kHostSpeed_flops);
      h->seal();
      hosts_.push_back(h);
    }
    std::vector<sg4::Link*> links;
    links.reserve(platform_.link_bw_Bps.size());
    for (std::size_t i = 0; i < platform_.link_bw_Bps.size(); ++i) {
      sg4::Link* l = zone->create_link("link" + std::to_string(platform_.link_id[i]), platform_.link_bw_Bps[i]);
      l->set_latency(0);
      l->seal();
      links.push_back(l);
    }
    for (const PreparedRoute& r : platform_.routes) {
      std::vector<sg4::LinkInRoute> hops;
      hops.reserve(r.links.size());
      for (const std::int32_t l : r.links) hops.emplace_back(links[as_index(l)]);
      zone->add_route(hosts_[as_index(r.src_host)]->get_netpoint(), hosts_[as_index(r.dst_host)]->get_netpoint(),
                      nullptr, nullptr, hops, false);
    }
    zone->seal();
  }

  void connect() {
    sg4::Activity::on_completion_cb([this](const sg4::Activity& a) { on_flow_done(a); });
    sg4::Engine::on_time_advance_cb([this](double) {
      grave_old_.clear();
      grave_old_.swap(grave_);
    });
  }

  void begin() {
    for (std::size_t i = 0; i < graph_.ops.size(); ++i) {
      if (waiting_[i] == 0) make_ready(static_cast<std::int32_t>(i));
    }
    start_ready(0.0);
    process_until(0.0);
  }

  // Checks that every op ran and returns the makespan.
  double finish() const {
    if (completed_ != graph_.ops.size()) {
      throw InternalError("simgrid engine: " + std::to_string(graph_.ops.size() - completed_) +
                          " ops never completed");
    }
    double makespan_s = 0;
    for (const OpTime& t : times_) makespan_s = std::max(makespan_s, t.end_s);
    return makespan_s;
  }

  const std::vector<OpTime>& times() const { return times_; }

 private:
  void push_event(const Event& e) {
    events_.push_back(e);
    std::push_heap(events_.begin(), events_.end(), LaterEvent{});
  }

  void make_ready(std::int32_t op) {
    const std::uint32_t s = stream_of_[as_index(op)];
    auto& q = ready_[s];
    q.push_back(op);
    std::push_heap(q.begin(), q.end(), std::greater<std::int32_t>{});
    touch(s);
  }

  void touch(std::uint32_t s) {
    if (!touched_[s]) {
      touched_[s] = 1;
      touched_list_.push_back(s);
    }
  }

  void start_ready(double now_s) {
    // Starting a communication op may complete flows at once (no setup, zero latency, zero
    // bytes); those only push events, so one pass over the touched streams suffices.
    std::vector<std::uint32_t> streams;
    streams.swap(touched_list_);
    for (const std::uint32_t s : streams) {
      touched_[s] = 0;
      auto& q = ready_[s];
      if (busy_[s] || q.empty()) continue;
      std::pop_heap(q.begin(), q.end(), std::greater<std::int32_t>{});
      const std::int32_t op = q.back();
      q.pop_back();
      busy_[s] = 1;
      start_op(op, now_s);
    }
    streams.clear();
    if (touched_list_.empty()) touched_list_.swap(streams);
  }

  void start_op(std::int32_t op, double now_s) {
    const Op& o = graph_.ops[as_index(op)];
    times_[as_index(op)].start_s = now_s;
    if (o.kind == OpKind::Collective || o.kind == OpKind::SendRecv) {
      const PreparedPlan& plan = platform_.plans[as_index(o.plan)];
      round_[as_index(op)] = 0;
      repeats_done_[as_index(op)] = 0;
      if (plan.setup_s > 0) {
        push_event({now_s + plan.setup_s, EventKind::SetupEnd, op, -1});
      } else {
        start_round(op, now_s);
      }
    } else {
      push_event({now_s + o.duration_s, EventKind::OpEnd, op, -1});
    }
  }

  // Starts round round_[op] of op's plan at now_s, skipping rounds that end at once; pushes the
  // op's end when no round is left.
  void start_round(std::int32_t op, double now_s) {
    const PreparedPlan& plan = platform_.plans[as_index(graph_.ops[as_index(op)].plan)];
    const std::size_t num_rounds = plan.round_begin.size() - 1;
    for (std::size_t& r = round_[as_index(op)]; r < num_rounds; ++r) {
      std::int32_t left = 0;
      for (std::size_t f = plan.round_begin[r]; f < plan.round_begin[r + 1]; ++f) {
        const PreparedFlow& flow = platform_.flows[f];
        if (flow.latency_s > 0) {
          push_event({now_s + flow.latency_s, EventKind::FlowLatencyEnd, op, static_cast<std::int32_t>(f)});
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
    push_event({now_s, EventKind::OpEnd, op, -1});
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
    const double now_s = sg4::Engine::get_clock();
    flow_done(op, now_s);
    arm();
  }

  void complete_op(std::int32_t op, double now_s) {
    times_[as_index(op)].end_s = now_s;
    ++completed_;
    const std::uint32_t s = stream_of_[as_index(op)];
    busy_[s] = 0;
    touch(s);
    for (const std::int32_t next : graph_.successors(op)) {
      if (--waiting_[as_index(next)] == 0) make_ready(next);
    }
  }

  // Handles every event up to `date_s`, instant by instant: first all events of the instant,
  // then the streams they freed or fed.
  void process_until(double date_s) {
    while (!events_.empty() && events_.front().time_s <= date_s) {
      const double now_s = events_.front().time_s;
      while (!events_.empty() && events_.front().time_s == now_s) {
        std::pop_heap(events_.begin(), events_.end(), LaterEvent{});
        const Event e = events_.back();
        events_.pop_back();
        switch (e.kind) {
          case EventKind::OpEnd: complete_op(e.op, now_s); break;
          case EventKind::SetupEnd: start_round(e.op, now_s); break;
          case EventKind::FlowLatencyEnd: {
            const PreparedFlow& flow = platform_.flows[as_index(e.flow)];
            if (flow.bytes > 0) {
              start_transfer(e.op, flow);
            } else {
              flow_done(e.op, now_s);
            }
            break;
          }
        }
      }
      start_ready(now_s);
    }
    arm();
  }

  // Makes sure a SimGrid timer wakes the replay at its earliest pending event.
  void arm() {
    if (events_.empty()) return;
    const double next_s = events_.front().time_s;
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
  std::vector<sg4::Host*> hosts_;

  std::vector<OpTime> times_;
  std::vector<std::int32_t> waiting_;
  std::vector<std::uint32_t> stream_of_;
  std::vector<std::size_t> round_;
  std::vector<std::int64_t> repeats_done_;  // repeats of the current round already run
  std::vector<std::int32_t> flows_left_;
  std::vector<std::vector<std::int32_t>> ready_;
  std::vector<std::uint8_t> busy_;
  std::vector<std::uint8_t> touched_;
  std::vector<std::uint32_t> touched_list_;
  std::vector<Event> events_;
  std::vector<double> timer_dates_;
  std::size_t completed_ = 0;

  std::unordered_map<const sg4::Activity*, sg4::CommPtr> live_;
  std::vector<sg4::CommPtr> grave_;
  std::vector<sg4::CommPtr> grave_old_;
};

// ---------------------------------------------------------------------------------------------
// Pipe protocol between child and parent.

constexpr std::uint8_t kStatusOk = 0;
constexpr std::uint8_t kStatusError = 1;

using support::write_all;

void write_error(int fd, const std::string& message) {
  const std::uint8_t status = kStatusError;
  const std::uint64_t len = message.size();
  (void)(write_all(fd, &status, 1) && write_all(fd, &len, sizeof len) && write_all(fd, message.data(), message.size()));
}

// Body of the child process; returns its exit code.
int child_main(int fd, const StepGraph& graph, const Platform& platform) {
  int code = 0;
  try {
    xbt_log_control_set("root.thresh:critical");
    int argc = 1;
    char program[] = "stepsim";
    char* argv[] = {program, nullptr};
    // Engine and replay are never destroyed: the process ends with _Exit, and SimGrid's
    // callbacks and timers keep pointers to the replay until then.
    auto* engine = new sg4::Engine(&argc, argv);
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/crosstraffic:0");
    sg4::Engine::set_config("network/TCP-gamma:0");

    auto* replay_ptr = new Replay(graph, platform);
    Replay& replay = *replay_ptr;
    replay.build_platform();
    replay.connect();
    replay.begin();
    engine->run();
    const double makespan_s = replay.finish();

    const std::uint8_t status = kStatusOk;
    const std::uint64_t n = replay.times().size();
    const bool ok = write_all(fd, &status, 1) && write_all(fd, &n, sizeof n) &&
                    write_all(fd, replay.times().data(), n * sizeof(OpTime)) &&
                    write_all(fd, &makespan_s, sizeof makespan_s);
    code = ok ? 0 : 3;
  } catch (const std::exception& e) {
    write_error(fd, e.what());
    code = 2;
  } catch (...) {
    write_error(fd, "unknown exception in the SimGrid child process");
    code = 2;
  }
  // The child ends with std::_Exit (support::Child), skipping SimGrid's slow teardown.
  return code;
}

}  // namespace

Trace run_simgrid(const StepGraph& graph, const topology::Cluster& cluster) {
  graph.validate();
  const Platform platform = prepare_platform(graph, cluster);

  static_assert(sizeof(OpTime) == 2 * sizeof(double), "OpTime is sent as two raw doubles");
  support::ChildResult child;
  try {
    child = support::run_in_child([&](int fd) { return child_main(fd, graph, platform); }, "simgrid engine");
  } catch (const support::SubprocessError& e) {
    throw InternalError(e.what());
  }
  const std::string& data = child.output;

  std::string child_message;
  if (!data.empty() && static_cast<std::uint8_t>(data[0]) == kStatusError && data.size() >= 1 + sizeof(std::uint64_t)) {
    std::uint64_t len = 0;
    std::memcpy(&len, data.data() + 1, sizeof len);
    child_message = data.substr(1 + sizeof len, static_cast<std::size_t>(len));
  }
  if (!child.status.ok()) {
    throw InternalError("simgrid engine: the simulation process " + child.status.describe() +
                        (child_message.empty() ? std::string() : ": " + child_message));
  }

  const std::size_t n = graph.ops.size();
  const std::size_t expected = 1 + sizeof(std::uint64_t) + n * sizeof(OpTime) + sizeof(double);
  std::uint64_t count = 0;
  if (data.size() == expected) std::memcpy(&count, data.data() + 1, sizeof count);
  if (data.size() != expected || static_cast<std::uint8_t>(data[0]) != kStatusOk || count != n) {
    throw InternalError("simgrid engine: malformed answer from the simulation process (" +
                        std::to_string(data.size()) + " bytes, expected " + std::to_string(expected) + ")");
  }
  Trace trace;
  trace.engine = EngineKind::SimGrid;
  trace.ops.resize(n);
  std::memcpy(trace.ops.data(), data.data() + 1 + sizeof count, n * sizeof(OpTime));
  std::memcpy(&trace.makespan_s, data.data() + 1 + sizeof count + n * sizeof(OpTime), sizeof(double));
  return trace;
}

}  // namespace stepsim::sim
