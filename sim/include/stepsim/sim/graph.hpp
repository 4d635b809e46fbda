#pragma once
// The step graph: the ops of one training step with their work, where they run (device and
// stream), their memory effects, and the dependencies between them. The builder (build.hpp)
// writes work only: a compute op names its ComputeWork (kernel lists from workload/), a
// communication op its collective, process group, message size and count. The costing pass
// (cost.hpp) fills in `duration_s` (what the analytic engine replays) and `plan`, the flows of
// every communication op (what the SimGrid engine replays), before an engine runs; it can run
// again on the same graph with another cost model.
//
// Devices are "folded": one device stands for a set of identical ranks (for example every TP rank
// and DP replica of a pipeline stage). A communication op's plan holds the flows of its device's
// group and, at the same time, those of the identical collectives of the ranks it stands for, so
// that the load they put on shared links stays in the simulation.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "stepsim/costmodel/comm.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/workload/kernels.hpp"
#include "stepsim/workload/program.hpp"

namespace stepsim::sim {

// Streams of a device. Ops on one (device, stream) run one at a time; among ready ops the one
// with the lowest op index starts first. Different streams of a device run concurrently.
enum class Stream : std::uint8_t { Compute = 0, TpComm, CpComm, PpComm, DpComm };
inline constexpr int kNumStreams = 5;

enum class OpKind : std::uint8_t { Compute, Collective, SendRecv, Delay };
enum class Phase : std::uint8_t { Forward, Backward, Recompute, GradReduce, ParamGather, Optimizer, Other };

using costmodel::Collective;
using costmodel::CommPlan;
using costmodel::Flow;
using costmodel::Round;

// The kernels a compute op runs: count x each kernel list (StepGraph::kernel_lists), in order.
struct ComputeWork {
  std::vector<std::pair<std::int32_t, double>> terms;
  bool shares_sms = false;  // communication kernels run alongside and slow it (SM sharing)
  double flops = 0;         // what its kernels execute (hardware FLOPs, recomputation included)
};

// The ranks of a group's instances, immutable and shared: the graphs built for the same layout
// on the same cluster share them (and so does the plan cache), so that a sweep builds and
// compares each group once. Reads as a const std::vector<std::vector<std::int64_t>>; assigned
// from one. `hash()` is a hash of the ranks, computed once.
class SharedRanks {
 public:
  using Ranks = std::vector<std::vector<std::int64_t>>;
  SharedRanks() = default;
  SharedRanks(Ranks ranks);  // NOLINT(google-explicit-constructor): assigned like the vector it stands for
  [[nodiscard]] const Ranks& get() const { return data_ ? data_->ranks : empty_ranks(); }
  operator const Ranks&() const { return get(); }  // NOLINT(google-explicit-constructor)
  [[nodiscard]] bool empty() const { return get().empty(); }
  [[nodiscard]] std::size_t size() const { return get().size(); }
  [[nodiscard]] const std::vector<std::int64_t>& front() const { return get().front(); }
  [[nodiscard]] const std::vector<std::int64_t>& operator[](std::size_t i) const { return get()[i]; }
  [[nodiscard]] Ranks::const_iterator begin() const { return get().begin(); }
  [[nodiscard]] Ranks::const_iterator end() const { return get().end(); }
  [[nodiscard]] std::uint64_t hash() const { return data_ ? data_->hash : 0; }
  // Same ranks (the same shared object, or equal ranks).
  [[nodiscard]] bool operator==(const SharedRanks& o) const { return data_ == o.data_ || get() == o.get(); }

 private:
  struct Data {
    Ranks ranks;
    std::uint64_t hash = 0;
  };
  static const Ranks& empty_ranks();
  std::shared_ptr<const Data> data_;
};

// The ranks of a communication op: instances[0] is the tracked group, the others identical groups
// of the ranks its device stands for, whose flows share links with it. Pairs {src, dst} for
// point-to-point groups. Empty on an ideal network.
struct CommGroup {
  workload::GroupKind kind = workload::GroupKind::Tensor;
  SharedRanks instances;
};

// An op's short name, interned: every distinct label of the process is stored once (for the
// process's life) and an op holds its number, so that ops copy no strings and stay small. Equal
// labels have the same number. Reads as a const std::string&.
class OpLabel {
 public:
  OpLabel() = default;  // the empty label
  OpLabel(const char* text);         // NOLINT(google-explicit-constructor): assigned like a string
  OpLabel(const std::string& text);  // NOLINT(google-explicit-constructor)
  [[nodiscard]] const std::string& str() const { return id_ != 0 ? stored(id_) : empty_text(); }
  operator const std::string&() const { return str(); }  // NOLINT(google-explicit-constructor)
  [[nodiscard]] bool empty() const { return id_ == 0; }
  [[nodiscard]] const char* c_str() const { return str().c_str(); }
  friend bool operator==(const OpLabel& a, const OpLabel& b) { return a.id_ == b.id_; }
  friend bool operator==(const OpLabel& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const OpLabel& a, const char* b) { return a.str() == b; }

