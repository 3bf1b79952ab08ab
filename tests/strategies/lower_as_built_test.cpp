// LowerOptions::as_built: a sweep or search lowers the Program as build_program returned it,
// so fast fidelity takes the middle stages it restored as copies of stage 1 for copies and
// compares only their prices. That must never change a plan.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/parallel_layout.hpp"
#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

Lowered lower_fast(const Program& program, const hardware::Cluster& cluster, bool as_built) {
  LowerOptions options;
  options.as_built = as_built;
  return lower(program, cluster, testing::a100_cost(), Fidelity::FAST, options);
}

// Every task's device, stream, duration and successors, and the makespan.
void expect_same_plan(const Lowered& a, const Lowered& b, const std::string& what) {
  ASSERT_EQ(a.plan.size(), b.plan.size()) << what;
  for (std::size_t t = 0; t < a.plan.size(); ++t) {
    ASSERT_EQ(a.plan.device[t], b.plan.device[t]) << what << ", task " << t;
    ASSERT_EQ(a.plan.stream[t], b.plan.stream[t]) << what << ", task " << t;
    ASSERT_EQ(a.plan.duration[t], b.plan.duration[t]) << what << ", task " << t;
  }
  EXPECT_EQ(a.plan.succ, b.plan.succ) << what;
  EXPECT_EQ(sim::simulate(a.plan, a.network).makespan, sim::simulate(b.plan, b.network).makespan) << what;
}

// Compute-stream seconds of each stage.
std::vector<double> busy_per_stage(const Program& program, const Lowered& low, const Layout& layout) {
  const sim::Timeline tl = sim::simulate(low.plan, low.network);
  const ParallelLayout pl = parallel_layout(layout);
  std::vector<double> busy(program.roles.size(), 0.0);
  for (std::size_t t = 0; t < low.plan.size(); ++t)
    if (low.plan.stream[t] == COMPUTE_STREAM)
      busy.at(static_cast<std::size_t>(pl.coords(low.device_rank[low.plan.device[t]]).stage)) +=
          (tl.end[t] - tl.start[t]).seconds();
  return busy;
}

TEST(LowerAsBuilt, MarksStageOneAndTheStagesRestoredFromIt) {
  const Program program = build_program(testing::gpt_spec(1, 6, 1, 12));
  ASSERT_EQ(program.roles.size(), 6u);
  EXPECT_EQ(program.roles[0].restored_from, 0u);  // the embedding's stage
  EXPECT_EQ(program.roles[5].restored_from, 0u);  // the head's
  EXPECT_NE(program.roles[1].restored_from, 0u);
  for (std::size_t r = 2; r <= 4; ++r) EXPECT_EQ(program.roles[r].restored_from, program.roles[1].restored_from);
  // A hook may change one stage's lists and not another's: no mark survives it.
  BuildOptions hooked;
  hooked.after_pass = [](Program&, const PassInvocation&) {};
  for (const Role& role : build_program(testing::gpt_spec(1, 6, 1, 12), hooked).roles) EXPECT_EQ(role.restored_from, 0u);
}

// The cases where copies could fold unlike the checked lowering: tensor-parallel overlap
// (thousands of items a template), sequence parallelism, interleaving, GPipe, recompute.
TEST(LowerAsBuilt, GivesThePlanOfTheCheckedLowering) {
  struct Case {
    const char* name;
    std::int64_t t, p;
    const char* schedule;
    std::int64_t virtual_stages;
    bool sp, overlap;
    Recompute recompute;
  };
  const Case cases[] = {
      {"t2 p4 1f1b sp overlap", 2, 4, "1f1b", 1, true, true, Recompute::NONE},
      {"t2 p4 interleaved", 2, 4, "interleaved-1f1b", 2, false, false, Recompute::SELECTIVE},
      {"t1 p8 gpipe full recompute", 1, 8, "gpipe", 1, false, false, Recompute::FULL},
      {"t4 p6 1f1b sp", 4, 6, "1f1b", 1, true, false, Recompute::NONE},
  };
  for (const Case& c : cases) {
    auto spec = testing::gpt_spec(c.t, c.p, 1, 2 * c.p);
    spec.pipeline_schedule = c.schedule;
    spec.layout.virtual_stages = c.virtual_stages;
    spec.layout.sequence_parallel = c.sp;
    spec.overlap_tp_comm = c.overlap;
    spec.recompute = c.recompute;
    const Program program = build_program(spec);
    ASSERT_NE(program.roles.at(2).restored_from, 0u) << c.name;  // the shortcut is taken
    const hardware::Cluster cluster = testing::a100_cluster(c.t * c.p);
    expect_same_plan(lower_fast(program, cluster, false), lower_fast(program, cluster, true), c.name);
  }
}

// Copies are alike item for item but not always priced alike: with five GPUs a node, the
// tensor group of stage 2 (ranks 4 and 5) spans two nodes where those of stages 1 and 3 do
// not. Taken as built, that stage still folds at its own, slower prices.
TEST(LowerAsBuilt, ACopyWhoseTensorGroupSitsOnOtherLinksFoldsAtItsOwnPrices) {
  auto spec = testing::gpt_spec(2, 5, 1, 10);
  spec.model.layers = 20;  // four a stage
  hardware::ClusterSpec c;
  c.gpu = "a100-80gb";
  c.gpus_per_node = 5;
  c.nodes = 2;
  c.nic_gbps = 200;
  const hardware::Cluster cluster(c, *hardware::find_profile("a100-80gb"));
  const Program program = build_program(spec);
  ASSERT_EQ(program.roles.at(2).restored_from, program.roles.at(1).restored_from);
  const Lowered checked = lower_fast(program, cluster, false);
  const Lowered as_built = lower_fast(program, cluster, true);
  expect_same_plan(checked, as_built, "t2 p5 on nodes of 5");
  const std::vector<double> busy = busy_per_stage(program, as_built, spec.layout);
  EXPECT_GT(busy[2], 1.05 * busy[1]);  // its tensor all-reduces cross the network
  EXPECT_NEAR(busy[3], busy[1], 0.01 * busy[1]);
}

// The mark is what as_built trusts: a caller that edits a restored stage clears it, and
// the stage is then compared item for item; left marked, the edit goes unseen.
TEST(LowerAsBuilt, AnEditedStageIsComparedOnceItsMarkIsCleared) {
  auto spec = testing::gpt_spec(2, 4, 1, 8);
  Program changed = build_program(spec);
  ASSERT_GT(changed.roles.at(2).chunks.at(0).forward.size(), 2u);
  changed.roles.at(2).chunks.at(0).forward[1].host_memory = true;  // not rank-local: cannot fold
  const hardware::Cluster cluster = testing::a100_cluster(8);
  const Lowered checked = lower_fast(changed, cluster, false);
  const Lowered trusting = lower_fast(changed, cluster, true);
  EXPECT_NE(checked.plan.size(), trusting.plan.size());
  changed.roles.at(2).restored_from = 0;
  expect_same_plan(checked, lower_fast(changed, cluster, true), "mark cleared");
}

}  // namespace
}  // namespace trainsim::strategies
