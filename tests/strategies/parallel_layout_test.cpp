#include "strategies/parallel_layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <variant>

#include "strategies/layout_rules.hpp"
#include "strategies/spec.hpp"

namespace trainsim::strategies {
namespace {

constexpr ParallelDim ALL[] = {ParallelDim::TENSOR, ParallelDim::CONTEXT, ParallelDim::EXPERT, ParallelDim::DATA,
                               ParallelDim::PIPELINE};

RankOrder order(const char* text) { return std::get<RankOrder>(parse_rank_order(text)); }

// tp=2, cp=3, ep=2, dp=2, pp=2: 48 ranks.
ParallelLayout five(const char* rank_order = "tp-cp-ep-dp-pp") {
  return ParallelLayout({2, 3, 2, 2, 2}, order(rank_order));
}

TEST(RankOrderText, DefaultRoundTripsAndIsMegatronCore) {
  EXPECT_EQ(order("tp-cp-ep-dp-pp"), MEGATRON_RANK_ORDER);
  EXPECT_EQ(to_string(MEGATRON_RANK_ORDER), "tp-cp-ep-dp-pp");
  EXPECT_EQ(to_string(order("dp-tp-cp-ep-pp")), "dp-tp-cp-ep-pp");
}

TEST(RankOrderText, NotAPermutationNamesTheValidDimensions) {
  for (const char* bad : {"tp-dp-pp", "tp-cp-ep-dp-pp-tp", "tp-cp-xp-dp-pp", "", "tp-tp-ep-dp-pp"}) {
    auto parsed = parse_rank_order(bad);
    ASSERT_TRUE(std::holds_alternative<std::string>(parsed)) << bad;
    EXPECT_NE(std::get<std::string>(parsed).find("tp (tensor), cp (context), ep (expert), dp (data), pp (pipeline)"),
              std::string::npos)
        << std::get<std::string>(parsed);
  }
  EXPECT_NE(std::get<std::string>(parse_rank_order("tp-dp-pp")).find("leaves out cp, ep"), std::string::npos);
  EXPECT_NE(std::get<std::string>(parse_rank_order("tp-cp-xp-dp-pp")).find("unknown dimension \"xp\""),
            std::string::npos);
}

TEST(ParallelLayout, MegatronDefaultIsTensorFastestThenContextExpertDataPipeline) {
  const ParallelLayout l = five();
  EXPECT_EQ(l.world(), 48);
  EXPECT_EQ(l.stride(ParallelDim::TENSOR), 1);
  EXPECT_EQ(l.stride(ParallelDim::CONTEXT), 2);
  EXPECT_EQ(l.stride(ParallelDim::EXPERT), 6);
  EXPECT_EQ(l.stride(ParallelDim::DATA), 12);
  EXPECT_EQ(l.stride(ParallelDim::PIPELINE), 24);
  RankCoords c;
  c.tensor = 1;
  c.context = 2;
  c.expert = 1;
  c.data = 1;
  c.stage = 1;
  EXPECT_EQ(l.rank(c), 1u + 2u * (2u + 3u * (1u + 2u * (1u + 2u * 1u))));
}

TEST(ParallelLayout, CoordinatesRoundTripInEveryOrder) {
  for (const char* o : {"tp-cp-ep-dp-pp", "dp-tp-cp-ep-pp", "pp-ep-dp-cp-tp", "cp-tp-dp-pp-ep"}) {
    const ParallelLayout l = five(o);
    std::set<std::uint32_t> seen;
    for (std::uint32_t r = 0; r < 48; ++r) {
      const RankCoords c = l.coords(r);
      for (ParallelDim d : ALL) {
        EXPECT_GE(c[d], 0);
        EXPECT_LT(c[d], l.size(d));
      }
      EXPECT_EQ(l.rank(c), r) << o;
      seen.insert(r);
    }
    EXPECT_EQ(seen.size(), 48u);
  }
}

TEST(ParallelLayout, GroupsWithAFixedCoordinateAreTheFilteredGroupsInOrder) {
  for (const char* o : {"tp-cp-ep-dp-pp", "dp-tp-cp-ep-pp", "pp-ep-dp-cp-tp"}) {
    const ParallelLayout l = five(o);
    for (ParallelDim d : ALL)
      for (ParallelDim fixed : ALL)
        for (std::int64_t v = -1; v <= l.size(fixed); ++v) {
          std::vector<std::vector<std::uint32_t>> filtered;
          for (const auto& g : l.groups(d))
            if (l.coords(g.front())[fixed] == v) filtered.push_back(g);
          EXPECT_EQ(l.groups(d, fixed, v), filtered) << o << " " << to_string(d) << " " << to_string(fixed) << " " << v;
        }
  }
}

TEST(ParallelLayout, GroupsHaveTheDimensionsSizeAndPartitionTheRanks) {
  for (const char* o : {"tp-cp-ep-dp-pp", "dp-tp-cp-ep-pp", "pp-ep-dp-cp-tp"}) {
    const ParallelLayout l = five(o);
    for (ParallelDim d : ALL) {
      const auto groups = l.groups(d);
      EXPECT_EQ(static_cast<std::int64_t>(groups.size()), 48 / l.size(d)) << to_string(d);
      std::multiset<std::uint32_t> all;
      for (std::size_t id = 0; id < groups.size(); ++id) {
        const auto& g = groups[id];
        ASSERT_EQ(static_cast<std::int64_t>(g.size()), l.size(d));
        for (std::size_t i = 0; i < g.size(); ++i) {
          all.insert(g[i]);
          // Ring order: coordinate i at position i; the others equal the first member's.
          const RankCoords c = l.coords(g[i]), first = l.coords(g.front());
          EXPECT_EQ(c[d], static_cast<std::int64_t>(i));
          for (ParallelDim o2 : ALL)
            if (o2 != d) {
              EXPECT_EQ(c[o2], first[o2]);
            }
          EXPECT_EQ(l.group_id(d, g[i]), id);
          EXPECT_EQ(l.group(d, g[i]), g);
        }
      }
      EXPECT_EQ(all.size(), 48u);
      EXPECT_EQ(std::set<std::uint32_t>(all.begin(), all.end()).size(), 48u) << o << " " << to_string(d);
    }
  }
}

TEST(ParallelLayout, SymmetricSetOfAStageHoldsItsRanksOnce) {
  const ParallelLayout l = five();
  for (ParallelDim d : {ParallelDim::TENSOR, ParallelDim::CONTEXT, ParallelDim::EXPERT, ParallelDim::DATA}) {
    const auto groups = l.groups(d, ParallelDim::PIPELINE, 1);
    EXPECT_EQ(static_cast<std::int64_t>(groups.size()), 24 / l.size(d));
    std::set<std::uint32_t> ranks;
    for (const auto& g : groups)
      for (auto r : g) {
        EXPECT_EQ(l.coords(r).stage, 1);
        ranks.insert(r);
      }
    EXPECT_EQ(ranks.size(), 24u);
  }
}

TEST(ParallelLayout, OrderDecidesWhichRanksAreNeighbours) {
  // tp-…-dp: a tensor group is consecutive ranks; dp-tp-…: its members are dp apart.
  const ParallelLayout megatron({4, 1, 1, 2, 1}, order("tp-cp-ep-dp-pp"));
  const ParallelLayout data_first({4, 1, 1, 2, 1}, order("dp-tp-cp-ep-pp"));
  EXPECT_EQ(megatron.group(ParallelDim::TENSOR, 0), (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(megatron.group(ParallelDim::DATA, 0), (std::vector<std::uint32_t>{0, 4}));
  EXPECT_EQ(data_first.group(ParallelDim::TENSOR, 0), (std::vector<std::uint32_t>{0, 2, 4, 6}));
  EXPECT_EQ(data_first.group(ParallelDim::DATA, 0), (std::vector<std::uint32_t>{0, 1}));
  // With context parallelism inside the tensor group's stride.
  const ParallelLayout cp_first({2, 2, 1, 1, 1}, order("cp-tp-ep-dp-pp"));
  EXPECT_EQ(cp_first.group(ParallelDim::TENSOR, 0), (std::vector<std::uint32_t>{0, 2}));
  EXPECT_EQ(cp_first.group(ParallelDim::CONTEXT, 0), (std::vector<std::uint32_t>{0, 1}));
}

TEST(ParallelLayout, TiedEmbeddingGroupIsFirstAndLastStage) {
  const ParallelLayout l({2, 1, 1, 2, 4}, MEGATRON_RANK_ORDER);
  // rank 5: t=1, d=0, stage 1 → stage 0 is rank 1, stage 3 is rank 13.
  EXPECT_EQ(l.tied_embedding_group(5), (std::vector<std::uint32_t>{1, 13}));
  EXPECT_EQ(l.tied_embedding_groups().size(), 4u);
  EXPECT_EQ(l.group_id(ParallelDim::PIPELINE, 5), l.group_id(ParallelDim::PIPELINE, 13));
  const ParallelLayout one_stage({2, 1, 1, 2, 1}, MEGATRON_RANK_ORDER);
  EXPECT_EQ(one_stage.tied_embedding_group(3), (std::vector<std::uint32_t>{3}));
}

TEST(ParallelLayout, RepresentativesAreOnePerStage) {
  for (const char* o : {"tp-cp-ep-dp-pp", "pp-dp-tp-cp-ep"}) {
    const ParallelLayout l = five(o);
    std::vector<std::int64_t> stages;
    for (std::uint32_t r = 0; r < 48; ++r)
      if (l.is_representative(r)) stages.push_back(l.coords(r).stage);
    EXPECT_EQ(stages, (std::vector<std::int64_t>{0, 1})) << o;
  }
}

TEST(ParallelLayout, BuiltFromTheSpecsLayout) {
  Layout spec{2, 3, 4, false, 1};
  const ParallelLayout l = parallel_layout(spec);
  EXPECT_EQ(l.size(ParallelDim::TENSOR), 2);
  EXPECT_EQ(l.size(ParallelDim::PIPELINE), 3);
  EXPECT_EQ(l.size(ParallelDim::DATA), 4);
  EXPECT_EQ(l.size(ParallelDim::CONTEXT), 1);
  EXPECT_EQ(l.world(), spec.gpus());
  EXPECT_EQ(l.order(), MEGATRON_RANK_ORDER);
  spec.rank_order = "tp-dp";
  EXPECT_THROW((void)parallel_layout(spec), std::invalid_argument);
}

TEST(LayoutRules, MessagesInTheScenarioWords) {
  EXPECT_EQ(tensor_divides_heads(3, 8), "tensor=3 does not divide num_attention_heads=8");
  EXPECT_EQ(tensor_divides_heads(4, 8), "");
  EXPECT_EQ(tensor_divides_kv_heads(16, 8), "tensor=16 does not divide num_query_groups=8");
  EXPECT_EQ(tensor_divides_kv_heads(16, 0), "");
  EXPECT_EQ(tensor_divides_ffn(3, 4096), "tensor=3 does not divide ffn_hidden_size=4096");
  EXPECT_EQ(tensor_divides_ffn(8, 4096), "");
  EXPECT_EQ(sequence_parallel_divides_sequence(true, 3, 2048),
            "sequence parallelism needs tensor=3 to divide the sequence length 2048");
  EXPECT_EQ(sequence_parallel_divides_sequence(false, 3, 2048), "");
  EXPECT_EQ(pipeline_divides_layers(5, 24), "pipeline=5 does not divide num_layers=24");
  EXPECT_EQ(virtual_stages_need_pipeline(2, 1),
            "virtual_stages=2 needs pipeline > 1 (interleaving splits each pipeline stage's layers into chunks)");
  EXPECT_EQ(virtual_stages_divide_layers(4, 4, 24),
            "virtual_stages=4 needs num_layers=24 divisible by pipeline × virtual_stages = 4 × 4 = 16");
  EXPECT_EQ(uneven_split(24, 4, 1, 4, 0), "");
  EXPECT_EQ(uneven_split(24, 1, 1, 4, 0), "an uneven split needs pipeline ≥ 2");
  EXPECT_EQ(layout_product_mismatch({{"tensor", 2}, {"pipeline", 2}, {"data", 4}}, 32),
            "tensor × pipeline × data = 2 × 2 × 4 = 16");
  EXPECT_EQ(layout_product_mismatch({{"tensor", 2}, {"pipeline", 2}, {"data", 8}}, 32), "");
  EXPECT_EQ(batch_divides(6, 1, 4),
            "global_batch_size=6 is not divisible by micro_batch_size × data = 1 × 4 = 4");
  EXPECT_EQ(interleaved_micro_batches(24, 1, 4, 4, 2),
            "interleaved-1f1b needs the micro-batches per pipeline, global_batch_size / (micro_batch_size × data) = 6, "
            "to be a multiple of pipeline=4 (nearest valid global_batch_size: 16, 32)");
  EXPECT_EQ(interleaved_micro_batches(24, 1, 4, 4, 1), "");
}

}  // namespace
}  // namespace trainsim::strategies
