#include "stepsim/sim/build.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "stepsim/memory/estimator.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/workload/buckets.hpp"
#include "stepsim/workload/params.hpp"
#include "stepsim/workload/program.hpp"
#include "stepsim/workload/schedule.hpp"

namespace stepsim::sim {

using scenarios::Scenario;
using workload::Collective;
using workload::GroupKind;

namespace {

double d(std::int64_t x) { return static_cast<double>(x); }

// The instances of the groups built so far, shared by every graph of the process: the
// candidates of a sweep repeat a few layouts on one cluster. A group's ranks follow from the
// cluster (the same Cluster object, by its instance id), the placement (tp, cp, dp, pp, the
// distributed-optimizer instances, rank order), whether symmetric instances are wanted, the group kind and its stage(s). Bounded: emptied
// when the ranks it holds pass kMaxRanks.
class GroupCache {
 public:
  using Key = std::tuple<std::uint64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::string,
                         bool, int, std::int64_t, std::int64_t>;
  static GroupCache& instance() {
    static GroupCache cache;
    return cache;
  }
  template <typename Make>
  SharedRanks get(const Key& key, Make&& make) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = groups_.find(key);
    if (it != groups_.end()) return it->second;
    SharedRanks ranks(make());
    // Equal ranks under another key (a group that several layouts share) are the stored object,
    // so that comparisons of the two (the plan cache's) find the same object, not rank by rank.
    auto [lo, hi] = by_ranks_.equal_range(ranks.hash());
    for (auto r = lo; r != hi; ++r)
      if (r->second == ranks) return groups_.emplace(key, r->second).first->second;
    std::int64_t n = 0;
    for (const auto& g : ranks) n += static_cast<std::int64_t>(g.size());
    if (ranks_ + n > kMaxRanks) {
      groups_.clear();
      by_ranks_.clear();
      ranks_ = 0;
    }
    ranks_ += n;
    by_ranks_.emplace(ranks.hash(), ranks);
    return groups_.emplace(key, std::move(ranks)).first->second;
  }

 private:
  static constexpr std::int64_t kMaxRanks = std::int64_t{1} << 22;
  std::mutex mutex_;
  std::map<Key, SharedRanks> groups_;
  std::unordered_multimap<std::uint64_t, SharedRanks> by_ranks_;  // the stored ranks by their hash
  std::int64_t ranks_ = 0;
};

class Builder {
 public:
  Builder(const Scenario& s, const topology::Cluster& cluster, const BuildOptions& opt)
      : s_(s),
        cl_(cluster),
        opt_(opt),
        pl_(s.parallel, s.parallel.rank_order),
        prog_(workload::step_program(s)),
        layout_(prog_.layout),
        buckets_(s) {
    const auto& x = prog_.shape;
    p_ = x.pp;
    v_ = x.vpp;
    m_ = x.micro_batches;
    t_ = x.tp;
    c_ = x.cp;
    dp_ = x.dp;
    if (pl_.world_size() != s.world_size())
      throw InternalError("placement covers " + std::to_string(pl_.world_size()) + " ranks, the cluster has " +
                          std::to_string(s.world_size()));
  }

  BuiltStep build() {
    reserve_graph();
    grad_ops_.assign(static_cast<std::size_t>(p_), {});
    stage_flops_.assign(static_cast<std::size_t>(p_), 0.0);
    register_work();
    for (std::int64_t i = 0; i < p_; ++i) {
      Device dev;
      dev.stage = static_cast<std::int32_t>(i);
      dev.gpu = pl_.rank({0, 0, 0, i});
      dev.multiplicity = t_ * c_ * dp_;
      dev.static_bytes = memory::static_bytes(s_, i);
      dev.capacity_bytes = static_cast<std::int64_t>(s_.cluster.gpu.memory_bytes);
      out_.graph.devices.push_back(dev);
    }
    gather_ops_.assign(static_cast<std::size_t>(p_ * v_), {});
    for (std::int64_t i = 0; i < p_; ++i)
      for (std::int64_t j = 0; j < v_; ++j)
        gather_ops_[static_cast<std::size_t>(i * v_ + j)].assign(buckets_.of(i, j).size(), -1);
    if (s_.parallel.overlap_param_gather) add_param_gathers_at_start();

    last_compute_.assign(static_cast<std::size_t>(p_), -1);
    for (auto& w : p2p_wait_) w.assign(static_cast<std::size_t>(p_), -1);
    // Each step starts by clearing the gradient buffer of the stage's parameters.
    for (std::int64_t i = 0; i < p_; ++i) {
      const auto list = add_list(workload::zero_grad_buffer(s_, workload::stage_params(s_, i)));
      compute_op(i, -1, -1, Phase::Other, -1, work({{list, 1.0}}, false), "zero_grad");
    }
    fwd_end_.assign(static_cast<std::size_t>(p_ * v_ * m_), -1);
    fwd_send_.assign(static_cast<std::size_t>(p_ * v_ * m_), -1);
    bwd_send_.assign(static_cast<std::size_t>(p_ * v_ * m_), -1);
    // Each stage's compute stream follows its schedule through chain edges; dependencies carry the
    // order across stages. Passes are emitted round-robin over stages so that op indices roughly
    // follow time: repeatedly take, on each stage, the next pass whose cross-stage input exists.
    std::vector<std::vector<workload::Pass>> orders;
    for (std::int64_t i = 0; i < p_; ++i) orders.push_back(workload::stage_schedule(s_.parallel.schedule, p_, m_, v_, i, s_.parallel.microbatch_group()));
    std::vector<std::size_t> next(static_cast<std::size_t>(p_), 0);
    std::size_t remaining = 0;
    for (const auto& o : orders) remaining += o.size();
    while (remaining > 0) {
      bool progressed = false;
      for (std::int64_t i = 0; i < p_; ++i) {
        auto& k = next[static_cast<std::size_t>(i)];
        while (k < orders[static_cast<std::size_t>(i)].size() && input_ready(i, orders[static_cast<std::size_t>(i)][k])) {
          emit_pass(i, orders[static_cast<std::size_t>(i)][k]);
          ++k;
          --remaining;
          progressed = true;
        }
      }
      if (!progressed) throw InternalError("pipeline schedule deadlocks: no stage can take its next pass");
    }
    add_step_end();
    out_.work.model_flops = costmodel::megatron_model_flops(s_);
    out_.work.hardware_flops_per_gpu = max_stage_flops_;
    return std::move(out_);
  }

 private:
  // Room for about the ops and edges of the step (a hint: passes split per layer or per bucket add
  // more), so that the op and edge arrays are not copied as they grow.
  void reserve_graph() {
    const std::int64_t per_group = 1 + (c_ > 1 ? 2 : 0) + (t_ > 1 ? 2 : 0);
    const std::int64_t per_layer = opt_.per_layer ? layout_.max_chunk_layers() : 1;
    const std::int64_t ops = p_ * v_ * m_ * 2 * (per_layer * per_group + 1) + 8 * p_;
    constexpr std::int64_t kMaxReserved = std::int64_t{1} << 22;
    const auto n = static_cast<std::size_t>(std::min(ops, kMaxReserved));
    if (!opt_.compact_copies || !opt_.reuse_passes) return out_.graph.reserve(n, 2 * n);
    // Copied passes store no ops and list no edges: room for a few emitted passes per stage, chunk
    // and direction and the step's other ops, and for a copy of every pass.
    const std::int64_t emitted = p_ * v_ * 2 * 4 * (per_layer * per_group + 1) + 8 * p_;
    const auto stored = static_cast<std::size_t>(std::min({emitted, ops, kMaxReserved}));
    const auto passes = static_cast<std::size_t>(std::min(p_ * v_ * m_ * 2, kMaxReserved));
    out_.graph.reserve(stored, 2 * stored, passes, n - std::min(n, stored));
  }

  // ---- work: kernel lists and compute work, shared by the ops that run them
  std::int32_t add_list(std::vector<workload::Kernel> ks) {
    auto& lists = out_.graph.kernel_lists;
    for (std::size_t i = 0; i < lists.size(); ++i)
      if (lists[i] == ks) return static_cast<std::int32_t>(i);
    list_flops_.push_back(workload::total_flops(ks));
    lists.push_back(std::move(ks));
    return static_cast<std::int32_t>(lists.size() - 1);
  }

  using Terms = std::vector<std::pair<std::int32_t, double>>;

