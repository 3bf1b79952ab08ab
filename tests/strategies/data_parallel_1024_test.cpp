// Issue 8's data-parallel-1,024 case: GPT 1.7B on 128 DGX A100 (1,024 GPUs), tensor 1,
// pipeline 1, data 1,024, FP16, one gradient all-reduce after the backward (no overlap), so
// the exposed data-parallel communication is that all-reduce alone.
//
// By hand. S = 1.65 B parameters × 2 bytes (FP16 gradients) ≈ 3.30 GB. The group is 128
// nodes × 8 GPUs; NCCL's inputs (reference §1.2): 8 channels × 24 GB/s (HDR 25 GB/s per
// NIC), bwInter since nodes > 2; AMD host. NCCL's predicted times (reference §1.3–1.5):
//   Ring/Simple: 8.4 + (2046 − 254)·max(3.4, 3·2.0) + 254·14 = 14316 µs, ×1.4 (plateau)
//     = 20043 µs; alg 8·24·1024/2046 = 96.1 GB/s → 20043 + 3.30e9/96100 ≈ 54.4 ms.
//   Tree/Simple: 8.4 + 2·(7·4.0 + floor(log2 128)·14) = 260.4 µs; bus min(0.92·192,
//     8·17.8) = 142.4, alg 71.2 (no size correction above 256 MiB) → 260.4 + 46350 ≈ 46.6 ms.
//   Tree/LL128: 14 + 2·(7·1.25 + 7·8.5) = 150.5 µs; alg 0.5·133.5 = 66.75 → ≈ 49.6 ms.
// So NCCL runs Tree/Simple. Its latency in our simulation is NCCL's, 260.4 µs (a ring charged
// 14 µs for each of its 2,046 steps, as before, paid 28.6 ms). Its bytes: per rail (GPU j of
// every node, S/8), the double binary tree puts at most 4 · S/16 = S/4 on a NIC (interior
// in one tree: up + two children; a leaf in the other), and the chains inside a node put
// 2·7/8·S on each NVLink: NIC S/4 at 0.96 × 25 GB/s = 24 GB/s → 1.042e-11 s/B against
// NVLink 1.75/240e9 = 7.29e-12 s/B, so the NIC limits:
//   exposed DP comm = 260.4 µs + S/4 / 24e9 ≈ 34.6 ms.
#include <gtest/gtest.h>

#include <cstdio>

#include "hardware/collectives.hpp"
#include "models/model.hpp"
#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/registry.hpp"
#include "strategies/time_breakdown.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

TEST(DataParallel1024, ExposedCommunicationWithNcclsTree) {
  auto spec = testing::gpt_spec(1, 1, 1024, 1024);
  spec.dtype = hardware::Dtype::FP16;
  const Program prog = build_program(spec);
  const auto cluster = testing::a100_cluster(1024);
  const Lowered lowered = lower(prog, cluster, testing::a100_cost(), Fidelity::FAST);
  const auto timeline = sim::simulate(lowered.plan, lowered.network);
  const TimeBreakdown t = break_down(lowered, timeline, 0);

  const double S = static_cast<double>(models::total_params(spec.model)) * 2;
  ASSERT_EQ(lowered.collectives.size(), 1u);
  const auto& use = lowered.collectives[0];
  EXPECT_EQ(use.op, hardware::Collective::ALL_REDUCE);
  EXPECT_DOUBLE_EQ(use.bytes, S);
  EXPECT_EQ(use.choice.algorithm, hardware::Algorithm::TREE);
  EXPECT_EQ(use.choice.protocol, hardware::Protocol::SIMPLE);

  const double expected = 260.4e-6 + S / 4 / (0.96 * 25e9);
  std::printf("S = %.4g B; exposed data-parallel comm %.6f s, by hand %.6f s\n", S, t.exposed_dp_s, expected);
  EXPECT_NEAR(t.exposed_dp_s, expected, 0.01 * expected);
}

}  // namespace
}  // namespace trainsim::strategies
