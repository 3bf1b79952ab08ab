#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "report/run_report.hpp"
#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

TEST(Lower, FullFidelityHasEveryRankAndRendezvousGroups) {
  auto spec = testing::gpt_spec(2, 2, 2, 8);
  Program prog = build_program(spec);
  auto cluster = testing::a100_cluster(8);
  Lowered low = lower(prog, cluster, testing::a100_cost(), Fidelity::FULL);
  EXPECT_EQ(low.plan.num_devices, 8u);
  // Every collective instance is joined by all members of its group: 2 for TP and DP
  // (t = d = 2), 2 for the tied-embedding group; sends have one participant.
  for (const auto& c : low.plan.comms) EXPECT_TRUE(c.participants == 2 || c.participants == 1);
  const auto tl = sim::simulate(low.plan, low.network);
  EXPECT_GT(tl.flows, 0u);
}

TEST(Lower, FastFidelityKeepsOneRankPerStage) {
  auto spec = testing::gpt_spec(2, 2, 2, 8);
  Program prog = build_program(spec);
  auto cluster = testing::a100_cluster(8);
  Lowered low = lower(prog, cluster, testing::a100_cost(), Fidelity::FAST);
  EXPECT_EQ(low.plan.num_devices, 2u);
  EXPECT_EQ(low.device_rank, (std::vector<std::uint32_t>{0, 4}));
}

// Whatever the rank order, fast fidelity's devices are exactly the layout's representatives
// (found without visiting every rank), in rank order.
TEST(Lower, FastFidelitySimulatesTheRepresentativesInRankOrder) {
  for (const char* order : {"tp-cp-ep-dp-pp", "pp-tp-cp-ep-dp", "dp-pp-tp-cp-ep"}) {
    auto spec = testing::gpt_spec(2, 2, 2, 8);
    spec.layout.rank_order = order;
    const Program prog = build_program(spec);
    const Lowered low = lower(prog, testing::a100_cluster(8), testing::a100_cost(), Fidelity::FAST);
    const ParallelLayout pl = parallel_layout(spec.layout);
    std::vector<std::uint32_t> expected;
    std::vector<std::int32_t> stages;
    for (std::uint32_t r = 0; r < 8; ++r)
      if (pl.is_representative(r)) {
        expected.push_back(r);
        stages.push_back(static_cast<std::int32_t>(pl.coords(r).stage));
      }
    EXPECT_EQ(low.device_rank, expected) << order;
    EXPECT_EQ(low.device_stage, stages) << order;
  }
}

TEST(Lower, FastAndFullAgreeOnASymmetricLayout) {
  auto spec = testing::gpt_spec(2, 2, 2, 8);
  Program prog = build_program(spec);
  auto cluster = testing::a100_cluster(8);
  auto cost = testing::a100_cost();
  const auto full = sim::simulate(lower(prog, cluster, cost, Fidelity::FULL).plan, cluster.network());
  const auto fast = sim::simulate(lower(prog, cluster, cost, Fidelity::FAST).plan, cluster.network());
  EXPECT_NEAR(fast.makespan.seconds() / full.makespan.seconds(), 1.0, 0.02);
}

