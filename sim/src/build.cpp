#include "stepsim/sim/build.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <tuple>

#include "stepsim/memory/estimator.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/workload/kernels.hpp"
#include "stepsim/workload/params.hpp"
#include "stepsim/workload/schedule.hpp"
#include "stepsim/workload/shape.hpp"

namespace stepsim::sim {

using costmodel::Collective;
using scenarios::Recompute;
using scenarios::Scenario;

namespace {

double d(std::int64_t x) { return static_cast<double>(x); }

// Megatron's gradient bucket size: max(40e6, 1e6 * data-parallel size) parameters
// (megatron/core/distributed; training-step.md section 6).
double bucket_size_params(const Scenario& s) { return std::max(40e6, 1e6 * d(s.parallel.dp * s.parallel.cp)); }

struct Bucket {
  double params = 0;
  std::int64_t lowest_layer = 0;   // the bucket's first layer in forward order (inside the chunk): its
                                   // forward needs the gathered parameters, its backward completes the bucket
  std::int64_t highest_layer = 0;  // the bucket's last layer
  std::int32_t gather_op = -1;     // parameter all-gather op (overlapped with the forward)
};

class Builder {
 public:
  Builder(const Scenario& s, const topology::Cluster& cluster, const costmodel::ComputeModel& compute,
          const BuildOptions& opt)
      : s_(s), cl_(cluster), cm_(compute), opt_(opt), pl_(s.parallel, s.parallel.rank_order) {
    p_ = s.parallel.pp;
    v_ = s.parallel.vpp;
    m_ = s.micro_batches();
    t_ = s.parallel.tp;
    c_ = s.parallel.cp;
    dp_ = s.parallel.dp;
    if (pl_.world_size() != s.world_size())
      throw InternalError("placement covers " + std::to_string(pl_.world_size()) + " ranks, the cluster has " +
                          std::to_string(s.world_size()));
  }

