// Communication that real runs make besides the layer's forward collectives: the
// sequence-parallel backward all-gather of each column-parallel GEMM's input, and the
// gradient-norm all-reduce before the optimizer step.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

std::vector<const Item*> tensor_collectives(const std::vector<Item>& items, hardware::Collective op) {
  std::vector<const Item*> out;
  for (const Item& it : items)
    if (it.kind == Item::Kind::COLLECTIVE && it.collective.dim == Dim::TENSOR && it.collective.op == op)
      out.push_back(&it);
  return out;
}

// With sequence parallelism a column-parallel GEMM (QKV, fc1, the logits) keeps only its
// 1/t sequence shard of the input; its backward all-gathers the whole [b, s, h] input again
// for the weight gradient: 2·b·s·h bytes each (gpt-1.7b: h = 2304, s = 2048, b = 2).
TEST(Communication, SequenceParallelBackwardGathersEachColumnParallelInput) {
  auto spec = testing::gpt_spec(4, 1, 1, 2);
  spec.micro_batch = 2;
  spec.layout.sequence_parallel = true;
  const Program prog = build_program(spec);
  const Chunk& chunk = prog.roles[0].chunks[0];
  const double input_bytes = 2.0 * 2 * 2048 * 2304;
  int weight_input_gathers = 0;
  for (const Item* it : tensor_collectives(chunk.backward, hardware::Collective::ALL_GATHER)) {
    if (it->label != "tp-sp-weight-input-allgather") continue;
    ++weight_input_gathers;
    EXPECT_DOUBLE_EQ(it->collective.bytes, input_bytes);
  }
  // Two per layer (QKV, fc1) and the logits GEMM.
  EXPECT_EQ(weight_input_gathers, 2 * spec.model.layers + 1);
  // Backward all-gathers in all: those, and g's backward before each row-parallel GEMM
  // (proj, fc2) and the embedding's output.
  EXPECT_EQ(tensor_collectives(chunk.backward, hardware::Collective::ALL_GATHER).size(),
            static_cast<std::size_t>(4 * spec.model.layers + 2));
  // Without sequence parallelism the whole input is kept and nothing is gathered.
  spec.layout.sequence_parallel = false;
  const Program tp_only = build_program(spec);
  EXPECT_TRUE(tensor_collectives(tp_only.roles[0].chunks[0].backward, hardware::Collective::ALL_GATHER).empty());
}

// Gradient clipping's global norm: one fp32 all-reduced over the tensor group before the
// step; FP16 also all-reduces its loss scaler's found-inf flag.
TEST(Communication, GradientNormIsAllReducedBeforeTheStep) {
  auto spec = testing::gpt_spec(4, 1, 1, 1);
  for (const auto dtype : {hardware::Dtype::BF16, hardware::Dtype::FP16}) {
    spec.dtype = dtype;
    const Program prog = build_program(spec);
    const auto& tail = prog.roles[0].tail;
    const auto norms = tensor_collectives(tail, hardware::Collective::ALL_REDUCE);
    ASSERT_EQ(norms.size(), dtype == hardware::Dtype::FP16 ? 2u : 1u);
    EXPECT_EQ(norms[0]->label, "tp-grad-norm-allreduce");
    EXPECT_DOUBLE_EQ(norms[0]->collective.bytes, 4);
    EXPECT_EQ(tail.back().category, Category::OPTIMIZER);  // the step comes after them
  }
  // One GPU per tensor group: nothing to reduce.
  const Program single = build_program(testing::gpt_spec(1, 1, 1, 1));
  EXPECT_TRUE(tensor_collectives(single.roles[0].tail, hardware::Collective::ALL_REDUCE).empty());
}

}  // namespace
}  // namespace trainsim::strategies
