// The layout space: every candidate is one the rules accept, the dimensions all appear, and
// the order is fixed.
#include "scenarios/layout_space.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/presets.hpp"
#include "strategies/layout_rules.hpp"
#include "strategies/registry.hpp"

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

// Every-k recompute comes once per number of segments a chunk can be cut into, with the least
// k that cuts it so: 24 layers on one stage take k = 2, 3, 4, 5, 6, 8, 12, 24 (12, 8, 6, 5, 4,
// 3, 2, 1 segments; k = 7 would also make 4 segments, holding 7 layers at once instead of 6).
// The pipeline string the search builds names the pass with that k.
TEST(LayoutSpace, EveryKTakesTheLeastKForEachSegmentCount) {
  strategies::TrainingSpec base;
  base.model = *models::find_preset("gpt-1.7b");
  base.global_batch = 16;
  std::map<std::string, std::vector<int>> ks;  // by layout without the recompute
  std::set<std::string> full_recompute;
  for (const auto& c : enumerate_layouts(base, 8)) {
    if (c.recompute == strategies::Recompute::FULL) full_recompute.insert(describe(c));
    if (c.recompute != strategies::Recompute::EVERY_K) {
      EXPECT_EQ(c.recompute_k, 0) << describe(c);
      continue;
    }
    LayoutCandidate full = c;
    full.recompute = strategies::Recompute::FULL;
    full.recompute_k = 0;
    ks[describe(full)].push_back(c.recompute_k);
    const std::string pipeline = strategies::to_string(strategies::pipeline_for(apply_layout(base, c)));
    EXPECT_NE(pipeline.find(",recompute(every-k,k=" + std::to_string(c.recompute_k) + "),"), std::string::npos)
        << pipeline;
  }
  EXPECT_EQ(ks.at("t1 p1 d8 mb1 1f1b zero0 recompute=full"), (std::vector<int>{2, 3, 4, 5, 6, 8, 12, 24}));
  // Pipeline 4: chunks of 6 layers (k = 2, 3, 6); interleaved over 2 virtual stages, of 3.
  EXPECT_EQ(ks.at("t1 p4 d2 mb1 1f1b zero0 recompute=full"), (std::vector<int>{2, 3, 6}));
  EXPECT_EQ(ks.at("t1 p4 d2 mb1 interleaved v2 zero0 recompute=full"), (std::vector<int>{2, 3}));
  // One layer a chunk: every-k would be full recompute.
  EXPECT_EQ(full_recompute.count("t1 p8 d1 mb1 interleaved v3 zero0 recompute=full"), 1u);
  EXPECT_EQ(ks.count("t1 p8 d1 mb1 interleaved v3 zero0 recompute=full"), 0u);
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
