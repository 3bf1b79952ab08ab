#include "report/run_report.hpp"

#include <gtest/gtest.h>

#include "report/flops.hpp"
#include "models/model.hpp"
#include "sim/attribution.hpp"
#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::report {
namespace {

namespace testing = strategies::testing;
using strategies::Fidelity;

TEST(RunReport, BreakdownSumsToIterationTime) {
  auto spec = testing::gpt_spec(2, 2, 2, 8);
  spec.recompute = strategies::Recompute::FULL;
  const strategies::Program prog = strategies::build_program(spec);
  const auto cluster = testing::a100_cluster(8);
  const auto cost = testing::a100_cost();
  for (auto f : {Fidelity::FULL, Fidelity::FAST}) {
    const strategies::Lowered low = strategies::lower(prog, cluster, cost, f);
    const auto tl = sim::simulate(low.plan, low.network);
    const RunReport r = analyze(prog, low, tl, cluster, cost);
    EXPECT_NEAR(r.time.total(), r.iteration_s, 1e-9) << to_string(f);
    EXPECT_GT(r.time.compute_s, 0);
    EXPECT_GT(r.time.recompute_s, 0);
    EXPECT_GT(r.time.bubble_s, 0);  // p = 2: fill and drain
    EXPECT_GT(r.mfu, 0.05);
    EXPECT_LT(r.mfu, 1.0);
  }
}

// HFU counts the forward work that recompute redoes; without recompute it is MFU. Full
// recompute redoes every layer's forward, a third of a layer's forward + backward work,
// so the recompute FLOPs stay below a third of the model's (which also has the head).
TEST(RunReport, HfuAddsRecomputeFlops) {
  const auto cluster = testing::a100_cluster(8);
  const auto cost = testing::a100_cost();
  auto run = [&](strategies::Recompute rc) {
    auto spec = testing::gpt_spec(2, 2, 2, 8);
    spec.recompute = rc;
    const strategies::Program prog = strategies::build_program(spec);
    const strategies::Lowered low = strategies::lower(prog, cluster, cost, Fidelity::FAST);
    const RunReport r = analyze(prog, low, sim::simulate(low.plan, low.network), cluster, cost);
    EXPECT_DOUBLE_EQ(r.recompute_flops, recompute_flops(prog));
    return r;
  };
  const RunReport none = run(strategies::Recompute::NONE);
  EXPECT_EQ(none.recompute_flops, 0.0);
  EXPECT_DOUBLE_EQ(none.hfu, none.mfu);
  const RunReport full = run(strategies::Recompute::FULL);
  EXPECT_GT(full.recompute_flops, 0.2 * full.model_flops);
  EXPECT_LT(full.recompute_flops, full.model_flops / 3);
  EXPECT_GT(full.hfu, full.mfu);
  EXPECT_NEAR(full.hfu / full.mfu, 1 + full.recompute_flops / full.model_flops, 1e-12);
}

TEST(RunReport, MemoryIsTheMostLoadedGpu) {
  const auto spec = testing::gpt_spec(1, 2, 1, 4);
  const strategies::Program prog = strategies::build_program(spec);
  const auto cluster = testing::a100_cluster(2);
  const auto cost = testing::a100_cost();
  const strategies::Lowered low = strategies::lower(prog, cluster, cost, Fidelity::FULL);
  const auto tl = sim::simulate(low.plan, low.network);
  const MemoryBreakdown m = memory_breakdown(low, tl, cluster);
  for (const auto& dm : tl.memory) EXPECT_LE(static_cast<double>(dm.peak_bytes), m.peak_bytes);
  double sum = 0;
  for (double b : m.at_peak) sum += b;
  EXPECT_DOUBLE_EQ(sum, m.peak_bytes);
  EXPECT_EQ(m.capacity_bytes, 80.0 * 1024 * 1024 * 1024);  // 80 GiB as the driver reports it
  EXPECT_FALSE(m.out_of_memory);
}

// Compute by kernel class on a small GPT (gpt-1.7b, t 2, p 2, d 2, unfused attention,
// selective recompute): the classes add up to the simulated compute + recompute, nothing
// overlaps so the slowdown is only the engine's rounding, and the GEMM seconds are a hand
// count — the four linear layers of one layer (qkv, proj, fc1, fc2), forward and backward
// from the cost model, × the stage's layers, plus the logits GEMM on the last stage, × the
// micro-batches of the pipeline.
TEST(RunReport, ComputeByClassAddsUpAndCountsTheGemms) {
  auto spec = testing::gpt_spec(2, 2, 2, 8);
  spec.recompute = strategies::Recompute::SELECTIVE;
  const strategies::Program prog = strategies::build_program(spec);
  const auto cluster = testing::a100_cluster(8);
  const auto cost = testing::a100_cost();
  auto fwd_bwd = [&](const models::Op& op) {
    strategies::Segment one;
    one.ops = {op};
    return strategies::segment_seconds(one, strategies::Cost::FORWARD, spec.dtype, cost) +
           strategies::segment_seconds(one, strategies::Cost::BACKWARD, spec.dtype, cost);
  };
  const auto shard = strategies::layer_shard(prog);
  double layer_gemm_s = 0;
  int layer_gemms = 0;
  for (const auto& op : models::transformer_layer(spec.model, shard).ops)
    if (op.cls == models::ComputeClass::GEMM) {
      layer_gemm_s += fwd_bwd(op);
      ++layer_gemms;
    }
  ASSERT_EQ(layer_gemms, 4);
  double head_gemm_s = 0;
  for (const auto& op : models::head_layer(spec.model, shard).ops)
    if (op.cls == models::ComputeClass::GEMM) head_gemm_s += fwd_bwd(op);
  ASSERT_GT(head_gemm_s, 0);
  for (auto f : {Fidelity::FULL, Fidelity::FAST}) {
    const strategies::Lowered low = strategies::lower(prog, cluster, cost, f);
    const auto tl = sim::simulate(low.plan, low.network);
    const RunReport r = analyze(prog, low, tl, cluster, cost);
    const ComputeByClass& k = r.compute_classes;
    EXPECT_NEAR(k.total(), r.time.compute_s + r.time.recompute_s, 1e-12) << to_string(f);
    EXPECT_NEAR(k.slowdown_s, 0.0, 1e-6) << to_string(f);  // picosecond rounding per task
    EXPECT_GT(k.attention_s, 0);
    EXPECT_GT(k.memory_bound_s, 0);
    EXPECT_GT(k.recompute_s, 0);
    EXPECT_NEAR(k.recompute_s, r.time.recompute_s, 1e-6) << to_string(f);
    // The stage of the rank the breakdown is for.
    const auto device = sim::last_finishing_device(low.plan, tl);
    const strategies::Role& role = prog.roles[static_cast<std::size_t>(low.device_stage[device])];
    const double expected = static_cast<double>(prog.micro_batches) *
                            (static_cast<double>(role.num_layers()) * layer_gemm_s + (role.has_head() ? head_gemm_s : 0));
    EXPECT_NEAR(k.gemm_s, expected, 1e-9 * expected) << to_string(f);
  }
}

// The top ops of a layer come with the breakdown: a full simulation's report lists them, a
// summary-only one (a sweep's or search's variant) has neither.
TEST(RunReport, TopOpsComeWithTheBreakdown) {
  const auto spec = testing::gpt_spec(2, 2, 1, 4);
  const strategies::Program prog = strategies::build_program(spec);
  const auto cluster = testing::a100_cluster(4);
  const auto cost = testing::a100_cost();
  const strategies::Lowered low = strategies::lower(prog, cluster, cost, Fidelity::FAST);
  const RunReport full = analyze(prog, low, sim::simulate(low.plan, low.network), cluster, cost);
  EXPECT_TRUE(full.has_breakdown);
  EXPECT_EQ(full.layer_ops.size(), 10u);
  sim::SimulateOptions summary;
  summary.summary_only = true;
  const RunReport brief = analyze(prog, low, sim::simulate(low.plan, low.network, summary), cluster, cost);
  EXPECT_FALSE(brief.has_breakdown);
  EXPECT_TRUE(brief.layer_ops.empty());
  EXPECT_EQ(brief.iteration_s, full.iteration_s);
}

// The ten most expensive ops of a layer: sorted, each a share of the whole layer, and the
// whole layer (all its ops) sums to one.
TEST(RunReport, TopOpsOfALayerAreSortedSharesOfTheLayer) {
  const auto spec = testing::gpt_spec(2, 1, 1, 1);
  const strategies::Program prog = strategies::build_program(spec);
  const auto cost = testing::a100_cost();
  const auto top = top_layer_ops(prog, cost);
  ASSERT_EQ(top.size(), 10u);
  for (std::size_t i = 1; i < top.size(); ++i) EXPECT_GE(top[i - 1].seconds, top[i].seconds) << top[i].name;
  const auto all = top_layer_ops(prog, cost, 100);  // every op of the layer
  double sum = 0;
  for (const auto& op : all) {
    EXPECT_GT(op.share, 0) << op.name;
    EXPECT_NEAR(op.share, op.seconds / top[0].seconds * top[0].share, 1e-12) << op.name;
    sum += op.share;
  }
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_GT(all.size(), top.size());
  // The MLP GEMMs of gpt-1.7b (h 2304, ffn 9216, t 2) are its largest kernels.
  EXPECT_TRUE(top[0].name == "fc1" || top[0].name == "fc2") << top[0].name;
}

}  // namespace
}  // namespace trainsim::report