  BuiltStep build() {
    precompute_costs();
    for (std::int64_t i = 0; i < p_; ++i) {
      Device dev;
      dev.stage = static_cast<std::int32_t>(i);
      dev.gpu = pl_.rank({0, 0, 0, i});
      dev.multiplicity = t_ * c_ * dp_;
      dev.static_bytes = memory::static_bytes(s_, i);
      dev.capacity_bytes = static_cast<std::int64_t>(s_.cluster.gpu.memory_bytes);
      out_.graph.devices.push_back(dev);
    }
    plan_buckets();
    if (s_.parallel.overlap_param_gather) add_param_gathers_at_start();

    last_compute_.assign(static_cast<std::size_t>(p_), -1);
    // Each step starts by clearing the gradient buffer of the stage's parameters.
    for (std::int64_t i = 0; i < p_; ++i) {
      const auto z = cost(cm_, workload::zero_grad_buffer(s_, workload::stage_params(s_, i)));
      compute_op(i, -1, -1, Phase::Other, -1, z.time_s, z.flops, "zero_grad");
    }
    fwd_end_.assign(static_cast<std::size_t>(p_ * v_ * m_), -1);
    fwd_send_.assign(static_cast<std::size_t>(p_ * v_ * m_), -1);
    bwd_send_.assign(static_cast<std::size_t>(p_ * v_ * m_), -1);
    // The passes of all stages, interleaved in "time order" is not needed: dependencies carry the
    // order across stages; each stage's compute stream follows its schedule through chain edges.
    // Passes are emitted round-robin over stages so that op indices roughly follow time.
    std::vector<std::vector<workload::Pass>> orders;
    for (std::int64_t i = 0; i < p_; ++i) orders.push_back(workload::stage_schedule(s_.parallel.schedule, p_, m_, v_, i));
    // Emit in dependency-respecting order: repeatedly take, on each stage, the next pass whose
    // cross-stage input has been emitted.
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
  // ---- costs per layer / per extra, one rank, one micro-batch
  struct PassCost {
    double time_s = 0;
    double flops = 0;
  };
  static PassCost cost(const costmodel::ComputeModel& cm, const std::vector<workload::Kernel>& ks) {
    return PassCost{cm.time_s(ks), workload::total_flops(ks)};
  }

  void precompute_costs() {
    layer_fwd_ = cost(cm_, workload::layer_forward(s_));
    layer_bwd_ = cost(cm_, workload::layer_backward(s_));
    layer_rec_ = cost(cm_, workload::layer_recompute(s_));
    emb_fwd_ = cost(cm_, workload::embedding_forward(s_));
    emb_bwd_ = cost(cm_, workload::embedding_backward(s_));
    out_fwd_ = cost(cm_, workload::output_forward(s_));
    out_bwd_ = cost(cm_, workload::output_backward(s_));
    for (std::int64_t i = 0; i < p_; ++i)
      for (std::int64_t j = 0; j < v_; ++j) chunk_bytes_.push_back(memory::chunk_activation_bytes(s_, i, j));
    output_bytes_ = memory::output_transient_bytes(s_);
    backward_bytes_ = memory::backward_transient_bytes(s_);
    // TP/SP collectives: S = 2 s b h / c bytes each (training-step.md section 1.2).
    tp_bytes_ = 2.0 * d(s_.training.seq_len) / d(c_) * d(s_.training.micro_batch) * d(s_.model.hidden);
    // Collectives per layer and per extra, in units of one collective of S bytes. With SP
    // (training-step.md 1.2, 2): forward 2 all-gathers + 2 reduce-scatters per layer, backward 4 +
    // 2 (the two extra all-gathers re-gather the inputs of the weight gradients), the embedding's
    // reduce-scatter for Llama (backward all-gather), the output layer's all-gather (backward reduce-scatter
    // of its input gradient). Without SP: 2 all-reduces per layer each way, an all-reduce after the
    // embedding, and one of the output layer's input gradient; full recomputation re-runs the
    // forward's collectives.
    const bool sp = s_.parallel.sequence_parallel;
    tp_.kind = sp ? Collective::AllGather : Collective::AllReduce;
    tp_.fwd_layer = sp ? 4.0 : 2.0;
    tp_.bwd_layer = (sp ? 6.0 : 2.0) + (s_.training.recompute == Recompute::Full ? tp_.fwd_layer : 0.0);
    // GPT adds learned position embeddings after an all-reduce (2 units), then keeps its SP shard.
    tp_.emb_fwd = sp && workload::gpt_family(s_.model) ? 2.0 : 1.0;
    tp_.emb_bwd = sp ? 1.0 : 0.0;
    tp_.out_fwd = sp ? 1.0 : 0.0;
    tp_.out_bwd = 1.0;
    // CP ring: per step K and V of one rank, 4 s b k d_h / (c t) bytes (section 4).
    const double head_dim = d(s_.model.hidden) / d(s_.model.heads);
    cp_msg_bytes_ = 4.0 * d(s_.training.seq_len) * d(s_.training.micro_batch) * d(s_.model.kv_heads) * head_dim /
                    (d(c_) * d(t_));
    // PP: each rank sends its shard [s/(c t), b, h] in bf16 (section 5). Without SP every TP rank
    // holds the whole activation, and Megatron's scatter/gather optimization (on by default) still
    // sends 1/t of it per rank and re-gathers it over NVLink on arrival (not modeled: small).
    pp_bytes_ = 2.0 * d(s_.training.seq_len) / d(c_) * d(s_.training.micro_batch) * d(s_.model.hidden) / d(t_);
  }

  // ---- plans
  std::vector<std::int64_t> tp_group(std::int64_t cp, std::int64_t dp, std::int64_t stage) const {
    return pl_.tp_group(pl_.rank({0, cp, dp, stage}));
  }

  // Instances of a group kind on a stage: [0] is the tracked group (of rank tp=cp=dp=0).
  std::vector<std::vector<std::int64_t>> instances(char kind, std::int64_t stage) const {
    std::vector<std::vector<std::int64_t>> out;
    const std::int64_t r0 = pl_.rank({0, 0, 0, stage});
    auto first = kind == 't' ? pl_.tp_group(r0) : kind == 'c' ? pl_.cp_group(r0) : pl_.dp_cp_group(r0);
    const bool local = topology::within_node(cl_, first);
    out.push_back(std::move(first));
    if (!opt_.symmetric_instances || local) return out;
    if (kind == 't') {
      for (std::int64_t cp = 0; cp < c_; ++cp)
        for (std::int64_t dp = 0; dp < dp_; ++dp)
          if (cp != 0 || dp != 0) out.push_back(pl_.tp_group(pl_.rank({0, cp, dp, stage})));
    } else if (kind == 'c') {
      for (std::int64_t dp = 0; dp < dp_; ++dp)
        for (std::int64_t tp = 0; tp < t_; ++tp)
          if (tp != 0 || dp != 0) out.push_back(pl_.cp_group(pl_.rank({tp, 0, dp, stage})));
    } else {
      for (std::int64_t tp = 1; tp < t_; ++tp) out.push_back(pl_.dp_cp_group(pl_.rank({tp, 0, 0, stage})));
    }
    return out;
  }

  // One step of the CP ring as point-to-point pairs: every rank sends to its successor in its CP
  // group, from its own GPU and NIC (TransformerEngine's P2P ring; not split over NICs).
  std::vector<std::vector<std::int64_t>> cp_ring_pairs(std::int64_t stage) const {
    std::vector<std::vector<std::int64_t>> out;
    for (const auto& g : instances('c', stage))
      for (std::size_t i = 0; i < g.size(); ++i) out.push_back({g[i], g[(i + 1) % g.size()]});
    return out;
  }

  std::vector<std::vector<std::int64_t>> pp_pairs(std::int64_t from, std::int64_t to) const {
    std::vector<std::vector<std::int64_t>> out;
    out.push_back({pl_.rank({0, 0, 0, from}), pl_.rank({0, 0, 0, to})});
    const bool local = cl_.node_of(out[0][0]) == cl_.node_of(out[0][1]);
    if (!opt_.symmetric_instances || local) return out;
    for (std::int64_t dp = 0; dp < dp_; ++dp)
      for (std::int64_t cp = 0; cp < c_; ++cp)
        for (std::int64_t tp = 0; tp < t_; ++tp)
          if (tp != 0 || cp != 0 || dp != 0) out.push_back({pl_.rank({tp, cp, dp, from}), pl_.rank({tp, cp, dp, to})});
    return out;
  }

  struct PlanRef {
    std::int32_t index = -1;
    double time_s = 0;
  };

  // `count` back-to-back identical collectives as one plan: the rounds carry count x the bytes,
  // and the setup absorbs the start-up and per-round latencies of the other count - 1, so that
  // the isolated time is exactly count x that of one collective.
  PlanRef plan(Collective kind, char group_kind, std::int64_t stage, std::int64_t to_stage, double bytes, double count) {
    const auto key = std::make_tuple(static_cast<int>(kind), group_kind, stage, to_stage, bytes, count);
    auto it = plan_cache_.find(key);
    if (it != plan_cache_.end()) return it->second;
    costmodel::CommPlan one;
    if (!s_.cluster.ideal_network) {
      const auto inst = group_kind == 'r'                                   ? cp_ring_pairs(stage)
                        : kind == Collective::SendRecv || group_kind == 'e' ? pp_pairs(stage, to_stage)
                                                                            : instances(group_kind, stage);
      one = costmodel::plan_collective(cl_, kind, inst, bytes, opt_.comm);
    }
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
    ref.index = static_cast<std::int32_t>(out_.graph.plans.size());
    ref.time_s = count * one_contended;
    out_.graph.plans.push_back(std::move(many));
    plan_cache_.emplace(key, ref);
    return ref;
  }

  std::int32_t comm_op(OpKind kind, Collective coll, Stream stream, std::int64_t stage, Phase phase, const PlanRef& pr,
                       double bytes, const char* label, std::int64_t mb, std::int64_t chunk, std::int64_t peer = -1) {
    Op op;
    op.kind = kind;
    op.collective = coll;
    op.stream = stream;
    op.phase = phase;
    op.device = static_cast<std::int32_t>(stage);
    op.peer_device = static_cast<std::int32_t>(peer);
    op.stage = static_cast<std::int32_t>(stage);
    op.chunk = static_cast<std::int32_t>(chunk);
    op.micro_batch = static_cast<std::int32_t>(mb);
    op.bytes = bytes;
    op.plan = pr.index;
    op.duration_s = pr.time_s;
    op.label = label;
    return out_.graph.add_op(std::move(op));
  }

  // ---- buckets
  void plan_buckets() {
    buckets_.assign(static_cast<std::size_t>(p_ * v_), {});
    const double lp = workload::layer_params(s_);
    for (std::int64_t i = 0; i < p_; ++i) {
      for (std::int64_t j = 0; j < v_; ++j) {
        auto& bs = buckets_[static_cast<std::size_t>(i * v_ + j)];
        double extra_first = (i == 0 && j == 0) ? workload::embedding_params(s_) : 0.0;
        double extra_last = (i == p_ - 1 && j == v_ - 1) ? workload::output_params(s_) + workload::final_norm_params(s_) : 0.0;
        if (i == 0 && j == 0 && s_.parallel.overlap_grad_reduce) {
          // Walk layers from the last (first to finish backward) to the first; close a bucket once
          // it holds at least the bucket size.
          const double size = bucket_size_params(s_);
          Bucket cur;
          cur.highest_layer = chunk_layers(i) - 1;
          cur.params = extra_last;
          for (std::int64_t l = chunk_layers(i) - 1; l >= 0; --l) {
            cur.params += lp;
            cur.lowest_layer = l;
            if (l == 0) {
              cur.params += extra_first;
              bs.push_back(cur);
            } else if (cur.params >= size) {
              bs.push_back(cur);
              cur = Bucket{};
              cur.highest_layer = l - 1;
            }
          }
        } else {
          Bucket b;
          b.params = lp * d(chunk_layers(i)) + extra_first + extra_last;
          b.lowest_layer = 0;
          b.highest_layer = chunk_layers(i) - 1;
          bs.push_back(b);
        }
      }
    }
  }

  bool dp_active() const { return dp_ * c_ > 1; }
  bool tp_overlap() const { return t_ > 1 && s_.parallel.tp_comm_overlap; }
  bool gathers_overlap() const {
    return dp_active() && s_.parallel.distributed_optimizer && s_.parallel.overlap_param_gather;
  }
  double grad_bytes_per_param() const { return s_.training.grads_in_fp32 ? 4.0 : 2.0; }

  std::int32_t param_gather_op(std::int64_t stage, std::int64_t chunk, const Bucket& b) {
    const auto pr = plan(Collective::AllGather, 'd', stage, -1, 2.0 * b.params, 1.0);
    const auto op = comm_op(OpKind::Collective, Collective::AllGather, Stream::DpComm, stage, Phase::ParamGather, pr,
                            2.0 * b.params, "dp.param_ag", -1, chunk);
    out_.graph.ops[static_cast<std::size_t>(op)].layer = static_cast<std::int32_t>(b.lowest_layer);
    return op;
  }

  void add_param_gathers_at_start() {
    if (!s_.parallel.distributed_optimizer || !dp_active()) return;
    for (std::int64_t i = 0; i < p_; ++i)
      for (std::int64_t j = 0; j < v_; ++j) {
        auto& bs = buckets_[static_cast<std::size_t>(i * v_ + j)];
        // forward order: the bucket holding the first layers first
        for (auto it = bs.rbegin(); it != bs.rend(); ++it) it->gather_op = param_gather_op(i, j, *it);
      }
  }

  // ---- passes
  std::size_t slot(std::int64_t stage, std::int64_t chunk, std::int64_t mb) const {
    return static_cast<std::size_t>((stage * v_ + chunk) * m_ + mb);
  }
  // Virtual stage of (stage, chunk): chunk * p + stage.
  bool has_prev_virtual(std::int64_t stage, std::int64_t chunk) const { return stage > 0 || chunk > 0; }
  bool has_next_virtual(std::int64_t stage, std::int64_t chunk) const { return stage < p_ - 1 || chunk < v_ - 1; }
  std::pair<std::int64_t, std::int64_t> prev_virtual(std::int64_t stage, std::int64_t chunk) const {
    return stage > 0 ? std::make_pair(stage - 1, chunk) : std::make_pair(p_ - 1, chunk - 1);
  }
  std::pair<std::int64_t, std::int64_t> next_virtual(std::int64_t stage, std::int64_t chunk) const {
    return stage < p_ - 1 ? std::make_pair(stage + 1, chunk) : std::make_pair(std::int64_t{0}, chunk + 1);
  }

  bool input_ready(std::int64_t stage, const workload::Pass& ps) const {
    if (ps.kind == workload::PassKind::Forward) {
      if (!has_prev_virtual(stage, ps.chunk)) return true;
      const auto [ps_, pc] = prev_virtual(stage, ps.chunk);
      return fwd_send_[slot(ps_, pc, ps.micro_batch)] >= 0;
    }
    if (!has_next_virtual(stage, ps.chunk)) return fwd_end_[slot(stage, ps.chunk, ps.micro_batch)] >= 0;
    const auto [ns, nc] = next_virtual(stage, ps.chunk);
    return bwd_send_[slot(ns, nc, ps.micro_batch)] >= 0;
  }

  // Layers in one chunk of `stage` (equal chunks; uneven stages only without interleaving).
  std::int64_t chunk_layers(std::int64_t stage) const { return scenarios::stage_layers(s_, stage) / v_; }

  // Splits a pass of layers into op groups: per layer where asked or where buckets need it.
  std::vector<std::pair<std::int64_t, std::int64_t>> layer_groups(std::int64_t stage, bool split) const {
    std::vector<std::pair<std::int64_t, std::int64_t>> g;  // [first, count]
    const std::int64_t n = chunk_layers(stage);
    if (split || opt_.per_layer) {
      for (std::int64_t l = 0; l < n; ++l) g.emplace_back(l, 1);
    } else {
      g.emplace_back(0, n);
    }
    return g;
  }

  std::int32_t compute_op(std::int64_t stage, std::int64_t chunk, std::int64_t mb, Phase phase, std::int64_t first_layer,
                          double time_s, double flops, const char* label) {
    Op op;
    op.kind = OpKind::Compute;
    op.phase = phase;
    op.stream = Stream::Compute;
    op.device = static_cast<std::int32_t>(stage);
    op.stage = static_cast<std::int32_t>(stage);
    op.chunk = static_cast<std::int32_t>(chunk);
    op.micro_batch = static_cast<std::int32_t>(mb);
    op.layer = static_cast<std::int32_t>(first_layer);
    op.flops = flops;
    op.duration_s = time_s;
    op.label = label;
    const auto id = out_.graph.add_op(std::move(op));
    auto& last = last_compute_[static_cast<std::size_t>(stage)];
    if (last >= 0) out_.graph.add_edge(last, id);
    last = id;
    stage_flops_[stage] += flops;
    max_stage_flops_ = std::max(max_stage_flops_, stage_flops_[stage]);
    return id;
  }

  void emit_pass(std::int64_t stage, const workload::Pass& ps) {
    if (ps.kind == workload::PassKind::Forward)
      emit_forward(stage, ps.chunk, ps.micro_batch);
    else
      emit_backward(stage, ps.chunk, ps.micro_batch);
  }

  void emit_forward(std::int64_t stage, std::int64_t chunk, std::int64_t mb) {
    const bool first_virtual = !has_prev_virtual(stage, chunk);
    const bool last_virtual = !has_next_virtual(stage, chunk);
    const auto& bs = buckets_[static_cast<std::size_t>(stage * v_ + chunk)];
    const bool wait_params = mb == 0 && s_.parallel.overlap_param_gather && bs.size() > 1 && bs.front().gather_op >= 0;
    std::vector<std::int32_t> deps;
    if (!first_virtual) {
      const auto [ps_, pc] = prev_virtual(stage, chunk);
      deps.push_back(fwd_send_[slot(ps_, pc, mb)]);
    }
    std::int32_t prev = -1;
    const auto groups = layer_groups(stage, wait_params);
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      const auto [first, count] = groups[gi];
      const bool head = gi == 0, tail = gi + 1 == groups.size();
      double time = d(count) * layer_fwd_.time_s, flops = d(count) * layer_fwd_.flops, tp_count = tp_.fwd_layer * d(count);
      if (head && first_virtual) time += emb_fwd_.time_s, flops += emb_fwd_.flops, tp_count += tp_.emb_fwd;
      if (tail && last_virtual) time += out_fwd_.time_s, flops += out_fwd_.flops, tp_count += tp_.out_fwd;
      // The CP ring, overlapped TP collectives, and the parameter all-gathers still running during
      // the first micro-batch (those of later buckets and chunks) share the SMs.
      if (c_ > 1 || tp_overlap() || (mb == 0 && gathers_pending(stage, chunk, first + count)))
        time *= 1.0 + cm_.efficiency().comm_slowdown;
      const auto op = compute_op(stage, chunk, mb, Phase::Forward, first, time, flops, "fwd");
      for (auto dep : deps) out_.graph.add_edge(dep, op);
      deps.clear();
      if (prev >= 0) out_.graph.add_edge(prev, op);
      if (mb == 0 && s_.parallel.overlap_param_gather)
        for (const auto& b : bs)
          if (b.gather_op >= 0 && b.lowest_layer >= first && b.lowest_layer < first + count)
            out_.graph.add_edge(b.gather_op, op);
      if (head) {
        auto& o = out_.graph.ops[static_cast<std::size_t>(op)];
        o.alloc_bytes = chunk_bytes_[static_cast<std::size_t>(stage * v_ + chunk)] + (last_virtual ? output_bytes_ : 0);
      }
      std::int32_t end = op;
      if (c_ > 1) {
        end = add_cp(stage, chunk, mb, Phase::Forward, d(count), op);
      }
      if (t_ > 1) {
        end = add_tp(stage, chunk, mb, Phase::Forward, tp_count, op, end);
        if (tail && last_virtual) end = add_cross_entropy(stage, chunk, mb, end, Phase::Forward);
      }
      prev = end;
    }
    fwd_end_[slot(stage, chunk, mb)] = prev;
    fwd_send_[slot(stage, chunk, mb)] =
        last_virtual ? prev : pp_send(stage, next_virtual(stage, chunk).first, chunk, mb, Phase::Forward, "pp.send_act", prev);
    // TP collectives are synchronous inside the pass, and Megatron's pipeline send/receive pairs
    // block: the stage's next pass starts after both.
    last_compute_[static_cast<std::size_t>(stage)] = fwd_send_[slot(stage, chunk, mb)];
  }