  // The compute work of `terms` (kernel list, count), empty lists dropped and repeats of a list
  // merged into one term; one entry per distinct work.
  std::int32_t work(const Terms& terms, bool shares_sms) {
    // The key is made in storage kept from one call to the next (a hit allocates nothing).
    Terms& merged = work_key_.first;
    merged.clear();
    for (const auto& [list, count] : terms) {
      if (out_.graph.kernel_lists[static_cast<std::size_t>(list)].empty()) continue;
      if (!merged.empty() && merged.back().first == list)
        merged.back().second += count;
      else
        merged.emplace_back(list, count);
    }
    work_key_.second = shares_sms;
    auto it = work_index_.find(work_key_);
    if (it != work_index_.end()) return it->second;
    ComputeWork w;
    w.terms = merged;
    w.shares_sms = shares_sms;
    for (const auto& [list, count] : w.terms) w.flops += count * list_flops_[static_cast<std::size_t>(list)];
    const auto id = static_cast<std::int32_t>(out_.graph.works.size());
    out_.graph.works.push_back(std::move(w));
    work_index_.emplace(work_key_, id);
    return id;
  }

  void register_work() {
    for (std::size_t i = 0; i < prog_.layers.size(); ++i) {
      const std::size_t from = prog_.layer_copied_from[i];
      if (from != i) {
        layer_fwd_.push_back(layer_fwd_[from]);
        layer_bwd_.push_back(layer_bwd_[from]);
        layer_rec_.push_back(layer_rec_[from]);
        continue;
      }
      const auto& l = *prog_.layers[i];
      layer_fwd_.push_back(add_list(l.forward.kernels));
      layer_bwd_.push_back(add_list(l.backward.kernels));
      layer_rec_.push_back(add_list(l.recompute));
    }
    // The stack's host time per pass of a chunk and micro-batch, where it has one.
    if (s_.software.microbatch_host_s > 0) host_ = add_list(workload::host_pass());
    emb_fwd_ = add_list(prog_.embedding_forward.kernels);
    emb_bwd_ = add_list(prog_.embedding_backward.kernels);
    out_fwd_ = add_list(prog_.output_forward.kernels);
    out_bwd_ = add_list(prog_.output_backward.kernels);
    // The TP collectives of a pass are planned as one ring of S-byte units: all-gathers and
    // reduce-scatters with SP, all-reduces without.
    const bool sp = s_.parallel.sequence_parallel;
    tp_unit_ = sp ? Collective::AllGather : Collective::AllReduce;
    tp_bytes_ = 2.0 * prog_.shape.tokens_per_rank * d(s_.model.hidden);
    // The forward's TP collectives run beside the compute only with tp_comm_overlap.
    for (const auto& c : prog_.layers.front()->forward.collectives)
      if (c.group == GroupKind::Tensor && c.overlap == workload::Overlap::WithCompute) tp_with_compute_ = true;
    for (std::int64_t i = 0; i < p_; ++i)
      for (std::int64_t j = 0; j < v_; ++j) {
        chunk_bytes_.push_back(memory::chunk_activation_bytes(prog_, s_, i, j));
        chunk_first_.push_back(layout_.first_layer(i, j));
      }
    output_bytes_ = memory::output_transient_bytes(prog_);
    logits_copy_bytes_ = memory::logits_copy_bytes(prog_);
    // What each chunk's backward passes allocate when they start (and free when they end).
    for (std::int64_t i = 0; i < p_; ++i)
      for (std::int64_t j = 0; j < v_; ++j) {
        const bool loss = layout_.is_last(i, j);
        backward_alloc_.push_back(memory::backward_pass_alloc_bytes(memory::chunk_backward_transient_bytes(prog_, i, j), loss,
                                                                    output_bytes_, loss ? logits_copy_bytes_ : 0));
      }
  }

  // The interned label of a string literal of this file, looked up by its address (few).
  const OpLabel& interned(const char* literal) {
    for (const auto& [text, label] : labels_)
      if (text == literal) return label;
    labels_.emplace_back(literal, OpLabel(literal));
    return labels_.back().second;
  }

  // ---- communication groups
  // Instances of a group kind on a stage: [0] is the tracked group (of rank tp=cp=dp=0).
  std::vector<std::vector<std::int64_t>> instances(GroupKind kind, std::int64_t stage) const {
    std::vector<std::vector<std::int64_t>> out;
    const std::int64_t r0 = pl_.rank({0, 0, 0, stage});
    if (kind == GroupKind::ContextA2A) return cp_a2a_groups(stage);
    auto first = kind == GroupKind::Tensor                ? pl_.tp_group(r0)
                 : kind == GroupKind::Context             ? pl_.cp_group(r0)
                 : kind == GroupKind::DataContextInstance ? pl_.dp_cp_instance_group(r0)
                 : kind == GroupKind::DataContextReplicas ? pl_.dp_cp_replica_group(r0)
                                                          : pl_.dp_cp_group(r0);
    const bool local = topology::within_nvlink_domain(cl_, first);
    out.push_back(std::move(first));
    if (!opt_.symmetric_instances || local) return out;
    if (kind == GroupKind::Tensor) {
      for (std::int64_t cp = 0; cp < c_; ++cp)
        for (std::int64_t dp = 0; dp < dp_; ++dp)
          if (cp != 0 || dp != 0) out.push_back(pl_.tp_group(pl_.rank({0, cp, dp, stage})));
    } else if (kind == GroupKind::Context) {
      for (std::int64_t dp = 0; dp < dp_; ++dp)
        for (std::int64_t tp = 0; tp < t_; ++tp)
          if (tp != 0 || dp != 0) out.push_back(pl_.cp_group(pl_.rank({tp, 0, dp, stage})));
    } else if (kind == GroupKind::DataContext) {
      for (std::int64_t tp = 1; tp < t_; ++tp) out.push_back(pl_.dp_cp_group(pl_.rank({tp, 0, 0, stage})));
    } else {
      // The instance (or replica) groups of every TP rank: the blocks (or positions) of its DP x CP
      // group, each group once.
      for (std::int64_t tp = 0; tp < t_; ++tp)
        for (const std::int64_t r : pl_.dp_cp_group(pl_.rank({tp, 0, 0, stage}))) {
          auto g = kind == GroupKind::DataContextInstance ? pl_.dp_cp_instance_group(r) : pl_.dp_cp_replica_group(r);
          if (g.front() == r && (tp != 0 || r != out.front().front())) out.push_back(std::move(g));
        }
    }
    return out;
  }

  // One step of the CP ring as point-to-point pairs: every rank sends to its successor in its CP
  // group, from its own GPU and NIC (TransformerEngine's P2P ring; not split over NICs). With
  // a2a+p2p the ring joins the ranks at the same place of each all-to-all group (u apart in the CP
  // group, u the groups' size; parallel_state's hierarchical groups): the successor is u ranks on.
  std::vector<std::vector<std::int64_t>> cp_ring_pairs(std::int64_t stage) const {
    std::vector<std::vector<std::int64_t>> out;
    const auto u = static_cast<std::size_t>(s_.parallel.cp_a2a_size());
    for (const auto& g : instances(GroupKind::Context, stage))
      for (std::size_t i = 0; i < g.size(); ++i) out.push_back({g[i], g[(i + u) % g.size()]});
    return out;
  }
  // The all-to-all groups of a2a+p2p: each CP group cut into runs of u consecutive ranks.
  std::vector<std::vector<std::int64_t>> cp_a2a_groups(std::int64_t stage) const {
    std::vector<std::vector<std::int64_t>> out;
    const auto u = static_cast<std::size_t>(s_.parallel.cp_a2a_size());
    for (const auto& g : instances(GroupKind::Context, stage))
      for (std::size_t i = 0; i + u <= g.size(); i += u) out.emplace_back(g.begin() + static_cast<std::ptrdiff_t>(i), g.begin() + static_cast<std::ptrdiff_t>(i + u));
    return out;
  }

  std::vector<std::vector<std::int64_t>> pp_pairs(std::int64_t from, std::int64_t to) const {
    std::vector<std::vector<std::int64_t>> out;
    out.push_back({pl_.rank({0, 0, 0, from}), pl_.rank({0, 0, 0, to})});
    const bool local = cl_.nvlink_domain_of(out[0][0]) == cl_.nvlink_domain_of(out[0][1]);
    if (!opt_.symmetric_instances || local) return out;
    for (std::int64_t dp = 0; dp < dp_; ++dp)
      for (std::int64_t cp = 0; cp < c_; ++cp)
        for (std::int64_t tp = 0; tp < t_; ++tp)
          if (tp != 0 || cp != 0 || dp != 0) out.push_back({pl_.rank({tp, cp, dp, from}), pl_.rank({tp, cp, dp, to})});
    return out;
  }

