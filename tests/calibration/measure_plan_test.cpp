// What the harness plans to measure, checked without a GPU.
#include "calibration/measure_plan.hpp"

#include <gtest/gtest.h>

#include "calibration/memory_fit.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>

namespace trainsim::calibration {
namespace {

bool has(const std::vector<GemmShape>& v, GemmShape s) {
  return std::any_of(v.begin(), v.end(), [&](const GemmShape& x) { return x.b == s.b && x.m == s.m && x.n == s.n && x.k == s.k; });
}

TEST(MeasurePlan, GemmShapesComeFromTheModelsLinearLayers) {
  // GPT-3 175B (Brown et al. 2020): hidden 12288, 96 heads, vocabulary padded to 51200;
  // tensor parallel 8, micro-batch 1, sequence 2048 → 2048 token rows.
  auto shapes = model_gemm_shapes({"gpt3-175b"}, {8}, {1}, {2048});
  EXPECT_TRUE(has(shapes, {1, 2048, 3 * 12288 / 8, 12288}));  // QKV forward
  EXPECT_TRUE(has(shapes, {1, 2048, 12288, 3 * 12288 / 8}));  // its input gradient
  EXPECT_TRUE(has(shapes, {1, 12288, 3 * 12288 / 8, 2048}));  // its weight gradient
  EXPECT_TRUE(has(shapes, {1, 2048, 12288, 12288 / 8}));      // attention projection
  EXPECT_TRUE(has(shapes, {1, 2048, 4 * 12288 / 8, 12288}));  // MLP up
  EXPECT_TRUE(has(shapes, {1, 2048, 12288, 4 * 12288 / 8}));  // MLP down
  EXPECT_TRUE(has(shapes, {1, 2048, 51200 / 8, 12288}));      // logits
  EXPECT_TRUE(std::is_sorted(shapes.begin(), shapes.end(), [](const GemmShape& a, const GemmShape& b) {
    return std::tie(a.b, a.m, a.n, a.k) < std::tie(b.b, b.m, b.n, b.k);
  }));
  // Micro-batches multiply the token rows.
  EXPECT_TRUE(has(model_gemm_shapes({"gpt3-175b"}, {8}, {4}, {2048}), {1, 4 * 2048, 3 * 12288 / 8, 12288}));
}

TEST(MeasurePlan, ShapesTheModelCannotRunAreLeftOut) {
  // GPT-3 learned 2048 positions: a 4096-token sequence is not a shape it runs.
  EXPECT_TRUE(model_gemm_shapes({"gpt3-175b"}, {1}, {1}, {4096}).empty());
  // gpt-1.7b has 24 heads: tensor parallel 16 does not divide them.
  EXPECT_TRUE(model_gemm_shapes({"gpt-1.7b"}, {16}, {1}, {2048}).empty());
  EXPECT_FALSE(model_gemm_shapes({"gpt-1.7b"}, {8}, {1}, {2048}).empty());
  EXPECT_THROW((void)model_gemm_shapes({"no-such-model"}, {1}, {1}, {2048}), std::invalid_argument);
}

TEST(MeasurePlan, QuickPlanFitsTenMinutesAndCoversTheRanges) {
  MeasurePlan q = make_measure_plan(true);
  MeasurePlan f = make_measure_plan(false);
  std::printf("plan: GEMM shapes quick %zu, full %zu; attention problems quick %zu, full %zu\n", q.gemm_shapes.size(),
              f.gemm_shapes.size(), q.attention.size(), f.attention.size());
  // Four GEMM dtypes and the other phases within the total, the total within 10 minutes.
  EXPECT_LE(4 * q.gemm_s_per_dtype + q.attention_s + q.memory_s + q.copy_s + q.collective_s, q.total_s);
  EXPECT_LE(q.total_s, 600);
  EXPECT_LT(q.gemm_shapes.size(), f.gemm_shapes.size());
  EXPECT_LE(q.gemm_shapes.size(), 160u + 27u);
  // Both hold model shapes (GPT-3 175B's QKV at t = 1, b = 1) and grid points.
  EXPECT_TRUE(has(f.gemm_shapes, {1, 2048, 3 * 12288, 12288}));
  EXPECT_TRUE(has(q.gemm_shapes, {1, 2048, 2048, 2048}));
  // nccl-tests' range, 8 B … 4 GiB, ascending.
  EXPECT_EQ(f.collective_bytes.front(), 8);
  EXPECT_EQ(f.collective_bytes.back(), std::int64_t{4} << 30);
  EXPECT_EQ(f.collective_bytes.size(), 30u);
  EXPECT_EQ(q.collective_bytes.back(), std::int64_t{4} << 30);
  EXPECT_TRUE(std::is_sorted(q.collective_bytes.begin(), q.collective_bytes.end()));
  // Attention: causal and not, every head dimension of the presets (gpt-1.7b: 2304 / 24 = 96;
  // Llama and GPT-3: 128; gpt-1t: 25600 / 160 = 160).
  auto causal = std::count_if(q.attention.begin(), q.attention.end(), [](const AttentionProblem& a) { return a.causal; });
  EXPECT_EQ(2 * causal, static_cast<long>(q.attention.size()));
  for (std::int64_t d : {96, 128, 160})
    EXPECT_TRUE(std::any_of(q.attention.begin(), q.attention.end(), [&](const AttentionProblem& a) { return a.head_dim == d; }));
  // 16k tokens per problem at every sequence length, as the flash-attention benchmark runs them.
  for (const MeasurePlan* p : {&q, &f})
    for (const AttentionProblem& a : p->attention) EXPECT_EQ(a.batch * a.sequence, 16384) << a.sequence;
}

// The accumulate phase's shapes are the presets' weight gradients: output features × input
// features over the tokens (GPT-3's fc1 at t = 8, micro-batch 1: 6144 × 12288 over 2048).
TEST(MeasurePlan, AccumulateShapesAreWeightGradients) {
  const auto all = model_weight_gradient_shapes({"gpt3-175b"}, {8}, {1}, {2048});
  ASSERT_EQ(all.size(), 5u);  // qkv, proj, fc1, fc2, logits
  const auto has_shape = [&](GemmShape s) {
    return std::any_of(all.begin(), all.end(), [&](const GemmShape& g) { return g.b == s.b && g.m == s.m && g.n == s.n && g.k == s.k; });
  };
  EXPECT_TRUE(has_shape({1, 6144, 12288, 2048}));   // fc1
  EXPECT_TRUE(has_shape({1, 12288, 6144, 2048}));   // fc2
  EXPECT_TRUE(has_shape({1, 6400, 12288, 2048}));   // logits, V/t = 6400
  const MeasurePlan q = make_measure_plan(true), f = make_measure_plan(false);
  EXPECT_EQ(q.accumulate_shapes.size(), 32u);
  EXPECT_GT(f.accumulate_shapes.size(), q.accumulate_shapes.size());
  EXPECT_GT(q.accumulate_s, 0);
  EXPECT_DOUBLE_EQ(q.gemm_s_per_dtype * 4 + q.accumulate_s + q.attention_s + q.memory_s + q.copy_s + q.collective_s,
                   q.total_s);
}

TEST(MeasurePlan, SpreadOrderIsAPermutationWhosePrefixesSpanTheRange) {
  std::vector<int> v(10);
  std::iota(v.begin(), v.end(), 0);
  std::vector<int> s = spread_order(v);
  ASSERT_EQ(s.size(), v.size());
  EXPECT_TRUE(std::is_permutation(s.begin(), s.end(), v.begin()));
  // Bit reversal over 16 slots: 0, 8, 4, (12 is past the end), 2, …
  EXPECT_EQ((std::vector<int>{s[0], s[1], s[2], s[3]}), (std::vector<int>{0, 8, 4, 2}));
}

TEST(MeasurePlan, ThinOutKeepsTheEnds) {
  std::vector<int> v(100);
  std::iota(v.begin(), v.end(), 0);
  auto t = thin_out(v, 5);
  EXPECT_EQ(t, (std::vector<int>{0, 24, 49, 74, 99}));
  EXPECT_EQ(thin_out(v, 200).size(), 100u);
  EXPECT_TRUE(thin_out(v, 0).empty());
  EXPECT_EQ(thin_out(v, 1), std::vector<int>{0});
}

TEST(MeasurePlan, PhasesParseFromAListOfNames) {
  const MeasurePhases all;
  for (MeasurePhase p : kMeasurePhases) EXPECT_TRUE(all.has(p)) << measure_phase_name(p);
  const MeasurePhases some = MeasurePhases::parse("memory,gemm-bf16,attention-fused");
  EXPECT_TRUE(some.has(MeasurePhase::GemmBf16));
  EXPECT_TRUE(some.has(MeasurePhase::AttentionFused));
  EXPECT_TRUE(some.has(MeasurePhase::Memory));
  EXPECT_FALSE(some.has(MeasurePhase::GemmFp8));
  EXPECT_FALSE(some.has(MeasurePhase::AttentionUnfused));
  EXPECT_FALSE(some.has(MeasurePhase::Collectives));
  for (MeasurePhase p : kMeasurePhases) EXPECT_TRUE(MeasurePhases::parse(measure_phase_name(p)).has(p));
  try {
    (void)MeasurePhases::parse("gemm-bf16,gemm-int8");
    ADD_FAILURE() << "an unknown phase was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown phase \"gemm-int8\" (valid: gemm-bf16, gemm-fp16, gemm-fp8, gemm-tf32, "
                                         "gemm-accumulate, attention-fused, attention-unfused, memory, copies, "
                                         "collectives)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)MeasurePhases::parse(""), std::invalid_argument);
  EXPECT_THROW((void)MeasurePhases::parse("memory,"), std::invalid_argument);
  EXPECT_THROW((void)MeasurePhases::parse("memory,memory"), std::invalid_argument);
}

TEST(MeasurePlan, PhaseBudgetsEndAtTheRunsDeadline) {
  TimeBudget run(100, 600);  // the run: from t = 100 s to 700 s
  EXPECT_TRUE(run.allows(699));
  EXPECT_FALSE(run.allows(701));
  EXPECT_FALSE(run.allows(650, 60));  // the next measurement would end past it
  TimeBudget early = run.phase(200, 75);
  EXPECT_EQ(early.end_s(), 275);
  TimeBudget late = run.phase(650, 75);  // would end at 725: clamped to the run's end
  EXPECT_EQ(late.end_s(), 700);
}

}  // namespace
// Both plans reach enough sizes above the memory fit's L2 cut for its held-back check.
TEST(MeasurePlan, FullPlanHasEnoughMemorySizesAboveL2) {
  for (bool quick : {false, true}) {
    const MeasurePlan f = make_measure_plan(quick);
    const auto above = std::count_if(f.memory_kernel_bytes.begin(), f.memory_kernel_bytes.end(),
                                     [](std::int64_t b) { return static_cast<double>(b) >= kMinStreamingBytes; });
    EXPECT_GE(above, kMinCopySizes) << (quick ? "quick" : "full");
  }
}

}  // namespace trainsim::calibration