  // The activation (forward) or its gradient (backward) of one micro-batch to a neighbouring stage.
  std::int32_t pp_send(std::int64_t stage, std::int64_t to_stage, std::int64_t chunk, std::int64_t mb, Phase phase,
                       const char* label, std::int32_t after) {
    const auto pr = plan(Collective::SendRecv, 'p', stage, to_stage, pp_bytes_, 1.0);
    const auto send =
        comm_op(OpKind::SendRecv, Collective::SendRecv, Stream::PpComm, stage, phase, pr, pp_bytes_, label, mb, chunk, to_stage);
    out_.graph.add_edge(after, send);
    return send;
  }

  // A zero-time op that waits for `preds` (those >= 0): the op to depend on when several must end.
  std::int32_t join_op(std::int64_t stage, Stream stream, Phase phase, const char* label, std::initializer_list<std::int32_t> preds,
                       const std::vector<std::int32_t>& more = {}) {
    Op op;
    op.kind = OpKind::Delay;
    op.phase = phase;
    op.stream = stream;
    op.device = static_cast<std::int32_t>(stage);
    op.stage = static_cast<std::int32_t>(stage);
    op.label = label;
    const auto id = out_.graph.add_op(std::move(op));
    for (auto p : preds)
      if (p >= 0) out_.graph.add_edge(p, id);
    for (auto p : more) out_.graph.add_edge(p, id);
    return id;
  }

