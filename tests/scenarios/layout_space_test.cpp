// The layout space: every candidate is one the rules accept, the dimensions all appear, and
// the memory and time bounds are what they claim (checked against simulation in
// tests/cli/search_command_test.cpp).
#include "scenarios/layout_space.hpp"

#include <gtest/gtest.h>

#include <set>

#include "hardware/gpu_profile.hpp"
#include "models/presets.hpp"
#include "strategies/layout_rules.hpp"

namespace trainsim::scenarios {
namespace {

strategies::TrainingSpec gpt3() {
  strategies::TrainingSpec s;
  s.model = *models::find_preset("gpt3-175b");
  s.sequence = 2048;
  s.global_batch = 1536;
  return s;
}

TEST(LayoutSpace, EveryCandidateKeepsTheLayoutRules) {
  const strategies::TrainingSpec base = gpt3();
  const auto space = enumerate_layouts(base, 4096);
  ASSERT_GT(space.size(), 10000u);
  std::set<int> tensors, pipelines, microbatches, virtuals;
  bool uneven = false, gpipe = false;
  for (const auto& c : space) {
    EXPECT_EQ(static_cast<std::int64_t>(c.tensor) * c.pipeline * c.data, 4096);
    EXPECT_LE(c.tensor, 8);
    EXPECT_EQ(96 % c.tensor, 0);
    EXPECT_EQ(base.global_batch % (static_cast<std::int64_t>(c.micro_batch) * c.data), 0);
    if (c.first_stage_layers > 0) {
      EXPECT_EQ(strategies::uneven_split(96, c.pipeline, 1, c.first_stage_layers, c.last_stage_layers), "");
      uneven = true;
    } else {
      EXPECT_EQ(96 % c.pipeline, 0);
    }
    if (c.schedule == Schedule::INTERLEAVED) {
      EXPECT_GT(c.virtual_stages, 1);
      EXPECT_EQ(96 % (c.pipeline * c.virtual_stages), 0);
    } else {
      EXPECT_EQ(c.virtual_stages, 1);
    }
    if (c.overlap_param_gather) {
      EXPECT_EQ(c.zero_stage, 1);
    }
    if (c.overlap_tp_comm) {
      EXPECT_TRUE(c.sequence_parallel);
    }
    if (c.sequence_parallel) {
      EXPECT_GT(c.tensor, 1);
    }
    gpipe |= c.schedule == Schedule::GPIPE;
    tensors.insert(c.tensor);
    pipelines.insert(c.pipeline);
    microbatches.insert(c.micro_batch);
    virtuals.insert(c.virtual_stages);
  }
  EXPECT_EQ(tensors, (std::set<int>{1, 2, 4, 8}));
  // Data ≤ 1,536 (the batch) needs tensor × pipeline ≥ 3; pipeline sizes divide 4,096 / tensor.
  EXPECT_EQ(pipelines, (std::set<int>{1, 2, 4, 8, 16, 32}));
  EXPECT_TRUE(uneven);
  EXPECT_TRUE(gpipe);
  EXPECT_EQ(*microbatches.rbegin(), 16);
  EXPECT_GT(virtuals.size(), 3u);
}

TEST(LayoutSpace, TheOrderIsFixed) {
  const auto a = enumerate_layouts(gpt3(), 4096);
  const auto b = enumerate_layouts(gpt3(), 4096);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); i += 97) EXPECT_EQ(describe(a[i]), describe(b[i]));
  // The first: the smallest tensor and pipeline sizes whose data size divides the batch.
  EXPECT_EQ(describe(a.front()), "t1 p8 d512 mb1 1f1b zero0 recompute=none");
}

TEST(LayoutSpace, TheComputeBoundGrowsWithRecomputeAndBubbles) {
  const strategies::TrainingSpec base = gpt3();
  const hardware::CostModel cost(*hardware::find_profile("h100-sxm"));
  ComputeBound bound(base, cost);
  LayoutCandidate c;
  c.tensor = 8;
  c.pipeline = 16;
  c.data = 32;
  const double plain = bound.seconds(c);
  // 6 layers × 48 micro-batches + the 90 layers' fill and drain, at least 2·3·params·tokens /
  // GPUs at the most FLOP/s a BF16 kernel reaches on an H100, which is below its peak.
  const double most = cost.max_achieved_flops(hardware::Dtype::BF16);
  EXPECT_LT(most, 989e12);
  EXPECT_GT(plain, 6.0 * 175e9 * 1536 * 2048 / 4096 / most * 0.9);
  c.recompute = strategies::Recompute::FULL;
  EXPECT_GT(bound.seconds(c), plain * 1.2);
  c.recompute = strategies::Recompute::NONE;
  c.virtual_stages = 3;
  c.schedule = Schedule::INTERLEAVED;
  EXPECT_LT(bound.seconds(c), plain);
}

}  // namespace
}  // namespace trainsim::scenarios
