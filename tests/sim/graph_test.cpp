#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/sim/engine.hpp"
#include "stepsim/sim/graph.hpp"

namespace sim = stepsim::sim;

namespace {

sim::Op compute_op(std::int32_t device, const std::string& label, std::int32_t micro_batch = -1) {
  sim::Op op;
  op.kind = sim::OpKind::Compute;
  op.device = device;
  op.stage = device;
  op.micro_batch = micro_batch;
  op.label = label;
  return op;
}

std::string message_of(const sim::StepGraph& g) {
  try {
    g.validate();
  } catch (const stepsim::InternalError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("graph: describe names label, micro-batch, chunk, stage and device") {
  sim::StepGraph g;
  g.devices.resize(1);
  sim::Op op = compute_op(0, "fwd", 5);
  op.chunk = 0;
  g.add_op(op);
  CHECK(g.describe(0) == "fwd, micro-batch 5, chunk 0, stage 0 (device 0)");
  CHECK(g.describe(3) == "missing op 3");
}

TEST_CASE("graph: validate accepts a chain and counts edges") {
  sim::StepGraph g;
  g.devices.resize(2);
  const auto a = g.add_op(compute_op(0, "fwd"));
  const auto b = g.add_op(compute_op(1, "fwd"));
  const auto c = g.add_op(compute_op(1, "bwd"));
  g.add_edge(a, b);
  g.add_edge(b, c);
  CHECK_NOTHROW(g.validate());
  CHECK(g.num_edges() == 2);
  CHECK(g.successors(a).to_vector() == std::vector<std::int32_t>{b});
  CHECK(g.predecessors(c).to_vector() == std::vector<std::int32_t>{b});
}

TEST_CASE("graph: validate names an op of a cycle") {
  sim::StepGraph g;
  g.devices.resize(1);
  const auto a = g.add_op(compute_op(0, "fwd", 0));
  const auto b = g.add_op(compute_op(0, "fwd", 1));
  const auto c = g.add_op(compute_op(0, "bwd", 1));
  g.add_edge(a, b);
  g.add_edge(b, c);
  g.add_edge(c, b);
  CHECK_THROWS_AS(g.validate(), stepsim::InternalError);
  const std::string msg = message_of(g);
  CHECK(msg.find("cycle of 2 ops") != std::string::npos);
  CHECK(msg.find("op 1 (fwd, micro-batch 1, stage 0 (device 0))") != std::string::npos);
  CHECK(msg.find("op 2 (bwd, micro-batch 1, stage 0 (device 0))") != std::string::npos);
  CHECK(msg.find("op 0 ") == std::string::npos);

  CHECK_THROWS_AS(g.topological_order(), stepsim::InternalError);
  try {
    (void)g.topological_order();
  } catch (const stepsim::InternalError& e) {
    CHECK(std::string(e.what()).find("op 1 (fwd, micro-batch 1") != std::string::npos);
  }
}

TEST_CASE("graph: validate rejects a self-loop") {
  sim::StepGraph g;
  g.devices.resize(1);
  const auto a = g.add_op(compute_op(0, "opt"));
  g.add_edge(a, a);
  CHECK(message_of(g) == "step graph has a dependency cycle of 1 ops: op 0 (opt, stage 0 (device 0)) -> back to op 0");
}

TEST_CASE("graph: validate rejects an op on a missing device") {
  sim::StepGraph g;
  g.devices.resize(2);
  g.add_op(compute_op(0, "fwd"));
  g.add_op(compute_op(7, "bwd"));
  CHECK_THROWS_AS(g.validate(), stepsim::InternalError);
  CHECK(message_of(g) == "step graph: op 1 (bwd, stage 7 (device 7)) runs on device 7, but the graph has 2 devices");
}

TEST_CASE("graph: validate rejects a communication op without a valid plan") {
  sim::StepGraph g;
  g.devices.resize(1);
  sim::Op op;
  op.kind = sim::OpKind::Collective;
  op.stream = sim::Stream::TpComm;
  op.label = "tp.ag";
  op.plan = -1;
  g.add_op(op);
  CHECK(message_of(g) ==
        "step graph: communication op 0 (tp.ag (device 0)) has plan index -1, but the graph has 0 plans");
  g.plans.emplace_back();
  g.ops[0].plan = 0;
  CHECK_NOTHROW(g.validate());
  g.ops[0].plan = 1;
  CHECK(message_of(g).find("has plan index 1, but the graph has 1 plans") != std::string::npos);
}

TEST_CASE("graph: validate rejects a send/recv with a bad peer") {
  sim::StepGraph g;
  g.devices.resize(2);
  g.plans.emplace_back();
  sim::Op op;
  op.kind = sim::OpKind::SendRecv;
  op.stream = sim::Stream::PpComm;
  op.label = "pp.send";
  op.plan = 0;
  op.peer_device = 1;
  g.add_op(op);
  CHECK_NOTHROW(g.validate());
  g.ops[0].peer_device = 2;
  CHECK(message_of(g) == "step graph: send/recv op 0 (pp.send (device 0 -> 2)) has peer device 2 "
                         "(it must be another of the 2 devices)");
  g.ops[0].peer_device = 0;
  CHECK(message_of(g).find("has peer device 0") != std::string::npos);
}

TEST_CASE("graph: validate rejects an edge to a missing op") {
  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(compute_op(0, "fwd"));
  g.add_edge(0, 4);
  CHECK(message_of(g) == "step graph: edge from op 0 (fwd, stage 0 (device 0)) to missing op 4 (the graph has 1 ops)");
  CHECK_THROWS_AS(g.add_edge(-1, 0), stepsim::InternalError);
}

TEST_CASE("graph: validate rejects negative durations and flow sizes") {
  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(compute_op(0, "fwd"));
  g.ops[0].duration_s = -1;
  CHECK(message_of(g).find("op 0 (fwd, stage 0 (device 0)) has an invalid duration") != std::string::npos);
  g.ops[0].duration_s = 1;
  g.plans.push_back({0.0, {sim::Round{{{0, 1, -5.0}}, 1}}});
  CHECK(message_of(g).find("plan 0 has a flow of -5") != std::string::npos);
  g.plans[0].rounds[0] = sim::Round{{{0, 1, 5.0}}, 0};
  CHECK(message_of(g).find("plan 0 has a round repeated 0 times") != std::string::npos);
  g.plans[0].rounds[0] = sim::Round{{{0, 1, 5.0}, {0, 1, std::nan("")}}, 1};
  CHECK(message_of(g).find("plan 0 has a flow of nan") != std::string::npos);
}

TEST_CASE("graph: validate checks every count a shared collective is folded with") {
  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(compute_op(0, "fwd"));
  auto one = std::make_shared<sim::CommPlan>();
  one->rounds.push_back(sim::Round{{{0, 1, 1e300}, {0, 1, 2.0}}, 1});
  g.plans.push_folded(one, 2.0, 0.0);
  g.plans.push_folded(one, 1.0, 0.0);
  CHECK(message_of(g).empty());
  g.plans.push_folded(one, 1e10, 0.0);  // 1e310 bytes: not finite
  CHECK(message_of(g).find("plan 2 has a flow of inf") != std::string::npos);
  sim::StepGraph h;
  h.devices.resize(1);
  h.add_op(compute_op(0, "fwd"));
  h.plans.push_folded(one, -1.0, 0.0);
  CHECK(message_of(h).find("plan 0 has a flow of -") != std::string::npos);
}

TEST_CASE("graph: topological order respects every edge") {
  sim::StepGraph g;
  g.devices.resize(1);
  for (int i = 0; i < 8; ++i) g.add_op(compute_op(0, "op"));
  // Edges against index order so that the identity is not a valid answer.
  const std::vector<std::pair<int, int>> edges = {{7, 3}, {3, 0}, {6, 0}, {5, 6}, {7, 5}, {0, 1}, {2, 1}, {4, 2}};
  for (const auto& [u, v] : edges) g.add_edge(u, v);
  const auto order = g.topological_order();
  REQUIRE(order.size() == 8);
  std::vector<int> position(8, -1);
  for (std::size_t i = 0; i < order.size(); ++i) position[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
  CHECK(std::count(position.begin(), position.end(), -1) == 0);
  for (const auto& [u, v] : edges) CHECK(position[static_cast<std::size_t>(u)] < position[static_cast<std::size_t>(v)]);
}

TEST_CASE("op labels are interned: equal text, one stored string, compared with strings by text") {
  const sim::OpLabel a = "tp.ag_rs";
  const sim::OpLabel b = std::string("tp.") + "ag_rs";
  CHECK(a == b);
  CHECK(a.str().data() == b.str().data());
  CHECK(a == "tp.ag_rs");
  CHECK(a == std::string("tp.ag_rs"));
  CHECK(a != sim::OpLabel("tp.ar"));
  CHECK(std::string(a) == "tp.ag_rs");
  CHECK(sim::OpLabel().empty());
  CHECK(sim::OpLabel("") == sim::OpLabel());
  sim::Op op;
  op.label = "fwd";
  const sim::Op copy = op;
  CHECK(copy.label == "fwd");
}

TEST_CASE("op labels: thousands of distinct labels, interned from several threads, each read back as its text") {
  // More labels than one block of the label table, interned by four threads at once, each thread
  // reading back every label it made while the others add theirs.
  constexpr int kThreads = 4;
  constexpr int kPerThread = 700;
  std::vector<std::vector<sim::OpLabel>> made(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &made] {
      for (int i = 0; i < kPerThread; ++i) {
        made[static_cast<std::size_t>(t)].emplace_back("label-test." + std::to_string(i % 500) + "." + std::to_string(t % 2));
        for (const auto& l : made[static_cast<std::size_t>(t)]) (void)l.str().size();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kPerThread; ++i) {
      const auto& l = made[static_cast<std::size_t>(t)][static_cast<std::size_t>(i)];
      const std::string text = "label-test." + std::to_string(i % 500) + "." + std::to_string(t % 2);
      CHECK(l == text);
      CHECK(l == sim::OpLabel(text));
      // Threads 0 and 2 made the same texts: the same labels.
      if (t >= 2) CHECK(l == made[static_cast<std::size_t>(t - 2)][static_cast<std::size_t>(i)]);
    }
  CHECK(made[0][0] != made[1][0]);
  CHECK(made[0][0] == made[0][500]);
}

TEST_CASE("graph: the analytic engine, which checks each op as its scheduler reads it, rejects what validate_ops rejects") {
  const auto engine_message = [](const sim::StepGraph& g) -> std::string {
    try {
      (void)sim::run_analytic(g);
    } catch (const stepsim::InternalError& e) {
      return e.what();
    }
    return "";
  };
  const auto ops_message = [](const sim::StepGraph& g) -> std::string {
    try {
      g.validate_ops();
    } catch (const stepsim::InternalError& e) {
      return e.what();
    }
    return "";
  };
  sim::StepGraph g;
  g.devices.resize(2);
  g.plans.emplace_back();
  g.add_op(compute_op(0, "fwd"));
  sim::Op send;
  send.kind = sim::OpKind::SendRecv;
  send.stream = sim::Stream::PpComm;
  send.label = "pp.send";
  send.plan = 0;
  send.peer_device = 1;
  g.add_op(send);
  g.add_edge(0, 1);
  CHECK(engine_message(g).empty());
  CHECK(ops_message(g).empty());
  const auto check_both = [&](const std::string& expected) {
    CAPTURE(expected);
    CHECK(ops_message(g).find(expected) != std::string::npos);
    CHECK(engine_message(g) == ops_message(g));
  };
  g.ops[1].device = 5;
  check_both("runs on device 5, but the graph has 2 devices");
  g.ops[1].device = 0;
  g.ops[1].stream = static_cast<sim::Stream>(sim::kNumStreams);
  check_both("has an invalid stream 5");
  g.ops[1].stream = sim::Stream::PpComm;
  for (const double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    g.ops[0].duration_s = bad;
    check_both("op 0 (fwd, stage 0 (device 0)) has an invalid duration");
  }
  g.ops[0].duration_s = 1;
  g.ops[1].plan = 1;
  check_both("has plan index 1, but the graph has 1 plans");
  g.ops[1].plan = 0;
  g.ops[1].peer_device = 0;
  check_both("has peer device 0");
  g.ops[1].peer_device = 1;
  g.add_edge(1, 3);
  check_both("to missing op 3");
}

TEST_CASE("graph: a compact plan makes the plan it was given, flow by flow, and folds like it") {
  sim::CommPlan plan;
  plan.setup_s = 2e-6;
  plan.algorithm = stepsim::costmodel::NcclAlgorithm::Tree;
  plan.protocol = stepsim::costmodel::NcclProtocol::LL128;
  plan.rounds.push_back(sim::Round{{{0, 1, 3.0}, {1, 2, 0.1}, {2, 0, 7.5}}, 3});
  plan.rounds.push_back(sim::Round{{{4, 5, 1e9}}, 1});
  auto ends = std::make_shared<stepsim::costmodel::PlanRoutes>();
  ends->costs.push_back(stepsim::costmodel::RouteCost{0.0, 1.0, 1.0});
  for (const auto& round : plan.rounds) {
    auto& r = ends->rounds.emplace_back();
    for (const auto& f : round.flows)
      r.push_back(stepsim::costmodel::FlowRoute{static_cast<std::int32_t>(f.src_gpu), static_cast<std::int32_t>(f.dst_gpu), 0});
  }
  const auto compact = std::make_shared<const sim::CompactPlan>(plan, ends);
  CHECK(compact->setup_s() == plan.setup_s);
  CHECK(compact->algorithm() == plan.algorithm);
  CHECK(compact->protocol() == plan.protocol);
  sim::PlanList list;
  list.push_folded(compact, 2.0, 5e-6);
  CHECK(list.algorithm(0) == plan.algorithm);
  CHECK(list.protocol(0) == plan.protocol);
  const sim::CommPlan& made = list.unfolded(0);
  CHECK(&made == &compact->plan());  // made once
  CHECK(made.setup_s == plan.setup_s);
  REQUIRE(made.rounds.size() == plan.rounds.size());
  for (std::size_t r = 0; r < plan.rounds.size(); ++r) {
    CHECK(made.rounds[r].repeat == plan.rounds[r].repeat);
    REQUIRE(made.rounds[r].flows.size() == plan.rounds[r].flows.size());
    for (std::size_t i = 0; i < plan.rounds[r].flows.size(); ++i) {
      CHECK(made.rounds[r].flows[i].src_gpu == plan.rounds[r].flows[i].src_gpu);
      CHECK(made.rounds[r].flows[i].dst_gpu == plan.rounds[r].flows[i].dst_gpu);
      CHECK(made.rounds[r].flows[i].bytes == plan.rounds[r].flows[i].bytes);
      CHECK(list[0].rounds[r].flows[i].bytes == 2.0 * plan.rounds[r].flows[i].bytes);
    }
  }
  CHECK(list[0].setup_s == 5e-6);
  // Ends of other flows are refused.
  auto other = std::make_shared<stepsim::costmodel::PlanRoutes>(*ends);
  other->rounds[0][1].dst_gpu = 3;
  CHECK_THROWS_AS(sim::CompactPlan(plan, other), stepsim::InternalError);
  other->rounds[0].pop_back();
  CHECK_THROWS_AS(sim::CompactPlan(plan, other), stepsim::InternalError);
  CHECK_THROWS_AS(sim::CompactPlan(plan, nullptr), stepsim::InternalError);
  // The same flows given as runs of equal sizes: the same plan; runs that do not count the ends'
  // flows, or a negative run, refused.
  const std::vector<std::pair<double, std::int64_t>> runs{{3.0, 1}, {0.1, 1}, {7.5, 1}, {1e9, 1}};
  const sim::CompactPlan from_runs(runs, {3, 1}, plan.setup_s, plan.algorithm, plan.protocol, ends);
  REQUIRE(from_runs.plan().rounds.size() == plan.rounds.size());
  for (std::size_t r = 0; r < plan.rounds.size(); ++r) {
    CHECK(from_runs.plan().rounds[r].repeat == plan.rounds[r].repeat);
    REQUIRE(from_runs.plan().rounds[r].flows.size() == plan.rounds[r].flows.size());
    for (std::size_t f = 0; f < plan.rounds[r].flows.size(); ++f) CHECK(from_runs.plan().rounds[r].flows[f].bytes == plan.rounds[r].flows[f].bytes);
  }
  const std::vector<std::pair<double, std::int64_t>> too_few{{3.0, 3}};
  CHECK_THROWS_AS(sim::CompactPlan(too_few, {3, 1}, plan.setup_s, plan.algorithm, plan.protocol, ends), stepsim::InternalError);
  const std::vector<std::pair<double, std::int64_t>> negative{{3.0, 5}, {1.0, -1}};
  CHECK_THROWS_AS(sim::CompactPlan(negative, {3, 1}, plan.setup_s, plan.algorithm, plan.protocol, ends), stepsim::InternalError);
}

TEST_CASE("graph: a copied pass's in-edges from its pattern, with listed ones, replay as edges would") {
  // Ops 0 and 1 on device 0 (1 s, 2 s; op 1 of micro-batch 4), op 2 on device 1 (10 s), op 3 a
  // copy of op 1 for micro-batch 7 (not stored: placed as op 1, 2 s) whose pattern says: after
  // the op the copy names as outside[0] (op 1). A listed edge 2 -> 3 too.
  sim::StepGraph g;
  g.devices.resize(2);
  for (const auto& [device, duration_s] : std::vector<std::pair<std::int32_t, double>>{{0, 1}, {0, 2}, {1, 10}}) {
    auto op = compute_op(device, "op");
    op.duration_s = duration_s;
    g.add_op(op);
  }
  g.ops[1].micro_batch = 4;
  sim::StepGraph listed = g;
  auto copy = g.ops[1];
  copy.micro_batch = 7;
  copy.cost_of = 1;
  listed.add_op(copy);
  g.add_edge(0, 1);
  sim::StepGraph::PassPattern pattern;
  pattern.first = {0, 1};
  pattern.refs = {-1};
  pattern.source = 1;
  pattern.micro_batch = 4;
  const auto p = g.add_pass_pattern(pattern);
  CHECK(g.add_copied_pass(p, {1, -1, -1}, 7) == 3);
  CHECK(g.op_count() == 4);
  CHECK(g.ops.size() == 3);
  CHECK_FALSE(g.listed_edges_into_copies());
  // The copy reads as the op it copies, of its micro-batch, priced as that op; it is not stored.
  const auto at3 = g.op_at(3);
  CHECK(at3.micro_batch == 7);
  CHECK(at3.cost_of == 1);
  CHECK(at3.duration_s == 2.0);
  CHECK(at3.label == "op");
  CHECK(g.op_at(1).micro_batch == 4);
  CHECK(g.position(3) == -1);
  CHECK(g.position(2) == 2);
  CHECK_THROWS_AS((void)g.stored_op(3), stepsim::InternalError);
  CHECK_THROWS_AS((void)g.op_at(4), stepsim::InternalError);
  CHECK(g.describe(3) == "op, micro-batch 7, stage 0 (device 0)");
  const auto alone = sim::replay_in_index_order(g);
  REQUIRE(alone.has_value());
  REQUIRE(alone->ops.size() == 4);
  CHECK(alone->ops[3].start_s == 3.0);
  CHECK(alone->ops[3].end_s == 5.0);
  g.add_edge(2, 3);
  CHECK(g.listed_edges_into_copies());
  listed.add_edge(0, 1);
  listed.add_edge(1, 3);
  listed.add_edge(2, 3);
  const auto with = sim::replay_in_index_order(g);
  const auto expected = sim::run_analytic(listed);
  REQUIRE(with.has_value());
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(with->ops[i].start_s == expected.ops[i].start_s);
    CHECK(with->ops[i].end_s == expected.ops[i].end_s);
  }
  CHECK(with->ops[3].start_s == 10.0);
  // An op stored after the copy: op 4, at place 3 of `ops`, changed through stored_op.
  CHECK(g.add_op(compute_op(1, "after")) == 4);
  CHECK(g.position(4) == 3);
  g.stored_op(4).duration_s = 1;
  CHECK(g.ops[3].duration_s == 1.0);
  CHECK(g.op_at(4).label == "after");
  // A copy of a pattern that does not exist: refused.
  CHECK_THROWS_AS(g.add_copied_pass(p + 1, {1, -1, -1}, 0), stepsim::InternalError);
  CHECK_THROWS_AS(g.add_copied_pass(-1, {1, -1, -1}, 0), stepsim::InternalError);
  // A pattern whose source is past the ops, a copied pass (not stored), a pass with a copy in it,
  // or an op that is itself priced as another (a copy listed as an op): refused.
  for (const std::int32_t source : {5, 3, -1}) {
    CAPTURE(source);
    sim::StepGraph::PassPattern bad = pattern;
    bad.source = source;
    CHECK_THROWS_AS(g.add_pass_pattern(bad), stepsim::InternalError);
  }
  sim::StepGraph::PassPattern across;
  across.first = {0, 0, 0};
  across.source = 2;  // ops 2 and 3: op 3 is a copy
  CHECK_THROWS_AS(g.add_pass_pattern(across), stepsim::InternalError);
  sim::StepGraph h = listed;
  sim::StepGraph::PassPattern of_copy = pattern;
  of_copy.source = 3;  // listed.ops[3] names op 1 as the op it copies
  CHECK_THROWS_AS(h.add_pass_pattern(of_copy), stepsim::InternalError);
  // Patterns whose ranges do not cover their ends in order, or with an end past the outside ops.
  for (const auto& [first, refs] : std::vector<std::pair<std::vector<std::int32_t>, std::vector<std::int32_t>>>{
           {{}, {}}, {{1, 1}, {0}}, {{0, 2}, {0}}, {{0, 2, 1}, {0, 0}}, {{0, 1}, {-4}}}) {
    sim::StepGraph::PassPattern bad;
    bad.first = first;
    bad.refs = refs;
    bad.source = 0;
    CHECK_THROWS_AS(h.add_pass_pattern(bad), stepsim::InternalError);
  }
}

TEST_CASE("graph: a stored op between copied passes is named by its index in a failed check, and a reader of every op refuses the graph") {
  // Ops 0 and 1 stored, op 2 a copy of op 1, op 3 stored (on a device that does not exist), op 4
  // another copy of op 1: op 3, at place 2 of `ops`, is the op the replay's check names.
  sim::StepGraph g;
  g.devices.resize(1);
  g.add_op(compute_op(0, "first"));
  g.add_op(compute_op(0, "copied"));
  sim::StepGraph::PassPattern pattern;
  pattern.first = {0, 0};
  pattern.source = 1;
  const auto p = g.add_pass_pattern(pattern);
  CHECK(g.add_copied_pass(p, {-1, -1, -1}, -1) == 2);
  CHECK(g.add_op(compute_op(7, "between")) == 3);
  CHECK(g.add_copied_pass(p, {-1, -1, -1}, -1) == 4);
  CHECK(g.position(3) == 2);
  std::string message;
  try {
    (void)sim::replay_in_index_order(g);
  } catch (const stepsim::InternalError& e) {
    message = e.what();
  }
  CAPTURE(message);
  CHECK(message.find("op 3 (between") != std::string::npos);
  CHECK(message.find("device 7") != std::string::npos);
  CHECK_THROWS_AS(g.require_every_op_stored("a test"), stepsim::InternalError);
  sim::StepGraph listed;
  listed.add_op(compute_op(0, "op"));
  listed.require_every_op_stored("a test");
}

TEST_CASE("graph: an edge added into an op before it was, then copied: the replay reads it") {
  // Op 2 copies op 1 (after op 1 by its pattern); an edge 0 -> 2 was added before op 2 was.
  sim::StepGraph g;
  g.devices.resize(2);
  g.add_op(compute_op(1, "long"));
  g.ops.back().duration_s = 10;
  g.add_edge(0, 2);
  g.add_op(compute_op(0, "a"));
  g.ops.back().duration_s = 1;
  sim::StepGraph::PassPattern pattern;
  pattern.first = {0, 1};
  pattern.refs = {-1};
  pattern.source = 1;
  CHECK(g.add_copied_pass(g.add_pass_pattern(pattern), {1, -1, -1}, -1) == 2);
  CHECK(g.listed_edges_into_copies());
  g.validate_edges_and_plans();
  const auto t = sim::replay_in_index_order(g);
  REQUIRE(t.has_value());
  CHECK(t->ops[2].start_s == 10.0);
  CHECK(t->ops[2].end_s == 11.0);
}