  // The group of `kind` on `stage` (pairs with `to_stage` for pipeline and embedding groups).
  std::int32_t group(GroupKind kind, std::int64_t stage, std::int64_t to_stage = -1) {
    // The groups of a stage alone or with a neighbour, the most asked for, by direct index.
    const int rel = to_stage < 0 ? 0 : to_stage == stage + 1 ? 1 : to_stage == stage - 1 ? 2 : -1;
    std::size_t direct = 0;
    if (rel >= 0) {
      direct = (static_cast<std::size_t>(kind) * static_cast<std::size_t>(p_) + static_cast<std::size_t>(stage)) * 3 +
               static_cast<std::size_t>(rel);
      if (direct >= group_direct_.size()) group_direct_.resize(direct + 1, -1);
      if (group_direct_[direct] >= 0) return group_direct_[direct];
    }
    const std::uint64_t key = (static_cast<std::uint64_t>(kind) << 56) | (static_cast<std::uint64_t>(stage) << 28) |
                              static_cast<std::uint64_t>(to_stage + 1);
    auto it = group_index_.find(key);
    if (it != group_index_.end()) {
      if (rel >= 0) group_direct_[direct] = it->second;
      return it->second;
    }
    CommGroup g;
    g.kind = kind;
    if (!s_.cluster.ideal_network && kind != GroupKind::World) {
      const auto& par = s_.parallel;
      const GroupCache::Key ranks_key{cl_.instance_id(), par.tp, par.cp, par.dp, par.pp, par.distributed_optimizer_instances,
                                      par.cp_a2a_size(), par.rank_order, opt_.symmetric_instances,
                                      static_cast<int>(kind), stage, to_stage};
      g.instances = GroupCache::instance().get(ranks_key, [&] {
        if (kind == GroupKind::ContextRing) return cp_ring_pairs(stage);
        if (kind == GroupKind::Pipeline || kind == GroupKind::EmbeddingTie) return pp_pairs(stage, to_stage);
        return instances(kind, stage);
      });
    }
    const auto id = static_cast<std::int32_t>(out_.graph.groups.size());
    out_.graph.groups.push_back(std::move(g));
    group_index_.emplace(key, id);
    if (rel >= 0) group_direct_[direct] = id;
    return id;
  }

  // `count` back-to-back collectives of `message_bytes` each, over group `grp`.
  std::int32_t comm_op(OpKind kind, Collective coll, Stream stream, std::int64_t stage, Phase phase, std::int32_t grp,
                       double message_bytes, double count, const char* label, std::int64_t mb, std::int64_t chunk,
                       std::int64_t peer = -1) {
    const auto id = static_cast<std::int32_t>(out_.graph.op_count());
    Op& op = out_.graph.emplace_op();
    op.kind = kind;
    op.collective = coll;
    op.stream = stream;
    op.phase = phase;
    op.device = static_cast<std::int32_t>(stage);
    op.peer_device = static_cast<std::int32_t>(peer);
    op.stage = static_cast<std::int32_t>(stage);
    op.chunk = static_cast<std::int32_t>(chunk);
    op.micro_batch = static_cast<std::int32_t>(mb);
    op.group = grp;
    op.message_bytes = message_bytes;
    op.count = count;
    op.label = interned(label);
    return id;
  }

  // ---- buckets
  bool dp_active() const { return dp_ * c_ > 1; }
  // The group a sharded state is reduce-scattered and gathered over: DP x CP, or one
  // distributed-optimizer instance of it (parallel.distributed_optimizer_instances > 1).
  bool several_instances() const { return s_.parallel.distributed_optimizer_instances > 1; }
  GroupKind shard_group() const { return several_instances() ? GroupKind::DataContextInstance : GroupKind::DataContext; }
  // Whether every TP collective of a layer group runs beside its compute (tp_comm_overlap): the
  // compute is then slowed by comm_slowdown. The column-parallel layers' backward collectives of
  // software.tp_backward_overlap do not slow it: each runs beside one GEMM of its layer, a short
  // part of the group's compute, and comm_slowdown would charge the whole group.
  bool tp_overlap() const { return t_ > 1 && tp_with_compute_; }
  bool gathers_overlap() const {
    return dp_active() && s_.parallel.shards_optimizer() && !s_.parallel.shards_params() && s_.parallel.overlap_param_gather;
  }

  std::int32_t param_gather_op(std::int64_t stage, std::int64_t chunk, const workload::Bucket& b) {
    const double bytes = prog_.shape.activation_bytes_per_element * b.params;
    const auto op = comm_op(OpKind::Collective, Collective::AllGather, Stream::DpComm, stage, Phase::ParamGather,
                            group(shard_group(), stage), bytes, 1.0, "dp.param_ag", -1, chunk);
    out_.graph.stored_op(op).layer = static_cast<std::int32_t>(b.lowest_layer);
    return op;
  }

  void add_param_gathers_at_start() {
    if (!s_.parallel.shards_optimizer() || s_.parallel.shards_params() || !dp_active()) return;
    for (std::int64_t i = 0; i < p_; ++i)
      for (std::int64_t j = 0; j < v_; ++j) {
        const auto& bs = buckets_.of(i, j);
        auto& ops = gather_ops_[static_cast<std::size_t>(i * v_ + j)];
        // forward order: the bucket holding the first layers first
        for (std::size_t k = bs.size(); k-- > 0;) ops[k] = param_gather_op(i, j, bs[k]);
      }
  }

  // ---- passes
  std::size_t slot(std::int64_t stage, std::int64_t chunk, std::int64_t mb) const {
    return static_cast<std::size_t>((stage * v_ + chunk) * m_ + mb);
  }
  std::size_t chunk_slot(std::int64_t stage, std::int64_t chunk) const { return static_cast<std::size_t>(stage * v_ + chunk); }

  bool input_ready(std::int64_t stage, const workload::Pass& ps) const {
    if (ps.kind == workload::PassKind::Forward) {
      const auto prev = layout_.previous(stage, ps.chunk);
      return !prev || fwd_send_[slot(prev->stage, prev->chunk, ps.micro_batch)] >= 0;
    }
    const auto next = layout_.next(stage, ps.chunk);
    if (!next) return fwd_end_[slot(stage, ps.chunk, ps.micro_batch)] >= 0;
    return bwd_send_[slot(next->stage, next->chunk, ps.micro_batch)] >= 0;
  }

  // Splits a pass of a chunk's layers into op groups: per layer where asked or where buckets need
  // it. A chunk without transformer layers (the embedding or the loss alone) is one empty group.
  // The groups as [first, count] into `g` (cleared first; a scratch vector of the caller's, so
  // that a pass allocates nothing).
  void layer_groups(std::int64_t stage, std::int64_t chunk, bool split, std::vector<std::pair<std::int64_t, std::int64_t>>& g) const {
    g.clear();
    const std::int64_t n = layout_.layers(stage, chunk);
    if ((split || opt_.per_layer) && n > 0) {
      for (std::int64_t l = 0; l < n; ++l) g.emplace_back(l, 1);
    } else {
      g.emplace_back(0, n);
    }
  }

  std::int32_t compute_op(std::int64_t stage, std::int64_t chunk, std::int64_t mb, Phase phase, std::int64_t first_layer,
                          std::int32_t w, const char* label) {
    const auto id = static_cast<std::int32_t>(out_.graph.op_count());
    Op& op = out_.graph.emplace_op();
    op.kind = OpKind::Compute;
    op.phase = phase;
    op.stream = Stream::Compute;
    op.device = static_cast<std::int32_t>(stage);
    op.stage = static_cast<std::int32_t>(stage);
    op.chunk = static_cast<std::int32_t>(chunk);
    op.micro_batch = static_cast<std::int32_t>(mb);
    op.layer = static_cast<std::int32_t>(first_layer);
    op.work = w;
    op.label = interned(label);
    const double flops = out_.graph.works[static_cast<std::size_t>(w)].flops;
    auto& last = last_compute_[static_cast<std::size_t>(stage)];
    if (last >= 0) edge(last, id);
    last = id;
    auto& stage_flops = stage_flops_[static_cast<std::size_t>(stage)];
    stage_flops += flops;
    max_stage_flops_ = std::max(max_stage_flops_, stage_flops);
    return id;
  }