  // The next op of a layer group waits for its compute `a` and a collective `b` on another stream.
  std::int32_t join(std::int32_t a, std::int32_t b, std::int64_t stage) {
    return join_op(stage, Stream::CpComm, Phase::Other, "join", {a, b});
  }


  // The TP/SP collectives of a layer group (all-gathers and reduce-scatters of one size, planned
  // as one ring). Megatron runs them in line with the GEMMs: the group ends after them. With
  // tp_comm_overlap (TransformerEngine userbuffers) they run alongside the group's compute, which
  // they slow by comm_slowdown, and the group ends when both have.
  std::int32_t add_tp(std::int64_t stage, std::int64_t chunk, std::int64_t mb, Phase phase, double count, std::int32_t compute,
                      std::int32_t end) {
    const auto pr = plan(tp_.kind, 't', stage, -1, tp_bytes_, count);
    const auto tp = comm_op(OpKind::Collective, tp_.kind, Stream::TpComm, stage, phase, pr, tp_bytes_ * count,
                            s_.parallel.sequence_parallel ? "tp.ag_rs" : "tp.ar", mb, chunk);
    if (!s_.parallel.tp_comm_overlap) {
      out_.graph.add_edge(end, tp);
      return tp;
    }
    starts_with(compute, tp);
    return join(end, tp, stage);
  }