 private:
  static const std::string& empty_text();
  static const std::string& stored(std::uint32_t id);
  std::uint32_t id_ = 0;  // 0: empty; else the interned label's number
};

struct Op {
  OpKind kind = OpKind::Compute;
  Phase phase = Phase::Other;
  Stream stream = Stream::Compute;
  Collective collective = Collective::None;
  std::int32_t device = 0;
  std::int32_t peer_device = -1;    // SendRecv: receiving device
  std::int32_t stage = -1;
  std::int32_t chunk = -1;
  std::int32_t micro_batch = -1;
  std::int32_t layer = -1;          // first layer of the op's layer group, -1 when not a layer op
  std::int32_t work = -1;           // compute: index into StepGraph::works (its kernels and FLOPs); delay: see `count`
  std::int32_t group = -1;          // communication (and latency-only delays): index into StepGraph::groups
  std::int32_t plan = -1;           // index into StepGraph::plans (communication ops), filled by the costing pass
  // An earlier op of the same work, group, size and count (this op is its copy in a repeated
  // pass): the costing pass gives this op that op's duration and plan. -1 when none.
  std::int32_t cost_of = -1;
  OpLabel label;                    // short name: "fwd", "bwd", "tp.ag_rs", "pp.send", "dp.rs", ...
  double message_bytes = 0;         // communication: size S of one collective (nccl-tests)
  double count = 1;                 // communication: identical collectives back to back; a delay
                                    // with a `work`: lasts that work's time less `count` x the time
                                    // of its attention kernels (what precedes the window a CP ring
                                    // can hide in)
  double duration_s = 0;            // filled by the costing pass
  std::int64_t alloc_bytes = 0;     // device memory allocated when the op starts
  std::int64_t free_bytes = 0;      // device memory released when the op ends

  // Communication: message_bytes x count (0 for other ops).
  [[nodiscard]] double bytes() const { return message_bytes * count; }
};

// The extremes of a plan's flows that StepGraph::validate_ops checks: the smallest and largest
// flow size (the smallest -1 when a size is NaN) and the smallest repeat of a round.
struct FlowRange {
  double min_bytes;
  double max_bytes;
  std::int64_t min_repeat;
};
[[nodiscard]] FlowRange flow_range(const CommPlan& plan);
// The same from the rounds' repeats and every flow's size.
[[nodiscard]] FlowRange flow_range(std::span<const std::int64_t> repeats, std::span<const double> flow_bytes);

// A collective's plan kept small: the ends of its flows from a route set it shares with the plans
// of the same collective and group in other sizes (costmodel::PlanRoutes), and each flow's size;
// the CommPlan itself is made on first access (once; thread-safe), so that what only needs the
// plan's times, algorithm and protocol (the analytic engine, a sweep) never holds its flows.
class CompactPlan {
 public:
  // `plan`'s flows go between the ends of `ends`, round by round (ends->matches(plan)).
  CompactPlan(const CommPlan& plan, std::shared_ptr<const costmodel::PlanRoutes> ends);
  // The plan whose flows go between the ends of `ends`, round by round, sized `flow_bytes` (round
  // after round), with the rounds' `repeats`, its setup, algorithm and protocol.
  CompactPlan(std::span<const double> flow_bytes, std::vector<std::int64_t> repeats, double setup_s, costmodel::NcclAlgorithm algorithm,
              costmodel::NcclProtocol protocol, std::shared_ptr<const costmodel::PlanRoutes> ends);
  // The same with the flows' sizes as runs of equal ones (size, flows), round after round.
  CompactPlan(std::span<const std::pair<double, std::int64_t>> flow_runs, std::vector<std::int64_t> repeats, double setup_s,
              costmodel::NcclAlgorithm algorithm, costmodel::NcclProtocol protocol, std::shared_ptr<const costmodel::PlanRoutes> ends);
  [[nodiscard]] const CommPlan& plan() const;
  [[nodiscard]] double setup_s() const { return setup_s_; }
  [[nodiscard]] costmodel::NcclAlgorithm algorithm() const { return algorithm_; }
  [[nodiscard]] costmodel::NcclProtocol protocol() const { return protocol_; }