  void emit_pass(std::int64_t stage, const workload::Pass& ps) {
    const bool forward = ps.kind == workload::PassKind::Forward;
    const auto emit = [&] {
      if (forward)
        emit_forward(stage, ps.chunk, ps.micro_batch);
      else
        emit_backward(stage, ps.chunk, ps.micro_batch);
    };
    if (!opt_.reuse_passes || !uniform_pass(forward, ps.micro_batch)) return emit();
    const std::int32_t last = last_compute_[static_cast<std::size_t>(stage)];
    const std::int32_t dep = pass_input(forward, stage, ps.chunk, ps.micro_batch);
    const std::int32_t wait = p2p_wait_[forward ? 0 : 1][static_cast<std::size_t>(stage)];
    const std::size_t key =
        (((chunk_slot(stage, ps.chunk) * 2 + (forward ? 1U : 0U)) * 2 + (dep >= 0 ? 1U : 0U)) * 2 + (dep == last ? 1U : 0U)) * 2 +
        (wait >= 0 ? 1U : 0U);
    if (template_of_key_.size() <= key) template_of_key_.resize(static_cast<std::size_t>(p_ * v_) * 16, -1);
    std::int32_t& index = template_of_key_[key];
    if (index < 0) {
      index = static_cast<std::int32_t>(pass_templates_.size());
      pass_templates_.emplace_back();
    }
    PassTemplate& t = pass_templates_[static_cast<std::size_t>(index)];  // (emit() adds none: stays valid)
    if (t.usable) return replay(t, forward, stage, ps.chunk, ps.micro_batch, last, dep, wait);
    if (t.recorded) return emit();
    Recording rec;
    rec.base = static_cast<std::int32_t>(out_.graph.op_count());
    const std::size_t rec_at = out_.graph.ops.size();  // where its ops are stored
    rec.last = last;
    rec.input = dep;
    rec.wait = wait;
    rec.edges.swap(recorded_edges_);  // storage kept from one recording to the next
    rec.edges.clear();
    recording_ = &rec;
    emit();
    recording_ = nullptr;
    recorded_edges_.swap(rec.edges);
    t.recorded = true;
    const std::size_t sl = slot(stage, ps.chunk, ps.micro_batch);
    t.end = rec.ref(forward ? fwd_end_[sl] : -1);
    t.send = rec.ref(forward ? fwd_send_[sl] : bwd_send_[sl]);
    t.last_after = rec.ref(last_compute_[static_cast<std::size_t>(stage)]);
    const std::int32_t wait_after = p2p_wait_[forward ? 0 : 1][static_cast<std::size_t>(stage)];
    t.wait_after = wait_after >= 0 ? rec.ref(wait_after) : kNone;
    t.usable = rec.ok && t.send != kNoRef && (!forward || t.end != kNoRef) && t.last_after != kNoRef && t.wait_after != kNoRef;
    if (!t.usable) return;
    t.micro_batch = static_cast<std::int32_t>(ps.micro_batch);
    t.first_op = rec.base;
    t.ops.assign(out_.graph.ops.begin() + static_cast<std::ptrdiff_t>(rec_at), out_.graph.ops.end());
    t.compute_flops.clear();
    for (const Op& o : t.ops)
      if (o.kind == OpKind::Compute) t.compute_flops.push_back(out_.graph.works[static_cast<std::size_t>(o.work)].flops);
    t.edges.assign(recorded_edges_.begin(), recorded_edges_.end());
    if (opt_.compact_copies) make_pattern(t);
  }

  // ---- passes recorded once and replayed
  // A pass of a micro-batch that neither waits for parameter gathers (the first forward) nor
  // reduces gradients (the last backward, or every one): its ops and edges are those of every
  // other such pass of its stage, chunk and direction with the same inputs, up to the
  // micro-batch and the op indices. The first is emitted and recorded, the others are copies.
  bool uniform_pass(bool forward, std::int64_t mb) const {
    return forward ? mb != 0 : !(mb == m_ - 1 || reduces_every_micro_batch());
  }
  // The op of another stream or stage a pass waits for (as emit_forward and emit_backward find
  // it), -1 when none.
  std::int32_t pass_input(bool forward, std::int64_t stage, std::int64_t chunk, std::int64_t mb) const {
    if (forward) {
      const auto prev = layout_.previous(stage, chunk);
      return prev ? fwd_send_[slot(prev->stage, prev->chunk, mb)] : -1;
    }
    if (const auto next = layout_.next(stage, chunk)) return bwd_send_[slot(next->stage, next->chunk, mb)];
    return fwd_end_[slot(stage, chunk, mb)];
  }
  // An op a recorded pass names, as one number: one of its own by its place in the pass (>= 0),
  // the stage's previous pass end (last_compute_ before the pass: kLastRef), the pass's input
  // (pass_input: kInputRef), the send the pass waits for with overlap_p2p_comm (p2p_wait_ before
  // the pass: kWaitRef), or none of them (kNoRef); kNone: no op at all.
  static constexpr std::int32_t kLastRef = -1, kInputRef = -2, kWaitRef = -3, kNoRef = -4, kNone = -5;
  struct Recording {
    std::int32_t base = 0, last = -1, input = -1, wait = -1;
    bool ok = true;
    std::vector<std::pair<std::int32_t, std::int32_t>> edges;
    std::int32_t ref(std::int32_t op) const {
      if (op >= base) return op - base;
      if (op == last && op >= 0) return kLastRef;
      if (op == input && op >= 0) return kInputRef;
      if (op == wait && op >= 0) return kWaitRef;
      return kNoRef;
    }
    void add(std::int32_t before, std::int32_t after) {
      const std::int32_t a = ref(before), b = ref(after);
      if (a == kNoRef || b == kNoRef) ok = false;
      edges.emplace_back(a, b);
    }
  };
  struct PassTemplate {
    bool recorded = false, usable = false;
    std::int32_t micro_batch = -1;
    std::int32_t first_op = -1;  // the recorded pass's first op in the graph
    std::vector<Op> ops;
    std::vector<double> compute_flops;  // the FLOPs of its compute ops, in order
    std::vector<std::pair<std::int32_t, std::int32_t>> edges;
    // With compact_copies: the graph's pattern of the copies' in-edges, and the edges it leaves out.
    std::int32_t pattern = -1;
    std::vector<std::pair<std::int32_t, std::int32_t>> loose_edges;
    std::int32_t end = kNoRef, send = kNoRef;  // the pass's end (forward) and its send, what the next passes wait for
    // After the pass: the op the stage's next pass waits for (last_compute_), and the send its next
    // pass in the same direction waits for (p2p_wait_; kNone when none).
    std::int32_t last_after = kNoRef, wait_after = kNone;
  };

  // The copies' in-edges as a pattern of the graph (StepGraph::PassPattern): the recorded edges
  // into the pass's ops, by op and in the order they were added. Edges into an op outside the
  // pass, if any, stay edges that each copy adds.
  void make_pattern(PassTemplate& t) {
    // An edge into an op after the pass (or from an op neither in it nor one of its outside ops):
    // the copies list their edges.
    const auto n = static_cast<std::int32_t>(t.ops.size());
    for (const auto& [a, b] : t.edges)
      if (a >= n || b >= n || a < kWaitRef || b < kWaitRef) return;
    StepGraph::PassPattern p;
    p.source = t.first_op;
    p.micro_batch = t.micro_batch;
    p.first.assign(t.ops.size() + 1, 0);
    for (const auto& [a, b] : t.edges)
      if (b >= 0) ++p.first[static_cast<std::size_t>(b) + 1];
    for (std::size_t r = 0; r < t.ops.size(); ++r) p.first[r + 1] += p.first[r];
    p.refs.resize(static_cast<std::size_t>(p.first.back()));
    std::vector<std::int32_t> next(p.first.begin(), p.first.end() - 1);
    t.loose_edges.clear();
    for (const auto& [a, b] : t.edges) {
      if (b >= 0)
        p.refs[static_cast<std::size_t>(next[static_cast<std::size_t>(b)]++)] = a;
      else
        t.loose_edges.emplace_back(a, b);
    }
    t.pattern = out_.graph.add_pass_pattern(std::move(p));
  }
  // The recorded pass again for micro-batch `mb`: the same ops (those of the recorded micro-batch
  // now of `mb`), the same edges in the same order, the same stage FLOPs added op by op, the same
  // ends; the graph emit_forward or emit_backward would have made.
  void replay(const PassTemplate& t, bool forward, std::int64_t stage, std::int64_t chunk, std::int64_t mb, std::int32_t last,
              std::int32_t input, std::int32_t wait) {
    const auto base = static_cast<std::int32_t>(out_.graph.op_count());
    const auto mb32 = static_cast<std::int32_t>(mb);
    auto& stage_flops = stage_flops_[static_cast<std::size_t>(stage)];
    // The ops the references kLastRef, kInputRef and kWaitRef name, at outside[-1 - ref].
    const std::int32_t outside[3] = {last, input, wait};
    const auto at = [&](std::int32_t r) { return r >= 0 ? base + r : outside[-1 - r]; };
    if (t.pattern >= 0) {
      // Not stored: the graph notes the copy (its ops are those of the recorded pass).
      out_.graph.add_copied_pass(t.pattern, {last, input, wait}, mb32);
      for (const double flops : t.compute_flops) {
        stage_flops += flops;
        max_stage_flops_ = std::max(max_stage_flops_, stage_flops);
      }
      for (const auto& [a, b] : t.loose_edges) out_.graph.add_edge(at(a), at(b));
    } else {
      out_.graph.append_ops(t.ops.data(), t.ops.size(), [&](Op& o, std::size_t k) {
        if (o.micro_batch == t.micro_batch) o.micro_batch = mb32;
        // Priced as the recorded pass's op it copies (the same work, group, size and count).
        o.cost_of = t.first_op + static_cast<std::int32_t>(k);
      });
      for (const double flops : t.compute_flops) {
        stage_flops += flops;
        max_stage_flops_ = std::max(max_stage_flops_, stage_flops);
      }
      for (const auto& [a, b] : t.edges) out_.graph.add_edge(at(a), at(b));
    }
    const std::size_t sl = slot(stage, chunk, mb);
    if (forward) {
      fwd_end_[sl] = at(t.end);
      fwd_send_[sl] = at(t.send);
    } else {
      bwd_send_[sl] = at(t.send);
    }
    last_compute_[static_cast<std::size_t>(stage)] = at(t.last_after);
    p2p_wait_[forward ? 0 : 1][static_cast<std::size_t>(stage)] = t.wait_after == kNone ? -1 : at(t.wait_after);
  }