  // The CP ring of a layer group (`units` forward rings of c - 1 K/V steps per layer, each step a
  // point-to-point send of one rank's K and V to the next) runs alongside the group's attention;
  // the group ends when both have.
  std::int32_t add_cp(std::int64_t stage, std::int64_t chunk, std::int64_t mb, Phase phase, double units, std::int32_t compute) {
    const double steps = units * d(c_ - 1);
    const auto pr = plan(Collective::SendRecv, 'r', stage, -1, cp_msg_bytes_, steps);
    const auto cp = comm_op(OpKind::Collective, Collective::AllGather, Stream::CpComm, stage, phase, pr, cp_msg_bytes_ * steps,
                            phase == Phase::Forward ? "cp.kv" : "cp.kv_dkv", mb, chunk);
    starts_with(compute, cp);
    return join(compute, cp, stage);
  }

  // `op` may start exactly when `compute` may: it gets the same predecessors.
  void starts_with(std::int32_t compute, std::int32_t op) {
    const auto preds = out_.graph.predecessors(compute);
    for (auto p : preds) out_.graph.add_edge(p, op);
  }

  // Parameter all-gathers (overlapped with the first micro-batch) still to run when the forward of
  // (stage, chunk) is past layer `next_layer`: later buckets of the chunk, and later chunks.
  bool gathers_pending(std::int64_t stage, std::int64_t chunk, std::int64_t next_layer) const {
    if (!gathers_overlap()) return false;
    for (std::int64_t j = chunk; j < v_; ++j)
      for (const auto& b : buckets_[static_cast<std::size_t>(stage * v_ + j)])
        if (j > chunk || b.lowest_layer >= next_layer) return true;
    return false;
  }