 private:
  void add_flows(double bytes, std::int64_t n);  // the next n flows' size, into byte_runs_
  std::shared_ptr<const costmodel::PlanRoutes> ends_;
  std::vector<std::pair<double, std::int64_t>> byte_runs_;  // the flows' sizes, round after round: (size, flows)
  std::vector<std::int64_t> repeats_;
  double setup_s_ = 0;
  costmodel::NcclAlgorithm algorithm_{};
  costmodel::NcclProtocol protocol_{};
  mutable std::once_flag made_;
  mutable std::shared_ptr<const CommPlan> plan_;
};

// The plans of a graph's communication ops. The costing pass stores a plan as the plan of one
// collective (shared, immutable: the same object serves every graph of the process that runs that
// collective; a CompactPlan, whose flows are made on first access), the count of back-to-back
// collectives folded into it and the folded plan's setup.
// The folded plan itself (every flow carrying count x its bytes, that setup) is made on first
// access through operator[], so that an engine which only needs op durations never copies flows.
// A plan added with push_back is stored as given (count 1). Not safe for concurrent first access.
class PlanList {
 public:
  [[nodiscard]] std::size_t size() const { return entries_.size(); }
  [[nodiscard]] bool empty() const { return entries_.empty(); }
  void clear() { entries_.clear(); }
  void reserve(std::size_t n) { entries_.reserve(n); }
  void push_back(CommPlan plan);
  template <typename... Args>
  void emplace_back(Args&&... args) {
    push_back(CommPlan{std::forward<Args>(args)...});
  }
  // `count` collectives of `one` back to back, the folded plan's setup `setup_s`; `range`, when
  // given, is flow_range(*one), computed once for every graph that shares `one`.
  void push_folded(std::shared_ptr<const CommPlan> one, double count, double setup_s,
                   std::shared_ptr<const FlowRange> range = nullptr);
  // The same with the one collective's plan kept compact (made on first access).
  void push_folded(std::shared_ptr<const CompactPlan> one, double count, double setup_s,
                   std::shared_ptr<const FlowRange> range = nullptr);

  // The folded plan (what SimGrid replays), made on first access.
  [[nodiscard]] const CommPlan& operator[](std::size_t i) const;
  // The same, as a plan of its own that may be changed (it is then stored as given).
  [[nodiscard]] CommPlan& operator[](std::size_t i);

  // What does not depend on the count, without folding: the rounds with their flows (ranks, the
  // bytes of one collective), repeats, algorithm and protocol.
  [[nodiscard]] const CommPlan& unfolded(std::size_t i) const {
    const Entry& e = entries_[i];
    return e.compact ? e.compact->plan() : *e.one;
  }
  // What NCCL runs for plan i (unfolded(i).algorithm and .protocol, without making its flows).
  [[nodiscard]] costmodel::NcclAlgorithm algorithm(std::size_t i) const {
    const Entry& e = entries_[i];
    return e.compact ? e.compact->algorithm() : e.one->algorithm;
  }
  [[nodiscard]] costmodel::NcclProtocol protocol(std::size_t i) const {
    const Entry& e = entries_[i];
    return e.compact ? e.compact->protocol() : e.one->protocol;
  }
  // Collectives folded into plan i (1 for a plan stored as given); a flow of the folded plan
  // carries count x the bytes of that flow in unfolded(i).
  [[nodiscard]] double count(std::size_t i) const { return entries_[i].count; }
  // The folded plan's setup time.
  [[nodiscard]] double setup_s(std::size_t i) const { return entries_[i].given ? entries_[i].one->setup_s : entries_[i].setup_s; }
  // flow_range(unfolded(i)) when it was stored with the plan, else nullptr.
  [[nodiscard]] const FlowRange* range(std::size_t i) const { return entries_[i].range.get(); }

