#include "stepsim/sim/graph.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>

#include "stepsim/scenarios/error.hpp"

namespace stepsim::sim {

namespace {

std::size_t as_index(std::int32_t i) { return static_cast<std::size_t>(i); }

const char* kind_name(OpKind k) {
  switch (k) {
    case OpKind::Compute: return "compute";
    case OpKind::Collective: return "collective";
    case OpKind::SendRecv: return "send/recv";
    case OpKind::Delay: return "delay";
  }
  return "op";
}

bool is_comm(OpKind k) { return k == OpKind::Collective || k == OpKind::SendRecv; }

// "op 17 (fwd, micro-batch 5, chunk 0, stage 0 (device 0))" for error messages.
std::string name_op(const StepGraph& g, std::int32_t op) {
  return "op " + std::to_string(op) + " (" + g.describe(op) + ")";
}

}  // namespace

namespace {

// The interned labels, numbered from 1 in the order they first appear. The numbers index a table
// of fixed blocks that never move, so that reading a label needs no lock: a block and its entries
// are written before the number that reaches them is handed out (under the mutex, which
// publishes them).
constexpr std::uint32_t kLabelBlock = 1024;
constexpr std::uint32_t kLabelBlocks = 1024;
struct LabelTable {
  std::mutex mutex;
  std::unordered_map<std::string, std::uint32_t> ids;
  std::array<std::atomic<const std::string**>, kLabelBlocks> blocks{};
  std::uint32_t count = 0;
};
// Never destroyed: a label may be read while the process exits.
LabelTable& label_table() {
  static LabelTable* const table = new LabelTable;
  return *table;
}

std::uint32_t intern_label(const std::string& text) {
  LabelTable& t = label_table();
  const std::lock_guard<std::mutex> lock(t.mutex);
  const auto found = t.ids.find(text);
  if (found != t.ids.end()) return found->second;
  const std::uint32_t id = t.count + 1;
  const std::uint32_t block = id / kLabelBlock;
  if (block >= kLabelBlocks) throw InternalError("step graph: more than " + std::to_string(kLabelBlock * kLabelBlocks - 1) + " distinct op labels");
  if (t.blocks[block].load(std::memory_order_relaxed) == nullptr)
    t.blocks[block].store(new const std::string*[kLabelBlock](), std::memory_order_release);  // for the process's life
  const auto stored = t.ids.emplace(text, id).first;
  t.blocks[block].load(std::memory_order_relaxed)[id % kLabelBlock] = &stored->first;
  t.count = id;
  return id;
}

}  // namespace

const std::string& OpLabel::stored(std::uint32_t id) {
  return *label_table().blocks[id / kLabelBlock].load(std::memory_order_acquire)[id % kLabelBlock];
}

OpLabel::OpLabel(const char* text) : OpLabel(std::string(text != nullptr ? text : "")) {}

OpLabel::OpLabel(const std::string& text) : id_(text.empty() ? 0 : intern_label(text)) {}

const std::string& OpLabel::empty_text() {
  static const std::string empty;
  return empty;
}

SharedRanks::SharedRanks(Ranks ranks) {
  auto data = std::make_shared<Data>();
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  const auto mix = [&h](std::uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const auto& g : ranks) {
    mix(g.size());
    for (const std::int64_t r : g) mix(static_cast<std::uint64_t>(r));
  }
  data->ranks = std::move(ranks);
  data->hash = h;
  data_ = std::move(data);
}

const SharedRanks::Ranks& SharedRanks::empty_ranks() {
  static const Ranks empty;
  return empty;
}

void PlanList::push_back(CommPlan plan) {
  Entry e;
  e.one = std::make_shared<CommPlan>(std::move(plan));
  e.given = true;
  entries_.push_back(std::move(e));
}

void PlanList::push_folded(std::shared_ptr<const CommPlan> one, double count, double setup_s,
                           std::shared_ptr<const FlowRange> range) {
  Entry e;
  e.one = std::move(one);
  push_folded_entry(std::move(e), count, setup_s, std::move(range));
}

void PlanList::push_folded(std::shared_ptr<const CompactPlan> one, double count, double setup_s,
                           std::shared_ptr<const FlowRange> range) {
  Entry e;
  e.compact = std::move(one);
  push_folded_entry(std::move(e), count, setup_s, std::move(range));
}

void PlanList::push_folded_entry(Entry e, double count, double setup_s, std::shared_ptr<const FlowRange> range) {
  e.count = count;
  e.setup_s = setup_s;
  e.range = std::move(range);
  entries_.push_back(std::move(e));
}

FlowRange flow_range(const CommPlan& plan) {
  const costmodel::FlowSizes sizes = costmodel::flow_sizes(plan);
  return flow_range(sizes.repeats, sizes.bytes);
}

FlowRange flow_range(std::span<const std::int64_t> repeats, std::span<const double> flow_bytes) {
  FlowRange r{std::numeric_limits<double>::infinity(), 0.0, std::numeric_limits<std::int64_t>::max()};
  for (const std::int64_t repeat : repeats) r.min_repeat = std::min<std::int64_t>(r.min_repeat, repeat);
  for (const double b : flow_bytes) {
    // NaN fails both comparisons: the range is then marked invalid and the flows are checked one by one.
    if (!(b >= r.min_bytes)) r.min_bytes = std::isnan(b) ? -1.0 : b;
    if (!(b <= r.max_bytes)) r.max_bytes = b;
  }
  return r;
}

CompactPlan::CompactPlan(const CommPlan& plan, std::shared_ptr<const costmodel::PlanRoutes> ends)
    : ends_(std::move(ends)), setup_s_(plan.setup_s), algorithm_(plan.algorithm), protocol_(plan.protocol) {
  if (!ends_ || !ends_->matches(plan)) throw InternalError("compact plan: the flows do not go between the given ends");
  repeats_.reserve(plan.rounds.size());
  for (const auto& round : plan.rounds) {
    repeats_.push_back(round.repeat);
    for (const auto& f : round.flows) add_flows(f.bytes, 1);
  }
  byte_runs_.shrink_to_fit();
}

CompactPlan::CompactPlan(std::span<const double> flow_bytes, std::vector<std::int64_t> repeats, double setup_s,
                         costmodel::NcclAlgorithm algorithm, costmodel::NcclProtocol protocol,
                         std::shared_ptr<const costmodel::PlanRoutes> ends)
    : ends_(std::move(ends)), repeats_(std::move(repeats)), setup_s_(setup_s), algorithm_(algorithm), protocol_(protocol) {
  std::size_t flows = 0;
  if (ends_) {
    for (const auto& round : ends_->rounds) flows += round.size();
  }
  if (!ends_ || ends_->rounds.size() != repeats_.size() || flows != flow_bytes.size())
    throw InternalError("compact plan: the flows do not go between the given ends");
  for (const double b : flow_bytes) add_flows(b, 1);
  byte_runs_.shrink_to_fit();
}

CompactPlan::CompactPlan(std::span<const std::pair<double, std::int64_t>> flow_runs, std::vector<std::int64_t> repeats, double setup_s,
                         costmodel::NcclAlgorithm algorithm, costmodel::NcclProtocol protocol,
                         std::shared_ptr<const costmodel::PlanRoutes> ends)
    : ends_(std::move(ends)), repeats_(std::move(repeats)), setup_s_(setup_s), algorithm_(algorithm), protocol_(protocol) {
  std::size_t flows = 0, sized = 0;
  if (ends_) {
    for (const auto& round : ends_->rounds) flows += round.size();
  }
  for (const auto& [bytes, n] : flow_runs) {
    if (n < 0) throw InternalError("compact plan: a run of " + std::to_string(n) + " flows");
    sized += static_cast<std::size_t>(n);
  }
  if (!ends_ || ends_->rounds.size() != repeats_.size() || flows != sized)
    throw InternalError("compact plan: the flows do not go between the given ends");
  for (const auto& [bytes, n] : flow_runs)
    if (n > 0) add_flows(bytes, n);
  byte_runs_.shrink_to_fit();
}

void CompactPlan::add_flows(double bytes, std::int64_t n) {
  // Runs of the same size, bit for bit (a ring's flows are all one size).
  if (!byte_runs_.empty() && std::bit_cast<std::uint64_t>(byte_runs_.back().first) == std::bit_cast<std::uint64_t>(bytes))
    byte_runs_.back().second += n;
  else
    byte_runs_.emplace_back(bytes, n);
}

const CommPlan& CompactPlan::plan() const {
  std::call_once(made_, [this] {
    auto p = std::make_shared<CommPlan>();
    p->setup_s = setup_s_;
    p->algorithm = algorithm_;
    p->protocol = protocol_;
    p->rounds.reserve(repeats_.size());
    std::size_t run = 0;
    std::int64_t used = 0;  // flows of byte_runs_[run] already placed
    for (std::size_t r = 0; r < repeats_.size(); ++r) {
      const auto& ends = ends_->rounds[r];
      Round round;
      round.repeat = repeats_[r];
      round.flows.reserve(ends.size());
      for (const auto& e : ends) {
        if (used == byte_runs_[run].second) {
          ++run;
          used = 0;
        }
        round.flows.push_back(Flow{e.src_gpu, e.dst_gpu, byte_runs_[run].first});
        ++used;
      }
      p->rounds.push_back(std::move(round));
    }
    plan_ = std::move(p);
  });
  return *plan_;
}

const CommPlan& PlanList::operator[](std::size_t i) const {
  const Entry& e = entries_[i];
  if (e.given) return *e.one;
  if (!e.folded) {
    auto folded = std::make_shared<CommPlan>(unfolded(i));
    if (e.count != 1.0)
      for (auto& round : folded->rounds)
        for (auto& f : round.flows) f.bytes *= e.count;
    folded->setup_s = e.setup_s;
    e.folded = std::move(folded);
  }
  return *e.folded;
}

CommPlan& PlanList::operator[](std::size_t i) {
  Entry& e = entries_[i];
  if (!e.given || e.one.use_count() > 1) {
    // A plan of its own: copied from the folded plan, or from a plan another graph shares.
    auto own = std::make_shared<CommPlan>(std::as_const(*this)[i]);
    e = Entry{};
    e.one = own;
    e.given = true;
    return *own;
  }
  // Stored as given and not shared: made as a non-const CommPlan by push_back or here.
  return const_cast<CommPlan&>(*e.one);
}

void StepGraph::reserve(std::size_t num_ops, std::size_t num_edges, std::size_t copied_passes, std::size_t copied_ops) {
  ops.reserve(num_ops);
  nodes_.reserve(num_ops + copied_ops);
  edges_.reserve(num_edges);
  copied_passes_.reserve(copied_passes);
}

std::int32_t StepGraph::add_op(Op op) {
  emplace_op() = std::move(op);
  return static_cast<std::int32_t>(op_count() - 1);
}

std::int32_t StepGraph::add_pass_pattern(PassPattern pattern) {
  if (pattern.first.empty() || pattern.first.front() != 0 || as_size(pattern.first.back()) != pattern.refs.size() ||
      !std::is_sorted(pattern.first.begin(), pattern.first.end()) ||
      std::any_of(pattern.refs.begin(), pattern.refs.end(), [](std::int32_t r) { return r < -3; }))
    bad_pass_pattern();
  // Its source pass: stored ops, one after another in `ops` (no copied pass among them), priced
  // (the builder records a pass of ops it emits; checked at both ends).
  const std::int32_t n = pattern.size();
  if (pattern.source < 0 || as_size(pattern.source) + as_size(n) > op_count()) bad_pass_pattern();
  const std::int64_t first = n > 0 ? position(pattern.source) : 0;
  const std::int64_t last = n > 0 ? position(pattern.source + n - 1) : -1;
  if (n > 0 && (first < 0 || last - first != n - 1 || ops[static_cast<std::size_t>(first)].cost_of >= 0 ||
                ops[static_cast<std::size_t>(last)].cost_of >= 0))
    bad_pass_pattern();
  pattern.stored = static_cast<std::int32_t>(first);
  pass_patterns_.push_back(std::move(pattern));
  return static_cast<std::int32_t>(pass_patterns_.size() - 1);
}

void StepGraph::bad_pass_pattern() {
  throw InternalError("step graph: a pass pattern whose edge ranges do not cover its ends in order, with an end outside the pass "
                      "other than its three outside ops, or whose source is not a pass of stored, priced ops");
}

void StepGraph::bad_copied_pass() { throw InternalError("step graph: a copied pass of a pattern that does not exist"); }

void StepGraph::not_stored(std::int32_t i) const {
  throw InternalError("step graph: op " + std::to_string(i) + (i >= 0 && as_size(i) < op_count() ? " is in a copied pass (not stored)" : " does not exist") +
                      " (the graph has " + std::to_string(op_count()) + " ops)");
}

void StepGraph::not_every_op_stored(const char* reader) {
  throw InternalError(std::string(reader) + " needs every op of the step graph stored (not a graph with copied passes, built with compact_copies)");
}

std::int64_t StepGraph::position_before_copies_end(std::int32_t i) const {
  // The latest copied pass that begins at or before op i.
  const auto after = std::upper_bound(copied_passes_.begin(), copied_passes_.end(), i,
                                      [](std::int32_t op, const CopiedPass& c) { return op < c.base; });
  if (after == copied_passes_.begin()) return i;
  const CopiedPass& c = *(after - 1);
  if (i < c.base + c.count) return -1;
  return static_cast<std::int64_t>(c.stored_before) + (i - c.base - c.count);
}

Op StepGraph::op_at(std::int32_t i) const {
  if (i < 0 || as_size(i) >= op_count()) not_stored(i);
  const std::int64_t at = position(i);
  if (at >= 0) return ops[static_cast<std::size_t>(at)];
  const auto after = std::upper_bound(copied_passes_.begin(), copied_passes_.end(), i,
                                      [](std::int32_t op, const CopiedPass& c) { return op < c.base; });
  const CopiedPass& c = *(after - 1);
  const PassPattern& p = pass_patterns_[as_size(c.pattern)];
  const std::int32_t k = i - c.base;
  Op o = ops[as_size(p.stored + k)];
  if (o.micro_batch == p.micro_batch) o.micro_batch = c.micro_batch;
  o.cost_of = c.source + k;
  return o;
}

void StepGraph::too_many_ops() {
  throw InternalError("step graph: too many ops (the limit is 2^31 - 1)");
}

void StepGraph::bad_edge(std::int32_t before, std::int32_t after) const {
  if (before < 0 || after < 0) {
    throw InternalError("step graph: edge " + std::to_string(before) + " -> " + std::to_string(after) +
                        " has a negative op index");
  }
  throw InternalError("step graph: too many edges (the limit is 2^31 - 1)");
}

std::string StepGraph::describe(std::int32_t op) const {
  if (op < 0 || as_index(op) >= op_count()) return "missing op " + std::to_string(op);
  const Op o = op_at(op);
  std::string s = o.label.empty() ? std::string(kind_name(o.kind)) : o.label.str();
  if (o.micro_batch >= 0) s += ", micro-batch " + std::to_string(o.micro_batch);
  if (o.chunk >= 0) s += ", chunk " + std::to_string(o.chunk);
  if (o.layer >= 0) s += ", layer " + std::to_string(o.layer);
  if (o.stage >= 0) s += ", stage " + std::to_string(o.stage);
  s += " (device " + std::to_string(o.device);
  if (o.kind == OpKind::SendRecv) s += " -> " + std::to_string(o.peer_device);
  s += ")";
  return s;
}

void StepGraph::op_error(std::size_t i) const {
  const auto num_devices = static_cast<std::int64_t>(devices.size());
  const auto num_plans = static_cast<std::int64_t>(plans.size());
  const Op& o = ops[i];
  // Its index: its place in `ops` and the ops of the copied passes before it.
  auto id = static_cast<std::int32_t>(i);
  for (const auto& c : copied_passes_)
    if (static_cast<std::size_t>(c.stored_before) <= i) id += c.count;
  if (o.device < 0 || o.device >= num_devices) {
    throw InternalError("step graph: " + name_op(*this, id) + " runs on device " + std::to_string(o.device) +
                        ", but the graph has " + std::to_string(num_devices) + " devices");
  }
  if (static_cast<int>(o.stream) >= kNumStreams) {
    throw InternalError("step graph: " + name_op(*this, id) + " has an invalid stream " +
                        std::to_string(static_cast<int>(o.stream)));
  }
  if (!std::isfinite(o.duration_s) || o.duration_s < 0) {
    throw InternalError("step graph: " + name_op(*this, id) + " has an invalid duration " +
                        std::to_string(o.duration_s) + " s");
  }
  if (is_comm(o.kind) && (o.plan < 0 || o.plan >= num_plans)) {
    throw InternalError("step graph: communication " + name_op(*this, id) + " has plan index " +
                        std::to_string(o.plan) + ", but the graph has " + std::to_string(num_plans) + " plans");
  }
  if (o.kind == OpKind::SendRecv &&
      (o.peer_device < 0 || o.peer_device >= num_devices || o.peer_device == o.device)) {
    throw InternalError("step graph: send/recv " + name_op(*this, id) + " has peer device " +
                        std::to_string(o.peer_device) + " (it must be another of the " +
                        std::to_string(num_devices) + " devices)");
  }
  throw InternalError("step graph: " + name_op(*this, id) + " failed its check");
}

void StepGraph::validate_ops() const {
  if (!copied_passes_.empty()) copied_passes_error();  // their ops are not stored
  check_nodes();
  for (std::size_t i = 0; i < ops.size(); ++i) check_op(i);
  validate_edges_and_plans();
}

void StepGraph::check_nodes() const {
  if (node_ops_ < op_count()) {
    throw InternalError("step graph: " + std::to_string(op_count() - node_ops_) +
                        " ops were pushed into `ops` directly; add ops with add_op()");
  }
}

void StepGraph::validate_edges_and_plans() const {
  check_nodes();
  for (std::size_t i = op_count(); i < node_ops_; ++i) {
    const auto missing = static_cast<std::int32_t>(i);
    if (nodes_[i].in_count > 0) {
      throw InternalError("step graph: edge from " + name_op(*this, listed_predecessors(missing).front()) + " to missing op " +
                          std::to_string(missing) + " (the graph has " + std::to_string(op_count()) + " ops)");
    }
    if (nodes_[i].out_count > 0) {
      throw InternalError("step graph: edge from missing op " + std::to_string(missing) + " to " +
                          name_op(*this, listed_successors(missing).front()) + " (the graph has " + std::to_string(op_count()) +
                          " ops)");
    }
  }
  // The smallest and largest flow size and the smallest repeat of each distinct unfolded plan
  // (plans of one collective folded with several counts share it; the costing pass stores the
  // range it computed once with the plan): a count >= 0 with which the largest stays finite and
  // the smallest non-negative makes every flow valid.
  std::vector<std::pair<const CommPlan*, FlowRange>> ranges;
  const auto range_of = [&ranges, this](std::size_t p) {
    if (const FlowRange* stored = plans.range(p)) return *stored;
    const CommPlan& plan = plans.unfolded(p);
    for (const auto& r : ranges)
      if (r.first == &plan) return r.second;
    ranges.emplace_back(&plan, flow_range(plan));
    return ranges.back().second;
  };
  for (std::size_t p = 0; p < plans.size(); ++p) {
    const double count = plans.count(p);
    const double setup_s = plans.setup_s(p);
    if (!std::isfinite(setup_s) || setup_s < 0) {
      throw InternalError("step graph: plan " + std::to_string(p) + " has an invalid setup time " + std::to_string(setup_s) + " s");
    }
    const FlowRange r = range_of(p);
    if (r.min_repeat >= 1 && std::isfinite(count) && count >= 0 && r.min_bytes >= 0 && std::isfinite(r.max_bytes) &&
        std::isfinite(r.max_bytes * count))
      continue;  // every round repeats at least once and every flow's count x bytes is finite and >= 0
    // The plan as costed, without folding its count into copies of its flows.
    const CommPlan& plan = plans.unfolded(p);
    for (const auto& round : plan.rounds) {
      if (round.repeat < 1) {
        throw InternalError("step graph: plan " + std::to_string(p) + " has a round repeated " + std::to_string(round.repeat) +
                            " times");
      }
      for (const Flow& f : round.flows) {
        const double bytes = f.bytes * count;
        if (!std::isfinite(bytes) || bytes < 0) {
          throw InternalError("step graph: plan " + std::to_string(p) + " has a flow of " + std::to_string(bytes) + " bytes");
        }
      }
    }
  }
}

std::vector<std::int32_t> StepGraph::find_cycle() const {
  // Iterative depth-first search with three colours; a back edge closes a cycle, which is then
  // read off the DFS stack.
  if (!copied_passes_.empty()) copied_passes_error();
  const std::size_t n = std::min(ops.size(), nodes_.size());
  enum : std::uint8_t { kWhite, kGrey, kBlack };
  std::vector<std::uint8_t> colour(n, kWhite);
  struct Frame {
    std::int32_t op;
    std::int32_t next;  // next edge to follow, -1 when done
  };
  std::vector<Frame> stack;
  for (std::size_t root = 0; root < n; ++root) {
    if (colour[root] != kWhite) continue;
    stack.push_back({static_cast<std::int32_t>(root), nodes_[root].first_out});
    colour[root] = kGrey;
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < 0) {
        colour[as_index(top.op)] = kBlack;
        stack.pop_back();
        continue;
      }
      const Edge& e = edges_[as_index(top.next)];
      top.next = e.next_out;
      const std::int32_t v = e.after;
      if (as_index(v) >= n) continue;  // missing op: reported by validate_ops()
      if (colour[as_index(v)] == kGrey) {
        std::vector<std::int32_t> cycle;
        auto it = std::find_if(stack.begin(), stack.end(), [v](const Frame& f) { return f.op == v; });
        for (; it != stack.end(); ++it) cycle.push_back(it->op);
        return cycle;
      }
      if (colour[as_index(v)] == kWhite) {
        colour[as_index(v)] = kGrey;
        stack.push_back({v, nodes_[as_index(v)].first_out});
      }
    }
  }
  return {};
}