  // Gradient reductions running while the last backward of (stage, chunk) computes layers below
  // `end_layer`: buckets it has completed above them, and the chunks it finished before.
  bool reductions_running(std::int64_t stage, std::int64_t chunk, std::int64_t end_layer) const {
    if (!dp_active() || !s_.parallel.overlap_grad_reduce) return false;
    for (std::int64_t j = chunk; j < v_; ++j)
      for (const auto& b : buckets_[static_cast<std::size_t>(stage * v_ + j)])
        if (j > chunk || b.lowest_layer >= end_layer) return true;
    return false;
  }

  // Vocabulary-parallel cross-entropy: three TP all-reduces of n fp32 values (max, target logit,
  // sum of exponentials), latency-bound (training-step.md section 2).
  std::int32_t add_cross_entropy(std::int64_t stage, std::int64_t chunk, std::int64_t mb, std::int32_t after, Phase phase) {
    const double bytes = 4.0 * d(s_.training.seq_len) / d(c_) * d(s_.training.micro_batch);
    const auto pr = plan(Collective::AllReduce, 't', stage, -1, bytes, 3.0);
    const auto op = comm_op(OpKind::Collective, Collective::AllReduce, Stream::TpComm, stage, phase, pr, 3.0 * bytes, "tp.ce_ar",
                            mb, chunk);
    out_.graph.add_edge(after, op);
    return op;
  }

