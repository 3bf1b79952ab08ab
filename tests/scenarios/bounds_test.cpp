// Issue 12: values that are valid one by one and absurd together are errors naming the
// field, its line and the bound — never an abort, an overflow or a run that eats memory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "scenarios/loader.hpp"

namespace trainsim::scenarios {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// gpt-1.7b on 4 DGX A100 with one block replaced.
struct Text {
  std::string model = R"(model { preset: "gpt-1.7b" })";
  std::string training = "training { sequence_length: 2048 global_batch_size: 512 }";
  std::string cluster = R"(cluster { preset: "dgx-a100-80gb" nodes: 4 })";
  std::string parallel = "parallel { tensor: 1 pipeline: 1 }";
  std::string extra;
  std::vector<std::string> errors() const {
    const auto r = load_text(fmt::format("{}\n{}\n{}\n{}\n{}", model, training, cluster, parallel, extra),
                             "s.textproto");
    std::vector<std::string> out;
    if (const auto* d = std::get_if<std::vector<Diagnostic>>(&r))
      for (const auto& e : *d) out.push_back(e.str());
    else
      ADD_FAILURE() << "expected errors, the scenario loaded";
    return out;
  }
};

TEST(Bounds, HugeLayerCountsAreRefusedWithTheBound) {
  Text t;
  for (const char* n : {"1000000", "2147483647", "9223372036854775807"}) {
    t.model = fmt::format(R"(model {{ preset: "gpt-1.7b" num_layers: {} }})", n);
    EXPECT_THAT(t.errors(), Contains(fmt::format("s.textproto:1:28: error: model.num_layers: {} is too large: at most "
                                                 "10000 (far beyond any real run; larger values would overflow the "
                                                 "simulator's arithmetic)",
                                                 n)));
  }
}

TEST(Bounds, HugeHiddenSizeIsRefusedNotReportedAsAnAbsurdMfu) {
  Text t;
  t.model = R"(model { preset: "gpt-1.7b" hidden_size: 2147483648 num_attention_heads: 1 })";
  EXPECT_THAT(t.errors(), Contains("s.textproto:1:28: error: model.hidden_size: 2147483648 is too large: at most "
                                   "1048576 (far beyond any real run; larger values would overflow the simulator's "
                                   "arithmetic)"));
}

TEST(Bounds, HugeBatchesAndMicroBatchesAreRefused) {
  Text t;
  t.training = "training { sequence_length: 2048 global_batch_size: 1099511627776 micro_batch_size: 1099511627776 }";
  const auto e = t.errors();
  EXPECT_THAT(e, Contains(HasSubstr("training.global_batch_size: 1099511627776 is too large: at most 16777216")));
  EXPECT_THAT(e, Contains(HasSubstr("training.micro_batch_size: 1099511627776 is too large: at most 16777216")));
  // Each within its bound, the tokens of one micro-batch are not.
  t.training = "training { sequence_length: 16777216 global_batch_size: 16777216 micro_batch_size: 16777216 }";
  t.model = R"(model { preset: "gpt-1.7b" max_position_embeddings: 16777216 })";
  EXPECT_THAT(t.errors(), Contains("s.textproto:2:66: error: training.micro_batch_size: micro_batch_size × "
                                   "sequence_length = 16777216 × 16777216 = 281474976710656 tokens per micro-batch is "
                                   "too many: at most 67108864"));
}

TEST(Bounds, UnevenStageLayersCannotPassThroughAnOverflow) {
  Text t;
  t.parallel = "parallel { pipeline: 4 data: 8 first_stage_layers: 9223372036854775807 last_stage_layers: "
               "9223372036854775807 }";
  const auto e = t.errors();
  EXPECT_THAT(e, Contains(HasSubstr("parallel.first_stage_layers: 9223372036854775807 is too large: at most 10000")));
  EXPECT_THAT(e, Contains(HasSubstr("parallel.last_stage_layers: 9223372036854775807 is too large: at most 10000")));
}

TEST(Bounds, ClusterSizesAndRatesHaveBounds) {
  Text t;
  t.cluster = R"(cluster { gpu: "a100-80gb" gpus_per_node: 1024 nodes: 1048576 })";
  EXPECT_THAT(t.errors(), Contains(HasSubstr("cluster.nodes: nodes=1048576 × gpus_per_node=1024 GPUs is more than any "
                                             "cluster holds (at most 1048576 GPUs)")));
  t.cluster = R"(cluster { preset: "dgx-a100-80gb" nodes: 4 fabric { fat_tree { nic_gbps: 1e-9 } } })";
  EXPECT_THAT(t.errors(), Contains("s.textproto:3:64: error: cluster.fabric.fat_tree.nic_gbps: must be a number of "
                                   "Gb/s per GPU NIC from 0.001 to 1000000, got 1e-09"));
}

TEST(Bounds, PlanningFiguresStayFiniteAndNonZero) {
  Text t;
  t.extra = "planning { price_per_gpu_hour: 1e308 }";
  EXPECT_THAT(t.errors(), Contains("s.textproto:5:12: error: planning.price_per_gpu_hour: must be a positive price per "
                                   "GPU-hour of at most 1e+06, got 1e+308"));
  t.extra = "planning { train_tokens: 1e-300 }";
  EXPECT_THAT(t.errors(), Contains("s.textproto:5:12: error: planning.train_tokens: must be a number of tokens from one "
                                   "iteration's (global_batch_size × sequence_length = 1048576) to 1e+18, got 1e-300"));
}

TEST(Bounds, TheDefaultTrainTokensAreAtLeastOneIteration) {
  const auto r = load_text(R"(model { preset: "gpt-1.7b" max_position_embeddings: 16777216 }
training { sequence_length: 16777216 global_batch_size: 16777216 }
cluster { preset: "dgx-a100-80gb" nodes: 4 })",
                           "s.textproto");
  const auto* s = std::get_if<LoadedScenario>(&r);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->train_tokens, 16777216.0 * 16777216.0);
  EXPECT_THAT(s->notes, Contains("planning.train_tokens defaulted to one iteration's tokens, 281474976710656 (more "
                                 "than the usual 1e12)"));
}