 private:
  struct Entry {
    std::shared_ptr<const CommPlan> one;              // the plan of one collective (or the plan as given)
    std::shared_ptr<const CompactPlan> compact;       // or that plan, compact (then `one` is empty)
    double count = 1;
    double setup_s = 0;
    bool given = false;                               // stored as given: `one` is the plan itself
    mutable std::shared_ptr<const CommPlan> folded;   // made on first access (folded entries)
    std::shared_ptr<const FlowRange> range;           // flow_range(*one), when stored with it
  };
  void push_folded_entry(Entry e, double count, double setup_s, std::shared_ptr<const FlowRange> range);
  std::vector<Entry> entries_;
};

struct Device {
  std::int64_t gpu = 0;             // representative global GPU (rank) of this device
  std::int32_t stage = 0;
  std::int64_t multiplicity = 1;    // ranks this device stands for
  std::int64_t static_bytes = 0;    // memory held for the whole step (weights, grads, optimizer, buffers)
  std::int64_t capacity_bytes = 0;  // device memory
};

class StepGraph {
 public:
  // The ops at one end of an op's edges (its successors or its predecessors), in the order the
  // edges were added. A view into the graph's edge array: valid while the graph lives, also
  // across add_edge calls.
  class Neighbours {
   public:
    class iterator {
     public:
      using iterator_category = std::forward_iterator_tag;
      using value_type = std::int32_t;
      using difference_type = std::ptrdiff_t;
      using pointer = void;
      using reference = std::int32_t;
      iterator() = default;
      iterator(const StepGraph* g, std::int32_t edge, bool out) : g_(g), edge_(edge), out_(out) {}
      std::int32_t operator*() const { return out_ ? g_->edges_[as_size(edge_)].after : g_->edges_[as_size(edge_)].before; }
      iterator& operator++() {
        edge_ = out_ ? g_->edges_[as_size(edge_)].next_out : g_->edges_[as_size(edge_)].next_in;
        return *this;
      }
      iterator operator++(int) {
        iterator old = *this;
        ++*this;
        return old;
      }
      bool operator==(const iterator& o) const { return edge_ == o.edge_; }

     private:
      const StepGraph* g_ = nullptr;
      std::int32_t edge_ = -1;
      bool out_ = true;
    };
    Neighbours(const StepGraph* g, std::int32_t first, std::int32_t count, bool out) : g_(g), first_(first), count_(count), out_(out) {}
    [[nodiscard]] iterator begin() const { return {g_, first_, out_}; }
    [[nodiscard]] iterator end() const { return {g_, -1, out_}; }
    [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(count_); }
    [[nodiscard]] bool empty() const { return count_ == 0; }
    [[nodiscard]] std::int32_t front() const { return *begin(); }
    [[nodiscard]] std::vector<std::int32_t> to_vector() const { return {begin(), end()}; }

   private:
    const StepGraph* g_;
    std::int32_t first_, count_;
    bool out_;
  };

  std::vector<Device> devices;
  std::vector<Op> ops;
  std::vector<std::vector<workload::Kernel>> kernel_lists;
  std::vector<ComputeWork> works;
  std::vector<CommGroup> groups;
  PlanList plans;  // filled by the costing pass