  void emit_backward(std::int64_t stage, std::int64_t chunk, std::int64_t mb) {
    const bool first_virtual = !has_prev_virtual(stage, chunk);
    const bool last_virtual = !has_next_virtual(stage, chunk);
    const auto& bs = buckets_[static_cast<std::size_t>(stage * v_ + chunk)];
    const bool last_mb = mb == m_ - 1;
    const bool split = last_mb && dp_active() && s_.parallel.overlap_grad_reduce && bs.size() > 1;
    std::int32_t dep = last_virtual ? fwd_end_[slot(stage, chunk, mb)] : -1;
    if (!last_virtual) {
      const auto [ns, nc] = next_virtual(stage, chunk);
      dep = bwd_send_[slot(ns, nc, mb)];
    }
    // CP ring units (one forward ring each): backward moves K, V and dK, dV (2), recomputation
    // re-runs the forward ring of the attention (1).
    const double cp_units = 2.0 + (s_.training.recompute == Recompute::None ? 0.0 : 1.0);
    auto groups = layer_groups(stage, split);
    std::reverse(groups.begin(), groups.end());
    std::int32_t prev = dep;
    for (std::size_t gi = 0; gi < groups.size(); ++gi) {
      const auto [first, count] = groups[gi];
      const bool head = gi == 0, tail = gi + 1 == groups.size();
      double time = d(count) * (layer_bwd_.time_s + layer_rec_.time_s);
      double flops = d(count) * (layer_bwd_.flops + layer_rec_.flops);
      double tp_count = tp_.bwd_layer * d(count);
      if (head && last_virtual) time += out_bwd_.time_s, flops += out_bwd_.flops, tp_count += tp_.out_bwd;
      if (tail && first_virtual) time += emb_bwd_.time_s, flops += emb_bwd_.flops, tp_count += tp_.emb_bwd;
      // The CP ring, overlapped TP collectives, and the gradient reductions of buckets this
      // backward has already completed (last micro-batch) share the SMs.
      if (c_ > 1 || tp_overlap() || (last_mb && reductions_running(stage, chunk, first + count)))
        time *= 1.0 + cm_.efficiency().comm_slowdown;
      const auto op = compute_op(stage, chunk, mb, Phase::Backward, first, time, flops, "bwd");
      if (prev >= 0) out_.graph.add_edge(prev, op);
      auto& o = out_.graph.ops[static_cast<std::size_t>(op)];
      if (head) o.alloc_bytes = backward_bytes_;
      if (tail)
        o.free_bytes = chunk_bytes_[static_cast<std::size_t>(stage * v_ + chunk)] + (last_virtual ? output_bytes_ : 0) +
                       backward_bytes_;
      std::int32_t end = op;
      if (c_ > 1) end = add_cp(stage, chunk, mb, Phase::Backward, cp_units * d(count), op);
      if (t_ > 1) end = add_tp(stage, chunk, mb, Phase::Backward, tp_count, op, end);
      prev = end;
      if (last_mb) finish_buckets(stage, chunk, first, count, end);
    }
    bwd_send_[slot(stage, chunk, mb)] =
        first_virtual ? prev : pp_send(stage, prev_virtual(stage, chunk).first, chunk, mb, Phase::Backward, "pp.send_grad", prev);
    last_compute_[static_cast<std::size_t>(stage)] = bwd_send_[slot(stage, chunk, mb)];
  }

  // Gradient reduction of one bucket over DP x CP: reduce-scatter with the distributed optimizer,
  // all-reduce without; fp32 (or bf16) gradients.
  void grad_reduce_op(std::int64_t stage, std::int64_t chunk, const Bucket& b, std::int32_t after) {
    const bool distopt = s_.parallel.distributed_optimizer;
    const auto kind = distopt ? Collective::ReduceScatter : Collective::AllReduce;
    const double bytes = grad_bytes_per_param() * b.params;
    const auto pr = plan(kind, 'd', stage, -1, bytes, 1.0);
    const auto op = comm_op(OpKind::Collective, kind, Stream::DpComm, stage, Phase::GradReduce, pr, bytes,
                            distopt ? "dp.grad_rs" : "dp.grad_ar", -1, chunk);
    out_.graph.ops[static_cast<std::size_t>(op)].layer = static_cast<std::int32_t>(b.lowest_layer);
    out_.graph.add_edge(after, op);
    grad_ops_[stage].push_back(op);
  }