TEST(Lower, LayoutMustMatchTheCluster) {
  auto spec = testing::gpt_spec(2, 2, 2, 8);
  Program prog = build_program(spec);
  auto cluster = testing::a100_cluster(16);
  EXPECT_THROW((void)lower(prog, cluster, testing::a100_cost(), Fidelity::FULL), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::strategies

namespace trainsim::strategies {
namespace {

// Op descriptors: every task says what it is; a collective names its group's ranks; fast
// fidelity's folded tasks carry the FLOPs of the compute they fold, the same total per
// rank as full fidelity's separate tasks.
TEST(Lower, OpDescriptorsDescribeEveryTask) {
  auto spec = testing::gpt_spec(2, 2, 2, 8);
  spec.recompute = Recompute::SELECTIVE;
  const Program prog = build_program(spec);
  const auto cluster = testing::a100_cluster(8);
  LowerOptions options;
  options.describe_ops = true;
  const Lowered full = lower(prog, cluster, testing::a100_cost(), Fidelity::FULL, options);
  const Lowered fast = lower(prog, cluster, testing::a100_cost(), Fidelity::FAST, options);
  const sim::Plan& p = full.plan;
  ASSERT_EQ(p.op_of_task.size(), p.size());
  double flops_full_rank0 = 0, flops_fast_rank0 = 0;
  for (sim::TaskId t = 0; t < p.size(); ++t) {
    ASSERT_NE(p.op_of_task[t], sim::NONE) << "task " << t;
    const sim::OpDescriptor& op = p.ops[p.op_of_task[t]];
    EXPECT_EQ(op.dtype, "bf16");
    if (p.kind[t] == sim::TaskKind::COMPUTE) {
      EXPECT_EQ(op.kind, sim::OpDescriptor::Kind::COMPUTE);
      if (p.device[t] == 0) flops_full_rank0 += op.flops;
    } else {
      ASSERT_NE(op.group, sim::NONE);
      const auto& ranks = p.op_groups[op.group];
      EXPECT_NE(std::find(ranks.begin(), ranks.end(), full.device_rank[p.device[t]]), ranks.end());
      EXPECT_DOUBLE_EQ(op.bytes, p.comms[p.comm[t]].bytes);
      if (op.kind == sim::OpDescriptor::Kind::COLLECTIVE && p.category[t] == static_cast<std::uint8_t>(Category::TP_COMM)) {
        EXPECT_EQ(ranks.size(), 2u);
      }
    }
  }
  for (sim::TaskId t = 0; t < fast.plan.size(); ++t)
    if (fast.plan.device[t] == 0 && fast.plan.kind[t] == sim::TaskKind::COMPUTE)
      flops_fast_rank0 += fast.plan.ops[fast.plan.op_of_task[t]].flops;
  EXPECT_GT(flops_full_rank0, 0);
  EXPECT_NEAR(flops_fast_rank0, flops_full_rank0, 1e-9 * flops_full_rank0);
  // Without the option the side table stays empty.
  EXPECT_TRUE(lower(prog, cluster, testing::a100_cost(), Fidelity::FAST).plan.ops.empty());
}


// Fast fidelity folds a run with its blocking tensor-parallel collectives into one task:
// contention from other streams slows only its computing share (the collectives in it run
// on the compute stream, which full fidelity does not slow), and its transfers stretch by
// the link slowdown while data-parallel traffic shares their NVLink.
TEST(Lower, FoldedTasksSlowOnlyTheirComputeAndSharedLinks) {
  const Program prog = build_program(testing::gpt_spec(4, 1, 2, 4));
  const auto cluster = testing::a100_cluster(8);  // TP and DP rings both on one node's NVLink
  const Lowered fast = lower(prog, cluster, testing::a100_cost(), Fidelity::FAST);
  int folded = 0;
  for (sim::TaskId t = 0; t < fast.plan.size(); ++t) {
    const std::uint32_t p = fast.parts_of_task[t];
    if (p == sim::NONE) continue;
    const auto& parts = fast.parts[p];
    const double compute = (parts[static_cast<int>(Category::COMPUTE)] + parts[static_cast<int>(Category::RECOMPUTE)]).seconds();
    const double tp = parts[static_cast<int>(Category::TP_COMM)].seconds();
    const double total = fast.plan.duration[t].seconds();
    ASSERT_GT(tp, 0);
    EXPECT_NEAR(fast.plan.contention_share[t], compute / total, 1e-6);
    EXPECT_GT(fast.plan.link_slowdown[t], 0.0f);
    EXPECT_LT(fast.plan.link_slowdown[t], tp / total * 10);
    ++folded;
  }
  EXPECT_GT(folded, 0);
}


// A folded task is named after the computation that most of its time is: a stage's forward
// run opens with the tensor all-gather of the activations it received scattered
// (pipeline-communication category) and a backward under full recompute opens with the
// recomputed forward, yet traces and critical paths show them as the forward and the
// backward they are, computing.
TEST(Lower, FoldedTasksAreNamedAfterWhatMostOfTheirTimeIs) {
  auto spec = testing::gpt_spec(2, 2, 2, 8);  // tensor 2 without sequence parallelism: scatter/gather
  spec.recompute = Recompute::FULL;
  const Program prog = build_program(spec);
  ASSERT_EQ(prog.roles[1].chunks[0].forward.front().label, "pp-gather-activations");
  ASSERT_EQ(prog.roles[0].chunks[0].backward.front().label, "pp-gather-gradients");
  LowerOptions options;
  options.describe_ops = true;
  const Lowered fast = lower(prog, testing::a100_cluster(8), testing::a100_cost(), Fidelity::FAST, options);
  const sim::Plan& plan = fast.plan;
  int forwards = 0, backwards = 0;
  for (sim::TaskId t = 0; t < plan.size(); ++t) {
    const std::uint32_t p = fast.parts_of_task[t];
    if (p == sim::NONE) continue;
    const auto& parts = fast.parts[p];
    const auto compute = parts[static_cast<int>(Category::COMPUTE)];
    const auto recompute = parts[static_cast<int>(Category::RECOMPUTE)];
    const Category most = compute >= recompute ? Category::COMPUTE : Category::RECOMPUTE;
    EXPECT_EQ(plan.category[t], static_cast<std::uint8_t>(most));
    const std::string& label = plan.label_names[plan.label[t]];
    const std::string& op = plan.ops[plan.op_of_task[t]].name;
    if (label == "fwd") {
      ++forwards;
      EXPECT_NE(op.find(".fwd"), std::string::npos) << op;
    } else {
      EXPECT_EQ(label, "bwd");
      ++backwards;
      EXPECT_GT(recompute.ps, 0);  // the recomputed forward is in it, but not what names it
      EXPECT_NE(op.find(".bwd"), std::string::npos) << op;
    }
  }
  EXPECT_EQ(forwards, 2 * 4);  // each stage runs 8 / (data 2) micro-batches
  EXPECT_EQ(backwards, 2 * 4);
}

// Summary-only simulation keeps no per-task timeline and gives the same iteration time,
// memory peaks and event counts, in both fidelities.
TEST(Lower, SummaryOnlySimulationKeepsTheFigures) {
  auto spec = testing::gpt_spec(2, 2, 2, 8);
  spec.recompute = Recompute::SELECTIVE;
  spec.overlap_grad_reduce = true;
  const Program prog = build_program(spec);
  const auto cluster = testing::a100_cluster(8);
  for (const Fidelity f : {Fidelity::FAST, Fidelity::FULL}) {
    const Lowered low = lower(prog, cluster, testing::a100_cost(), f);
    const sim::Timeline whole = sim::simulate(low.plan, low.network);
    sim::SimulateOptions options;
    options.summary_only = true;
    const sim::Timeline summary = sim::simulate(low.plan, low.network, options);
    EXPECT_TRUE(summary.start.empty() && summary.end.empty() && summary.ready.empty());
    EXPECT_EQ(summary.makespan, whole.makespan);
    EXPECT_EQ(summary.events, whole.events);
    ASSERT_EQ(summary.memory.size(), whole.memory.size());
    for (std::size_t d = 0; d < whole.memory.size(); ++d) {
      EXPECT_EQ(summary.memory[d].peak_bytes, whole.memory[d].peak_bytes);
      EXPECT_EQ(summary.memory[d].at_peak, whole.memory[d].at_peak);
    }
    const auto r = report::analyze(prog, low, summary, cluster, testing::a100_cost());
    EXPECT_FALSE(r.has_breakdown);
    EXPECT_DOUBLE_EQ(r.iteration_s, whole.makespan.seconds());
  }
}

}  // namespace
}  // namespace trainsim::strategies

namespace trainsim::strategies {
namespace {

// Fast fidelity folds the pieces of a first forward (one per layer, each waiting for its
// parameter bucket) once per shape: two pieces alike in every item but the segment they run
// must not share a fold. Layer 1's forward runs a segment twenty times as heavy here: fast
// fidelity must see it in the first micro-batch as full fidelity does.
TEST(Lower, PiecesAlikeButForTheirSegmentsFoldApart) {
  auto spec = testing::gpt_spec(2, 1, 2, 8);  // tensor parallel: a layer is several items
  spec.zero_stage = 1;
  spec.overlap_param_gather = true;
  Program prog = build_program(spec);
  Role& role = prog.roles[0];
  std::map<std::uint32_t, std::uint32_t> heavy;  // segment → its twentyfold copy
  for (Item& it : role.chunks[0].forward) {
    if (it.kind != Item::Kind::COMPUTE || it.layer != 1) continue;
    auto [pos, fresh] = heavy.try_emplace(it.segment, static_cast<std::uint32_t>(role.segments.size()));
    if (fresh) {
      Segment s = role.segments[it.segment];
      const std::vector<models::Op> ops = s.ops;
      for (int k = 1; k < 20; ++k) s.ops.insert(s.ops.end(), ops.begin(), ops.end());
      role.segments.push_back(std::move(s));
    }
    it.segment = pos->second;
  }
  ASSERT_FALSE(heavy.empty());
  std::size_t pieces = 0;
  for (const Step& st : role.steps) pieces += st.kind == Step::Kind::ITEM && !st.whole_run && st.count > 1;
  ASSERT_GT(pieces, 2u) << "the first forward goes in pieces";
  const auto cluster = testing::a100_cluster(4);
  double t[2] = {};
  for (const Fidelity f : {Fidelity::FAST, Fidelity::FULL}) {
    const Lowered low = lower(prog, cluster, testing::a100_cost(), f);
    t[f == Fidelity::FULL] = sim::simulate(low.plan, low.network).makespan.seconds();
  }
  std::printf("  fast %.6f s, full %.6f s\n", t[0], t[1]);
  EXPECT_NEAR(t[0], t[1], 0.01 * t[1]);
}

}  // namespace
}  // namespace trainsim::strategies