  // Appends op (its index: op_count() - 1 after the call).
  std::int32_t add_op(Op op);
  // Appends a default op and returns it to be filled in place (its index is op_count() - 1 after
  // the call); the reference is valid until the next op is added.
  Op& emplace_op() {
    if (op_count() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) too_many_ops();
    Op& op = ops.emplace_back();
    ensure_nodes(op_count());
    return op;
  }
  // Appends copies of `n` ops (indices op_count() ... op_count() + n - 1), each passed to
  // `patch(Op&, k)` (k: its place among the n) as it is made.
  template <typename Patch>
  void append_ops(const Op* first, std::size_t n, Patch&& patch) {
    if (op_count() + n >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) too_many_ops();
    for (std::size_t k = 0; k < n; ++k) patch(ops.emplace_back(first[k]), k);
    ensure_nodes(op_count());
  }
  // `before` must finish before `after` starts. (Inline: a sweep adds millions.)
  [[gnu::always_inline]] void add_edge(std::int32_t before, std::int32_t after) {
    if (before < 0 || after < 0 || edges_.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      bad_edge(before, after);
    if (after < copied_end_) listed_into_copies_ = true;  // (or into an op before the latest copy)
    if (as_size(after) >= op_count()) edges_ahead_ = true;  // into an op not added yet
    // An edge may name an op that is added later; validate() reports it if it never is.
    ensure_nodes(std::max(as_size(before), as_size(after)) + 1);
    const auto id = static_cast<std::int32_t>(edges_.size());
    edges_.push_back(Edge{before, after, -1, -1});
    // Appends the edge to one of an op's two lists (ends `first` and `last`, linked through `next`).
    const auto append = [&](std::int32_t& first, std::int32_t& last, std::int32_t& count, std::int32_t Edge::*next) {
      if (last >= 0)
        edges_[as_size(last)].*next = id;
      else
        first = id;
      last = id;
      ++count;
    };
    Node& from = nodes_[as_size(before)];
    append(from.first_out, from.last_out, from.out_count, &Edge::next_out);
    Node& to = nodes_[as_size(after)];
    append(to.first_in, to.last_in, to.in_count, &Edge::next_in);
  }
  // The hardware FLOPs ops[i] executes: those of its work for a compute op, else 0.
  [[nodiscard]] double op_flops(std::size_t i) const {
    const Op& o = ops[i];
    return o.kind == OpKind::Compute && o.work >= 0 ? works[static_cast<std::size_t>(o.work)].flops : 0.0;
  }
  // Room for `ops` stored ops, `edges` edges, `copied_passes` copied passes of `copied_ops` ops in
  // all without reallocation.
  void reserve(std::size_t ops, std::size_t edges, std::size_t copied_passes = 0, std::size_t copied_ops = 0);

  // An op's successors and predecessors. Not on a graph with copied passes (InternalError): the
  // edges of those are not listed (replay_in_index_order reads them from their patterns).
  [[nodiscard]] Neighbours successors(std::int32_t op) const {
    if (!copied_passes_.empty()) copied_passes_error();
    return listed_successors(op);
  }
  [[nodiscard]] Neighbours predecessors(std::int32_t op) const {
    if (!copied_passes_.empty()) copied_passes_error();
    return listed_predecessors(op);
  }
  [[nodiscard]] std::size_t num_edges() const {
    if (!copied_passes_.empty()) copied_passes_error();
    return edges_.size();
  }

  // ---- Passes copied without their ops (BuildOptions::compact_copies)
  // A graph's ops are `ops` in index order, except the ops of its copied passes: those are not
  // stored, each is the op of its pass's recorded pass that it copies (op_at). op_count() counts
  // them all; without copied passes (every graph but a sweep's) op i is ops[i].
  // The recorded pass of ops [source, source + size()) (stored), and the in-edges of its ops for
  // its copies: op r of the pass has the ends refs[first[r]] ... refs[first[r + 1] - 1], in the
  // order the edges were added; an end is an op of the pass by its place (>= 0) or, as -1 - k,
  // the op a copy names as its outside[k]. The recorded pass's ops of micro-batch `micro_batch`
  // are, in a copy, of the copy's micro-batch.
  struct PassPattern {
    std::vector<std::int32_t> first;
    std::vector<std::int32_t> refs;
    std::int32_t source = -1;
    std::int32_t micro_batch = -1;
    std::int32_t stored = -1;  // where the recorded pass is in `ops` (set by add_pass_pattern)
    [[nodiscard]] std::int32_t size() const { return static_cast<std::int32_t>(first.size()) - 1; }
  };
  // Ops [base, base + count) copy the recorded pass of pattern `pattern` (ops [source, source +
  // count)): each is the op it copies, of micro-batch `micro_batch` where that op is of the
  // pattern's, priced as it (Op::cost_of), with the listed in-edges (if any) and the in-edges of
  // op (i - base) of the pattern. Not stored: the costing pass prices the op it copies, and the
  // one-pass replay places it as that op.
  struct CopiedPass {
    std::int32_t base = 0;
    std::int32_t count = 0;
    std::int32_t source = 0;
    std::int32_t pattern = -1;
    std::int32_t micro_batch = -1;
    std::int32_t stored_before = 0;  // the stored ops before it (ops.size() when it was added)
    std::array<std::int32_t, 3> outside{-1, -1, -1};
  };
  // A pattern's `first` starts at 0, never decreases and ends at refs.size(); its refs are places
  // (>= 0) or outside ops (-1 ... -3); its source pass is of stored ops, the first and last of
  // them priced (no copies: Op::cost_of < 0). InternalError otherwise.
  std::int32_t add_pass_pattern(PassPattern pattern);
  // Appends a copy of pattern `pattern`'s pass for micro-batch `micro_batch`, with `outside` for
  // its refs -1 ... -3 (-1 where the copy has no such op): ops [op_count(), op_count() + its size).
  // Returns its first op. InternalError for a pattern that does not exist.
  std::int32_t add_copied_pass(std::int32_t pattern, std::array<std::int32_t, 3> outside, std::int32_t micro_batch) {
    if (pattern < 0 || as_size(pattern) >= pass_patterns_.size()) bad_copied_pass();
    const PassPattern& p = pass_patterns_[as_size(pattern)];
    const std::size_t base = op_count();
    const auto count = as_size(p.size());
    if (base + count >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) too_many_ops();
    const auto b = static_cast<std::int32_t>(base);
    copied_passes_.push_back({b, p.size(), p.source, pattern, micro_batch, static_cast<std::int32_t>(ops.size()), outside});
    copied_ops_ += count;
    copied_end_ = b + p.size();
    ensure_nodes(op_count());
    // An edge added into one of its ops before they were: it has listed in-edges.
    if (edges_ahead_)
      for (std::size_t k = 0; k < count; ++k)
        if (nodes_[base + k].in_count > 0) listed_into_copies_ = true;
    return b;
  }
  // Every op: the stored ones and those of the copied passes.
  [[nodiscard]] std::size_t op_count() const { return ops.size() + copied_ops_; }
  // InternalError naming `reader` on a graph with copied passes: for what reads ops[i] as op i.
  void require_every_op_stored(const char* reader) const {
    if (!copied_passes_.empty()) not_every_op_stored(reader);
  }
  // Where op i (0 <= i < op_count()) is in `ops`, or -1 for an op of a copied pass.
  [[nodiscard]] std::int64_t position(std::int32_t i) const {
    if (i >= copied_end_) return static_cast<std::int64_t>(i) - static_cast<std::int64_t>(copied_ops_);
    return position_before_copies_end(i);
  }
  // Stored op i, to be changed (InternalError for an op of a copied pass or past the ops).
  [[nodiscard]] Op& stored_op(std::int32_t i) {
    const std::int64_t at = i >= 0 && as_size(i) < op_count() ? position(i) : -1;
    if (at < 0) not_stored(i);
    return ops[static_cast<std::size_t>(at)];
  }
  // Op i as stored, or as its copied pass copies it: the op it copies, of the copy's micro-batch
  // where that op is of the recorded one, Op::cost_of naming it. InternalError past the ops.
  [[nodiscard]] Op op_at(std::int32_t i) const;
  // Whether an op of a copied pass may have listed in-edges too (an edge was added into an op
  // before the end of the latest copied pass, or into a copied op before it was added); a step
  // graph's builder adds none.
  [[nodiscard]] bool listed_edges_into_copies() const { return listed_into_copies_; }
  [[nodiscard]] const std::vector<CopiedPass>& copied_passes() const { return copied_passes_; }
  [[nodiscard]] const PassPattern& pass_pattern(std::int32_t k) const { return pass_patterns_[as_size(k)]; }
  // The predecessors and successors in the edge array only: all of them unless the op is in a
  // copied pass or precedes one.
  [[nodiscard]] Neighbours listed_predecessors(std::int32_t op) const {
    const Node& n = nodes_[as_size(op)];
    return {this, n.first_in, n.in_count, false};
  }
  [[nodiscard]] Neighbours listed_successors(std::int32_t op) const {
    const Node& n = nodes_[as_size(op)];
    return {this, n.first_out, n.out_count, true};
  }

  // Throws InternalError on a cycle (naming an op on it), an op on a device that does not exist,
  // a communication op without a plan, or an edge to a missing op.
  void validate() const;
  // Ops in a topological order (Boost.Graph); throws InternalError on a cycle.
  [[nodiscard]] std::vector<std::int32_t> topological_order() const;
  // "fwd, micro-batch 5, chunk 0, stage 0 (device 0)" style description for messages.
  [[nodiscard]] std::string describe(std::int32_t op) const;

  // Every check of validate() except the cycle search: linear in ops and edges, no traversal.
  // Also rejects a negative or non-finite duration_s, setup_s or flow size. The same as
  // validate_edges_and_plans() with check_op() of every op.
  void validate_ops() const;
  // The checks of validate_ops() that are not about one op: ops added with add_op, edges to
  // missing ops, the plans' setups, repeats and flow sizes. For a pass that reads every op anyway
  // and calls check_op() on each (the stream scheduler), so that the ops are read once.
  void validate_edges_and_plans() const;
  // The checks of validate_ops() on ops[i] (its device, stream, duration, plan index and peer
  // device); throws the InternalError validate_ops() would. Needs check_nodes()'s condition.
  void check_op(std::size_t i) const {
    const Op& o = ops[i];
    const bool comm = o.kind == OpKind::Collective || o.kind == OpKind::SendRecv;
    const auto num_devices = static_cast<std::int64_t>(devices.size());
    if (o.device < 0 || o.device >= num_devices || static_cast<int>(o.stream) >= kNumStreams || !(o.duration_s >= 0) ||
        o.duration_s == std::numeric_limits<double>::infinity() ||
        (comm && (o.plan < 0 || static_cast<std::size_t>(o.plan) >= plans.size())) ||
        (o.kind == OpKind::SendRecv && (o.peer_device < 0 || o.peer_device >= num_devices || o.peer_device == o.device)))
      op_error(i);
  }
  // Throws InternalError when an op was pushed into `ops` without add_op().
  void check_nodes() const;
  // The ops of one dependency cycle in edge order (empty when the graph is acyclic).
  [[nodiscard]] std::vector<std::int32_t> find_cycle() const;
  // Error message naming the ops of a cycle found by find_cycle().
  [[nodiscard]] std::string describe_cycle(const std::vector<std::int32_t>& cycle) const;

 private:
  static std::size_t as_size(std::int32_t i) { return static_cast<std::size_t>(i); }
  // The error of check_op(i).
  [[noreturn]] void op_error(std::size_t i) const;
  // Every edge in one array; the edges of an op are linked lists through it, in the order added.
  struct Edge {
    std::int32_t before;
    std::int32_t after;
    std::int32_t next_out;  // next edge leaving `before`, -1 at the end
    std::int32_t next_in;   // next edge entering `after`, -1 at the end
  };
  struct Node {
    std::int32_t first_out = -1, last_out = -1, out_count = 0;
    std::int32_t first_in = -1, last_in = -1, in_count = 0;
  };
  // Nodes for ops [0, n) at least. The array grows geometrically; node_ops_ counts the nodes in use
  // (those of the ops and of ops an edge named before they were added), the others are edgeless.
  void ensure_nodes(std::size_t n) {
    if (n <= node_ops_) return;
    node_ops_ = n;
    if (nodes_.size() >= n) return;
    // Twice the size, but not past the reserved capacity while n fits in it.
    std::size_t to = std::max(n, 2 * nodes_.size());
    if (n <= nodes_.capacity()) to = std::min(to, nodes_.capacity());
    nodes_.resize(to);
  }
  [[noreturn]] static void too_many_ops();
  [[noreturn]] static void copied_passes_error() {
    throw InternalError("step graph: the edges of its copied passes are not listed (built with compact_copies); "
                        "only replay_in_index_order reads such a graph");
  }
  [[noreturn]] static void bad_copied_pass();
  [[noreturn]] void not_stored(std::int32_t i) const;
  [[noreturn]] static void not_every_op_stored(const char* reader);
  [[nodiscard]] std::int64_t position_before_copies_end(std::int32_t i) const;
  [[noreturn]] static void bad_pass_pattern();
  [[noreturn]] void bad_edge(std::int32_t before, std::int32_t after) const;
  std::vector<Node> nodes_;  // per op (and per op an edge names before it is added), and spare ones
  std::size_t node_ops_ = 0;  // nodes in use: [0, node_ops_)
  std::vector<Edge> edges_;
  std::vector<PassPattern> pass_patterns_;
  std::vector<CopiedPass> copied_passes_;
  std::size_t copied_ops_ = 0;   // ops of the copied passes (not stored)
  std::int32_t copied_end_ = 0;  // the op after the latest copied pass
  bool listed_into_copies_ = false;
  bool edges_ahead_ = false;  // an edge was added into an op not added yet
};

}  // namespace stepsim::sim