  // With overlap, a bucket's reduction starts as soon as the last micro-batch's backward has
  // finished the bucket's lowest layer (Megatron launches it from the gradient hook).
  void finish_buckets(std::int64_t stage, std::int64_t chunk, std::int64_t first, std::int64_t count, std::int32_t after) {
    if (!dp_active() || !s_.parallel.overlap_grad_reduce) return;
    for (const auto& b : buckets_[static_cast<std::size_t>(stage * v_ + chunk)])
      if (b.lowest_layer >= first && b.lowest_layer < first + count) grad_reduce_op(stage, chunk, b, after);
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
      if (dp_active() && !s_.parallel.overlap_grad_reduce)
        for (std::int64_t j = 0; j < v_; ++j)
          for (const auto& b : buckets_[static_cast<std::size_t>(stage * v_ + j)]) grad_reduce_op(stage, j, b, last);
      const auto sync = join_op(stage, Stream::DpComm, Phase::GradReduce, "grads_ready", {last}, grad_ops_[stage]);
      std::int32_t done = sync;
      if (t_ > 1 && s_.parallel.sequence_parallel) {
        const double norm_params = d(scenarios::stage_layers(s_, stage)) * 2.0 * workload::final_norm_params(s_) +
                                   (stage == p_ - 1 ? workload::final_norm_params(s_) : 0.0);
        const auto pr = plan(Collective::AllReduce, 't', stage, -1, 4.0 * norm_params, 1.0);
        done = comm_op(OpKind::Collective, Collective::AllReduce, Stream::TpComm, stage, Phase::GradReduce, pr, 4.0 * norm_params,
                       "tp.norm_grad_ar", -1, -1);
        out_.graph.add_edge(sync, done);
      }
      ready.push_back(done);
    }
    if (s_.model.tied_embeddings && p_ > 1) {
      const double bytes = grad_bytes_per_param() * workload::embedding_params(s_);
      const auto pr = plan(Collective::AllReduce, 'e', 0, p_ - 1, bytes, 1.0);
      const auto op = comm_op(OpKind::Collective, Collective::AllReduce, Stream::DpComm, 0, Phase::GradReduce, pr, bytes,
                              "emb.grad_ar", -1, -1);
      out_.graph.add_edge(ready.front(), op);
      out_.graph.add_edge(ready.back(), op);
      ready.front() = op;
    }
    // The gradient-norm all-reduce: a few bytes over every rank, latency only (a double binary
    // tree across nodes and a chain inside them: NCCL tuner, training-step.md section 8).
    const auto norm_op = join_op(0, Stream::DpComm, Phase::GradReduce, "grad_norm_ar", {}, ready);
    if (!s_.cluster.ideal_network && s_.world_size() > 1) {
      const double hops_net = std::ceil(std::log2(d(s_.cluster.nodes)));
      out_.graph.ops[static_cast<std::size_t>(norm_op)].duration_s =
          opt_.comm.collective_setup_s +
          2.0 * (hops_net * s_.cluster.inter_node.latency_s + d(s_.cluster.gpus_per_node - 1) * s_.cluster.intra_node.latency_s);
    }
    for (std::int64_t stage = 0; stage < p_; ++stage) {
      const double params = workload::stage_params(s_, stage);
      const double shard = s_.parallel.distributed_optimizer ? params / d(dp_ * c_) : params;
      const auto opt = cost(cm_, workload::optimizer_step(s_, shard));
      const auto op = compute_op(stage, -1, -1, Phase::Optimizer, -1, opt.time_s, opt.flops, "optimizer");
      out_.graph.add_edge(norm_op, op);
      if (!s_.parallel.overlap_param_gather && s_.parallel.distributed_optimizer && dp_active()) {
        std::int32_t prev = op;
        for (std::int64_t j = 0; j < v_; ++j) {
          const auto& bs = buckets_[static_cast<std::size_t>(stage * v_ + j)];
          for (auto it = bs.rbegin(); it != bs.rend(); ++it) {
            const auto ag = param_gather_op(stage, j, *it);
            out_.graph.add_edge(prev, ag);
            prev = ag;
          }
        }
      }
    }
  }



  const Scenario& s_;
  const topology::Cluster& cl_;
  const costmodel::ComputeModel& cm_;
  BuildOptions opt_;
  topology::Placement pl_;
  std::int64_t p_ = 1, v_ = 1, m_ = 1, t_ = 1, c_ = 1, dp_ = 1;
  PassCost layer_fwd_, layer_bwd_, layer_rec_, emb_fwd_, emb_bwd_, out_fwd_, out_bwd_;
  double tp_bytes_ = 0, cp_msg_bytes_ = 0, pp_bytes_ = 0;
  std::vector<std::int64_t> chunk_bytes_;  // per (stage, chunk): activation bytes of a forward pass
  std::int64_t output_bytes_ = 0, backward_bytes_ = 0;
  struct TpPattern {
    Collective kind = Collective::AllGather;
    double fwd_layer = 0, bwd_layer = 0, emb_fwd = 0, emb_bwd = 0, out_fwd = 0, out_bwd = 0;
  } tp_;
  std::map<std::tuple<int, char, std::int64_t, std::int64_t, double, double>, PlanRef> plan_cache_;
  std::vector<std::vector<Bucket>> buckets_;
  // last_compute_: the op the stage's next compute op waits for (the end of its previous pass).
  std::vector<std::int32_t> last_compute_, fwd_end_, fwd_send_, bwd_send_;
  std::map<std::int64_t, std::vector<std::int32_t>> grad_ops_;
  std::map<std::int64_t, double> stage_flops_;
  double max_stage_flops_ = 0;
  BuiltStep out_;
};

}  // namespace

BuiltStep build_step(const Scenario& s, const topology::Cluster& cluster, const costmodel::ComputeModel& compute,
                     const BuildOptions& options) {
  return Builder(s, cluster, compute, options).build();
}

}  // namespace stepsim::sim
