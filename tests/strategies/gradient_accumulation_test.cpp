// Weight gradients without Megatron-LM's gradient-accumulation fusion: each weight GEMM's
// epilogue no longer adds into main_grad, and a memory-bound kernel of its own adds the
// fresh gradient instead. The lowering's segment prices and a whole iteration move by
// exactly that, counted op by op from the model.
#include <gtest/gtest.h>

#include "models/model.hpp"
#include "report/run_report.hpp"
#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

// What unfusing costs one micro-batch's backward of `layer`: per weight GEMM, the add
// kernel ((2g + e) bytes per weight at the profile's memory rate, one launch) less the
// epilogue's accumulation ((2g − e) bytes per weight at its own rate).
double unfused_extra_seconds(const models::Layer& layer, const hardware::CostModel& cost, double g, double e) {
  double extra = 0;
  for (const models::Op& op : layer.ops) {
    if (op.wgrad_accumulate_bytes == 0) continue;
    const double weights = op.wgrad_accumulate_bytes / (2 * g - e);
    hardware::Kernel add;
    add.bytes = (2 * g + e) * weights;
    extra += cost.seconds_uncached(add) -
             op.wgrad_accumulate_bytes / cost.profile().gemm_accumulate_bytes_per_s().value();
  }
  return extra;
}

TEST(GradientAccumulation, UnfusedAddsAKernelPerWeightGemmToEveryBackward) {
  // One stage, two replicas, no overlap: the iteration is the compute of its micro-batches
  // and then the gradient all-reduce, which unfusing does not change.
  TrainingSpec fused = testing::gpt_spec(1, 1, 2, 8);
  TrainingSpec unfused = fused;
  unfused.gradient_accumulation_fusion = false;
  const auto cluster = testing::a100_cluster(2);
  const auto cost = testing::a100_cost();
  const Program a = build_program(fused), b = build_program(unfused);

  // Segment by segment, the weight gradient's price moves by the closed form.
  const models::ShardSpec shard = layer_shard(a);
  const double g = shard.main_grad_bytes, e = shard.bytes_per_element;
  ASSERT_EQ(a.roles[0].segments.size(), b.roles[0].segments.size());
  double extra_anywhere = 0;
  for (std::size_t i = 0; i < a.roles[0].segments.size(); ++i) {
    const Segment& s = a.roles[0].segments[i];
    models::Layer ops;
    ops.ops = s.ops;
    const double extra = unfused_extra_seconds(ops, cost, g, e);
    const double before = segment_seconds(s, Cost::BACKWARD_WEIGHT, hardware::Dtype::BF16, cost);
    const double after = segment_seconds(b.roles[0].segments[i], Cost::BACKWARD_WEIGHT, hardware::Dtype::BF16, cost);
    EXPECT_NEAR(after - before, extra, 1e-12) << s.name;
    extra_anywhere += extra;
    // The input gradient and the forward are untouched.
    EXPECT_EQ(segment_seconds(s, Cost::BACKWARD_INPUT, hardware::Dtype::BF16, cost),
              segment_seconds(b.roles[0].segments[i], Cost::BACKWARD_INPUT, hardware::Dtype::BF16, cost));
  }
  EXPECT_GT(extra_anywhere, 0);

  // The iteration: every micro-batch's backward of every layer and of the head pays it.
  const models::Layer layer = models::transformer_layer(fused.model, shard);
  const models::Layer head = models::head_layer(fused.model, shard);
  const double per_micro_batch = static_cast<double>(fused.model.layers) * unfused_extra_seconds(layer, cost, g, e) +
                                 unfused_extra_seconds(head, cost, g, e);
  for (const Fidelity fidelity : {Fidelity::FAST, Fidelity::FULL}) {
    const auto iteration = [&](const Program& p) {
      const Lowered lowered = lower(p, cluster, cost, fidelity);
      const sim::Timeline t = sim::simulate(lowered.plan, lowered.network);
      return report::analyze(p, lowered, t, cluster, cost);
    };
    const report::RunReport x = iteration(a), y = iteration(b);
    const double expected = static_cast<double>(fused.micro_batches()) * per_micro_batch;
    EXPECT_NEAR(y.iteration_s - x.iteration_s, expected, 1e-9) << to_string(fidelity);
    EXPECT_NEAR(y.time.compute_s - x.time.compute_s, expected, 1e-9) << to_string(fidelity);
  }
}

}  // namespace
}  // namespace trainsim::strategies
