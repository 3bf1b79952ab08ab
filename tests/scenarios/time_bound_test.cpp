// The search's time lower bound grows with what lengthens every schedule: recompute,
// bubbles, and communication nothing hides. That it never exceeds a simulated time is
// checked over whole spaces in tests/cli/search_command_test.cpp.
#include "scenarios/time_bound.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <variant>

#include "scenarios/loader.hpp"

namespace trainsim::scenarios {
namespace {

// The search example: GPT-3 175B, batch 1,536 × 2,048, BF16, on 512 DGX H100 (each GPU with
// its own 400 Gb/s NIC and 450 GB/s of NVLink each way).
struct Example {
  LoadedScenario scenario;
  hardware::Cluster cluster;
  hardware::CostModel cost;
};

Example search_example() {
  const char* dir = std::getenv("TRAINSIM_SOURCE_DIR");
  const auto loaded = load_file(std::string(dir != nullptr ? dir : TRAINSIM_TEST_SOURCE_DIR) +
                                    "/scenarios/examples/search/gpt3-175b-h100-4096.textproto",
                                LayoutFields::SEARCHED);
  const auto& s = std::get<LoadedScenario>(loaded);
  return {s, hardware::Cluster(s.cluster, s.gpu), hardware::CostModel(s.gpu)};
}

LayoutCandidate t8_p16_d32() {
  LayoutCandidate c;
  c.tensor = 8;
  c.pipeline = 16;
  c.data = 32;
  return c;
}

TEST(TimeBound, GrowsWithRecomputeAndBubbles) {
  const Example e = search_example();
  TimeBound bound(e.scenario.training, e.cluster, e.cost);
  LayoutCandidate c = t8_p16_d32();
  c.overlap_tp_comm = true;
  c.overlap_grad_reduce = true;
  const double plain = bound.seconds(c);
  // 6 layers × 48 micro-batches + the 90 layers' fill and drain, at least 2·3·params·tokens /
  // GPUs at the most FLOP/s a BF16 kernel reaches on an H100, which is below its peak.
  const double most = e.cost.max_achieved_flops(hardware::Dtype::BF16);
  EXPECT_LT(most, 989e12);
  EXPECT_GT(plain, 6.0 * 175e9 * 1536 * 2048 / 4096 / most * 0.9);
  c.recompute = strategies::Recompute::FULL;
  EXPECT_GT(bound.seconds(c), plain * 1.2);
  c.recompute = strategies::Recompute::NONE;
  c.virtual_stages = 3;
  c.schedule = Schedule::INTERLEAVED;
  EXPECT_LT(bound.seconds(c), plain);
}

// Each overlap turned off puts its collectives on the chain, at least at the line rate of the
// links they cross (hand counts below; h = 12,288, s = 2,048, micro-batch 1, BF16).
TEST(TimeBound, CountsTheCommunicationNothingHides) {
  const Example e = search_example();
  TimeBound bound(e.scenario.training, e.cluster, e.cost);
  LayoutCandidate c = t8_p16_d32();
  c.sequence_parallel = true;
  c.zero_stage = 1;
  c.overlap_tp_comm = c.overlap_grad_reduce = c.overlap_param_gather = true;
  const double hidden = bound.seconds(c);

  // Tensor-parallel collectives on the compute stream. With sequence parallelism a layer
  // all-gathers its input twice and reduce-scatters twice in forward; in backward it
  // all-gathers the output gradient twice, re-gathers the input of both column-parallel
  // GEMMs and reduce-scatters twice: 10 collectives of s·h·2 bytes, each moving 7/8 of them
  // into every GPU over its 450 GB/s of NVLink. The chain holds 48 × 6 + 90 layers.
  LayoutCandidate tp = c;
  tp.overlap_tp_comm = false;
  const double tp_wire = 10 * (7.0 / 8) * 2048.0 * 12288 * 2 / 450e9;
  std::printf("tensor-parallel collectives unhidden: +%.4f s, at line rate %.4f s\n", bound.seconds(tp) - hidden,
              (48 * 6 + 90) * tp_wire);
  EXPECT_GT(bound.seconds(tp) - hidden, 0.9 * (48 * 6 + 90) * tp_wire);

  // The first stage's gradient reduce-scatter after its last backward: 6 layers of
  // 12·h²/8 parameters in fp32, each of the 32 ranks (one a node, tensor 8) sending 31/32 of
  // it through its own 400 Gb/s NIC.
  const double stage_params = 6 * 12.0 * 12288 * 12288 / 8;
  LayoutCandidate grad = c;
  grad.overlap_grad_reduce = false;
  std::printf("gradient reduce-scatter unhidden: +%.4f s, at line rate %.4f s\n", bound.seconds(grad) - hidden,
              (31.0 / 32) * stage_params * 4 / 50e9);
  EXPECT_GT(bound.seconds(grad) - hidden, 0.9 * (31.0 / 32) * stage_params * 4 / 50e9);

  // ZeRO-1's parameter all-gather after the step, in BF16.
  LayoutCandidate param = c;
  param.overlap_param_gather = false;
  std::printf("parameter all-gather unhidden: +%.4f s, at line rate %.4f s\n", bound.seconds(param) - hidden,
              (31.0 / 32) * stage_params * 2 / 50e9);
  EXPECT_GT(bound.seconds(param) - hidden, 0.9 * (31.0 / 32) * stage_params * 2 / 50e9);

  // Without ZeRO there is no gather to hide; without data parallelism, nothing to reduce.
  LayoutCandidate zero0 = c;
  zero0.zero_stage = 0;
  LayoutCandidate zero0_gather_unhidden = zero0;
  zero0_gather_unhidden.overlap_param_gather = false;
  EXPECT_DOUBLE_EQ(bound.seconds(zero0_gather_unhidden), bound.seconds(zero0));
  LayoutCandidate alone = c;
  alone.data = 1;
  alone.overlap_grad_reduce = alone.overlap_param_gather = false;
  LayoutCandidate alone_hidden = c;
  alone_hidden.data = 1;
  EXPECT_DOUBLE_EQ(bound.seconds(alone), bound.seconds(alone_hidden));
}

}  // namespace
}  // namespace trainsim::scenarios
