#include <gtest/gtest.h>

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
