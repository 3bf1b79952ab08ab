// The layout space: every candidate is one the rules accept, the dimensions all appear, and
// the order is fixed.
#include "scenarios/layout_space.hpp"

#include <gtest/gtest.h>

#include <set>

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

// A tensor size that does not divide the MLP's inner size is no layout (the tensor pass
// refuses it), so the space leaves it out: here 8,190 = 2 · 3² · 5 · 7 · 13 keeps 1 and 2.
TEST(LayoutSpace, TensorSizesDivideTheMlp) {
  strategies::TrainingSpec base;
  base.model = *models::find_preset("gpt-1.7b");
  base.model.ffn_hidden = 8190;
  base.global_batch = 16;
  std::set<int> tensors;
  for (const auto& c : enumerate_layouts(base, 8)) tensors.insert(c.tensor);
  EXPECT_EQ(tensors, (std::set<int>{1, 2}));
}

TEST(LayoutSpace, TheOrderIsFixed) {
  const auto a = enumerate_layouts(gpt3(), 4096);
  const auto b = enumerate_layouts(gpt3(), 4096);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); i += 97) EXPECT_EQ(describe(a[i]), describe(b[i]));
  // The first: the smallest tensor and pipeline sizes whose data size divides the batch.
  EXPECT_EQ(describe(a.front()), "t1 p8 d512 mb1 1f1b zero0 recompute=none");
}

}  // namespace
}  // namespace trainsim::scenarios