  // `before` must finish before `after` starts; noted in the pass being recorded.
  void edge(std::int32_t before, std::int32_t after) {
    out_.graph.add_edge(before, after);
    if (recording_ != nullptr) recording_->add(before, after);
  }

  // TP units and CP ring steps of layers [first, first + count) of (stage, chunk) in one direction.
  struct GroupComm {
    double tp_units = 0;       // in line: after the group's compute
    double tp_units_with = 0;  // beside the group's compute
    double cp_steps = 0;
    double cp_bytes = 0;
    // The CP group's collectives in line with the group's compute (all-gathers and reduce-scatters
    // of K and V, or Ulysses' all-to-alls), one entry per distinct collective and size.
    struct InLine {
      GroupKind group = GroupKind::Context;
      Collective collective = Collective::None;
      double bytes = 0;
      double count = 0;
    };
    std::array<InLine, 4> cp_in_line{};
    void add_cp_in_line(const workload::CollectiveWork& c) {
      for (auto& e : cp_in_line) {
        if (e.count > 0 && (e.group != c.group || e.collective != c.collective || e.bytes != c.bytes)) continue;
        e.group = c.group;
        e.collective = c.collective;
        e.bytes = c.bytes;
        e.count += c.count;
        return;
      }
      throw InternalError("a layer group has more than " + std::to_string(cp_in_line.size()) + " distinct CP collectives");
    }
  };
  GroupComm layer_comm(std::int64_t stage, std::int64_t chunk, std::int64_t first, std::int64_t count, bool forward) const {
    GroupComm g;
    const std::int64_t base = chunk_first_[chunk_slot(stage, chunk)];
    for (std::int64_t l = base + first; l < base + first + count; ++l) {
      const auto& lp = *prog_.layers[static_cast<std::size_t>(l)];
      const auto& cs = forward ? lp.forward.collectives : lp.backward.collectives;
      add_tp_units(g, cs);
      for (const auto& c : cs)
        if (c.group == GroupKind::ContextRing) g.cp_steps += c.count, g.cp_bytes = c.bytes;
        else if (c.group == GroupKind::Context || c.group == GroupKind::ContextA2A) g.add_cp_in_line(c);
    }
    return g;
  }

  // The embedding's or the output layer's work joins a layer group: its kernels and its TP units.
  void add_extra(Terms& terms, GroupComm& comm, std::int32_t list, const workload::PassProgram& pass) const {
    terms.emplace_back(list, 1.0);
    add_tp_units(comm, pass.collectives);
  }

  // The TP units of `cs`, in line and beside the compute.
  void add_tp_units(GroupComm& comm, const std::vector<workload::CollectiveWork>& cs) const {
    comm.tp_units += workload::collective_units(cs, GroupKind::Tensor, tp_bytes_, tp_unit_, workload::Overlap::AfterCompute);
    comm.tp_units_with += workload::collective_units(cs, GroupKind::Tensor, tp_bytes_, tp_unit_, workload::Overlap::WithCompute);
  }

  // A layer group's compute work and its communication, the same for every micro-batch: made by
  // `make` the first time a (direction, stage, chunk, split, group, shares) is emitted, then
  // reused, so that the passes of the other micro-batches build no term lists. `make` adds the
  // work where the first pass would have, so the graph is the one built without reuse.
  struct GroupWork {
    std::int32_t work = -1;
    GroupComm comm;
  };
  template <typename Make>
  const GroupWork& group_work(bool forward, std::int64_t stage, std::int64_t chunk, bool split, std::size_t gi, bool shares, Make&& make) {
    if (!opt_.reuse_group_work) {
      unshared_work_ = make();
      return unshared_work_;
    }
    // Per (stage, chunk, direction, split, shares): the chunk's groups by index.
    const std::size_t slot = chunk_slot(stage, chunk) * 8 + (forward ? 4U : 0U) + (split ? 2U : 0U) + (shares ? 1U : 0U);
    if (group_works_.size() <= slot) group_works_.resize(static_cast<std::size_t>(p_ * v_) * 8);
    auto& works = group_works_[slot];
    if (works.size() <= gi) works.resize(gi + 1);
    if (works[gi].work < 0) works[gi] = make();
    return works[gi];
  }

  void emit_forward(std::int64_t stage, std::int64_t chunk, std::int64_t mb) {
    const bool first_virtual = layout_.is_first(stage, chunk);
    const bool last_virtual = layout_.is_last(stage, chunk);
    const auto& bs = buckets_.of(stage, chunk);
    const auto& gathers = gather_ops_[chunk_slot(stage, chunk)];
    const bool wait_params = mb == 0 && s_.parallel.overlap_param_gather && bs.size() > 1 && gathers.front() >= 0;
    // The previous virtual stage's send of this micro-batch, which the first group waits for.
    std::optional<std::int32_t> dep;
    if (const auto prev = layout_.previous(stage, chunk)) dep = fwd_send_[slot(prev->stage, prev->chunk, mb)];
    const std::int64_t base = chunk_first_[chunk_slot(stage, chunk)];
    std::int32_t prev = -1;
    auto& groups = fwd_groups_;
    layer_groups(stage, chunk, wait_params, groups);
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      // Named copies, not a structured binding: the work lambdas below capture them.
      const std::int64_t first = groups[gi].first, count = groups[gi].second;
      const bool head = gi == 0, tail = gi + 1 == groups.size();
      // The CP ring, overlapped TP collectives, and the parameter all-gathers still running during
      // the first micro-batch (those of later buckets and chunks) share the SMs.
      const bool shares = cp_ring() || tp_overlap() || (mb == 0 && gathers_pending(stage, chunk, first + std::max<std::int64_t>(count, 1))) ||
                          (head && prefetches_params());
      const GroupWork& gw = group_work(true, stage, chunk, wait_params, gi, shares, [&] {
        Terms& terms = group_terms_;
        terms.clear();
        if (head && host_ >= 0) terms.emplace_back(host_, 1.0);
        for (std::int64_t l = base + first; l < base + first + count; ++l) terms.emplace_back(layer_fwd_[static_cast<std::size_t>(l)], 1.0);
        auto comm = layer_comm(stage, chunk, first, count, true);
        if (head && first_virtual) add_extra(terms, comm, emb_fwd_, prog_.embedding_forward);
        if (tail && last_virtual) add_extra(terms, comm, out_fwd_, prog_.output_forward);
        return GroupWork{work(terms, shares), comm};
      });
      const GroupComm comm = gw.comm;
      const auto op = compute_op(stage, chunk, mb, Phase::Forward, first, gw.work, "fwd");
      if (head) wait_for_send(stage, true, op);
      if (dep) edge(*dep, op);
      dep.reset();
      if (prev >= 0) edge(prev, op);
      if (mb == 0 && s_.parallel.overlap_param_gather)
        for (std::size_t k = 0; k < bs.size(); ++k)
          if (gathers[k] >= 0 && in_group(bs[k], first, count))
            edge(gathers[k], op);
      auto& o = out_.graph.stored_op(op);
      if (head) o.alloc_bytes = chunk_bytes_[chunk_slot(stage, chunk)] + (last_virtual ? output_bytes_ : 0);
      // The bf16 logits beside their fp32 copy while the loss runs.
      if (tail && last_virtual) {
        o.alloc_bytes += logits_copy_bytes_;
        o.free_bytes += logits_copy_bytes_;
      }
      std::int32_t end = op;
      if (head) end = unshard_params(stage, chunk, mb, Phase::Forward, op, end);
      if (comm.cp_steps > 0) end = add_cp(stage, chunk, mb, Phase::Forward, comm, op, end);
      end = add_cp_in_line(stage, chunk, mb, Phase::Forward, comm, end);
      if (t_ > 1) {
        end = add_tp(stage, chunk, mb, Phase::Forward, comm, op, end);
        if (tail && last_virtual) end = add_cross_entropy(stage, chunk, mb, end, Phase::Forward);
      }
      prev = end;
    }
    fwd_end_[slot(stage, chunk, mb)] = prev;
    const auto next = layout_.next(stage, chunk);
    fwd_send_[slot(stage, chunk, mb)] =
        next ? pp_send(stage, next->stage, chunk, mb, Phase::Forward, "pp.send_act", prev) : prev;
    pass_done(stage, true, prev, next ? fwd_send_[slot(stage, chunk, mb)] : -1);
  }

