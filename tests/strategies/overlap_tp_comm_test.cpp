// overlap-tp-comm overlaps each tensor-parallel collective with the GEMM that makes or
// takes its tensor, the way Transformer Engine's userbuffers does by default: an all-gather
// as a ring exchange with the GEMM after it (t − 1 transfers, t chunks), a reduce-scatter
// pipelined with the GEMM before it (4 chunks), a column-parallel GEMM's backward halved
// between its input all-gather and its gradient reduce-scatter, both in bulk (uncut). The
// first version paired every collective with the compute before it, so the forward
// all-gathers ran beside the LayerNorm and the QKV and fc1 GEMMs waited for the whole
// gather; the second cut every collective in t pieces.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

// 8, not 4: the ring exchange's t − 1 transfers and the pipeline's 4 chunks must differ.
constexpr std::int64_t TENSOR = 8;
constexpr int SPLITS = 4;  // Transformer Engine's num_splits for a pipelined reduce-scatter

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
      const int ring = static_cast<int>(TENSOR) - 1;
      if (!backward) {
        EXPECT_EQ(gathers, (std::map<std::string, int>{{"qkv", ring}, {"fc1", ring}}));
        EXPECT_EQ(scatters, (std::map<std::string, int>{{"proj", SPLITS}, {"fc2", SPLITS}}));
      } else {
        // The output gradient's gather feeds the row-parallel GEMMs' backward (a ring
        // exchange); the saved input's gather and the gradient's reduce-scatter go whole
        // beside the column-parallel ones' two halves.
        EXPECT_EQ(gathers, (std::map<std::string, int>{{"proj", ring}, {"fc2", ring}, {"qkv", 1}, {"fc1", 1}}));
        EXPECT_EQ(scatters, (std::map<std::string, int>{{"qkv", 1}, {"fc1", 1}}));
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

// FLOPs an item pays for one op of its segment.
double paid_flops(const models::Op& op, const Item& it) {
  switch (it.cost) {
    case Cost::FORWARD: return op.fwd_flops * it.fraction;
    case Cost::BACKWARD: return (op.bwd_input_flops + op.bwd_weight_flops) * it.fraction;
    case Cost::BACKWARD_INPUT: return op.bwd_input_flops * it.fraction;
    case Cost::BACKWARD_WEIGHT: return op.bwd_weight_flops * it.fraction;
  }
  return 0;
}

// Per op of layer 0 in one direction: the FLOPs its items pay, and the rows and cost of
// each item that runs it alone.
struct LayerWork {
  std::map<std::string, double> flops;
  std::map<std::string, std::vector<std::pair<std::int64_t, Cost>>> alone;
};
LayerWork layer_work(const Role& role, const std::vector<Item>& items) {
  LayerWork w;
  for (const Item& it : items) {
    if (it.kind != Item::Kind::COMPUTE || it.layer != 0) continue;
    const auto& ops = role.segments[it.segment].ops;
    for (const auto& op : ops) w.flops[op.name] += paid_flops(op, it);
    if (ops.size() == 1) w.alone[ops.front().name].emplace_back(ops.front().gemm.m, it.cost);
  }
  return w;
}

TEST(OverlapTpComm, EveryGemmRunsWholeAcrossItsChunksAndTheRestOnce) {
  const Program program = build_program(overlapped_spec(Recompute::NONE));
  TrainingSpec plain_spec = overlapped_spec(Recompute::NONE);
  plain_spec.overlap_tp_comm = false;
  const Program plain = build_program(plain_spec);
  const Role& role = program.roles.at(0);
  const std::int64_t rows = program.spec.sequence * program.spec.micro_batch;  // the gathered tokens
  for (const bool backward : {false, true}) {
    SCOPED_TRACE(backward ? "backward" : "forward");
    const auto& chunk = role.chunks.at(0);
    const LayerWork w = layer_work(role, backward ? chunk.backward : chunk.forward);
    const auto& plain_chunk = plain.roles.at(0).chunks.at(0);
    const LayerWork p = layer_work(plain.roles.at(0), backward ? plain_chunk.backward : plain_chunk.forward);
    // Every op's FLOPs paid once, however it is cut.
    ASSERT_EQ(w.flops.size(), p.flops.size());
    for (const auto& [op, flops] : p.flops) EXPECT_DOUBLE_EQ(w.flops.at(op), flops) << op;
    EXPECT_EQ(w.flops.count("flash_attention"), 1u);
    EXPECT_EQ(w.flops.count("gelu"), 1u);
    // Each chunk a GEMM of its own rows: ring exchange 1/t, pipeline 1/4; a backward the
    // ring exchange feeds runs its weight gradient whole; the bulk backward two whole GEMMs.
    using Runs = std::vector<std::pair<std::int64_t, Cost>>;
    auto repeat = [](std::int64_t m, Cost c, std::int64_t n) { return Runs(static_cast<std::size_t>(n), {m, c}); };
    if (!backward) {
      EXPECT_EQ(w.alone.at("qkv"), repeat(rows / TENSOR, Cost::FORWARD, TENSOR));
      EXPECT_EQ(w.alone.at("fc1"), repeat(rows / TENSOR, Cost::FORWARD, TENSOR));
      EXPECT_EQ(w.alone.at("proj"), repeat(rows / SPLITS, Cost::FORWARD, SPLITS));
      EXPECT_EQ(w.alone.at("fc2"), repeat(rows / SPLITS, Cost::FORWARD, SPLITS));
    } else {
      for (const char* row_parallel : {"proj", "fc2"}) {
        Runs expected = repeat(rows / TENSOR, Cost::BACKWARD_INPUT, TENSOR);
        expected.emplace_back(rows, Cost::BACKWARD_WEIGHT);
        EXPECT_EQ(w.alone.at(row_parallel), expected) << row_parallel;
      }
      for (const char* column_parallel : {"qkv", "fc1"})
        EXPECT_EQ(w.alone.at(column_parallel), (Runs{{rows, Cost::BACKWARD_INPUT}, {rows, Cost::BACKWARD_WEIGHT}}))
            << column_parallel;
    }
  }
}

// Where each method lets compute start: the ring exchange's first chunk runs on the local
// shard without waiting for a transfer; the bulk all-gather runs beside the input-gradient
// GEMM, which does not wait for it, while the weight-gradient GEMM does; the bulk
// reduce-scatter waits for the input gradient only.
TEST(OverlapTpComm, EachMethodWaitsOnlyForTheTensorItNeeds) {
  const Program program = build_program(overlapped_spec(Recompute::NONE));
  const Role& role = program.roles.at(0);
  const Chunk& chunk = role.chunks.at(0);
  auto waits_for = [](const std::vector<Item>& items, std::size_t i) {
    std::set<std::size_t> on;
    for (const Dep& d : items[i].deps) {
      EXPECT_EQ(d.target, Dep::Target::PREVIOUS) << i;
      on.insert(i - static_cast<std::size_t>(d.offset));
    }
    return on;
  };
  // Forward: the first qkv chunk of layer 0 comes before any of the gather's transfers and
  // waits for what the gather waited for (the LayerNorm before it); the first transfer too.
  const std::vector<Item>& fwd = chunk.forward;
  std::size_t first_qkv = fwd.size();
  for (std::size_t i = 0; i < fwd.size() && first_qkv == fwd.size(); ++i)
    if (fwd[i].layer == 0 && fwd[i].kind == Item::Kind::COMPUTE && single_op(role, fwd[i]) == "qkv") first_qkv = i;
  ASSERT_LT(first_qkv + 1, fwd.size());
  ASSERT_GT(first_qkv, 0u);
  EXPECT_NE(fwd[first_qkv - 1].kind, Item::Kind::COLLECTIVE) << "the first chunk waited for a transfer";
  EXPECT_EQ(waits_for(fwd, first_qkv), std::set<std::size_t>{first_qkv - 1});
  ASSERT_TRUE(is_tp(fwd[first_qkv + 1]));
  EXPECT_EQ(waits_for(fwd, first_qkv + 1), std::set<std::size_t>{first_qkv - 1});
  EXPECT_EQ(waits_for(fwd, first_qkv + 2), std::set<std::size_t>{first_qkv + 1});  // chunk 1 after transfer 1

  // Backward: [gather, dgrad, wgrad, reduce-scatter] for layer 0's qkv.
  const std::vector<Item>& bwd = chunk.backward;
  std::size_t gather = bwd.size();
  for (std::size_t i = 0; i + 1 < bwd.size(); ++i)
    if (is_tp(bwd[i]) && bwd[i].layer == 0 && bwd[i].collective.op == hardware::Collective::ALL_GATHER &&
        single_op(role, bwd[i + 1]) == "qkv")
      gather = i;
  ASSERT_LT(gather + 3, bwd.size());
  ASSERT_GT(gather, 0u);
  const std::size_t dgrad = gather + 1, wgrad = gather + 2, scatter = gather + 3;
  EXPECT_EQ(single_op(role, bwd[wgrad]), "qkv");
  ASSERT_TRUE(is_tp(bwd[scatter]));
  EXPECT_EQ(bwd[scatter].collective.op, hardware::Collective::REDUCE_SCATTER);
  EXPECT_EQ(bwd[gather].stream, bwd[scatter].stream);
  EXPECT_NE(bwd[gather].stream, COMPUTE_STREAM);
  EXPECT_EQ(waits_for(bwd, gather), std::set<std::size_t>{gather - 1});
  EXPECT_EQ(waits_for(bwd, dgrad), std::set<std::size_t>{gather - 1}) << "the input gradient waited for the gather";
  EXPECT_EQ(waits_for(bwd, wgrad), (std::set<std::size_t>{gather, dgrad}));
  EXPECT_EQ(waits_for(bwd, scatter), std::set<std::size_t>{dgrad});
  // Uncut: the whole buffer in one call, which pays the whole latency. The ring exchange's
  // transfers each carry one of t − 1 parts of the same tensor (the LayerNorm output the
  // backward gathers again) and one ring step's latency.
  EXPECT_DOUBLE_EQ(bwd[scatter].collective.latency_scale, 1.0);
  EXPECT_DOUBLE_EQ(bwd[gather].collective.latency_scale, 1.0);
  EXPECT_DOUBLE_EQ(fwd[first_qkv + 1].collective.bytes * static_cast<double>(TENSOR - 1), bwd[gather].collective.bytes);
  EXPECT_DOUBLE_EQ(fwd[first_qkv + 1].collective.latency_scale, 1.0 / static_cast<double>(TENSOR - 1));
  // The ring exchange's copies run on the copy engines; the bulk (and pipelined) collectives'
  // kernels take SMs from the GEMM beside them.
  EXPECT_FALSE(fwd[first_qkv + 1].collective.occupies_sms);
  EXPECT_TRUE(bwd[gather].collective.occupies_sms);
  EXPECT_TRUE(bwd[scatter].collective.occupies_sms);
  for (const Item& it : fwd) {
    if (is_tp(it) && it.layer == 0 && it.collective.op == hardware::Collective::REDUCE_SCATTER) {
      EXPECT_TRUE(it.collective.occupies_sms);
    }
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

// The pass cuts the first layer of each kind in a chunk item by item and copies what it
// became for the layers alike to it (Splitter::run); recompute in segments of two makes two
// kinds, a segment's first layer keeping its input. A stage holding one segment has the two
// unlike, so it cuts both: every layer of a one-stage program must have the items of the
// stage that holds only its segment.
TEST(OverlapTpComm, EachLayerHasTheItemsOfTheStageHoldingOnlyItsSegment) {
  for (const Recompute r : {Recompute::NONE, Recompute::SELECTIVE, Recompute::EVERY_K}) {
    SCOPED_TRACE(static_cast<int>(r));
    TrainingSpec one = overlapped_spec(r);
    one.recompute_k = r == Recompute::EVERY_K ? 2 : 0;
    TrainingSpec split = one;
    split.layout.pipeline = one.model.layers / 2;
    const Program whole = build_program(one), staged = build_program(split);
    ASSERT_EQ(staged.roles.size(), static_cast<std::size_t>(split.layout.pipeline));
    const Role& all = whole.roles.at(0);
    std::size_t compared = 0;
    for (std::size_t s = 1; s + 1 < staged.roles.size(); ++s) {
      const Role& own = staged.roles[s];
      for (const Direction dir : {Direction::FORWARD, Direction::BACKWARD}) {
        const auto& mine = dir == Direction::FORWARD ? own.chunks.at(0).forward : own.chunks.at(0).backward;
        const auto& theirs = dir == Direction::FORWARD ? all.chunks.at(0).forward : all.chunks.at(0).backward;
        for (const std::int32_t layer : own.chunks.at(0).layers) {
          std::vector<Item> a, b;
          for (const Item& it : mine)
            if (it.layer == layer) a.push_back(it);
          for (const Item& it : theirs)
            if (it.layer == layer) b.push_back(it);
          const std::string what =
              "layer " + std::to_string(layer) + (dir == Direction::FORWARD ? " forward" : " backward");
          ASSERT_EQ(a.size(), b.size()) << what;
          for (std::size_t i = 0; i < a.size(); ++i) {
            // Segment and stream numbers differ between the programs; what they stand for must not.
            EXPECT_EQ(own.segments[a[i].segment].name, all.segments[b[i].segment].name) << what << " item " << i;
            EXPECT_EQ(staged.streams.at(a[i].stream), whole.streams.at(b[i].stream)) << what << " item " << i;
            a[i].segment = b[i].segment;
            a[i].stream = b[i].stream;
            EXPECT_TRUE(alike_but_layer(std::span(a).subspan(i, 1), std::span(b).subspan(i, 1)))
                << what << " item " << i;
            ++compared;
          }
        }
      }
    }
    EXPECT_GT(compared, 1000u);  // the pass multiplied the layers' items
  }
}

}  // namespace
}  // namespace trainsim::strategies