TEST(Bounds, StateBeyondAnyGpuIsRefusedWithTheFigure) {
  Text t;
  // Unfused attention keeps a·s²·b scores per layer: 64 heads × (2^22)² tokens².
  t.model = R"(model { num_layers: 8 hidden_size: 4096 num_attention_heads: 64 vocab_size: 1024
                       max_position_embeddings: 4194304 })";
  t.training = "training { sequence_length: 4194304 global_batch_size: 32 attention: UNFUSED }";
  EXPECT_THAT(t.errors(), Contains(HasSubstr("training.sequence_length: the activations of a pipeline stage would take "
                                             "about ")));
}

// Every size at its bound at once: the loader's own arithmetic (products, the scale check
// that builds a layer and counts parameters) must stay in range — the sanitizer run checks
// that no signed overflow happens on the way — and the answer is an error, not garbage.
TEST(Bounds, EverySizeAtItsBoundLoadsOrFailsCleanly) {
  Text t;
  t.model = R"(model { family: LLAMA num_layers: 8192 hidden_size: 1048576 num_attention_heads: 65536
                       num_query_groups: 65536 ffn_hidden_size: 4194304 vocab_size: 16777216 })";
  t.training = "training { sequence_length: 4194304 global_batch_size: 16777216 micro_batch_size: 16 }";
  t.cluster = R"(cluster { gpu: "h100-sxm" gpus_per_node: 1024 nodes: 1024 fabric { fat_tree { nic_gbps: 400 } } })";
  t.parallel = "parallel { tensor: 1024 pipeline: 1024 }";
  EXPECT_THAT(t.errors(), Contains(HasSubstr("training.micro_batch_size: the activations of a pipeline stage would take "
                                             "about 4.63e+18 bytes per GPU, more than 9.01e+15")));
  // On one GPU the model states alone are beyond any memory.
  t.model = R"(model { family: LLAMA num_layers: 10000 hidden_size: 1048576 num_attention_heads: 65536
                       num_query_groups: 65536 ffn_hidden_size: 4194304 vocab_size: 16777216 })";
  t.training = "training { sequence_length: 1 global_batch_size: 1 }";
  t.cluster = R"(cluster { gpu: "h100-sxm" gpus_per_node: 1 nodes: 1 fabric { fat_tree { nic_gbps: 400 } } })";
  t.parallel = "";
  EXPECT_THAT(t.errors(), Contains(HasSubstr("model.hidden_size: the model states would take about 3.52e+18 bytes per "
                                             "GPU")));
}

TEST(Bounds, AScenarioThatIsADeviceIsRefused) {
  const auto link = std::filesystem::temp_directory_path() / "trainsim-bounds-zero.json";
  std::filesystem::remove(link);
  std::filesystem::create_symlink("/dev/zero", link);
  const auto r = load_file(link.string());
  std::filesystem::remove(link);
  const auto* d = std::get_if<std::vector<Diagnostic>>(&r);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ(d->front().str(), link.string() + ": error: cannot read file: not a regular file (a device, pipe or "
                                              "socket is not read: /dev/zero, for one, never ends)");
}

}  // namespace
}  // namespace trainsim::scenarios