  // TP collectives are synchronous inside a pass. Megatron's pipeline send/receive pairs block: the
  // stage's next pass starts after the pass's send. With overlap_p2p_comm (the interleaved schedule)
  // the next pass starts after the pass's compute (`end`), and the send (`send`, -1 when none) holds
  // back only the stage's next pass in the same direction (schedules.py waits for fwd_wait_handles
  // before a forward, bwd_wait_handles before a backward).
  void pass_done(std::int64_t stage, bool forward, std::int32_t end, std::int32_t send) {
    const auto st = static_cast<std::size_t>(stage);
    if (!s_.parallel.overlap_p2p_comm) {
      last_compute_[st] = send >= 0 ? send : end;
      return;
    }
    last_compute_[st] = end;
    p2p_wait_[forward ? 0 : 1][st] = send;
  }
  // The first op of a pass waits for the send of the stage's previous pass in its direction
  // (overlap_p2p_comm).
  void wait_for_send(std::int64_t stage, bool forward, std::int32_t op) {
    auto& wait = p2p_wait_[forward ? 0 : 1][static_cast<std::size_t>(stage)];
    if (wait >= 0) edge(wait, op);
    wait = -1;
  }

  // The activation (forward) or its gradient (backward) of one micro-batch to a neighbouring stage.
  std::int32_t pp_send(std::int64_t stage, std::int64_t to_stage, std::int64_t chunk, std::int64_t mb, Phase phase,
                       const char* label, std::int32_t after) {
    const auto& w = prog_.pipeline_send;
    const auto send = comm_op(OpKind::SendRecv, w.collective, Stream::PpComm, stage, phase,
                              group(GroupKind::Pipeline, stage, to_stage), w.bytes, w.count, label, mb, chunk, to_stage);
    edge(after, send);
    return send;
  }

  // A zero-time op that waits for `preds` (those >= 0): the op to depend on when several must end.
  std::int32_t join_op(std::int64_t stage, Stream stream, Phase phase, const char* label, std::initializer_list<std::int32_t> preds,
                       const std::vector<std::int32_t>& more = {}) {
    const auto id = static_cast<std::int32_t>(out_.graph.op_count());
    Op& op = out_.graph.emplace_op();
    op.kind = OpKind::Delay;
    op.phase = phase;
    op.stream = stream;
    op.device = static_cast<std::int32_t>(stage);
    op.stage = static_cast<std::int32_t>(stage);
    op.label = interned(label);
    for (auto p : preds)
      if (p >= 0) edge(p, id);
    for (auto p : more) edge(p, id);
    return id;
  }

  // The next op of a layer group waits for its compute `a` and a collective `b` on another stream.
  std::int32_t join(std::int32_t a, std::int32_t b, std::int64_t stage) {
    return join_op(stage, Stream::CpComm, Phase::Other, "join", {a, b});
  }

  // The TP/SP collectives of a layer group (all-gathers and reduce-scatters of one size, planned
  // as one ring). Those Megatron runs in line with the GEMMs follow the group's compute: the group
  // ends after them. Those that run beside the GEMMs (all of them with tp_comm_overlap,
  // TransformerEngine userbuffers; the column-parallel layers' backward ones with
  // software.tp_backward_overlap) start with the group's compute, which they slow by
  // comm_slowdown, and the group ends when both have. Both kinds share the TP stream: those in
  // line follow those beside (and end the group).
  std::int32_t add_tp(std::int64_t stage, std::int64_t chunk, std::int64_t mb, Phase phase, const GroupComm& comm,
                      std::int32_t compute, std::int32_t end) {
    const char* label = s_.parallel.sequence_parallel ? "tp.ag_rs" : "tp.ar";
    const bool beside = comm.tp_units_with > 0;
    std::int32_t with = -1;
    if (beside) {
      with = comm_op(OpKind::Collective, tp_unit_, Stream::TpComm, stage, phase, group(GroupKind::Tensor, stage), tp_bytes_,
                     comm.tp_units_with, label, mb, chunk);
      starts_with(compute, with);
      if (comm.tp_units <= 0) return join(end, with, stage);
    }
    const auto in_line = comm_op(OpKind::Collective, tp_unit_, Stream::TpComm, stage, phase, group(GroupKind::Tensor, stage),
                                 tp_bytes_, comm.tp_units, label, mb, chunk);
    edge(end, in_line);
    if (beside) edge(with, in_line);
    return in_line;
  }

  // The CP ring of a layer group (c - 1 point-to-point steps per layer, each a send of one rank's
  // K and V to the next; dK and dV too in the backward) runs beside the group's attention and
  // nothing else: TransformerEngine's ring (AttnFuncWithCPAndKVP2P) exchanges step i + 1's block
  // while step i's attention kernel runs, so it hides behind (c - 1)/c of the attention kernels'
  // time (the last step exchanges nothing), and the layer waits for the rest. The ring therefore
  // starts after a delay of the group's compute less that window (a Delay op with the group's
  // work), and the group ends when both have (and `end`, what else the group waits for): its
  // time is the compute's plus whatever of the ring the window did not hide.
  std::int32_t add_cp(std::int64_t stage, std::int64_t chunk, std::int64_t mb, Phase phase, const GroupComm& comm,
                      std::int32_t compute, std::int32_t end) {
    const std::int32_t work = out_.graph.stored_op(compute).work;
    const auto before = join_op(stage, Stream::CpComm, phase, "cp.wait", {});
    starts_with(compute, before);
    auto& w = out_.graph.stored_op(before);
    w.work = work;
    const double ring = d(s_.parallel.cp_ring_size());
    w.count = (ring - 1.0) / ring;
    const auto cp = comm_op(OpKind::Collective, Collective::SendRecv, Stream::CpComm, stage, phase,
                            group(GroupKind::ContextRing, stage), comm.cp_bytes, comm.cp_steps,
                            phase == Phase::Forward ? "cp.kv" : "cp.kv_dkv", mb, chunk);
    edge(before, cp);
    return join(end, cp, stage);
  }

  // The CP group's collectives that run in line (cp_comm_type all_gather, a2a, a2a+p2p's all-to-alls): after `end`, one
  // after another on the CP stream; the group ends after them.
  std::int32_t add_cp_in_line(std::int64_t stage, std::int64_t chunk, std::int64_t mb, Phase phase, const GroupComm& comm,
                              std::int32_t end) {
    for (const auto& c : comm.cp_in_line) {
      if (c.count <= 0) continue;
      const char* label = c.collective == Collective::AllGather ? "cp.kv_ag" : c.collective == Collective::ReduceScatter ? "cp.dkv_rs" : "cp.a2a";
      const auto op = comm_op(OpKind::Collective, c.collective, Stream::CpComm, stage, phase, group(c.group, stage), c.bytes, c.count,
                              label, mb, chunk);
      edge(end, op);
      end = op;
    }
    return end;
  }
  // Whether CP ranks pass K and V around a ring beside the attention (cp_comm_type p2p, a2a+p2p).
  bool cp_ring() const { return s_.parallel.cp_ring_size() > 1; }

  // Sharded parameters (ZeRO-3): before each forward and backward pass of a chunk its parameters are
  // all-gathered in bf16 over DP x CP (the bytes of its per-layer gathers in one collective) and
  // freed after. Prefetched (overlap_param_gather) the gather runs alongside the pass's compute and
  // the pass ends when both have; otherwise the pass waits for it. Returns the pass's new end.
  bool prefetches_params() const { return s_.parallel.shards_params() && dp_active() && s_.parallel.overlap_param_gather; }
  std::int32_t unshard_params(std::int64_t stage, std::int64_t chunk, std::int64_t mb, Phase phase, std::int32_t compute, std::int32_t end) {
    if (!s_.parallel.shards_params() || !dp_active()) return end;
    double params = d(layout_.layers(stage, chunk)) * workload::layer_params(s_);
    if (layout_.is_first(stage, chunk)) params += workload::embedding_params(s_);
    if (layout_.is_last(stage, chunk)) params += workload::output_params(s_) + workload::final_norm_params(s_);
    const auto ag = comm_op(OpKind::Collective, Collective::AllGather, Stream::DpComm, stage, phase, group(shard_group(), stage),
                            prog_.shape.activation_bytes_per_element * params, 1.0, "dp.param_unshard", mb, chunk);
    starts_with(compute, ag);
    if (!s_.parallel.overlap_param_gather) {
      edge(ag, compute);
      return end;
    }
    return join(end, ag, stage);
  }

