#include <gtest/gtest.h>

#include <optional>
#include <string>

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

TEST(Memory, Fp16KeepsSixteenBitGradientsAndFp32MainGradientsDuringTheStep) {
  auto spec = testing::gpt_spec(1, 1, 1, 1);
  spec.dtype = hardware::Dtype::FP16;
  const auto sb = state_bytes_per_param(spec);
  EXPECT_EQ(sb.weights + sb.gradients + sb.optimizer, 16);
  EXPECT_EQ(sb.main_gradients, 4);
  // The optimizer step allocates them and frees them when it ends.
  const Program prog = build_program(spec);
  const Item& step = prog.roles[0].tail.back();
  ASSERT_EQ(step.category, Category::OPTIMIZER);
  EXPECT_EQ(step.mem_class, MemClass::GRADIENTS);
  EXPECT_EQ(step.alloc_bytes, 4 * prog.roles[0].params);
  EXPECT_EQ(step.free_bytes, step.alloc_bytes);
  spec.dtype = hardware::Dtype::BF16;  // BF16 steps on its fp32 accumulation buffer
  EXPECT_EQ(state_bytes_per_param(spec).main_gradients, 0);
}

// The gradient dtype as a choice (Megatron-LM --grad-reduce-in-bf16 with BF16,
// --accumulate-allreduce-grads-in-fp32 with FP16): the buffer backward accumulates into and
// data parallelism reduces is 2 or 4 bytes a parameter, and 16-bit gradients get fp32 main
// gradients for the step.
TEST(Memory, GradientDtypeSetsTheBufferTheReductionAndTheMainGradients) {
  auto spec = testing::gpt_spec(1, 1, 2, 2);
  struct Case {
    hardware::Dtype dtype;
    std::optional<bool> fp32;
    double gradients, main_gradients;
  };
  for (const Case& c : {Case{hardware::Dtype::BF16, std::nullopt, 4, 0}, Case{hardware::Dtype::BF16, false, 2, 4},
                        Case{hardware::Dtype::FP8, false, 2, 4}, Case{hardware::Dtype::FP16, std::nullopt, 2, 4},
                        Case{hardware::Dtype::FP16, true, 4, 0}}) {
    spec.dtype = c.dtype;
    spec.accumulate_grads_in_fp32 = c.fp32;
    const auto sb = state_bytes_per_param(spec);
    const std::string what =
        std::string(hardware::to_string(c.dtype)) + (c.fp32 ? (*c.fp32 ? " fp32" : " 16-bit") : " default");
    EXPECT_EQ(sb.gradients, c.gradients) << what;
    EXPECT_EQ(sb.main_gradients, c.main_gradients) << what;
    const Program prog = build_program(spec);
    const Role& role = prog.roles[0];
    const double p = static_cast<double>(role.params);
    EXPECT_DOUBLE_EQ(role.static_bytes[static_cast<int>(MemClass::GRADIENTS)], c.gradients * p) << what;
    // The data-parallel all-reduce of the tail carries the buffer's bytes.
    double reduced = 0;
    for (const Item& it : role.tail)
      if (it.kind == Item::Kind::COLLECTIVE && it.collective.dim == Dim::DATA) reduced += it.collective.bytes;
    EXPECT_DOUBLE_EQ(reduced, c.gradients * p) << what;
    const Item& step = role.tail.back();
    ASSERT_EQ(step.category, Category::OPTIMIZER) << what;
    EXPECT_EQ(step.alloc_bytes, std::llround(c.main_gradients * p)) << what;
  }
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

namespace trainsim::strategies {
namespace {

// The optimizer step as Megatron-LM's passes over the fp32 main parameters (bytes per
// parameter: gradient norm 4, Adam 28 = read gradient, weight, two moments and write the
// three, copy back to 16 bits 6; 16-bit gradients add the cast to fp32 6, FP16 the unscale 8), sharded
// by ZeRO-1, plus zeroing the whole gradient buffer.
TEST(Memory, OptimizerStepBytesArePerParameterPasses) {
  auto spec = testing::gpt_spec(1, 1, 1, 1);
  EXPECT_EQ(optimizer_step_bytes_per_param(spec), 4 + 28 + 6);
  spec.dtype = hardware::Dtype::FP16;
  EXPECT_EQ(optimizer_step_bytes_per_param(spec), 6 + 8 + 4 + 28 + 6);
  spec.accumulate_grads_in_fp32 = true;  // FP16 into an fp32 buffer: no cast, still the unscale
  EXPECT_EQ(optimizer_step_bytes_per_param(spec), 8 + 4 + 28 + 6);
  spec.dtype = hardware::Dtype::BF16;
  spec.accumulate_grads_in_fp32 = false;  // BF16 gradients: the cast, no loss scale to unscale
  EXPECT_EQ(optimizer_step_bytes_per_param(spec), 6 + 4 + 28 + 6);
  spec.accumulate_grads_in_fp32.reset();
  spec.optimizer = Optimizer::SGD;
  EXPECT_EQ(optimizer_step_bytes_per_param(spec), 4 + 20 + 6);
  spec.optimizer = Optimizer::ADAM;
  for (std::int64_t d : {1, 4}) {
    auto s = testing::gpt_spec(1, 1, d, 4 * d);
    s.zero_stage = d > 1 ? 1 : 0;
    const Program prog = build_program(s);
    const Role& role = prog.roles[0];
    const Item* opt = nullptr;  // ZeRO-1's parameter all-gather follows the step
    for (const Item& it : role.tail)
      if (it.category == Category::OPTIMIZER) opt = &it;
    ASSERT_NE(opt, nullptr);
    const Item& step = *opt;
    const double p = static_cast<double>(role.params);
    // 38 B on the shard + 4 B (the fp32 buffer) on every parameter.
    EXPECT_DOUBLE_EQ(role.segments[step.segment].ops.at(0).fwd_bytes, 38 * p / static_cast<double>(d) + 4 * p)
        << "d=" << d;
  }
}

// Memory as the driver sees it: the 22 B GPT of Korthikanti et al. 2022 (48 layers, hidden
// 6144, 64 heads, sequence 2048) on 8 A100 80 GB, tensor 8, micro-batch 4, full recompute,
// FP16, unfused attention, fits in both fidelities. By hand, per GPU:
//   parameters  layer: QKV 6144·2304 + 2304, proj 768·6144 + 6144, fc1 6144·3072 + 3072,
//               fc2 3072·6144 + 6144, two LayerNorms 2·12288 = 56,665,344; × 48 =
//               2,719,936,512; word embedding 6400·6144 = 39,321,600; positions 2048·6144 =
//               12,582,912; final norm 12,288: P = 2,771,853,312.
//   model states  16 B/P (2 weights + 2 FP16 gradients + 12 Adam) = 44,349,652,992 B = 41.30 GiB.
//   activations  full recompute keeps each layer's input 2·s·b·h = 100,663,296 B (× 48 =
//               4.50 GiB) and, while a layer is recomputed, its Korthikanti activations
//               s·b·h·(10 + 24/t + 5·a·s/(h·t)) = 50,331,648 · 26.33 = 1.23 GiB, plus the
//               embedding's and head's (under 0.5 GiB): under 6.3 GiB.
//   the step    FP16's fp32 main gradients 4 B/P = 10.33 GiB while activations are freed.
//   runtime     CUDA context 0.71 GiB, cuBLAS workspace 8.1 MiB, NCCL buffers of the tensor
//               group 147 MiB: 0.86 GiB.
//   peak        max(41.30 + 6.3, 41.30 + 10.33) + 0.86 = 52.5 GiB of 80 GiB: the step.
TEST(Memory, Gpt22bOnEightA100FitsInBothFidelities) {
  TrainingSpec spec;
  spec.model = models::ModelConfig{.name = "gpt-22b", .family = models::Family::GPT, .layers = 48, .hidden = 6144,
                                   .heads = 64, .kv_heads = 64, .ffn_hidden = 4 * 6144, .vocab = 51200,
                                   .max_positions = 2048, .tied_embedding = true};
  spec.sequence = 2048;
  spec.micro_batch = 4;
  spec.global_batch = 4;
  spec.dtype = hardware::Dtype::FP16;
  spec.flash_attention = false;
  spec.recompute = Recompute::FULL;
  spec.layout = Layout{8, 1, 1, false, 1};
  const Program prog = build_program(spec);
  const double p = static_cast<double>(prog.roles[0].params);
  EXPECT_EQ(prog.roles[0].params, 2'771'853'312);
  const auto cluster = testing::a100_cluster(8);
  const auto cost = testing::a100_cost();
  constexpr double GIB = 1024.0 * 1024 * 1024;
  std::int64_t peaks[2] = {};
  int i = 0;
  for (Fidelity f : {Fidelity::FAST, Fidelity::FULL}) {
    const Lowered low = lower(prog, cluster, cost, f);
    const auto tl = sim::simulate(low.plan, low.network);
    const auto& mem = tl.memory[0];
    const auto at = [&](MemClass c) { return static_cast<double>(mem.at_peak[static_cast<int>(c)]); };
    EXPECT_DOUBLE_EQ(at(MemClass::WEIGHTS), 2 * p) << to_string(f);
    EXPECT_DOUBLE_EQ(at(MemClass::OPTIMIZER_STATES), 12 * p) << to_string(f);
    // The peak is the optimizer step: 16-bit gradients plus the fp32 main gradients, no activations.
    EXPECT_DOUBLE_EQ(at(MemClass::GRADIENTS), (2 + 4) * p) << to_string(f);
    EXPECT_EQ(at(MemClass::ACTIVATIONS), 0) << to_string(f);
    EXPECT_DOUBLE_EQ(at(MemClass::CUDA_CONTEXT), 758'120'448) << to_string(f);
    EXPECT_DOUBLE_EQ(at(MemClass::CUBLAS_WORKSPACE), 8'519'680) << to_string(f);
    EXPECT_DOUBLE_EQ(at(MemClass::COMM_BUFFERS), 154'140'672) << to_string(f);
    EXPECT_NEAR(static_cast<double>(mem.peak_bytes) / GIB, 52.5, 0.1) << to_string(f);
    EXPECT_LT(static_cast<double>(mem.peak_bytes), cluster.gpu().hbm_capacity_bytes().value()) << to_string(f);
    peaks[i++] = mem.peak_bytes;
  }
  EXPECT_EQ(peaks[0], peaks[1]);
  // 80 GiB as the driver reports it, not 80·10⁹ bytes.
  EXPECT_EQ(cluster.gpu().hbm_capacity_bytes().value(), 80 * GIB);
}

}  // namespace
}  // namespace trainsim::strategies

namespace trainsim::strategies {
namespace {

// FP8 as Transformer Engine runs it, in memory: each FP8 linear layer keeps an FP8 copy of
// its weight and that copy's transpose (1 byte each; the bias stays 16-bit), and saves its
// input in FP8. GPT-1.7B (24 layers, h = 2304, t = 1): the linear weights of a layer are
// QKV h·3h + proj h·h + fc1 h·4h + fc2 4h·h = 12h², so FP8 adds 2 · 24 · 12 · 2304² bytes
// of weights; a layer's saved linear inputs (s = 2048, b = 1) are s·b·(h + h + h + 4h) =
// 7·s·b·h elements, one byte less each.
TEST(Memory, Fp8KeepsFp8WeightCopiesAndSavesLinearInputsInOneByte) {
  auto spec = testing::gpt_spec(1, 1, 1, 1);
  spec.flash_attention = true;
  const Program bf16 = build_program(spec);
  spec.dtype = hardware::Dtype::FP8;
  const Program fp8 = build_program(spec);
  const double h = 2304, s = 2048;
  const auto weights = [](const Program& p) { return p.roles[0].static_bytes[static_cast<int>(MemClass::WEIGHTS)]; };
  EXPECT_DOUBLE_EQ(weights(fp8) - weights(bf16), 2 * 24 * 12 * h * h);
  EXPECT_EQ(fp8.roles[0].params, bf16.roles[0].params);
  const models::Layer layer_bf16 = models::transformer_layer(bf16.spec.model, layer_shard(bf16));
  const models::Layer layer_fp8 = models::transformer_layer(fp8.spec.model, layer_shard(fp8));
  EXPECT_DOUBLE_EQ(layer_bf16.activation_bytes() - layer_fp8.activation_bytes(), 7 * s * h);
}

}  // namespace
}  // namespace trainsim::strategies
