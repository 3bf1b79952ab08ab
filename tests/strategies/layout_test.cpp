#include <gtest/gtest.h>

#include "strategies/lower.hpp"
#include "strategies/parallel_layout.hpp"
#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

TEST(RankOrder, TensorFastestThenDataThenPipeline) {
  // Megatron: rank = t + T·(d + D·p).
  const ParallelLayout l = parallel_layout(Layout{4, 3, 2, false, 1});
  auto at = [](std::int64_t t, std::int64_t d, std::int64_t p) {
    RankCoords c;
    c.tensor = t;
    c.data = d;
    c.stage = p;
    return c;
  };
  EXPECT_EQ(l.rank(at(0, 0, 0)), 0u);
  EXPECT_EQ(l.rank(at(1, 0, 0)), 1u);
  EXPECT_EQ(l.rank(at(0, 1, 0)), 4u);
  EXPECT_EQ(l.rank(at(0, 0, 1)), 8u);
  EXPECT_EQ(l.rank(at(3, 1, 2)), 3u + 4u * (1u + 2u * 2u));
  for (std::uint32_t r = 0; r < 24; ++r) EXPECT_EQ(l.rank(l.coords(r)), r);
}

TEST(TensorPass, TwoAllReducesPerLayerEachDirection) {
  // Megatron's g after the attention projection and after fc2 (forward), f before QKV and
  // fc1 (backward): two all-reduces of 2·b·s·h bytes per layer per direction.
  auto spec = testing::gpt_spec(4, 1, 1, 8);
  Program prog = build_program(spec);
  const Chunk& role = prog.roles.front().chunks.front();
  auto count = [](const std::vector<Item>& items, std::int32_t layer, hardware::Collective op) {
    int n = 0;
    for (const auto& it : items)
      if (it.kind == Item::Kind::COLLECTIVE && it.layer == layer && it.collective.op == op) ++n;
    return n;
  };
  const double bytes = 2.0 * 1 * 2048 * spec.model.hidden;
  for (std::int32_t l = 0; l < spec.model.layers; ++l) {
    EXPECT_EQ(count(role.forward, l, hardware::Collective::ALL_REDUCE), 2) << "layer " << l;
    EXPECT_EQ(count(role.backward, l, hardware::Collective::ALL_REDUCE), 2) << "layer " << l;
  }
  for (const auto& it : role.forward) {
    if (it.kind == Item::Kind::COLLECTIVE && it.layer >= 0 && it.layer < spec.model.layers) {
      EXPECT_DOUBLE_EQ(it.collective.bytes, bytes);
    }
  }
}

TEST(TensorPass, SequenceParallelUsesReduceScatterAndAllGather) {
  auto spec = testing::gpt_spec(4, 1, 1, 8);
  spec.layout.sequence_parallel = true;
  Program prog = build_program(spec);
  int ar = 0, rs = 0, ag = 0;
  for (const auto& it : prog.roles.front().chunks.front().forward) {
    if (it.kind != Item::Kind::COLLECTIVE || it.layer != 3) continue;
    ar += it.collective.op == hardware::Collective::ALL_REDUCE;
    rs += it.collective.op == hardware::Collective::REDUCE_SCATTER;
    ag += it.collective.op == hardware::Collective::ALL_GATHER;
  }
  EXPECT_EQ(ar, 0);
  EXPECT_EQ(rs, 2);
  EXPECT_EQ(ag, 2);
}

TEST(PipelinePass, SplitsLayersEvenlyEmbeddingFirstHeadLast) {
  auto spec = testing::gpt_spec(1, 4, 1, 8);
  Program prog = build_program(spec);
  ASSERT_EQ(prog.roles.size(), 4u);
  for (const auto& r : prog.roles) EXPECT_EQ(r.num_layers(), 6);
  EXPECT_TRUE(prog.roles[0].has_embedding());
  EXPECT_FALSE(prog.roles[0].has_head());
  EXPECT_TRUE(prog.roles[3].has_head());
  EXPECT_EQ(prog.roles[1].chunks.front().layers.front(), 6);
}

TEST(DataPass, GradientAllReduceOfEveryParameter) {
  // bf16 with Megatron's fp32 main gradients: 4 bytes per parameter are all-reduced.
  auto spec = testing::gpt_spec(1, 1, 4, 16);
  Program prog = build_program(spec);
  EXPECT_EQ(prog.micro_batches, 4);
  const Role& role = prog.roles.front();
  ASSERT_FALSE(role.tail.empty());
  EXPECT_EQ(role.tail.front().collective.dim, Dim::DATA);
  EXPECT_DOUBLE_EQ(role.tail.front().collective.bytes, 4.0 * static_cast<double>(role.params));
  EXPECT_EQ(role.params, models::total_params(spec.model));
}

TEST(Pipeline, StringNamesEveryPassInOrder) {
  auto spec = testing::gpt_spec(2, 2, 2, 16);
  spec.recompute = Recompute::FULL;
  EXPECT_EQ(build_program(spec).pipeline_string(), "tensor(2),pipeline(2),data(2),recompute(full),1f1b");
}

TEST(Pipeline, UnknownPassIsAnErrorListingTheRegisteredOnes) {
  auto spec = testing::gpt_spec(1, 1, 1, 1);
  spec.pipeline_schedule = "zb-h9";
  try {
    (void)build_program(spec);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown pass \"zb-h9\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1f1b"), std::string::npos) << e.what();
  }
}

TEST(Registry, EveryPassHasADescriptionAndAUniqueName) {
  std::set<std::string> names;
  for (const auto& p : all_passes()) {
    EXPECT_TRUE(names.insert(std::string(p.name) + "(" + p.variant + ")").second) << p.name << "(" << p.variant << ")";
    EXPECT_GT(std::string(p.description).size(), 10u) << p.name;
  }
  EXPECT_EQ(pass_names(PassKind::SCHEDULE), (std::vector<std::string>{"1f1b", "gpipe", "interleaved-1f1b"}));
}

}  // namespace
}  // namespace trainsim::strategies
