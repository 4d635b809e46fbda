#include "stepsim/sim/cost.hpp"

#include <map>
#include <tuple>
#include <utility>

#include "stepsim/costmodel/latency.hpp"

namespace stepsim::sim {

namespace {

struct PlanRef {
  std::int32_t index = -1;
  double time_s = 0;
};

class Coster {
 public:
  Coster(StepGraph& g, const topology::Cluster& cluster, const costmodel::ComputeModel& compute,
         const costmodel::CommSettings& comm)
      : g_(g), cl_(cluster), cm_(compute), comm_(comm) {}

  void run() {
    g_.plans.clear();
    std::vector<double> list_s;
    list_s.reserve(g_.kernel_lists.size());
    for (const auto& ks : g_.kernel_lists) list_s.push_back(cm_.time_s(ks));
    std::vector<double> work_s;
    work_s.reserve(g_.works.size());
    for (const auto& w : g_.works) {
      double t = 0;
      for (const auto& [list, count] : w.terms) t += count * list_s[static_cast<std::size_t>(list)];
      work_s.push_back(w.shares_sms ? cm_.comm_slowed_time_s(t) : t);
    }
    const bool network = !cl_.spec().ideal_network;
    for (auto& op : g_.ops) {
      switch (op.kind) {
        case OpKind::Compute:
          op.duration_s = op.work >= 0 ? work_s[static_cast<std::size_t>(op.work)] : 0.0;
          break;
        case OpKind::Collective:
        case OpKind::SendRecv: {
          const auto ref = plan(op);
          op.plan = ref.index;
          op.duration_s = ref.time_s;
          break;
        }
        case OpKind::Delay:
          // A latency-bound collective of a few bytes over every rank (the gradient norm).
          if (op.group >= 0 && g_.groups[static_cast<std::size_t>(op.group)].kind == workload::GroupKind::World)
            op.duration_s = network && cl_.spec().world_size() > 1 ? costmodel::small_allreduce_time_s(cl_.spec(), comm_) : 0.0;
          break;
      }
    }
  }

 private:
  // `count` back-to-back identical collectives as one plan: the rounds carry count x the bytes,
  // and the setup absorbs the start-up and per-round latencies of the other count - 1, so that
  // the isolated time is exactly count x that of one collective.
  PlanRef plan(const Op& op) {
    const auto key = std::make_tuple(static_cast<int>(op.collective), op.group, op.message_bytes, op.count);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    const double count = op.count;
    costmodel::CommPlan one;
    const auto& instances = g_.groups[static_cast<std::size_t>(op.group)].instances;
    if (!cl_.spec().ideal_network) one = costmodel::plan_collective(cl_, op.collective, instances, op.message_bytes, comm_);
    const double one_time = costmodel::isolated_time_s(cl_, one);
    // What the analytic engine charges: the flows of the symmetric instances share links (a NIC of
    // two GPUs, an oversubscribed uplink) for the whole collective.
    const double one_contended = costmodel::contended_time_s(cl_, one);
    const double one_setup_s = one.setup_s;
    costmodel::CommPlan many = std::move(one);
    if (count != 1.0)
      for (auto& round : many.rounds)
        for (auto& f : round.flows) f.bytes *= count;
    // The plan replayed by SimGrid: count x the bytes per flow, the start-up and per-round latencies
    // of the other count - 1 collectives in the setup.
    many.setup_s = 0;
    const double bw_time = count == 1.0 ? one_time - one_setup_s : costmodel::isolated_time_s(cl_, many);
    // count >= 1 makes count x one_time >= bw_time, so the setup is never negative.
    many.setup_s = std::max(0.0, count * one_time - bw_time);
    PlanRef ref;
    ref.index = static_cast<std::int32_t>(g_.plans.size());
    ref.time_s = count * one_contended;
    g_.plans.push_back(std::move(many));
    cache_.emplace(key, ref);
    return ref;
  }

  StepGraph& g_;
  const topology::Cluster& cl_;
  const costmodel::ComputeModel& cm_;
  const costmodel::CommSettings& comm_;
  std::map<std::tuple<int, std::int32_t, double, double>, PlanRef> cache_;
};

}  // namespace

void cost_step(StepGraph& graph, const topology::Cluster& cluster, const costmodel::ComputeModel& compute,
               const costmodel::CommSettings& comm) {
  Coster(graph, cluster, compute, comm).run();
}

}  // namespace stepsim::sim