  // `op` may start exactly when `compute` may: it gets the same predecessors (`compute` is an op of
  // the pass being emitted, whose edges are all listed, copied passes or not).
  void starts_with(std::int32_t compute, std::int32_t op) {
    for (const auto p : out_.graph.listed_predecessors(compute)) edge(p, op);
  }

  // Parameter all-gathers (overlapped with the first micro-batch) still to run when the forward of
  // (stage, chunk) is past layer `next_layer`: later buckets of the chunk, and later chunks.
  bool gathers_pending(std::int64_t stage, std::int64_t chunk, std::int64_t next_layer) const {
    if (!gathers_overlap()) return false;
    for (std::int64_t j = chunk; j < v_; ++j)
      for (const auto& b : buckets_.of(stage, j))
        if (j > chunk || b.lowest_layer >= next_layer) return true;
    return false;
  }

  // Gradient reductions running while the last backward of (stage, chunk) computes layers below
  // `end_layer`: buckets it has completed above them, and the chunks it finished before.
  bool reductions_running(std::int64_t stage, std::int64_t chunk, std::int64_t end_layer) const {
    if (!dp_active() || !reduces_in_backward()) return false;
    for (std::int64_t j = chunk; j < v_; ++j)
      for (const auto& b : buckets_.of(stage, j))
        if (j > chunk || b.lowest_layer >= end_layer) return true;
    return false;
  }

  // The output layer's collectives other than its S-byte ring units: the vocabulary-parallel
  // cross-entropy's all-reduces, latency-bound.
  std::int32_t add_cross_entropy(std::int64_t stage, std::int64_t chunk, std::int64_t mb, std::int32_t after, Phase phase) {
    std::int32_t end = after;
    for (const auto& c : prog_.output_forward.collectives) {
      if (c.group != GroupKind::Tensor || c.bytes == tp_bytes_) continue;
      const auto op = comm_op(OpKind::Collective, c.collective, Stream::TpComm, stage, phase, group(GroupKind::Tensor, stage), c.bytes,
                              c.count, "tp.ce_ar", mb, chunk);
      edge(end, op);
      end = op;
    }
    return end;
  }

