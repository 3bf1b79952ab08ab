// overlap-tp-comm pipelines each tensor-parallel collective with the GEMM that makes or
// takes its tensor, as Transformer Engine's userbuffers does: an all-gather with the GEMM
// after it, a reduce-scatter with the GEMM before it, a column-parallel GEMM's backward
// halved between its input all-gather and its gradient reduce-scatter. The first version
// paired every collective with the compute before it, so the forward all-gathers ran beside
// the LayerNorm and the QKV and fc1 GEMMs waited for the whole gather.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

constexpr std::int64_t TENSOR = 4;

TrainingSpec overlapped_spec(Recompute recompute) {
  auto spec = testing::gpt_spec(TENSOR, 1, 1, 2);
  spec.layout.sequence_parallel = true;
  spec.flash_attention = true;
  spec.overlap_tp_comm = true;
  spec.recompute = recompute;
  return spec;
}

bool is_tp(const Item& it) { return it.kind == Item::Kind::COLLECTIVE && it.collective.dim == Dim::TENSOR; }

// The one op of a compute item's segment, or "" when the segment holds several.
std::string single_op(const Role& role, const Item& it) {
  const auto& ops = role.segments[it.segment].ops;
  return ops.size() == 1 ? ops.front().name : "";
}

TEST(OverlapTpComm, EachCollectiveRunsBesideTheGemmThatMakesOrTakesItsTensor) {
  for (const Recompute r : {Recompute::NONE, Recompute::SELECTIVE}) {
    SCOPED_TRACE(r == Recompute::NONE ? "no recompute" : "selective recompute");
    const Program program = build_program(overlapped_spec(r));
    const Role& role = program.roles.at(0);
    const Chunk& chunk = role.chunks.at(0);
    const auto layers = static_cast<std::int32_t>(program.spec.model.layers);
    for (const bool backward : {false, true}) {
      SCOPED_TRACE(backward ? "backward" : "forward");
      const std::vector<Item>& items = backward ? chunk.backward : chunk.forward;
      // Per layer 0: which GEMM each all-gather piece feeds and each reduce-scatter piece drains.
      std::map<std::string, int> gathers, scatters;
      for (std::size_t i = 0; i < items.size(); ++i) {
        const Item& it = items[i];
        if (!is_tp(it) || it.layer != 0) continue;
        ASSERT_NE(it.stream, COMPUTE_STREAM) << "a transformer layer's collective left whole at item " << i;
        if (it.collective.op == hardware::Collective::ALL_GATHER) {
          ASSERT_LT(i + 1, items.size());
          ASSERT_EQ(items[i + 1].kind, Item::Kind::COMPUTE) << i;
          ++gathers[single_op(role, items[i + 1])];
        } else {
          ASSERT_GT(i, 0u);
          ASSERT_EQ(items[i - 1].kind, Item::Kind::COMPUTE) << i;
          ++scatters[single_op(role, items[i - 1])];
        }
      }
      const int k = static_cast<int>(TENSOR);
      if (!backward) {
        EXPECT_EQ(gathers, (std::map<std::string, int>{{"qkv", k}, {"fc1", k}}));
        EXPECT_EQ(scatters, (std::map<std::string, int>{{"proj", k}, {"fc2", k}}));
      } else {
        // The output gradient's gather feeds the row-parallel GEMMs' backward; the saved
        // input's gather and the gradient's reduce-scatter share the column-parallel ones'.
        EXPECT_EQ(gathers, (std::map<std::string, int>{{"proj", k}, {"fc2", k}, {"qkv", k}, {"fc1", k}}));
        EXPECT_EQ(scatters, (std::map<std::string, int>{{"qkv", k}, {"fc1", k}}));
      }
      // The embedding's collectives and the output layer's forward gather block the stream
      // (neither is a Transformer Engine linear); the output layer's backward overlaps.
      for (const Item& it : items) {
        if (!is_tp(it) || (it.layer >= 0 && it.layer < layers)) continue;
        const bool head_backward = backward && it.layer == layers;
        EXPECT_EQ(it.stream != COMPUTE_STREAM, head_backward) << "layer " << it.layer;
      }
    }
  }
}

TEST(OverlapTpComm, EveryGemmRunsWholeAcrossItsChunksAndTheRestOnce) {
  const Program program = build_program(overlapped_spec(Recompute::NONE));
  const Role& role = program.roles.at(0);
  const Chunk& chunk = role.chunks.at(0);
  for (const bool backward : {false, true}) {
    SCOPED_TRACE(backward ? "backward" : "forward");
    const std::vector<Item>& items = backward ? chunk.backward : chunk.forward;
    // Per op of layer 0: the share of its cost its items pay, summed.
    std::map<std::string, double> paid;
    for (const Item& it : items) {
      if (it.kind != Item::Kind::COMPUTE || it.layer != 0) continue;
      for (const auto& op : role.segments[it.segment].ops) paid[op.name] += it.fraction;
      const std::string op = single_op(role, it);
      const bool column_backward = backward && (op == "qkv" || op == "fc1");
      if (op == "qkv" || op == "fc1" || op == "proj" || op == "fc2") {
        EXPECT_DOUBLE_EQ(it.fraction, (column_backward ? 0.5 : 1.0) / static_cast<double>(TENSOR)) << op;
      }
    }
    for (const auto& [op, share] : paid) EXPECT_DOUBLE_EQ(share, 1.0) << op;
    EXPECT_EQ(paid.count("flash_attention"), 1u);
    EXPECT_EQ(paid.count("gelu"), 1u);
  }
}

TEST(OverlapTpComm, SelectiveRecomputeRerunsTheCoreAfterTheProjectionsInputGradient) {
  // Megatron reruns the checkpointed attention core inside the core's backward, which the
  // projection's input gradient precedes.
  const Program program = build_program(overlapped_spec(Recompute::SELECTIVE));
  const Role& role = program.roles.at(0);
  const std::vector<Item>& items = role.chunks.at(0).backward;
  std::size_t last_proj = 0, rerun = 0, core_backward = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    if (it.kind != Item::Kind::COMPUTE || it.layer != 0) continue;
    if (it.category == Category::RECOMPUTE) rerun = i;
    if (single_op(role, it) == "proj") last_proj = i;
    for (const auto& op : role.segments[it.segment].ops)
      if (op.name == "flash_attention" && it.category != Category::RECOMPUTE) core_backward = i;
  }
  ASSERT_GT(rerun, 0u);
  ASSERT_GT(last_proj, 0u) << "the projection's backward is not an item of its own";
  EXPECT_LT(last_proj, rerun);
  EXPECT_LT(rerun, core_backward);
}

TEST(OverlapTpComm, IdenticalLayersShareTheCutSegments) {
  const Program program = build_program(overlapped_spec(Recompute::SELECTIVE));
  const Role& role = program.roles.at(0);
  const Chunk& chunk = role.chunks.at(0);
  for (const auto* items : {&chunk.forward, &chunk.backward}) {
    std::vector<std::uint32_t> first, other;
    for (const Item& it : *items)
      if (it.kind == Item::Kind::COMPUTE) {
        if (it.layer == 0) first.push_back(it.segment);
        if (it.layer == 1) other.push_back(it.segment);
      }
    EXPECT_EQ(first, other);
  }
  // Segments stay per role, not per layer: far fewer than the items that use them.
  std::set<std::uint32_t> used;
  for (const Item& it : chunk.forward)
    if (it.kind == Item::Kind::COMPUTE) used.insert(it.segment);
  EXPECT_LT(used.size(), 32u);
}

}  // namespace
}  // namespace trainsim::strategies
