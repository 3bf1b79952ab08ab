// Megatron-LM / NeMo arguments and DeepSpeed configs as scenarios: each argument mapped,
// noted as not affecting an iteration, or an error naming it.
#include "scenarios/framework_import.hpp"

#include <gtest/gtest.h>

#include <google/protobuf/text_format.h>

#include <string>
#include <variant>
#include <vector>

#include "scenarios/loader.hpp"

namespace trainsim::scenarios {
namespace {

Scenario cluster(const char* model, int nodes) {
  Scenario s;
  s.mutable_model()->set_preset(model);
  s.mutable_cluster()->set_preset("dgx-h100");
  s.mutable_cluster()->set_nodes(nodes);
  return s;
}

std::string text_of(const Scenario& s) {
  std::string t;
  google::protobuf::TextFormat::PrintToString(s, &t);
  return t;
}

TEST(ImportMegatron, MapsTheLayoutStrategiesAndShape) {
  const auto r = import_megatron(
      {"--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size", "4",
       "--num-layers-per-virtual-pipeline-stage", "5", "--num-layers", "80", "--sequence-parallel",
       "--micro-batch-size=1", "--global-batch-size", "1024", "--seq-length", "8192", "--bf16",
       "--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap",
       "--recompute-granularity", "selective", "--use-flash-attn", "--lr", "3e-4", "--train-iters", "100"},
      cluster("llama3-70b", 64));
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  const Scenario& s = r.scenario;
  EXPECT_EQ(s.parallel().tensor(), 8);
  EXPECT_EQ(s.parallel().pipeline(), 4);
  EXPECT_EQ(s.parallel().virtual_stages(), 4);  // 80 layers / (4 stages × 5 layers)
  EXPECT_EQ(s.strategy().pipeline_schedule(), "interleaved-1f1b");
  EXPECT_TRUE(s.parallel().sequence_parallel());
  EXPECT_EQ(s.training().precision(), BF16);
  EXPECT_EQ(s.strategy().zero_stage(), 1);
  EXPECT_TRUE(s.strategy().overlap_tp_comm());
  EXPECT_EQ(s.strategy().recompute(), "selective");
  EXPECT_EQ(r.notes.size(), 2u);  // --lr, --train-iters
  // What it writes loads as a scenario.
  auto loaded = load_text(text_of(s), "i.textproto");
  ASSERT_TRUE(std::holds_alternative<LoadedScenario>(loaded))
      << std::get<std::vector<Diagnostic>>(loaded).front().str();
  EXPECT_EQ(std::get<LoadedScenario>(loaded).training.layout.data, 16);
}

// Megatron-LM's two gradient-dtype flags: --grad-reduce-in-bf16 wins over
// --accumulate-allreduce-grads-in-fp32 in either order, as arguments.py applies it after;
// without either the field stays unset (the loader's default is Megatron's).
TEST(ImportMegatron, GradientDtypeFlags) {
  const auto base = cluster("gpt3-175b", 1);
  const auto fp16_fp32 = import_megatron({"--fp16", "--accumulate-allreduce-grads-in-fp32"}, base);
  EXPECT_TRUE(fp16_fp32.errors.empty()) << fp16_fp32.errors.front();
  ASSERT_TRUE(fp16_fp32.scenario.training().has_accumulate_allreduce_grads_in_fp32());
  EXPECT_TRUE(fp16_fp32.scenario.training().accumulate_allreduce_grads_in_fp32());
  const std::string fp32 = "--accumulate-allreduce-grads-in-fp32", bf16 = "--grad-reduce-in-bf16";
  using Args = std::vector<std::string>;
  for (const Args& args : {Args{"--bf16", bf16, fp32}, Args{fp32, "--bf16", bf16}}) {
    const auto r = import_megatron(args, base);
    EXPECT_TRUE(r.errors.empty()) << r.errors.front();
    ASSERT_TRUE(r.scenario.training().has_accumulate_allreduce_grads_in_fp32());
    EXPECT_FALSE(r.scenario.training().accumulate_allreduce_grads_in_fp32());
  }
  EXPECT_FALSE(import_megatron({"--bf16"}, base).scenario.training().has_accumulate_allreduce_grads_in_fp32());
}

TEST(ImportMegatron, NemoOverridesMapToTheSameFields) {
  const auto r = import_megatron({"model.tensor_model_parallel_size=4", "model.micro_batch_size=2",
                                  "trainer.num_nodes=8", "trainer.precision=bf16-mixed"},
                                 cluster("gpt3-175b", 1));
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.scenario.parallel().tensor(), 4);
  EXPECT_EQ(r.scenario.training().micro_batch_size(), 2);
  EXPECT_EQ(r.scenario.cluster().nodes(), 8);
  EXPECT_EQ(r.scenario.training().precision(), BF16);
}

TEST(ImportMegatron, EveryArgumentItCannotMapIsAnError) {
  const auto r = import_megatron({"--swiglu", "--tensor-model-parallel-size", "x", "--recompute-method", "block",
                                  "model.moe_router=topk", "stray", "--num-experts", "8"},
                                 cluster("gpt3-175b", 1));
  ASSERT_EQ(r.errors.size(), 6u);
  EXPECT_EQ(r.errors[0], "model.moe_router=topk: no scenario field for the NeMo key model.moe_router");
  EXPECT_EQ(r.errors[1], "stray: not an argument (expected --name [value] or a NeMo key=value)");
  EXPECT_EQ(r.errors[2], "--swiglu: no scenario field maps --swiglu");
  EXPECT_EQ(r.errors[3], "--tensor-model-parallel-size: expected a positive integer, got \"x\"");
  EXPECT_NE(r.errors[4].find("only the uniform method maps"), std::string::npos);
  EXPECT_EQ(r.errors[5], "--num-experts: no scenario field maps --num-experts");
}

TEST(ImportDeepSpeed, MapsBatchesZeroPrecisionAndOptimizer) {
  const auto r = import_deepspeed(R"({"train_batch_size": 512, "train_micro_batch_size_per_gpu": 2,
      "bf16": {"enabled": true}, "zero_optimization": {"stage": 1, "overlap_comm": true},
      "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "steps_per_print": 10})",
                                  cluster("gpt-1.7b", 4));
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.scenario.training().global_batch_size(), 512);
  EXPECT_EQ(r.scenario.training().micro_batch_size(), 2);
  EXPECT_EQ(r.scenario.training().precision(), BF16);
  EXPECT_EQ(r.scenario.strategy().zero_stage(), 1);
  EXPECT_TRUE(r.scenario.strategy().overlap_grad_reduce());
  EXPECT_EQ(r.scenario.training().optimizer(), ADAM);
}

TEST(ImportDeepSpeed, EveryKeyItCannotMapIsAnError) {
  const auto r = import_deepspeed(R"({"zero_optimization": {"stage": 5, "offload_optimizer": {"device": "cpu"}},
      "train_batch_size": -1, "comms_logger": {}})",
                                  cluster("gpt-1.7b", 4));
  ASSERT_EQ(r.errors.size(), 4u);
  EXPECT_EQ(r.errors[0], "comms_logger: no scenario field maps it");
  EXPECT_EQ(r.errors[1], "train_batch_size: expected a positive integer, got -1");
  EXPECT_EQ(r.errors[2], "zero_optimization.offload_optimizer: no scenario field maps it");
  EXPECT_EQ(r.errors[3], "zero_optimization.stage: expected 0..3, got 5");
  EXPECT_EQ(import_deepspeed("{", cluster("gpt-1.7b", 4)).errors.size(), 1u);
}

}  // namespace
}  // namespace trainsim::scenarios
