#include <gtest/gtest.h>

#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

std::int64_t forward_allocs(const Role& role) {
  std::int64_t total = 0;
  for (const auto& c : role.chunks)
    for (const auto& it : c.forward) total += it.alloc_bytes;
  return total;
}

sim::Timeline run(const Program& prog, std::int64_t gpus) {
  auto cluster = testing::a100_cluster(gpus);
  auto cost = testing::a100_cost();
  Lowered low = lower(prog, cluster, cost, Fidelity::FAST);
  return sim::simulate(low.plan, low.network);
}

TEST(Memory, ModelStatesAreEighteenBytesPerParameterForBf16Adam) {
  // formulas.md: Megatron without the distributed optimizer, 2 + 4 + 12 bytes/param.
  auto spec = testing::gpt_spec(2, 2, 1, 4);
  Program prog = build_program(spec);
  for (const auto& role : prog.roles) {
    const double p = static_cast<double>(role.params);
    EXPECT_DOUBLE_EQ(role.static_bytes[static_cast<int>(MemClass::WEIGHTS)], 2 * p);
    EXPECT_DOUBLE_EQ(role.static_bytes[static_cast<int>(MemClass::GRADIENTS)], 4 * p);
    EXPECT_DOUBLE_EQ(role.static_bytes[static_cast<int>(MemClass::OPTIMIZER_STATES)], 12 * p);
  }
}

TEST(Memory, Fp16KeepsSixteenBitGradients) {
  auto spec = testing::gpt_spec(1, 1, 1, 1);
  spec.dtype = hardware::Dtype::FP16;
  const auto sb = state_bytes_per_param(spec);
  EXPECT_EQ(sb.weights + sb.gradients + sb.optimizer, 16);
}

TEST(Memory, OneFOneBFirstStageHoldsPMicroBatches) {
  // formulas.md: with 1F1B stage i holds min(p − i, m) micro-batches of activations.
  const int p = 4;
  for (int m : {8, 2}) {
    auto spec = testing::gpt_spec(1, p, 1, m);
    Program prog = build_program(spec);
    const auto tl = run(prog, p);
    for (int i = 0; i < p; ++i) {
      const auto& mem = tl.memory[static_cast<std::size_t>(i)];
      const std::int64_t held = std::min(p - i, m);
      EXPECT_EQ(mem.at_peak[static_cast<int>(MemClass::ACTIVATIONS)], held * forward_allocs(prog.roles[static_cast<std::size_t>(i)]))
          << "stage " << i << " m=" << m;
    }
  }
}

TEST(Memory, KorthikantiTensorParallelBytesPerLayerAreWhatAStageAllocates) {
  // One layer's forward allocation equals s·b·h·(10 + 24/t + 5as/(ht)) (formulas.md).
  auto spec = testing::gpt_spec(4, 1, 1, 1);
  Program prog = build_program(spec);
  std::int64_t layer3 = 0;
  for (const auto& it : prog.roles[0].chunks[0].forward)
    if (it.layer == 3) layer3 += it.alloc_bytes;
  const double s = 2048, b = 1, h = static_cast<double>(spec.model.hidden), a = static_cast<double>(spec.model.heads), t = 4;
  EXPECT_EQ(layer3, static_cast<std::int64_t>(s * b * h * (10 + 24 / t + 5 * a * s / (h * t))));
}

TEST(Memory, FullRecomputeKeepsOnlyLayerInputs) {
  auto spec = testing::gpt_spec(1, 1, 1, 2);
  spec.recompute = Recompute::FULL;
  Program prog = build_program(spec);
  std::int64_t layer_fwd = 0;
  for (const auto& it : prog.roles[0].chunks[0].forward)
    if (it.layer == 5) layer_fwd += it.alloc_bytes;
  EXPECT_EQ(layer_fwd, 2 * 2048 * spec.model.hidden);  // 2·s·b·h
  // Every byte allocated in an iteration is freed by its end.
  const auto tl = run(prog, 1);
  std::int64_t balance = 0;
  for (const auto& r : prog.roles)
    for (const auto& st : r.steps)
      for (const Item& it : r.items(st)) balance += it.alloc_bytes - it.free_bytes;
  EXPECT_EQ(balance, 0);
  // Recompute work appears as its own tasks.
  int recompute_steps = 0;
  for (const auto& st : prog.roles[0].steps)
    for (const Item& it : prog.roles[0].items(st)) recompute_steps += it.category == Category::RECOMPUTE;
  EXPECT_GT(recompute_steps, 0);
  EXPECT_GT(tl.makespan.ps, 0);
}

TEST(Memory, SelectiveRecomputeDropsTheAttentionCore) {
  // TP + selective: s·b·h·(10 + 24/t) per layer (formulas.md).
  auto spec = testing::gpt_spec(4, 1, 1, 1);
  spec.recompute = Recompute::SELECTIVE;
  Program prog = build_program(spec);
  std::int64_t layer3 = 0;
  for (const auto& it : prog.roles[0].chunks[0].forward)
    if (it.layer == 3) layer3 += it.alloc_bytes;
  const double s = 2048, b = 1, h = static_cast<double>(spec.model.hidden), t = 4;
  EXPECT_EQ(layer3, static_cast<std::int64_t>(s * b * h * (10 + 24 / t)));
}

}  // namespace
}  // namespace trainsim::strategies

namespace trainsim::strategies {
namespace {

TEST(Memory, DistributedOptimizerIsSixPlusTwelveOverDBytesPerParameter) {
  // formulas.md: Megatron's distributed optimizer keeps 2 B weights and 4 B fp32 gradients
  // whole and shards the 12 B of fp32 optimizer states over d: 6 + 12/d bytes/param.
  for (std::int64_t d : {1, 2, 4, 8}) {
    auto spec = testing::gpt_spec(1, 2, d, 8 * d);
    spec.zero_stage = 1;
    const Program prog = build_program(spec);
    for (const auto& role : prog.roles) {
      double total = 0;
      for (double b : role.static_bytes) total += b;
      EXPECT_DOUBLE_EQ(total / static_cast<double>(role.params), 6.0 + 12.0 / static_cast<double>(d)) << "d=" << d;
    }
  }
}

TEST(Memory, DistributedOptimizerReduceScattersGradientsAndGathersParameters) {
  auto spec = testing::gpt_spec(1, 1, 4, 16);
  spec.zero_stage = 1;
  const Program prog = build_program(spec);
  const Role& role = prog.roles[0];
  std::vector<std::pair<hardware::Collective, double>> dp;
  for (const auto& it : role.tail)
    if (it.kind == Item::Kind::COLLECTIVE && it.collective.dim == Dim::DATA) dp.emplace_back(it.collective.op, it.collective.bytes);
  const double p = static_cast<double>(role.params);
  ASSERT_EQ(dp.size(), 2u);
  EXPECT_EQ(dp[0].first, hardware::Collective::REDUCE_SCATTER);
  EXPECT_DOUBLE_EQ(dp[0].second, 4 * p);  // fp32 gradients
  EXPECT_EQ(dp[1].first, hardware::Collective::ALL_GATHER);
  EXPECT_DOUBLE_EQ(dp[1].second, 2 * p);  // 16-bit parameters
}

}  // namespace
}  // namespace trainsim::strategies