  void emit_backward(std::int64_t stage, std::int64_t chunk, std::int64_t mb) {
    const bool first_virtual = layout_.is_first(stage, chunk);
    const bool last_virtual = layout_.is_last(stage, chunk);
    const auto& bs = buckets_.of(stage, chunk);
    const bool last_mb = mb == m_ - 1;
    const bool reduces = last_mb || reduces_every_micro_batch();
    const bool split = reduces && dp_active() && reduces_in_backward() && bs.size() > 1;
    std::int32_t dep = fwd_end_[slot(stage, chunk, mb)];
    if (const auto next = layout_.next(stage, chunk)) dep = bwd_send_[slot(next->stage, next->chunk, mb)];
    const std::int64_t base = chunk_first_[chunk_slot(stage, chunk)];
    auto& groups = bwd_groups_;
    layer_groups(stage, chunk, split, groups);
    std::reverse(groups.begin(), groups.end());
    std::int32_t prev = dep;
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      // Named copies, not a structured binding: the work lambdas below capture them.
      const std::int64_t first = groups[gi].first, count = groups[gi].second;
      const bool head = gi == 0, tail = gi + 1 == groups.size();
      // The CP ring, overlapped TP collectives, and the gradient reductions of buckets this
      // backward has already completed (last micro-batch) share the SMs.
      const bool shares = cp_ring() || tp_overlap() || (reduces && reductions_running(stage, chunk, first + std::max<std::int64_t>(count, 1))) ||
                          (head && prefetches_params());
      const GroupWork& gw = group_work(false, stage, chunk, split, gi, shares, [&] {
        Terms& terms = group_terms_;
        terms.clear();
        if (head && host_ >= 0) terms.emplace_back(host_, 1.0);
        for (std::int64_t l = base + first; l < base + first + count; ++l) terms.emplace_back(layer_bwd_[static_cast<std::size_t>(l)], 1.0);
        for (std::int64_t l = base + first; l < base + first + count; ++l) terms.emplace_back(layer_rec_[static_cast<std::size_t>(l)], 1.0);
        auto comm = layer_comm(stage, chunk, first, count, false);
        if (head && last_virtual) add_extra(terms, comm, out_bwd_, prog_.output_backward);
        if (tail && first_virtual) add_extra(terms, comm, emb_bwd_, prog_.embedding_backward);
        return GroupWork{work(terms, shares), comm};
      });
      const GroupComm comm = gw.comm;
      const auto op = compute_op(stage, chunk, mb, Phase::Backward, first, gw.work, "bwd");
      if (head) wait_for_send(stage, false, op);
      if (prev >= 0) edge(prev, op);
      auto& o = out_.graph.stored_op(op);
      // The working set (on the loss's chunk, the bf16 gradient of the logits cast from the fp32
      // one, beside it, first): memory::backward_pass_alloc_bytes.
      const std::int64_t working = backward_alloc_[chunk_slot(stage, chunk)];
      if (head) o.alloc_bytes = working;
      if (tail) o.free_bytes = chunk_bytes_[chunk_slot(stage, chunk)] + (last_virtual ? output_bytes_ : 0) + working;
      std::int32_t end = op;
      if (comm.cp_steps > 0) end = add_cp(stage, chunk, mb, Phase::Backward, comm, op, end);
      end = add_cp_in_line(stage, chunk, mb, Phase::Backward, comm, end);
      if (t_ > 1) end = add_tp(stage, chunk, mb, Phase::Backward, comm, op, end);
      if (head) end = unshard_params(stage, chunk, mb, Phase::Backward, op, end);
      prev = end;
      if (reduces) finish_buckets(stage, chunk, first, count, end);
    }
    const auto previous = layout_.previous(stage, chunk);
    bwd_send_[slot(stage, chunk, mb)] =
        previous ? pp_send(stage, previous->stage, chunk, mb, Phase::Backward, "pp.send_grad", prev) : prev;
    pass_done(stage, false, prev, previous ? bwd_send_[slot(stage, chunk, mb)] : -1);
  }

  // Whether a bucket starts in the layer group [first, first + count) (the empty group of a chunk
  // without layers holds its chunk's bucket).
  static bool in_group(const workload::Bucket& b, std::int64_t first, std::int64_t count) {
    return b.lowest_layer >= first && b.lowest_layer < first + std::max<std::int64_t>(count, 1);
  }

  // Gradient reduction of one bucket over DP x CP: reduce-scatter with a sharded optimizer,
  // all-reduce without; in the main-gradient dtype (training.grad_dtype). With several
  // distributed-optimizer instances (Megatron's param_and_grad_buffer.py) the reduce-scatter runs
  // within the instance and the shard it leaves, bytes / (DP x CP / N), is then all-reduced across
  // the N instances, on the same stream.
  void grad_reduce_op(std::int64_t stage, std::int64_t chunk, const workload::Bucket& b, std::int32_t after) {
    const bool distopt = s_.parallel.shards_optimizer();
    const auto kind = distopt ? Collective::ReduceScatter : Collective::AllReduce;
    const double bytes = prog_.shape.grad_bytes_per_param * b.params;
    const auto op = comm_op(OpKind::Collective, kind, Stream::DpComm, stage, Phase::GradReduce, group(shard_group(), stage),
                            bytes, 1.0, distopt ? "dp.grad_rs" : "dp.grad_ar", -1, chunk);
    out_.graph.stored_op(op).layer = static_cast<std::int32_t>(b.lowest_layer);
    edge(after, op);
    grad_ops_[static_cast<std::size_t>(stage)].push_back(op);
    if (!distopt || !several_instances()) return;
    const auto ar = comm_op(OpKind::Collective, Collective::AllReduce, Stream::DpComm, stage, Phase::GradReduce,
                            group(GroupKind::DataContextReplicas, stage), bytes / d(s_.parallel.shard_group_size()), 1.0,
                            "dp.grad_ar_instances", -1, chunk);
    out_.graph.stored_op(ar).layer = static_cast<std::int32_t>(b.lowest_layer);
    edge(op, ar);
    grad_ops_[static_cast<std::size_t>(stage)].push_back(ar);
  }

  // With overlap, a bucket's reduction starts as soon as the last micro-batch's backward has
  // finished the bucket's lowest layer (Megatron launches it from the gradient hook). Sharded
  // gradients are reduce-scattered so after every micro-batch's backward, into the kept shard.
  bool reduces_every_micro_batch() const { return s_.parallel.shards_grads(); }
  bool reduces_in_backward() const { return s_.parallel.overlap_grad_reduce || reduces_every_micro_batch(); }
  void finish_buckets(std::int64_t stage, std::int64_t chunk, std::int64_t first, std::int64_t count, std::int32_t after) {
    if (!dp_active() || !reduces_in_backward()) return;
    for (const auto& b : buckets_.of(stage, chunk))
      if (in_group(b, first, count)) grad_reduce_op(stage, chunk, b, after);
  }

  // Megatron's finalize_model_grads and optimizer step: every stage waits for its gradient
  // reductions, all-reduces the norm-weight gradients over TP (partial sums under SP), the first
  // and last stages all-reduce the tied embedding's gradient (p > 1), then one global all-reduce
  // of the gradient norm (for clipping) makes every stage's optimizer wait for the slowest stage.
  // The optimizer updates the local shard; without overlap the parameter all-gathers follow it.
  void add_step_end() {
    std::vector<std::int32_t> ready;  // per stage: the op its optimizer may start after
    for (std::int64_t stage = 0; stage < p_; ++stage) {
      const auto last = last_compute_[static_cast<std::size_t>(stage)];
      // Without overlap the gradient reduction starts once the whole backward of the stage is done.
      if (dp_active() && !reduces_in_backward())
        for (std::int64_t j = 0; j < v_; ++j)
          for (const auto& b : buckets_.of(stage, j)) grad_reduce_op(stage, j, b, last);
      // With overlap_p2p_comm the stage's last sends are waited for at the end of the schedule.
      const auto sync = join_op(stage, Stream::DpComm, Phase::GradReduce, "grads_ready",
                                {last, p2p_wait_[0][static_cast<std::size_t>(stage)], p2p_wait_[1][static_cast<std::size_t>(stage)]},
                                grad_ops_[static_cast<std::size_t>(stage)]);
      std::int32_t done = sync;
      if (t_ > 1 && s_.parallel.sequence_parallel) {
        // fp32 partial sums of the norm weights: the layers' norms (two, and the query and key norms
        // with model.qk_norm), the final norm on the last stage.
        const double norm_params = d(layout_.stage_layers(stage)) * workload::layer_norm_params(s_) +
                                   (stage == p_ - 1 ? workload::final_norm_params(s_) : 0.0);
        done = comm_op(OpKind::Collective, Collective::AllReduce, Stream::TpComm, stage, Phase::GradReduce,
                       group(GroupKind::Tensor, stage), 4.0 * norm_params, 1.0, "tp.norm_grad_ar", -1, -1);
        edge(sync, done);
      }
      ready.push_back(done);
    }
    if (s_.model.tied_embeddings && p_ > 1) {
      const double bytes = prog_.shape.grad_bytes_per_param * workload::embedding_params(s_);
      const auto op = comm_op(OpKind::Collective, Collective::AllReduce, Stream::DpComm, 0, Phase::GradReduce,
                              group(GroupKind::EmbeddingTie, 0, p_ - 1), bytes, 1.0, "emb.grad_ar", -1, -1);
      edge(ready.front(), op);
      edge(ready.back(), op);
      ready.front() = op;
    }
    // The gradient-norm all-reduce: a few bytes over every rank, latency only (its time is the
    // cost model's; the op is a delay over the world group).
    const auto norm_op = join_op(0, Stream::DpComm, Phase::GradReduce, "grad_norm_ar", {}, ready);
    {
      auto& o = out_.graph.stored_op(norm_op);
      o.collective = Collective::AllReduce;
      o.group = group(GroupKind::World, 0);
    }
    for (std::int64_t stage = 0; stage < p_; ++stage) {
      const double params = workload::stage_params(s_, stage);
      const double shard = s_.parallel.shards_optimizer() ? params / d(s_.parallel.shard_group_size()) : params;
      const auto list = add_list(workload::optimizer_step(s_, shard));
      const auto op = compute_op(stage, -1, -1, Phase::Optimizer, -1, work({{list, 1.0}}, false), "optimizer");
      edge(norm_op, op);
      if (!s_.parallel.overlap_param_gather && s_.parallel.shards_optimizer() && !s_.parallel.shards_params() && dp_active()) {
        std::int32_t prev = op;
        for (std::int64_t j = 0; j < v_; ++j) {
          const auto& bs = buckets_.of(stage, j);
          for (auto it = bs.rbegin(); it != bs.rend(); ++it) {
            const auto ag = param_gather_op(stage, j, *it);
            edge(prev, ag);
            prev = ag;
          }
        }
      }
    }
  }

  const Scenario& s_;
  const topology::Cluster& cl_;
  BuildOptions opt_;
  topology::Placement pl_;
  std::vector<std::pair<std::int64_t, std::int64_t>> fwd_groups_, bwd_groups_;  // layer_groups of the pass being emitted
  workload::StepProgram prog_;
  workload::PipelineLayout layout_;
  workload::BucketPlan buckets_;
  std::int64_t p_ = 1, v_ = 1, m_ = 1, t_ = 1, c_ = 1, dp_ = 1;
  // Kernel lists of each layer (by model layer) and of the embedding and output layer.
  std::vector<std::int32_t> layer_fwd_, layer_bwd_, layer_rec_;
  std::int32_t emb_fwd_ = -1, emb_bwd_ = -1, out_fwd_ = -1, out_bwd_ = -1, host_ = -1;
  std::vector<double> list_flops_;
  struct WorkKeyHash {
    std::size_t operator()(const std::pair<Terms, bool>& k) const {
      std::uint64_t h = k.second ? 0x9e3779b97f4a7c15ULL : 0;
      for (const auto& [list, count] : k.first) {
        h ^= static_cast<std::uint64_t>(list) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        h ^= std::bit_cast<std::uint64_t>(count) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      }
      return static_cast<std::size_t>(h);
    }
  };
  std::unordered_map<std::pair<Terms, bool>, std::int32_t, WorkKeyHash> work_index_;
  std::pair<Terms, bool> work_key_;  // work()'s key, its storage reused
  Terms group_terms_;                 // a layer group's terms as group_work() makes them, storage reused
  std::vector<std::pair<std::int32_t, std::int32_t>> recorded_edges_;  // the edges of the pass being recorded, storage reused
  std::vector<std::vector<GroupWork>> group_works_;  // group_work(), by (stage, chunk, direction, split, shares), group
  GroupWork unshared_work_;                                   // group_work() without reuse
  // By (kind, stage, to_stage + 1), packed.
  std::unordered_map<std::uint64_t, std::int32_t> group_index_;
  std::vector<std::int32_t> group_direct_;  // by (kind, stage, neighbour), -1: not made yet
  Collective tp_unit_ = Collective::AllGather;
  double tp_bytes_ = 0;
  bool tp_with_compute_ = false;
  // Per (stage, chunk): activation bytes of a forward pass and its first model layer.
  std::vector<std::int64_t> chunk_bytes_, chunk_first_;
  std::int64_t output_bytes_ = 0, logits_copy_bytes_ = 0;
  std::vector<std::int64_t> backward_alloc_;  // per (stage, chunk): what a backward pass allocates at its start
  std::vector<std::vector<std::int32_t>> gather_ops_;  // per (stage, chunk), per bucket: overlapped parameter all-gather
  // last_compute_: the op the stage's next compute op waits for (the end of its previous pass).
  std::vector<std::int32_t> last_compute_, fwd_end_, fwd_send_, bwd_send_;
  // Per direction (forward, backward) and stage, with overlap_p2p_comm: the send of the stage's last
  // pass in that direction, which its next pass in that direction waits for (-1: none).
  std::array<std::vector<std::int32_t>, 2> p2p_wait_;
  std::deque<std::pair<const char*, OpLabel>> labels_;  // interned(): stable references
  std::vector<std::vector<std::int32_t>> grad_ops_;  // per stage
  std::vector<double> stage_flops_;                  // per stage
  double max_stage_flops_ = 0;
  std::vector<PassTemplate> pass_templates_;    // those of the keys met
  // By key (stage, chunk, direction, has input, input is the stage's last op, waits): the index of
  // its template in pass_templates_, -1 before its first pass.
  std::vector<std::int32_t> template_of_key_;
  Recording* recording_ = nullptr;            // the pass being recorded
  BuiltStep out_;
};

}  // namespace

BuiltStep build_step_graph(const Scenario& s, const topology::Cluster& cluster, const BuildOptions& options) {
  return Builder(s, cluster, options).build();
}

BuiltStep build_step(const Scenario& s, const topology::Cluster& cluster, const costmodel::ComputeModel& compute,
                     const BuildOptions& options) {
  BuiltStep step = build_step_graph(s, cluster, options);
  cost_step(step.graph, cluster, compute, options.comm);
  return step;
}

}  // namespace stepsim::sim