std::string StepGraph::describe_cycle(const std::vector<std::int32_t>& cycle) const {
  constexpr std::size_t kMaxShown = 6;
  std::string s = "step graph has a dependency cycle of " + std::to_string(cycle.size()) + " ops: ";
  for (std::size_t i = 0; i < cycle.size() && i < kMaxShown; ++i) {
    if (i > 0) s += " -> ";
    s += name_op(*this, cycle[i]);
  }
  if (cycle.size() > kMaxShown) s += " -> ...";
  if (!cycle.empty()) s += " -> back to op " + std::to_string(cycle.front());
  return s;
}

void StepGraph::validate() const {
  validate_ops();
  const auto cycle = find_cycle();
  if (!cycle.empty()) throw InternalError(describe_cycle(cycle));
}

std::vector<std::int32_t> StepGraph::topological_order() const {
  using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  const std::size_t n = ops.size();
  BoostGraph g(n);
  for (std::size_t u = 0; u < n && u < nodes_.size(); ++u) {
    for (const std::int32_t v : successors(static_cast<std::int32_t>(u))) {
      if (as_index(v) < n) boost::add_edge(u, as_index(v), g);
    }
  }
  std::vector<BoostGraph::vertex_descriptor> reversed;
  reversed.reserve(n);
  try {
    boost::topological_sort(g, std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    const auto cycle = find_cycle();
    throw InternalError(cycle.empty() ? std::string("step graph has a dependency cycle") : describe_cycle(cycle));
  }
  std::vector<std::int32_t> order;
  order.reserve(n);
  for (auto it = reversed.rbegin(); it != reversed.rend(); ++it) order.push_back(static_cast<std::int32_t>(*it));
  return order;
}

}  // namespace stepsim::sim
