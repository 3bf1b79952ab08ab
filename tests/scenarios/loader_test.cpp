#include "scenarios/loader.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "hardware/gpu_profile.hpp"
#include "hardware/node_presets.hpp"
#include "models/model.hpp"
#include "models/presets.hpp"
#include "scenarios/memory_bound.hpp"
#include "strategies/registry.hpp"

namespace trainsim::scenarios {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::string source_dir() {
  const char* dir = std::getenv("TRAINSIM_SOURCE_DIR");
  return dir != nullptr ? dir : TRAINSIM_TEST_SOURCE_DIR;
}
std::string example(const std::string& name) { return source_dir() + "/scenarios/examples/" + name; }

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string joined(const std::vector<std::string>& names) { return fmt::format("{}", fmt::join(names, ", ")); }

std::string all(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) out += d.str() + "\n";
  return out;
}

// The diagnostics of a load that must fail.
std::vector<Diagnostic> errors(const LoadResult& result) {
  if (const auto* d = std::get_if<std::vector<Diagnostic>>(&result)) return *d;
  ADD_FAILURE() << "expected diagnostics, the scenario loaded";
  return {};
}

// The scenario of a load that must succeed.
LoadedScenario loaded(const LoadResult& result) {
  if (const auto* s = std::get_if<LoadedScenario>(&result)) return *s;
  ADD_FAILURE() << "expected a scenario, got:\n" << all(std::get<std::vector<Diagnostic>>(result));
  return {};
}

std::vector<std::string> lines(const std::vector<Diagnostic>& diagnostics) {
  std::vector<std::string> out;
  for (const auto& d : diagnostics) out.push_back(d.str());
  return out;
}

// A valid scenario of one block per line, so that expected positions are line = block
// (model 1, training 2, cluster 3, parallel 4, strategy 5) and column = where the field's
// name starts. Tests replace a block to break one rule.
struct Text {
  std::string model = R"(model { preset: "gpt-1.7b" })";
  std::string training = "training { sequence_length: 2048 global_batch_size: 512 }";
  std::string cluster = R"(cluster { preset: "dgx-a100-80gb" nodes: 4 })";
  std::string parallel = "parallel { tensor: 1 pipeline: 1 }";
  std::string strategy = R"(strategy { recompute: "full" })";
  std::string extra;  // more top-level blocks, after the others

  std::string str() const {
    return fmt::format("{}\n{}\n{}\n{}\n{}\n{}", model, training, cluster, parallel, strategy, extra);
  }
  LoadResult load() const { return load_text(str(), "s.textproto"); }
};

// The same scenario in the JSON mapping; blocks are JSON object bodies ("" leaves one out).
struct Json {
  std::string model = R"("preset": "gpt-1.7b")";
  std::string training = R"("sequenceLength": 2048, "globalBatchSize": 512)";
  std::string cluster = R"("preset": "dgx-a100-80gb", "nodes": 4)";
  std::string parallel = R"("tensor": 1, "pipeline": 1)";
  std::string strategy = R"("recompute": "full")";

  std::string str() const {
    std::vector<std::string> parts;
    auto add = [&](const char* name, const std::string& body) {
      if (!body.empty()) parts.push_back(fmt::format("\"{}\": {{{}}}", name, body));
    };
    add("model", model);
    add("training", training);
    add("cluster", cluster);
    add("parallel", parallel);
    add("strategy", strategy);
    return "{" + joined(parts) + "}";
  }
  LoadResult load() const { return load_text(str(), "s.json"); }
};

// ---------------------------------------------------------------------------------------
// The shipped examples.

TEST(Examples, Gpt3OnA100LoadsWithTheLayoutOfThePaper) {
  LoadedScenario s = loaded(load_file(example("gpt3-175b-a100-1024.textproto")));
  const auto& t = s.training;
  EXPECT_EQ(t.model.name, "gpt3-175b");
  EXPECT_EQ(t.model.family, models::Family::GPT);
  EXPECT_EQ(t.model.layers, 96);
  EXPECT_EQ(t.model.hidden, 12288);
  EXPECT_EQ(t.model.heads, 96);
  EXPECT_EQ(t.sequence, 2048);
  EXPECT_EQ(t.global_batch, 1536);
  EXPECT_EQ(t.micro_batch, 1);
  EXPECT_EQ(t.dtype, hardware::Dtype::FP16);
  EXPECT_EQ(t.layout.tensor, 8);
  EXPECT_EQ(t.layout.pipeline, 16);
  EXPECT_EQ(t.layout.data, 8);
  EXPECT_EQ(t.layout.gpus(), 1024);
  EXPECT_EQ(t.micro_batches(), 192);
  EXPECT_EQ(t.pipeline_schedule, "1f1b");
  EXPECT_EQ(t.recompute, strategies::Recompute::FULL);
  EXPECT_EQ(t.zero_stage, 0);
  EXPECT_EQ(s.cluster.gpu, "a100-80gb");
  EXPECT_EQ(s.cluster.nodes, 128);
  EXPECT_EQ(s.cluster.gpus_per_node, 8);
  EXPECT_EQ(s.cluster.nic_gbps, 200);
  EXPECT_EQ(s.cluster.oversubscription, 1.0);
  EXPECT_EQ(s.gpu.name(), "a100-80gb");
  EXPECT_THAT(s.notes, Contains("parallel.data derived as 8 = 1024 / (8 × 16)"));
  EXPECT_EQ(s.proto.name(), "gpt3-175b-a100-1024");
}

void expect_same(const strategies::TrainingSpec& a, const strategies::TrainingSpec& b) {
  EXPECT_EQ(a.model.name, b.model.name);
  EXPECT_EQ(a.model.family, b.model.family);
  EXPECT_EQ(a.model.layers, b.model.layers);
  EXPECT_EQ(a.model.hidden, b.model.hidden);
  EXPECT_EQ(a.model.heads, b.model.heads);
  EXPECT_EQ(a.model.kv_heads, b.model.kv_heads);
  EXPECT_EQ(a.model.ffn_hidden, b.model.ffn_hidden);
  EXPECT_EQ(a.model.vocab, b.model.vocab);
  EXPECT_EQ(a.model.max_positions, b.model.max_positions);
  EXPECT_EQ(a.model.tied_embedding, b.model.tied_embedding);
  EXPECT_EQ(a.sequence, b.sequence);
  EXPECT_EQ(a.global_batch, b.global_batch);
  EXPECT_EQ(a.micro_batch, b.micro_batch);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.layout.tensor, b.layout.tensor);
  EXPECT_EQ(a.layout.pipeline, b.layout.pipeline);
  EXPECT_EQ(a.layout.data, b.layout.data);
  EXPECT_EQ(a.layout.sequence_parallel, b.layout.sequence_parallel);
  EXPECT_EQ(a.layout.virtual_stages, b.layout.virtual_stages);
  EXPECT_EQ(a.pipeline_schedule, b.pipeline_schedule);
  EXPECT_EQ(a.zero_stage, b.zero_stage);
  EXPECT_EQ(a.recompute, b.recompute);
  EXPECT_EQ(a.overlap_grad_reduce, b.overlap_grad_reduce);
  EXPECT_EQ(a.overlap_param_gather, b.overlap_param_gather);
  EXPECT_EQ(a.overlap_tp_comm, b.overlap_tp_comm);
}

void expect_same(const hardware::ClusterSpec& a, const hardware::ClusterSpec& b) {
  EXPECT_EQ(a.gpu, b.gpu);
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.gpus_per_node, b.gpus_per_node);
  EXPECT_EQ(a.nic_gbps, b.nic_gbps);
  EXPECT_EQ(a.oversubscription, b.oversubscription);
  EXPECT_EQ(a.nodes_per_leaf, b.nodes_per_leaf);
}

TEST(Examples, JsonAndTextFormatOfGpt3AreTheSameScenario) {
  LoadedScenario text = loaded(load_file(example("gpt3-175b-a100-1024.textproto")));
  LoadedScenario json = loaded(load_file(example("gpt3-175b-a100-1024.json")));
  expect_same(text.training, json.training);
  expect_same(text.cluster, json.cluster);
  EXPECT_EQ(text.gpu.SerializeAsString(), json.gpu.SerializeAsString());
  EXPECT_EQ(text.proto.SerializeAsString(), json.proto.SerializeAsString());
  EXPECT_EQ(text.notes, json.notes);
}

TEST(Examples, Gpt17bIsPureDataParallelOn32Gpus) {
  LoadedScenario s = loaded(load_file(example("gpt-1.7b-a100-32.textproto")));
  EXPECT_EQ(s.training.model.name, "gpt-1.7b");
  EXPECT_EQ(s.training.model.layers, 24);
  EXPECT_EQ(s.training.model.hidden, 2304);
  EXPECT_EQ(s.training.layout.tensor, 1);
  EXPECT_EQ(s.training.layout.pipeline, 1);
  EXPECT_EQ(s.training.layout.data, 32);
  EXPECT_EQ(s.training.global_batch, 512);
  EXPECT_EQ(s.training.dtype, hardware::Dtype::FP16);
  EXPECT_EQ(s.cluster.nodes * s.cluster.gpus_per_node, 32);
  EXPECT_THAT(s.notes, Contains("cluster.fabric.fat_tree.nic_gbps defaulted to 200 (the NIC rate of dgx-a100-80gb)"));
}

TEST(Examples, Llama3_70bOnH100ReadsItsModelFromTheHfConfig) {
  LoadedScenario s = loaded(load_file(example("llama3-70b-h100-512.textproto")));
  const auto& t = s.training;
  EXPECT_EQ(t.model.name, "llama3-70b");  // the config's folder
  EXPECT_EQ(t.model.family, models::Family::LLAMA);
  EXPECT_EQ(t.model.layers, 80);
  EXPECT_EQ(t.model.hidden, 8192);
  EXPECT_EQ(t.model.heads, 64);
  EXPECT_EQ(t.model.kv_heads, 8);
  EXPECT_EQ(t.model.ffn_hidden, 28672);
  EXPECT_EQ(t.model.vocab, 128256);
  EXPECT_EQ(t.model.max_positions, 0);
  EXPECT_FALSE(t.model.tied_embedding);
  EXPECT_EQ(models::total_params(t.model), 70'553'706'496);  // formulas.md, Llama-3-70B
  EXPECT_EQ(t.sequence, 8192);
  EXPECT_EQ(t.global_batch, 1024);
  EXPECT_EQ(t.micro_batch, 1);
  EXPECT_EQ(t.dtype, hardware::Dtype::BF16);
  EXPECT_EQ(t.layout.tensor, 8);
  EXPECT_EQ(t.layout.pipeline, 4);
  EXPECT_EQ(t.layout.data, 16);
  EXPECT_TRUE(t.layout.sequence_parallel);
  EXPECT_EQ(t.micro_batches(), 64);
  EXPECT_EQ(t.pipeline_schedule, "interleaved-1f1b");
  EXPECT_EQ(t.layout.virtual_stages, 5);
  EXPECT_EQ(t.recompute, strategies::Recompute::SELECTIVE);
  EXPECT_EQ(t.zero_stage, 1);
  EXPECT_TRUE(t.overlap_grad_reduce && t.overlap_param_gather && t.overlap_tp_comm);
  EXPECT_DOUBLE_EQ(s.train_tokens, 15e12);
  EXPECT_DOUBLE_EQ(s.price_per_gpu_hour, 2.5);
  EXPECT_EQ(s.cluster.gpu, "h100-sxm");
  EXPECT_EQ(s.cluster.nodes, 64);
  EXPECT_EQ(s.cluster.nic_gbps, 400);
  EXPECT_THAT(s.notes, Contains("model.hf_config: llama3-70b read from " +
                                example("hf/llama3-70b/config.json")));
  // The same shape as the preset, which was typed in from the same config.json.
  const models::ModelConfig preset = *models::find_preset("llama3-70b");
  EXPECT_EQ(models::total_params(preset), models::total_params(t.model));
}

TEST(Examples, EveryShippedExampleLoadsCleanly) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(source_dir() + "/scenarios/examples")) {
    // Folders hold what scenarios refer to (hf/: Hugging Face config.json files), not scenarios.
    if (entry.is_directory()) continue;
    SCOPED_TRACE(entry.path().string());
    loaded(load_file(entry.path().string()));
    ++count;
  }
  EXPECT_GE(count, 3);
}

// training.gradient_accumulation_fusion: Megatron-LM's default (true, noted) unless written.
TEST(RuleTraining, GradientAccumulationFusionDefaultsToMegatronsAndCanBeTurnedOff) {
  Text text;
  const LoadedScenario fused = loaded(text.load());
  EXPECT_TRUE(fused.training.gradient_accumulation_fusion);
  EXPECT_THAT(fused.notes, Contains(HasSubstr("training.gradient_accumulation_fusion defaulted to true")));
  text.training = "training { sequence_length: 2048 global_batch_size: 512 gradient_accumulation_fusion: false }";
  const LoadedScenario unfused = loaded(text.load());
  EXPECT_FALSE(unfused.training.gradient_accumulation_fusion);
  EXPECT_THAT(unfused.notes, Not(Contains(HasSubstr("gradient_accumulation_fusion"))));
  Json json;
  json.training = R"("sequenceLength": 2048, "globalBatchSize": 512, "gradientAccumulationFusion": false)";
  EXPECT_FALSE(loaded(json.load()).training.gradient_accumulation_fusion);
}

// `trainsim search` loads its scenario with the layout fields set aside: the example
// writes none, and a file that writes a layout no run could take (a batch of 100 that data
// 32 does not divide, tensor 5, an unknown schedule, ZeRO stage 9) loads, in either
// format, to the stand-in layout and names what it set aside. What the search does not
// choose is checked as for a run: a rule there still fails, at its line.
TEST(SearchedLayout, TheLayoutFieldsAreSetAsideAndTheRestIsChecked) {
  const LoadedScenario example_search =
      loaded(load_file(example("search/gpt3-175b-h100-4096.textproto"), LayoutFields::SEARCHED));
  EXPECT_TRUE(example_search.set_aside.empty()) << joined(example_search.set_aside);
  EXPECT_EQ(example_search.training.layout.data, 4096);

  Text text;
  text.training = "training { sequence_length: 2048 global_batch_size: 100 micro_batch_size: 3 }";
  text.parallel = "parallel { tensor: 5 pipeline: 2 virtual_stages: 4 rank_order: \"tp-cp-ep-pp-dp\" }";
  text.strategy = R"(strategy { pipeline_schedule: "zigzag" zero_stage: 9 overlap_tp_comm: true passes: "x" })";
  EXPECT_FALSE(std::holds_alternative<LoadedScenario>(text.load()));
  Json json;
  json.training = R"("sequenceLength": 2048, "globalBatchSize": 100, "microBatchSize": 3)";
  json.parallel = R"("tensor": 5, "pipeline": 2, "virtualStages": 4, "rankOrder": "tp-cp-ep-pp-dp")";
  json.strategy = R"("pipelineSchedule": "zigzag", "zeroStage": 9, "overlapTpComm": true, "passes": "x")";
  for (const LoadResult& result : {load_text(text.str(), "s.textproto", LayoutFields::SEARCHED),
                                   load_text(json.str(), "s.json", LayoutFields::SEARCHED)}) {
    const LoadedScenario s = loaded(result);
    EXPECT_EQ(joined(s.set_aside),
              "parallel.tensor, parallel.pipeline, parallel.virtual_stages, training.micro_batch_size, "
              "strategy.pipeline_schedule, strategy.zero_stage, strategy.overlap_tp_comm, strategy.passes");
    const strategies::TrainingSpec& t = s.training;
    EXPECT_EQ(t.layout.tensor, 1);
    EXPECT_EQ(t.layout.pipeline, 1);
    EXPECT_EQ(t.layout.data, 32);
    EXPECT_EQ(t.layout.virtual_stages, 1);
    EXPECT_EQ(t.micro_batch, 1);
    EXPECT_EQ(t.layout.rank_order, "tp-cp-ep-pp-dp");  // not searched: kept
    EXPECT_EQ(t.pipeline_schedule, "1f1b");
    EXPECT_EQ(t.zero_stage, 0);
    EXPECT_FALSE(t.overlap_tp_comm);
    EXPECT_EQ(t.global_batch, 100);
    EXPECT_EQ(s.cluster.nodes, 4);
  }

  text.parallel = "parallel { tensor: 5 rank_order: \"tp-xx\" }";
  const auto diagnostics = errors(load_text(text.str(), "s.textproto", LayoutFields::SEARCHED));
  ASSERT_EQ(diagnostics.size(), 1u) << all(diagnostics);
  EXPECT_THAT(diagnostics[0].str(), StartsWith("s.textproto:4:22: error: parallel.rank_order: "));
}

TEST(Examples, ExampleRoundTripsThroughTheFourTextExtensions) {
  std::string text = read(example("gpt-1.7b-a100-32.textproto"));
  for (const char* name : {"a.textproto", "a.txtpb", "a.pbtxt", "a.textpb"}) {
    SCOPED_TRACE(name);
    loaded(load_text(text, name));
  }
}

// ---------------------------------------------------------------------------------------
// Files and formats.

TEST(Files, MissingFileNamesTheFileAndTheOsReason) {
  auto d = errors(load_file("/nonexistent/dir/s.textproto"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "/nonexistent/dir/s.textproto: error: cannot read file: No such file or directory");
}

TEST(Files, UnreadableFileNamesTheFileAndTheOsReason) {
  // Tests may run as root, where chmod 000 does not stop a read: a directory always fails.
  auto dir = std::filesystem::temp_directory_path() / fmt::format("trainsim-scn-{}.textproto", getpid());
  std::filesystem::create_directories(dir);
  auto d = errors(load_file(dir.string()));
  std::filesystem::remove(dir);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), dir.string() + ": error: cannot read file: Is a directory");
}

TEST(Files, PermissionDeniedWhenNotRoot) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  auto path = std::filesystem::temp_directory_path() / fmt::format("trainsim-scn-{}.json", getpid());
  { std::ofstream(path) << "{}"; }
  std::filesystem::permissions(path, std::filesystem::perms::none);
  auto d = errors(load_file(path.string()));
  std::filesystem::remove(path);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), path.string() + ": error: cannot read file: Permission denied");
}

TEST(Files, UnknownExtensionListsTheValidOnes) {
  const std::string expected =
      "s.yaml: error: unknown scenario file extension (valid: .textproto, .txtpb, .pbtxt, .textpb, .json)";
  auto d = errors(load_file("s.yaml"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), expected);
  d = errors(load_text(Text().str(), "s.yaml"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), expected);
}

TEST(Files, DiagnosticStrLeavesOutUnknownPositionAndEmptyField) {
  EXPECT_EQ((Diagnostic{"f", 3, 7, "a.b", "bad"}).str(), "f:3:7: error: a.b: bad");
  EXPECT_EQ((Diagnostic{"f", 3, 0, "a.b", "bad"}).str(), "f:3: error: a.b: bad");
  EXPECT_EQ((Diagnostic{"f", 0, 0, "a.b", "bad"}).str(), "f: error: a.b: bad");
  EXPECT_EQ((Diagnostic{"f", 0, 0, "", "bad"}).str(), "f: error: bad");
}

// ---------------------------------------------------------------------------------------
// Parse errors: syntax, unknown fields, unknown enum values.

TEST(TextSyntax, SyntaxErrorHasFileLineAndColumn) {
  auto d = errors(load_text("model {\n  preset: \"gpt-1.7b\"\n  num_layers: 12 12\n}\n", "s.textproto"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].line, 3);
  EXPECT_EQ(d[0].column, 18);
  EXPECT_THAT(d[0].str(), HasSubstr("s.textproto:3:18: error: Expected identifier"));
}

TEST(TextSyntax, TypeMismatchHasPosition) {
  auto d = errors(load_text("training { sequence_length: \"long\" }", "s.textproto"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "s.textproto:1:29: error: Expected integer, got: \"long\"");
}

TEST(TextSyntax, UnknownFieldsAreAllReportedWithTheValidFields) {
  Text t;
  t.model = R"(model { preset: "gpt-1.7b" num_layer: 12 })";
  t.strategy = R"(strategy { recompute: "full" zero: 1 })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 2u) << all(d);
  EXPECT_EQ(d[0].str(),
            "s.textproto:1:28: error: model.num_layer: unknown field \"num_layer\" in model; did you mean "
            "\"num_layers\"? (valid: preset, hf_config, family, num_layers, hidden_size, num_attention_heads, "
            "num_query_groups, ffn_hidden_size, vocab_size, max_position_embeddings)");
  // (a recompute policy's parameter message, recompute_<policy>, may follow passes)
  EXPECT_THAT(d[1].str(),
              StartsWith("s.textproto:5:30: error: strategy.zero: unknown field \"zero\" in strategy; did you mean "
                         "\"zero_stage\"? (valid: pipeline_schedule, zero_stage, recompute, overlap_grad_reduce, "
                         "overlap_param_gather, overlap_tp_comm, passes"));
}

TEST(TextSyntax, ColumnsCountTabsAsProtobufDoes) {
  // A tab advances to the next multiple of 8, as protobuf's tokenizer and GCC count.
  auto d = errors(load_text("model {\n\tpreset: \"gpt-1.7b\"\tnum_layer: 12\n}\n", "s.textproto"));
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].line, 2);
  EXPECT_EQ(d[0].column, 33);
  d = errors(load_text("{\"model\": {\n\t\"preset\": \"gpt-1.7b\",\n\t\"numLayers\" 3}}", "s.json"));
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json:3:21: error: invalid JSON: Expected : between key:value pair.");
}

TEST(TextSyntax, UnknownTopLevelAndNestedFields) {
  auto d = errors(load_text("cluster { fabric { fat_tre { nic_gbps: 100 } } }\nvariants { axis: 1 }\n", "s.textproto"));
  ASSERT_EQ(d.size(), 2u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:1:20: error: cluster.fabric.fat_tre: unknown field \"fat_tre\" in "
                        "cluster.fabric; did you mean \"fat_tree\"? (valid: fat_tree, kind, levels, leaves_per_pod, "
                        "link_fault)");
  EXPECT_EQ(d[1].str(), "s.textproto:2:1: error: variants: unknown field \"variants\" in the scenario (valid: name, "
                        "model, training, cluster, parallel, strategy, planning, sweep)");
}

TEST(TextSyntax, UnknownEnumValueListsTheValidValues) {
  Text t;
  t.model = R"(model { preset: "gpt-1.7b" family: GPTX })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "s.textproto:1:36: error: model.family: unknown value \"GPTX\"; did you mean GPT? "
                        "(valid: GPT, LLAMA)");
  t = Text();
  t.training = "training { sequence_length: 2048 global_batch_size: 512 precision: FP4 }";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "s.textproto:2:68: error: training.precision: unknown value \"FP4\"; did you mean FP8? "
                        "(valid: BF16, FP16, FP8)");
}

TEST(TextSyntax, NumericEnumValueOutsideTheSchemaIsAnError) {
  Text t;
  t.training = "training { sequence_length: 2048 global_batch_size: 512 precision: 7 optimizer: 9 }";
  auto d = errors(t.load());
  EXPECT_THAT(lines(d), Contains("s.textproto:2:57: error: training.precision: unknown value 7 (valid: BF16, FP16, FP8)"));
  EXPECT_THAT(lines(d), Contains("s.textproto:2:70: error: training.optimizer: unknown value 9 (valid: ADAM, SGD)"));
}

TEST(TextSyntax, FieldGivenTwice) {
  auto d = errors(load_text("model { num_layers: 2 num_layers: 3 }", "s.textproto"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "s.textproto:1:23: error: model.num_layers: given more than once (it is not a list: write it once)");
}

TEST(JsonSyntax, UnknownFieldNamesThePathAndTheValidFields) {
  Json j;
  j.model = R"("preset": "gpt-1.7b", "numLayer": 12)";
  auto d = errors(j.load());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "s.json: error: model.numLayer: unknown field \"numLayer\" in model; did you mean "
                        "\"numLayers\"? (valid: preset, hf_config, family, num_layers, hidden_size, "
                        "num_attention_heads, num_query_groups, ffn_hidden_size, vocab_size, max_position_embeddings)");
  d = errors(load_text(R"({"cluster": {"fabric": {"fatTree": {"nic": 1}}}})", "s.json"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].field, "cluster.fabric.fat_tree.nic");
  EXPECT_THAT(d[0].message, HasSubstr("(valid: nic_gbps, oversubscription, nodes_per_leaf)"));
  d = errors(load_text(R"({"variants": {}})", "s.json"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "s.json: error: variants: unknown field \"variants\" in the scenario (valid: name, model, "
                        "training, cluster, parallel, strategy, planning, sweep)");
}

TEST(JsonSyntax, UnknownEnumValueListsTheValidValues) {
  Json j;
  j.model = R"("preset": "gpt-1.7b", "family": "LAMA")";
  auto d = errors(j.load());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "s.json: error: model.family: unknown value \"LAMA\"; did you mean LLAMA? (valid: GPT, LLAMA)");
  j = Json();
  j.training = R"("sequenceLength": 2048, "globalBatchSize": 512, "precision": 7)";
  d = errors(j.load());
  EXPECT_THAT(lines(d), Contains("s.json: error: training.precision: unknown value 7 (valid: BF16, FP16, FP8)"));
}

TEST(JsonSyntax, WrongTypeSaysWhatIsExpected) {
  auto d = errors(load_text(R"({"training": {"sequenceLength": "long"}})", "s.json"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "s.json: error: training.sequence_length: invalid value \"long\": expected an integer");
  d = errors(load_text(R"({"cluster": 4})", "s.json"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "s.json: error: cluster: invalid value 4: expected an object { … } with fields preset, "
                        "nodes, gpu, gpus_per_node, fabric, profile");
}

TEST(JsonSyntax, SyntaxErrorIsPlacedFromTheQuotedSnippet) {
  auto d = errors(load_text("{\"model\": {\n  \"preset\": \"gpt-1.7b\",\n  \"numLayers\" 3}}", "s.json"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "s.json:3:15: error: invalid JSON: Expected : between key:value pair.");
  d = errors(load_text("", "s.json"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_THAT(d[0].str(), HasSubstr("s.json"));
  EXPECT_THAT(d[0].message, HasSubstr("invalid JSON"));
}

TEST(JsonSyntax, FieldUnderBothItsNamesIsGivenTwice) {
  Json j;
  j.model = R"("preset": "gpt-1.7b", "numLayers": 12, "num_layers": 12)";
  auto d = errors(j.load());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), "s.json: error: model.num_layers: given more than once (its proto and JSON names are the "
                        "same field: write it once)");
}

// ---------------------------------------------------------------------------------------
// Rule 1: the model.

TEST(RuleModel, UnknownPresetListsTheKnownOnes) {
  Text t;
  t.model = R"(model { preset: "gpt-1.8b" })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), fmt::format("s.textproto:1:9: error: model.preset: unknown model preset \"gpt-1.8b\"; did you "
                                    "mean \"gpt-1.7b\"? (known: {})",
                                    joined(models::preset_names())));
  Json j;
  j.model = R"("preset": "gpt-1.8b")";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].str(), fmt::format("s.json: error: model.preset: unknown model preset \"gpt-1.8b\"; did you mean "
                                    "\"gpt-1.7b\"? (known: {})",
                                    joined(models::preset_names())));
}

TEST(RuleModel, MissingDimensionsWithoutPresetAreEachNamed) {
  Text t;
  t.model = "model { num_layers: 24 hidden_size: 2304 }";
  auto d = errors(t.load());
  const std::string need = fmt::format(
      "missing: without a preset the model needs num_layers, hidden_size, num_attention_heads and vocab_size (or "
      "name a preset: {})",
      joined(models::preset_names()));
  ASSERT_EQ(d.size(), 2u) << all(d);
  // A missing field points at its enclosing message.
  EXPECT_EQ(d[0].str(), "s.textproto:1:1: error: model.num_attention_heads: " + need);
  EXPECT_EQ(d[1].str(), "s.textproto:1:1: error: model.vocab_size: " + need);

  Json j;
  j.model = R"("numLayers": 24, "hiddenSize": 2304)";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 2u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json: error: model.num_attention_heads: " + need);
}

TEST(RuleModel, MissingModelBlockIsOneErrorWithoutPosition) {
  Text t;
  t.model = "";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.textproto: error: model: missing: without a preset the model needs"));
}

TEST(RuleModel, ExplicitFieldsOverrideThePreset) {
  Text t;
  t.model = R"(model { preset: "gpt-1.7b" num_layers: 12 vocab_size: 50304 })";
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(s.training.model.name, "gpt-1.7b");
  EXPECT_EQ(s.training.model.layers, 12);
  EXPECT_EQ(s.training.model.vocab, 50304);
  EXPECT_EQ(s.training.model.hidden, 2304);
  EXPECT_EQ(s.training.model.ffn_hidden, 4 * 2304);
}

TEST(RuleModel, GptFfnFollowsAnOverriddenHiddenSize) {
  Text t;
  t.model = R"(model { preset: "gpt-1.7b" hidden_size: 2048 num_attention_heads: 16 })";
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(s.training.model.ffn_hidden, 8192);
  EXPECT_EQ(s.training.model.kv_heads, 16);
  EXPECT_THAT(s.notes, Contains("model.ffn_hidden_size defaulted to 4 × hidden_size = 8192"));
  EXPECT_THAT(s.notes, Contains("model.num_query_groups defaulted to num_attention_heads = 16"));
}

TEST(RuleModel, CustomGptGetsItsDefaultsNoted) {
  Text t;
  t.model = "model { num_layers: 24 hidden_size: 2048 num_attention_heads: 16 vocab_size: 51200 }";
  LoadedScenario s = loaded(t.load());
  const auto& m = s.training.model;
  EXPECT_EQ(m.name, "custom");
  EXPECT_EQ(m.family, models::Family::GPT);
  EXPECT_EQ(m.ffn_hidden, 8192);
  EXPECT_EQ(m.kv_heads, 16);
  EXPECT_EQ(m.max_positions, 2048);
  EXPECT_TRUE(m.tied_embedding);
  EXPECT_THAT(s.notes, Contains("model.family defaulted to GPT"));
  EXPECT_THAT(s.notes, Contains("model.ffn_hidden_size defaulted to 4 × hidden_size = 8192"));
  EXPECT_THAT(s.notes, Contains("model.max_position_embeddings defaulted to training.sequence_length = 2048"));
}

TEST(RuleModel, LlamaIsUntiedWithoutPositionTableAndNeedsFfn) {
  Text t;
  t.model = "model { family: LLAMA num_layers: 32 hidden_size: 4096 num_attention_heads: 32 num_query_groups: 8 "
            "vocab_size: 128256 }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:1:1: error: model.ffn_hidden_size: missing: LLAMA models need it (SwiGLU's "
                        "inner size is no fixed multiple of hidden_size; e.g. 28672 for Llama-3-70B)");

  t.model = "model { family: LLAMA num_layers: 32 hidden_size: 4096 num_attention_heads: 32 num_query_groups: 8 "
            "ffn_hidden_size: 14336 vocab_size: 128256 }";
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(s.training.model.family, models::Family::LLAMA);
  EXPECT_FALSE(s.training.model.tied_embedding);
  EXPECT_EQ(s.training.model.max_positions, 0);
  EXPECT_EQ(s.training.model.ffn_hidden, 14336);

  Json j;
  j.model = R"("family": "LLAMA", "numLayers": 32, "hiddenSize": 4096, "numAttentionHeads": 32, "vocabSize": 1000)";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.json: error: model.ffn_hidden_size: missing: LLAMA models need it"));
}

TEST(RuleModel, LlamaPresetLoads) {
  Text t;
  t.model = R"(model { preset: "llama3-8b" })";
  t.training = "training { sequence_length: 8192 global_batch_size: 512 }";
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(s.training.model.family, models::Family::LLAMA);
  EXPECT_EQ(s.training.model.kv_heads, 8);
  EXPECT_FALSE(s.training.model.tied_embedding);
  EXPECT_EQ(s.training.model.max_positions, 0);
}

TEST(RuleModel, HiddenSizeMustSplitEvenlyOverHeads) {
  Text t;
  t.model = "model { num_layers: 24 hidden_size: 1000 num_attention_heads: 16 vocab_size: 51200 }";
  t.parallel = "parallel { }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:1:42: error: model.num_attention_heads: num_attention_heads=16 does not divide "
                        "hidden_size=1000 (each head takes an equal share of hidden_size; valid "
                        "num_attention_heads: 1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 125, 200, 250, 500, 1000)");
  Json j;
  j.model = R"("numLayers": 24, "hiddenSize": 1000, "numAttentionHeads": 16, "vocabSize": 51200)";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.json: error: model.num_attention_heads: num_attention_heads=16 does not divide "
                                    "hidden_size=1000"));
}

TEST(RuleModel, QueryGroupsMustDivideHeads) {
  Text t;
  t.model = R"(model { preset: "gpt-1.7b" num_query_groups: 5 })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:1:28: error: model.num_query_groups: num_query_groups=5 does not divide "
                        "num_attention_heads=24 (valid: 1, 2, 3, 4, 6, 8, 12, 24)");
  Json j;
  j.model = R"("preset": "gpt-1.7b", "numQueryGroups": 5)";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json: error: model.num_query_groups: num_query_groups=5 does not divide "
                        "num_attention_heads=24 (valid: 1, 2, 3, 4, 6, 8, 12, 24)");
}

// ---------------------------------------------------------------------------------------
// Rule 1b: the model from a Hugging Face config.json (model.hf_config).

// A folder of its own under the temp directory, removed with everything in it.
class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / fmt::format("trainsim-hf-{}-{}", getpid(), count_++)) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Writes `text` to `name` (folders created), returning its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
    return file.string();
  }
  std::string str() const { return path_.string(); }

 private:
  static inline int count_ = 0;
  std::filesystem::path path_;
};

// Changes the working directory for one scope.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const std::string& dir) : previous_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~WorkingDirectory() { std::filesystem::current_path(previous_); }
  WorkingDirectory(const WorkingDirectory&) = delete;
  WorkingDirectory& operator=(const WorkingDirectory&) = delete;

 private:
  std::filesystem::path previous_;
};

const std::string SMALL_LLAMA = R"({"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 256,
  "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 688, "vocab_size": 32000})";

TEST(RuleHfConfig, AbsolutePathLoadsAndNamesTheModelByItsFolder) {
  Text t;
  t.model = fmt::format(R"(model {{ hf_config: "{}" }})", example("hf/llama3-70b/config.json"));
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(s.training.model.name, "llama3-70b");
  EXPECT_EQ(s.training.model.family, models::Family::LLAMA);
  EXPECT_EQ(s.training.model.kv_heads, 8);
  EXPECT_EQ(models::total_params(s.training.model), 70'553'706'496);
  Json j;
  j.model = fmt::format(R"("hfConfig": "{}")", example("hf/llama3-70b/config.json"));
  EXPECT_EQ(loaded(j.load()).training.model.layers, 80);
}

TEST(RuleHfConfig, RelativePathIsReadFromTheScenarioFolder) {
  TempDir dir;
  dir.write("models/small/config.json", SMALL_LLAMA);
  dir.write("shared/small.json", SMALL_LLAMA);
  Text t;
  t.model = R"(model { hf_config: "../models/small/config.json" })";
  const std::string scenario = dir.write("scenarios/s.textproto", t.str());
  t.model = R"(model { hf_config: "../shared/small.json" })";
  dir.write("scenarios/t.textproto", t.str());
  t.model = R"(model { hf_config: "small/config.json" })";
  dir.write("models/u.textproto", t.str());

  // From an unrelated working directory, by absolute path.
  LoadedScenario s = loaded(load_file(scenario));
  EXPECT_EQ(s.training.model.name, "small");
  EXPECT_EQ(s.training.model.layers, 4);
  EXPECT_EQ(s.training.model.kv_heads, 2);
  EXPECT_THAT(s.notes, Contains("model.hf_config: small read from " + dir.str() +
                                "/scenarios/../models/small/config.json"));
  // By a relative scenario path, from two different working directories.
  {
    WorkingDirectory cwd(dir.str());
    EXPECT_EQ(loaded(load_file("scenarios/s.textproto")).training.model.name, "small");
    EXPECT_EQ(loaded(load_file("scenarios/t.textproto")).training.model.name, "small");  // the file stem
    EXPECT_EQ(loaded(load_file("models/u.textproto")).training.model.layers, 4);
  }
  {
    WorkingDirectory cwd(dir.str() + "/scenarios");
    EXPECT_EQ(loaded(load_file("s.textproto")).training.model.layers, 4);
    // load_text's file name anchors the config too: "u.textproto" has no folder, so the
    // working directory does, and scenarios/small/config.json is not there.
    auto d = errors(load_text(t.str(), "u.textproto"));
    ASSERT_EQ(d.size(), 1u) << all(d);
    EXPECT_THAT(d[0].message, HasSubstr("cannot read Hugging Face config \"small/config.json\""));
    EXPECT_EQ(loaded(load_text(t.str(), "../models/u.textproto")).training.model.layers, 4);
  }
}

TEST(RuleHfConfig, MissingConfigNamesThePathAndTheField) {
  Text t;
  t.model = R"(model { hf_config: "nope/config.json" })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:1:9: error: model.hf_config: cannot read Hugging Face config "
                        "\"nope/config.json\": No such file or directory (a relative hf_config is read from the "
                        "scenario file's folder)");
  // Relative to the scenario's folder: the message shows the path as resolved.
  d = errors(load_text(t.str(), "dir/s.textproto"));
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("dir/s.textproto:1:9: error: model.hf_config: cannot read Hugging Face config "
                                    "\"dir/nope/config.json\": No such file or directory"));
  // A folder opens but does not read; an absolute path gets no hint about folders.
  TempDir dir;
  t.model = fmt::format(R"(model {{ hf_config: "{}" }})", dir.str());
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:1:9: error: model.hf_config: cannot read Hugging Face config \"" + dir.str() +
                            "\": Is a directory");
  Json j;
  j.model = R"("hfConfig": "nope/config.json")";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.json: error: model.hf_config: cannot read Hugging Face config "
                                    "\"nope/config.json\": No such file or directory"));
}

TEST(RuleHfConfig, MalformedConfigIsReportedAtTheFieldWithTheConfigsPosition) {
  TempDir dir;
  const std::string config =
      dir.write("bad/config.json", "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 8192,\n}\n");
  Text t;
  t.model = fmt::format(R"(model {{ hf_config: "{}" }})", config);
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:1:9: error: model.hf_config: " + config +
                            ":4:1: invalid JSON: syntax error while parsing object key - unexpected '}'; expected "
                            "string literal");
  // A config that parses but breaks a rule: the config's own message, at the same place.
  const std::string missing = dir.write("missing/config.json", R"({"model_type": "llama", "hidden_size": 8192})");
  t.model = fmt::format(R"(model {{ hf_config: "{}" }})", missing);
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:1:9: error: model.hf_config: " + missing +
                            ": num_hidden_layers: missing: a Llama config.json gives the number of transformer "
                            "layers as a positive integer (e.g. 80 for Llama-3-70B)");
  const std::string mistral = dir.write("mistral/config.json", R"({"model_type": "mistral"})");
  t.model = fmt::format(R"(model {{ hf_config: "{}" }})", mistral);
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].message, mistral + ": model_type: unsupported model type \"mistral\" (supported: llama)");
}

TEST(RuleHfConfig, HostilePathsFailCleanly) {
  Text t;
  // A device never ends: the read stops at a size no config.json reaches.
  t.model = R"(model { hf_config: "/dev/zero" })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:1:9: error: model.hf_config: cannot read Hugging Face config \"/dev/zero\": "
                        "not a regular file (a device, pipe or socket is not read: /dev/zero, for one, never ends)");
  // What the message quotes of a huge path is cut.
  t.model = "model { hf_config: \"" + std::string(1 << 20, 'x') + "\" }";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].message, HasSubstr("File name too long"));
  EXPECT_LT(d[0].str().size(), 2000u);
}

TEST(RuleHfConfig, PresetAndHfConfigConflict) {
  Text t;
  t.model = fmt::format(R"(model {{ preset: "llama3-70b" hf_config: "{}" }})", example("hf/llama3-70b/config.json"));
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:1:30: error: model.hf_config: conflicts with model.preset \"llama3-70b\": name "
                        "the model by a preset or by a Hugging Face config.json, not both (drop one of them)");
  Json j;
  j.model = R"("preset": "llama3-70b", "hfConfig": "x/config.json")";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.json: error: model.hf_config: conflicts with model.preset"));
}

TEST(RuleHfConfig, ExplicitFieldsOverrideTheConfig) {
  TempDir dir;
  const std::string config = dir.write("small/config.json", SMALL_LLAMA);
  Text t;
  t.model = fmt::format(R"(model {{ hf_config: "{}" num_layers: 8 ffn_hidden_size: 1024 }})", config);
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(s.training.model.name, "small");
  EXPECT_EQ(s.training.model.layers, 8);
  EXPECT_EQ(s.training.model.ffn_hidden, 1024);
  EXPECT_EQ(s.training.model.hidden, 256);
  EXPECT_EQ(s.training.model.kv_heads, 2);
  EXPECT_FALSE(s.training.model.tied_embedding);
  // The loader's own rules still apply to the merged shape.
  t.model = fmt::format(R"(model {{ hf_config: "{}" num_query_groups: 3 }})", config);
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].field, "model.num_query_groups");
  // A tied config stays tied.
  const std::string tied = dir.write(
      "tied/config.json", SMALL_LLAMA.substr(0, SMALL_LLAMA.size() - 1) + R"(, "tie_word_embeddings": true})");
  t.model = fmt::format(R"(model {{ hf_config: "{}" }})", tied);
  EXPECT_TRUE(loaded(t.load()).training.model.tied_embedding);
}

// ---------------------------------------------------------------------------------------
// Rule 2: the cluster.

TEST(RuleCluster, UnknownNodePresetListsTheKnownOnes) {
  Text t;
  t.cluster = R"(cluster { preset: "dgx-a100" nodes: 4 })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), fmt::format("s.textproto:3:11: error: cluster.preset: unknown node preset \"dgx-a100\"; did "
                                    "you mean \"dgx-a100-80gb\"? (known: {})",
                                    joined(hardware::node_preset_names())));
  EXPECT_THAT(d[0].message, HasSubstr("dgx-a100-80gb, dgx-h100, hgx-h200"));
  Json j;
  j.cluster = R"("preset": "dgx-a100", "nodes": 4)";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.json: error: cluster.preset: unknown node preset \"dgx-a100\""));
}

TEST(RuleCluster, GpuProfileAndGpusPerNodeInsteadOfPreset) {
  Text t;
  t.cluster = R"(cluster { gpu: "h100-sxm" gpus_per_node: 4 nodes: 8 fabric { fat_tree { nic_gbps: 400 } } })";
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(s.cluster.gpu, "h100-sxm");
  EXPECT_EQ(s.gpu.name(), "h100-sxm");
  EXPECT_EQ(s.cluster.gpus_per_node, 4);
  EXPECT_EQ(s.cluster.nodes, 8);
  EXPECT_EQ(s.cluster.nic_gbps, 400);
  EXPECT_EQ(s.training.layout.data, 32);
}

TEST(RuleCluster, UnknownGpuListsTheProfiles) {
  Text t;
  t.cluster = R"(cluster { gpu: "a100-80" gpus_per_node: 8 nodes: 4 fabric { fat_tree { nic_gbps: 200 } } })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), fmt::format("s.textproto:3:11: error: cluster.gpu: unknown GPU profile \"a100-80\"; did you "
                                    "mean \"a100-80gb\"? (known: {})",
                                    joined(hardware::profile_names())));
  Json j;
  j.cluster = R"("gpu": "a100", "gpusPerNode": 8, "nodes": 4, "fabric": {"fatTree": {"nicGbps": 200}})";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.json: error: cluster.gpu: unknown GPU profile \"a100\""));
}

TEST(RuleCluster, WithoutPresetGpuGpusPerNodeAndNicAreRequired) {
  Text t;
  t.cluster = "cluster { nodes: 4 }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 3u) << all(d);
  EXPECT_EQ(d[0].str(), fmt::format("s.textproto:3:1: error: cluster.gpu: missing: name a node preset "
                                    "(cluster.preset: {}) or a GPU profile (cluster.gpu: {}, or a profile file in cluster.profile) with "
                        "gpus_per_node",
                                    joined(hardware::node_preset_names()), joined(hardware::profile_names())));
  EXPECT_EQ(d[1].str(), "s.textproto:3:1: error: cluster.gpus_per_node: missing: without a node preset, give the "
                        "GPUs per node (e.g. 8)");
  EXPECT_EQ(d[2].str(), "s.textproto:3:1: error: cluster.fabric.fat_tree.nic_gbps: missing: without a node preset, "
                        "give each GPU's NIC line rate in Gb/s (e.g. 200 for HDR InfiniBand, 400 for NDR)");
}

// The fabric's kind and levels, and failed or degraded links (hardware/topology.hpp).
TEST(RuleFabric, KindLevelsAndPodsAreCarriedToTheClusterSpec) {
  Text t;
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(s.cluster.fabric, hardware::FabricKind::RAIL_OPTIMIZED);
  EXPECT_EQ(s.cluster.fabric_levels, 2);
  EXPECT_EQ(s.cluster.node_layout, "dgx-a100");  // the preset's machine
  EXPECT_TRUE(s.cluster.link_faults.empty());
  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 4 fabric { kind: "fat-tree" levels: 3 leaves_per_pod: 2 } })";
  s = loaded(t.load());
  EXPECT_EQ(s.cluster.fabric, hardware::FabricKind::FAT_TREE);
  EXPECT_EQ(s.cluster.fabric_levels, 3);
  EXPECT_EQ(s.cluster.leaves_per_pod, 2);
  EXPECT_EQ(s.cluster.node_layout, "dgx-h100");
}

TEST(RuleFabric, UnknownKindBadLevelsAndPodsWithoutThreeLevelsAreErrors) {
  Text t;
  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 4 fabric { kind: "dragonfly" } })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:3:48: error: cluster.fabric.kind: unknown fabric kind \"dragonfly\" (valid: "
                        "\"rail-optimized\", \"fat-tree\")");
  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 4 fabric { levels: 3 } })";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:3:48: error: cluster.fabric.levels: 3 switch levels: a rail-optimized fabric "
                        "has 2 (leaf and spine)");
  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 4 fabric { kind: "fat-tree" levels: 4 } })";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.textproto:3:65: error: cluster.fabric.levels: 4 switch levels: a fat-tree "
                                    "fabric has 2 (leaf, spine) or 3 (leaf, aggregation, core)"));
  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 4 fabric { kind: "fat-tree" leaves_per_pod: 2 } })";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.textproto:3:65: error: cluster.fabric.leaves_per_pod: only a three-level fat "
                                    "tree has pods"));
  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 4 fabric { kind: "fat-tree" levels: 3 leaves_per_pod: 0 } })";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("cluster.fabric.leaves_per_pod: must be a positive integer"));
}

TEST(RuleFabric, LinkFaultsAreCheckedAgainstTheTopology) {
  Text t;
  t.cluster = "cluster { preset: \"dgx-h100\" nodes: 4 fabric {\n"
              "  link_fault { from: \"leaf0\" to: \"spine0\" bandwidth_fraction: 0.5 }\n"
              "  link_fault { from: \"nic3\" to: \"leaf3\" }\n} }";
  LoadedScenario s = loaded(t.load());
  ASSERT_EQ(s.cluster.link_faults.size(), 2u);
  EXPECT_EQ(s.cluster.link_faults[0].a, "leaf0");
  EXPECT_EQ(s.cluster.link_faults[0].bandwidth_fraction, 0.5);
  EXPECT_EQ(s.cluster.link_faults[1].bandwidth_fraction, 0.0);  // absent: failed
  EXPECT_NO_THROW(hardware::Cluster(s.cluster, s.gpu));

  // Lines: the cluster block starts on line 3; each fault is on a line of its own.
  auto one = [&](const std::string& fault) {
    Text u;
    u.cluster = "cluster { preset: \"dgx-h100\" nodes: 4 fabric {\n  link_fault { from: \"leaf0\" to: \"spine0\" }\n  " +
                fault + "\n} }";
    return errors(u.load());
  };
  auto d = one(R"(link_fault { from: "leaf0" })");
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:5:3: error: cluster.fabric.link_fault[1].to: missing: name both ends of the "
                        "cable, e.g. from: \"leaf0\" to: \"spine0\"");
  d = one(R"(link_fault { from: "gpu1" to: "gpu1" })");
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:5:29: error: cluster.fabric.link_fault[1].to: \"gpu1\" is both ends: name two "
                        "different vertices");
  d = one(R"(link_fault { from: "leaf1" to: "spine0" bandwidth_fraction: 1.5 })");
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.textproto:5:43: error: cluster.fabric.link_fault[1].bandwidth_fraction: must be "
                                    "0 (failed) or above 0 and below 1"));
  d = one(R"(link_fault { from: "leaf99" to: "spine0" })");
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.textproto:5:3: error: cluster.fabric.link_fault[1]: no vertex named 'leaf99'"));
  d = one(R"(link_fault { from: "leaf1" to: "gpu0" })");
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.textproto:5:3: error: cluster.fabric.link_fault[1]: link fault: no link joins "
                                    "leaf1 and gpu0"));
  // GPU 0's NVLink and PCIe links both failed: nothing reaches it.
  Text u;
  u.cluster = "cluster { preset: \"dgx-h100\" nodes: 4 fabric {\n"
              "  link_fault { from: \"gpu0\" to: \"node0.nvswitch\" }\n"
              "  link_fault { from: \"gpu0\" to: \"node0.pcie0\" }\n} }";
  d = errors(u.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.textproto:5:3: error: cluster.fabric.link_fault[1]: topology is disconnected: "
                                    "no path from gpu0 to"));
}

TEST(RuleCluster, NodesAreRequired) {
  Text t;
  t.cluster = R"(cluster { preset: "dgx-h100" })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:3:1: error: cluster.nodes: missing: give the number of nodes");
  Json j;
  j.cluster = R"("preset": "dgx-h100")";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json: error: cluster.nodes: missing: give the number of nodes");
}

TEST(RuleCluster, MissingClusterBlockIsOneErrorWithoutPosition) {
  Text t;
  t.cluster = "";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), fmt::format("s.textproto: error: cluster: missing: name a node preset and the node count, "
                                    "e.g. cluster {{ preset: \"dgx-h100\" nodes: 4 }} (node presets: {})",
                                    joined(hardware::node_preset_names())));
}

TEST(RuleCluster, FabricDefaultsComeFromThePresetAndAreNoted) {
  Text t;
  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 4 })";
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(s.cluster.nic_gbps, 400);
  EXPECT_EQ(s.cluster.oversubscription, 1.0);
  EXPECT_EQ(s.cluster.nodes_per_leaf, 32);
  EXPECT_EQ(s.cluster.gpu, "h100-sxm");
  EXPECT_THAT(s.notes, Contains("cluster.fabric.fat_tree.nic_gbps defaulted to 400 (the NIC rate of dgx-h100)"));
  EXPECT_THAT(s.notes, Contains("cluster.fabric.fat_tree.oversubscription defaulted to 1 (non-blocking)"));
  EXPECT_THAT(s.notes, Contains("cluster.fabric.fat_tree.nodes_per_leaf defaulted to 32"));

  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 4 fabric { fat_tree { nic_gbps: 200 oversubscription: 2 )"
              R"(nodes_per_leaf: 2 } } })";
  s = loaded(t.load());
  EXPECT_EQ(s.cluster.nic_gbps, 200);
  EXPECT_EQ(s.cluster.oversubscription, 2.0);
  EXPECT_EQ(s.cluster.nodes_per_leaf, 2);
}

TEST(RuleCluster, OversubscriptionBelowOneIsAnError) {
  Text t;
  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 4 fabric { fat_tree { oversubscription: 0.5 } } })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:3:59: error: cluster.fabric.fat_tree.oversubscription: must be from 1 to 1000 (leaf "
                        "down/up bandwidth ratio; 1 is non-blocking), got 0.5");
  Json j;
  j.cluster = R"("preset": "dgx-h100", "nodes": 4, "fabric": {"fatTree": {"oversubscription": "NaN"}})";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json: error: cluster.fabric.fat_tree.oversubscription: must be from 1 to 1000 (leaf down/up "
                        "bandwidth ratio; 1 is non-blocking), got nan");
}

TEST(RuleCluster, GpuOrGpusPerNodeConflictingWithThePreset) {
  Text t;
  t.cluster = R"(cluster { preset: "dgx-h100" gpu: "h200" gpus_per_node: 4 nodes: 4 })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 2u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:3:30: error: cluster.gpu: \"h200\" conflicts with node preset \"dgx-h100\", "
                        "whose GPU is \"h100-sxm\": drop cluster.gpu, or drop cluster.preset and give gpu and "
                        "gpus_per_node");
  EXPECT_EQ(d[1].str(), "s.textproto:3:42: error: cluster.gpus_per_node: gpus_per_node=4 conflicts with node preset "
                        "\"dgx-h100\", which has 8 GPUs per node: drop one of them");
  // Restating the preset's own values is fine.
  t.cluster = R"(cluster { preset: "dgx-h100" gpu: "h100-sxm" gpus_per_node: 8 nodes: 4 })";
  loaded(t.load());
}

// ---------------------------------------------------------------------------------------
// Rule 3: training.

TEST(RuleTraining, SequenceLengthAndGlobalBatchAreRequired) {
  Text t;
  t.training = "training { micro_batch_size: 1 }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 2u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:2:1: error: training.sequence_length: missing: give the tokens per sequence "
                        "(e.g. 2048)");
  EXPECT_EQ(d[1].str(), "s.textproto:2:1: error: training.global_batch_size: missing: give the sequences per "
                        "iteration (e.g. 512)");
  Json j;
  j.training = R"("microBatchSize": 1)";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 2u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json: error: training.sequence_length: missing: give the tokens per sequence (e.g. 2048)");
  // Without a training block at all: one error, no position.
  t.training = "";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto: error: training: missing: give sequence_length and global_batch_size, e.g. "
                        "training { sequence_length: 2048 global_batch_size: 512 }");
}

TEST(RuleTraining, DefaultsAreAppliedAndNoted) {
  LoadedScenario s = loaded(Text().load());
  EXPECT_EQ(s.training.micro_batch, 1);
  EXPECT_EQ(s.training.dtype, hardware::Dtype::BF16);
  EXPECT_THAT(s.notes, Contains("training.micro_batch_size defaulted to 1"));
  EXPECT_THAT(s.notes, Contains("training.precision defaulted to BF16"));
  EXPECT_THAT(s.notes, Contains("training.optimizer defaulted to ADAM"));
}

TEST(RuleTraining, Fp8OnAGpuWithoutFp8TensorCoresIsAnError) {
  Text t;
  t.training = "training { sequence_length: 2048 global_batch_size: 512 precision: FP8 }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:2:57: error: training.precision: FP8 needs FP8 tensor cores, which GPU "
                        "\"a100-80gb\" lacks (its profile's peak_fp8_flops is 0); use BF16 or FP16");
  Json j;
  j.training = R"("sequenceLength": 2048, "globalBatchSize": 512, "precision": "FP8")";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.json: error: training.precision: FP8 needs FP8 tensor cores"));
  // H100 has them.
  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 4 })";
  EXPECT_EQ(loaded(t.load()).training.dtype, hardware::Dtype::FP8);
}

// Unset, the gradient dtype is Megatron-LM's default for the precision, and the note says so;
// written, it reaches the spec in either format.
TEST(RuleTraining, GradientDtypeDefaultsAsMegatronAndReachesTheSpec) {
  LoadedScenario bf16 = loaded(Text().load());
  EXPECT_FALSE(bf16.training.accumulate_grads_in_fp32.has_value());
  EXPECT_TRUE(strategies::fp32_gradients(bf16.training));
  const std::string noted = "training.accumulate_allreduce_grads_in_fp32 defaulted to ";
  EXPECT_THAT(bf16.notes, Contains(HasSubstr(noted + "true with BF16")));
  Text t;
  t.training = "training { sequence_length: 2048 global_batch_size: 512 precision: FP16 }";
  LoadedScenario fp16 = loaded(t.load());
  EXPECT_FALSE(strategies::fp32_gradients(fp16.training));
  EXPECT_THAT(fp16.notes, Contains(HasSubstr(noted + "false with FP16")));
  t.training = "training { sequence_length: 2048 global_batch_size: 512 accumulate_allreduce_grads_in_fp32: false }";
  LoadedScenario bf16_grads = loaded(t.load());
  EXPECT_EQ(bf16_grads.training.accumulate_grads_in_fp32, std::optional<bool>(false));
  EXPECT_FALSE(strategies::fp32_gradients(bf16_grads.training));
  EXPECT_THAT(bf16_grads.notes, Not(Contains(HasSubstr("accumulate_allreduce_grads_in_fp32 defaulted"))));
  Json j;
  j.training = R"("sequenceLength": 2048, "globalBatchSize": 512, "precision": "FP16",
                  "accumulateAllreduceGradsInFp32": true)";
  EXPECT_TRUE(strategies::fp32_gradients(loaded(j.load()).training));
}

TEST(RuleTraining, SgdReachesTheSpec) {
  Text t;
  t.training = "training { sequence_length: 2048 global_batch_size: 512 optimizer: SGD }";
  EXPECT_EQ(loaded(t.load()).training.optimizer, strategies::Optimizer::SGD);
}

TEST(RuleTraining, GptSequenceMustFitThePositionTable) {
  Text t;
  t.training = "training { sequence_length: 4096 global_batch_size: 512 }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:2:12: error: training.sequence_length: sequence_length=4096 exceeds the model's "
                        "max_position_embeddings=2048 (GPT learns one position embedding per token position): use "
                        "sequence_length ≤ 2048 or set model.max_position_embeddings");
  Json j;
  j.training = R"("sequenceLength": 4096, "globalBatchSize": 512)";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("s.json: error: training.sequence_length: sequence_length=4096 exceeds"));
  // A larger table makes it fit.
  t.model = R"(model { preset: "gpt-1.7b" max_position_embeddings: 4096 })";
  EXPECT_EQ(loaded(t.load()).training.model.max_positions, 4096);
}

// ---------------------------------------------------------------------------------------
// Rule 4: every size field must be a positive integer.

struct SizeField {
  std::string path;     // field path
  std::string block;    // which block of Text the setting goes into
  std::string setting;  // "num_layers: {}" with the value left open
  std::string json;     // the JSON body of that block, value left open
};

const std::vector<SizeField>& size_fields() {
  static const std::vector<SizeField> fields = {
      {"model.num_layers", "model", R"(model {{ preset: "gpt-1.7b" num_layers: {} }})",
       R"("preset": "gpt-1.7b", "numLayers": {})"},
      {"model.hidden_size", "model", R"(model {{ preset: "gpt-1.7b" hidden_size: {} }})",
       R"("preset": "gpt-1.7b", "hiddenSize": {})"},
      {"model.num_attention_heads", "model", R"(model {{ preset: "gpt-1.7b" num_attention_heads: {} }})",
       R"("preset": "gpt-1.7b", "numAttentionHeads": {})"},
      {"model.num_query_groups", "model", R"(model {{ preset: "gpt-1.7b" num_query_groups: {} }})",
       R"("preset": "gpt-1.7b", "numQueryGroups": {})"},
      {"model.ffn_hidden_size", "model", R"(model {{ preset: "gpt-1.7b" ffn_hidden_size: {} }})",
       R"("preset": "gpt-1.7b", "ffnHiddenSize": {})"},
      {"model.vocab_size", "model", R"(model {{ preset: "gpt-1.7b" vocab_size: {} }})",
       R"("preset": "gpt-1.7b", "vocabSize": {})"},
      {"model.max_position_embeddings", "model", R"(model {{ preset: "gpt-1.7b" max_position_embeddings: {} }})",
       R"("preset": "gpt-1.7b", "maxPositionEmbeddings": {})"},
      {"cluster.nodes", "cluster", R"(cluster {{ preset: "dgx-a100-80gb" nodes: {} }})",
       R"("preset": "dgx-a100-80gb", "nodes": {})"},
      {"cluster.gpus_per_node", "cluster",
       R"(cluster {{ gpu: "a100-80gb" gpus_per_node: {} nodes: 4 fabric {{ fat_tree {{ nic_gbps: 200 }} }} }})",
       R"("gpu": "a100-80gb", "gpusPerNode": {}, "nodes": 4, "fabric": {{"fatTree": {{"nicGbps": 200}}}})"},
      {"cluster.fabric.fat_tree.nodes_per_leaf", "cluster",
       R"(cluster {{ preset: "dgx-a100-80gb" nodes: 4 fabric {{ fat_tree {{ nodes_per_leaf: {} }} }} }})",
       R"("preset": "dgx-a100-80gb", "nodes": 4, "fabric": {{"fatTree": {{"nodesPerLeaf": {}}}}})"},
      {"training.sequence_length", "training", "training {{ sequence_length: {} global_batch_size: 512 }}",
       R"("sequenceLength": {}, "globalBatchSize": 512)"},
      {"training.global_batch_size", "training", "training {{ sequence_length: 2048 global_batch_size: {} }}",
       R"("sequenceLength": 2048, "globalBatchSize": {})"},
      {"training.micro_batch_size", "training",
       "training {{ sequence_length: 2048 global_batch_size: 512 micro_batch_size: {} }}",
       R"("sequenceLength": 2048, "globalBatchSize": 512, "microBatchSize": {})"},
      {"parallel.tensor", "parallel", "parallel {{ tensor: {} }}", R"("tensor": {})"},
      {"parallel.pipeline", "parallel", "parallel {{ pipeline: {} }}", R"("pipeline": {})"},
      {"parallel.data", "parallel", "parallel {{ data: {} }}", R"("data": {})"},
      {"parallel.virtual_stages", "parallel", "parallel {{ virtual_stages: {} }}", R"("virtualStages": {})"},
  };
  return fields;
}

std::string& block_of(Text& t, const std::string& block) {
  if (block == "model") return t.model;
  if (block == "training") return t.training;
  if (block == "cluster") return t.cluster;
  if (block == "parallel") return t.parallel;
  return t.strategy;
}
std::string& block_of(Json& j, const std::string& block) {
  if (block == "model") return j.model;
  if (block == "training") return j.training;
  if (block == "cluster") return j.cluster;
  if (block == "parallel") return j.parallel;
  return j.strategy;
}
int line_of(const std::string& block) {
  const std::vector<std::string> order = {"model", "training", "cluster", "parallel", "strategy"};
  return static_cast<int>(std::find(order.begin(), order.end(), block) - order.begin()) + 1;
}

TEST(RuleSizes, EverySizeFieldMustBePositive) {
  for (const SizeField& f : size_fields()) {
    for (int value : {0, -3}) {
      SCOPED_TRACE(f.path + " = " + std::to_string(value));
      Text t;
      std::string& block = block_of(t, f.block);
      block = fmt::format(fmt::runtime(f.setting), value);
      std::string name = f.path.substr(f.path.rfind('.') + 1);
      int column = static_cast<int>(block.find(name + ":")) + 1;
      std::string expected = fmt::format("s.textproto:{}:{}: error: {}: must be a positive integer, got {}",
                                         line_of(f.block), column, f.path, value);
      EXPECT_THAT(lines(errors(t.load())), Contains(expected));

      Json j;
      block_of(j, f.block) = fmt::format(fmt::runtime(f.json), value);
      EXPECT_THAT(lines(errors(j.load())),
                  Contains(fmt::format("s.json: error: {}: must be a positive integer, got {}", f.path, value)));
    }
  }
}

TEST(RuleSizes, NicRateMustBeAPositiveNumber) {
  Text t;
  t.cluster = R"(cluster { preset: "dgx-a100-80gb" nodes: 4 fabric { fat_tree { nic_gbps: 0 } } })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:3:64: error: cluster.fabric.fat_tree.nic_gbps: must be a number of Gb/s per GPU "
                        "NIC from 0.001 to 1000000, got 0");
  Json j;
  j.cluster = R"("preset": "dgx-a100-80gb", "nodes": 4, "fabric": {"fatTree": {"nicGbps": -100}})";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json: error: cluster.fabric.fat_tree.nic_gbps: must be a number of Gb/s per GPU NIC "
                        "from 0.001 to 1000000, got -100");
  t.cluster = R"(cluster { preset: "dgx-a100-80gb" nodes: 4 fabric { fat_tree { nic_gbps: inf } } })";
  EXPECT_THAT(lines(errors(t.load())),
              Contains("s.textproto:3:64: error: cluster.fabric.fat_tree.nic_gbps: must be a number of Gb/s per GPU "
                       "NIC from 0.001 to 1000000, got inf"));
}

// ---------------------------------------------------------------------------------------
// Rule 5: the parallel layout.

TEST(RuleParallel, DataIsDerivedAndNoted) {
  LoadedScenario s = loaded(Text().load());
  EXPECT_EQ(s.training.layout.data, 32);
  EXPECT_THAT(s.notes, Contains("parallel.data derived as 32 = 32 / (1 × 1)"));
  Text t;
  t.parallel = "parallel { }";
  s = loaded(t.load());
  EXPECT_EQ(s.training.layout.tensor, 1);
  EXPECT_EQ(s.training.layout.pipeline, 1);
  EXPECT_THAT(s.notes, Contains("parallel.tensor defaulted to 1"));
  EXPECT_THAT(s.notes, Contains("parallel.pipeline defaulted to 1"));
  EXPECT_THAT(s.notes, Contains("parallel.virtual_stages defaulted to 1"));
}

TEST(RuleParallel, DataThatCannotBeDerivedNamesTheNumbers) {
  Text t;
  t.parallel = "parallel { tensor: 3 }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:4:1: error: parallel.data: cannot be derived: 32 GPUs / (tensor 3 × pipeline 1) "
                        "= 10.67 is not an integer; choose tensor × pipeline dividing 32");
  Json j;
  j.parallel = R"("tensor": 3)";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json: error: parallel.data: cannot be derived: 32 GPUs / (tensor 3 × pipeline 1) = 10.67 "
                        "is not an integer; choose tensor × pipeline dividing 32");
}

TEST(RuleParallel, ProductMustEqualTheGpuCount) {
  Text t;
  t.parallel = "parallel { tensor: 2 pipeline: 2 data: 4 }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:4:34: error: parallel.data: tensor × pipeline × data = 2 × 2 × 4 = 16, but the "
                        "cluster has 32 GPUs (4 nodes × 8)");
  Json j;
  j.parallel = R"("tensor": 2, "pipeline": 2, "data": 4)";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json: error: parallel.data: tensor × pipeline × data = 2 × 2 × 4 = 16, but the cluster "
                        "has 32 GPUs (4 nodes × 8)");
}

TEST(RuleParallel, TensorMustDivideTheHeads) {
  Text t;
  t.model = "model { num_layers: 80 hidden_size: 8192 num_attention_heads: 64 vocab_size: 51200 }";
  t.cluster = R"(cluster { preset: "dgx-a100-80gb" nodes: 128 })";
  t.training = "training { sequence_length: 2048 global_batch_size: 1536 }";
  t.parallel = "parallel { tensor: 3 pipeline: 1 data: 1 }";
  auto d = errors(t.load());
  EXPECT_THAT(lines(d), Contains("s.textproto:4:12: error: parallel.tensor: tensor=3 does not divide "
                                 "num_attention_heads=64 (valid: 1, 2, 4, 8, 16, 32, 64)"));
  Json j;
  j.model = R"("numLayers": 80, "hiddenSize": 8192, "numAttentionHeads": 64, "vocabSize": 51200)";
  j.cluster = R"("preset": "dgx-a100-80gb", "nodes": 128)";
  j.training = R"("sequenceLength": 2048, "globalBatchSize": 1536)";
  j.parallel = R"("tensor": 3, "pipeline": 1, "data": 1)";
  EXPECT_THAT(lines(errors(j.load())), Contains("s.json: error: parallel.tensor: tensor=3 does not divide "
                                                "num_attention_heads=64 (valid: 1, 2, 4, 8, 16, 32, 64)"));
}

TEST(RuleParallel, TensorMustDivideTheQueryGroups) {
  Text t;
  t.model = R"(model { preset: "llama3-70b" })";
  t.training = "training { sequence_length: 8192 global_batch_size: 512 }";
  t.parallel = "parallel { tensor: 16 pipeline: 2 }";
  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 64 })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:4:12: error: parallel.tensor: tensor=16 does not divide num_query_groups=8 "
                        "(valid: 1, 2, 4, 8)");
}

TEST(RuleParallel, TensorMustDivideTheMlpHiddenSize) {
  // Found when the model builder's own check was made the shared rule: before, this passed
  // validation and failed only when the layers were built.
  Text t;
  t.model = R"(model { preset: "gpt-1.7b" ffn_hidden_size: 8190 })";
  t.parallel = "parallel { tensor: 4 pipeline: 1 }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("error: parallel.tensor: tensor=4 does not divide ffn_hidden_size=8190 (valid: 1, 2"));
}

TEST(RuleParallel, ContextAndExpertParallelismAreRefusedUntilAPassImplementsThem) {
  Text t;
  t.parallel = "parallel { context: 2 expert: 4 }";
  auto d = errors(t.load());
  EXPECT_THAT(lines(d), Contains("s.textproto:4:12: error: parallel.context: context=2 is not supported yet: no pass "
                                 "implements context parallelism (use 1, or leave it out)"))
      << all(d);
  EXPECT_THAT(lines(d), Contains("s.textproto:4:23: error: parallel.expert: expert=4 is not supported yet: no pass "
                                 "implements expert parallelism (use 1, or leave it out)"))
      << all(d);
  t.parallel = "parallel { context: 1 expert: 1 }";
  EXPECT_EQ(loaded(t.load()).training.layout.context, 1);
}

TEST(RuleParallel, RankOrderMustNameEachDimensionOnce) {
  Text t;
  t.parallel = R"(parallel { rank_order: "tp-dp-pp" })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:4:12: error: parallel.rank_order: \"tp-dp-pp\" leaves out cp, ep; a rank order "
                        "names each of the 5 dimensions once, fastest first, separated by '-' (default "
                        "\"tp-cp-ep-dp-pp\"; dimensions: tp (tensor), cp (context), ep (expert), dp (data), pp "
                        "(pipeline))");
  t.parallel = R"(parallel { rank_order: "tp-cp-ep-dp-zp" })";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), HasSubstr("parallel.rank_order: unknown dimension \"zp\" in \"tp-cp-ep-dp-zp\""));
  t.parallel = R"(parallel { rank_order: "dp-tp-cp-ep-pp" })";
  EXPECT_EQ(loaded(t.load()).training.layout.rank_order, "dp-tp-cp-ep-pp");
  t.parallel = "parallel { }";
  EXPECT_EQ(loaded(t.load()).training.layout.rank_order, "tp-cp-ep-dp-pp");
}

TEST(RuleParallel, PipelineMustDivideTheLayers) {
  Text t;
  t.parallel = "parallel { tensor: 1 pipeline: 5 data: 1 }";
  t.cluster = R"(cluster { gpu: "a100-80gb" gpus_per_node: 5 nodes: 1 fabric { fat_tree { nic_gbps: 200 } } })";
  t.training = "training { sequence_length: 2048 global_batch_size: 16 }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  // Valid values are the divisors of 24 that fit on the 5 GPUs.
  EXPECT_EQ(d[0].str(), "s.textproto:4:22: error: parallel.pipeline: pipeline=5 does not divide num_layers=24 "
                        "(valid: 1, 2, 3, 4) (or set parallel.first_stage_layers / last_stage_layers for an uneven "
                        "split)");
  Json j;
  j.parallel = R"("pipeline": 5, "data": 1)";
  j.cluster = R"("gpu": "a100-80gb", "gpusPerNode": 5, "nodes": 1, "fabric": {"fatTree": {"nicGbps": 200}})";
  j.training = R"("sequenceLength": 2048, "globalBatchSize": 16)";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json: error: parallel.pipeline: pipeline=5 does not divide num_layers=24 (valid: 1, 2, 3, 4) "
                        "(or set parallel.first_stage_layers / last_stage_layers for an uneven split)");
}

TEST(RuleParallel, VirtualStagesNeedLayersDivisibleByPipelineTimesStages) {
  Text t;
  t.strategy = R"(strategy { pipeline_schedule: "interleaved-1f1b" recompute: "full" })";
  t.parallel = "parallel { pipeline: 4 virtual_stages: 4 }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:4:24: error: parallel.virtual_stages: virtual_stages=4 needs num_layers=24 "
                        "divisible by pipeline × virtual_stages = 4 × 4 = 16 (valid: 1, 2, 3, 6)");
  Json j;
  j.strategy = R"("pipelineSchedule": "interleaved-1f1b", "recompute": "full")";
  j.parallel = R"("pipeline": 4, "virtualStages": 4)";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json: error: parallel.virtual_stages: virtual_stages=4 needs num_layers=24 divisible by "
                        "pipeline × virtual_stages = 4 × 4 = 16 (valid: 1, 2, 3, 6)");

  t.parallel = "parallel { virtual_stages: 2 }";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:4:12: error: parallel.virtual_stages: virtual_stages=2 needs pipeline > 1 "
                        "(interleaving splits each pipeline stage's layers into chunks)");

  t.parallel = "parallel { pipeline: 4 virtual_stages: 3 }";
  EXPECT_EQ(loaded(t.load()).training.layout.virtual_stages, 3);
}

// ---------------------------------------------------------------------------------------
// Rule 6: the global batch splits into micro-batches over the data-parallel replicas.

TEST(RuleBatch, GlobalBatchMustBeAMultipleOfMicroBatchTimesData) {
  Text t;
  t.training = "training { sequence_length: 2048 global_batch_size: 500 }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:2:34: error: training.global_batch_size: global_batch_size=500 is not divisible "
                        "by micro_batch_size × data = 1 × 32 = 32 (nearest valid: 480, 512)");
  Json j;
  j.training = R"("sequenceLength": 2048, "globalBatchSize": 40, "microBatchSize": 2)";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json: error: training.global_batch_size: global_batch_size=40 is not divisible by "
                        "micro_batch_size × data = 2 × 32 = 64 (nearest valid: 64)");
}

// ---------------------------------------------------------------------------------------
// Rule 7: the strategy.

TEST(RuleStrategy, ScheduleMustBeARegisteredPass) {
  const std::string registered = joined(strategies::pass_names(strategies::PassKind::SCHEDULE));
  Text t;
  t.strategy = R"(strategy { pipeline_schedule: "1f1" })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), fmt::format("s.textproto:5:12: error: strategy.pipeline_schedule: unknown pipeline schedule "
                                    "\"1f1\"; did you mean \"1f1b\"? (registered: {})",
                                    registered));
  Json j;
  j.strategy = R"("pipelineSchedule": "pipedream")";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), fmt::format("s.json: error: strategy.pipeline_schedule: unknown pipeline schedule "
                                    "\"pipedream\" (registered: {})",
                                    registered));
}

TEST(RuleStrategy, DefaultsAreAppliedAndNoted) {
  Text t;
  t.strategy = "";
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(s.training.pipeline_schedule, "1f1b");
  EXPECT_EQ(s.training.zero_stage, 0);
  EXPECT_EQ(s.training.recompute, strategies::Recompute::NONE);
  EXPECT_THAT(s.notes, Contains("strategy.pipeline_schedule defaulted to \"1f1b\""));
  EXPECT_THAT(s.notes, Contains("strategy.zero_stage defaulted to 0"));
  EXPECT_THAT(s.notes, Contains("strategy.recompute defaulted to \"none\""));
}

strategies::PassInvocation pass_named(const std::string& text) {
  return std::get<strategies::Pipeline>(strategies::parse_pipeline(text)).front();
}

TEST(RuleStrategy, EveryStrategyAskedForIsARegisteredPass) {
  // Which passes exist changes as strategies/ grows; a setting loads exactly when its pass
  // is registered, and otherwise the error points at the setting.
  struct Case {
    std::string setting;
    std::string pass;
    std::string field;
    int column;
  };
  const std::vector<Case> cases = {
      {"zero_stage: 1", "zero(1)", "strategy.zero_stage", 12},
      {"zero_stage: 2", "zero(2)", "strategy.zero_stage", 12},
      {"zero_stage: 3", "zero(3)", "strategy.zero_stage", 12},
      {"overlap_grad_reduce: true", "overlap-grad-reduce", "strategy.overlap_grad_reduce", 12},
      {"zero_stage: 1 overlap_param_gather: true", "overlap-param-gather", "strategy.overlap_param_gather", 26},
      {"overlap_tp_comm: true", "overlap-tp-comm", "strategy.overlap_tp_comm", 12},
      {R"(recompute: "selective")", "recompute(selective)", "strategy.recompute", 12},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.setting);
    Text t;
    t.strategy = "strategy { " + c.setting + " }";
    LoadResult r = t.load();
    if (strategies::find_pass(pass_named(c.pass)) != nullptr) {
      loaded(r);
      continue;
    }
    auto d = errors(r);
    ASSERT_EQ(d.size(), 1u) << all(d);
    EXPECT_THAT(d[0].str(), StartsWith(fmt::format("s.textproto:5:{}: error: {}: needs the strategy pass \"{}\", which "
                                                   "is not implemented yet (",
                                                   c.column, c.field, c.pass)));
  }
}

TEST(RuleStrategy, ValuesAreCarriedIntoTheSpec) {
  // Only the settings whose passes are registered can load.
  std::string settings = R"(recompute: "selective")";
  for (int stage = 3; stage >= 1; --stage) {
    if (strategies::find_pass(pass_named("zero(" + std::to_string(stage) + ")")) != nullptr) {
      settings += fmt::format(" zero_stage: {}", stage);
      break;
    }
  }
  for (const char* flag : {"overlap_grad_reduce", "overlap_param_gather", "overlap_tp_comm"}) {
    std::string pass = flag;
    std::replace(pass.begin(), pass.end(), '_', '-');
    if (strategies::find_pass(pass_named(pass)) != nullptr) settings += fmt::format(" {}: true", flag);
  }
  Text t;
  t.strategy = "strategy { " + settings + " }";
  t.parallel = "parallel { tensor: 2 sequence_parallel: true }";
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(s.training.zero_stage, s.proto.strategy().zero_stage());
  EXPECT_EQ(s.training.recompute, strategies::Recompute::SELECTIVE);
  EXPECT_EQ(s.training.overlap_grad_reduce, s.proto.strategy().overlap_grad_reduce());
  EXPECT_EQ(s.training.overlap_param_gather, s.proto.strategy().overlap_param_gather());
  EXPECT_EQ(s.training.overlap_tp_comm, s.proto.strategy().overlap_tp_comm());
  EXPECT_TRUE(s.training.layout.sequence_parallel);
  EXPECT_EQ(s.training.layout.data, 16);
}

TEST(RuleStrategy, ZeroStageIsZeroToThree) {
  for (int stage : {4, -1}) {
    Text t;
    t.strategy = fmt::format("strategy {{ zero_stage: {} }}", stage);
    auto d = errors(t.load());
    ASSERT_EQ(d.size(), 1u) << all(d);
    EXPECT_EQ(d[0].str(), fmt::format("s.textproto:5:12: error: strategy.zero_stage: must be 0, 1, 2 or 3 (ZeRO stage: "
                                      "1 shards optimizer states, 2 also gradients, 3 also parameters), got {}",
                                      stage));
    Json j;
    j.strategy = fmt::format(R"("zeroStage": {})", stage);
    EXPECT_THAT(lines(errors(j.load())),
                Contains(fmt::format("s.json: error: strategy.zero_stage: must be 0, 1, 2 or 3 (ZeRO stage: 1 "
                                     "shards optimizer states, 2 also gradients, 3 also parameters), got {}",
                                     stage)));
  }
}

TEST(RuleStrategy, RecomputeIsNoneSelectiveOrFull) {
  Text t;
  t.strategy = R"(strategy { recompute: "fulll" })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  // The policies are the registered recompute pass's variants.
  const std::string valid = "none, " + joined(strategies::variants_of("recompute"));
  EXPECT_EQ(d[0].str(), "s.textproto:5:12: error: strategy.recompute: unknown recompute \"fulll\"; did you mean "
                        "\"full\"? (valid: " + valid + ")");
  Json j;
  j.strategy = R"("recompute": "partial")";
  d = errors(j.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.json: error: strategy.recompute: unknown recompute \"partial\" (valid: " + valid + ")");
}

// ---------------------------------------------------------------------------------------
// Several errors at once.

TEST(Collected, EverySemanticErrorIsReportedInFileOrder) {
  Text t;
  t.model = R"(model { preset: "gpt-1.7b" num_query_groups: 5 })";
  t.training = "training { sequence_length: 2048 global_batch_size: 0 precision: FP8 }";
  t.cluster = R"(cluster { preset: "dgx-a100-80gb" nodes: 4 fabric { fat_tree { oversubscription: 0.5 } } })";
  t.parallel = "parallel { tensor: 5 pipeline: 1 data: 32 }";
  t.strategy = R"(strategy { pipeline_schedule: "no-such-schedule" zero_stage: 7 recompute: "some" })";
  auto d = errors(t.load());
  std::vector<std::string> fields;
  for (const auto& x : d) fields.push_back(x.field);
  EXPECT_EQ(fields, (std::vector<std::string>{
                        "model.num_query_groups", "training.global_batch_size", "training.precision",
                        "cluster.fabric.fat_tree.oversubscription", "parallel.tensor", "parallel.data",
                        "strategy.pipeline_schedule", "strategy.zero_stage", "strategy.recompute"}))
      << all(d);
  for (std::size_t i = 1; i < d.size(); ++i) {
    EXPECT_LE(std::pair(d[i - 1].line, d[i - 1].column), std::pair(d[i].line, d[i].column));
  }
}

TEST(Collected, JsonReportsEverySemanticErrorToo) {
  Json j;
  j.training = R"("sequenceLength": -1, "globalBatchSize": 500)";
  j.parallel = R"("tensor": 5)";
  j.strategy = R"("zeroStage": 9)";
  auto d = errors(j.load());
  EXPECT_GE(d.size(), 4u) << all(d);
  EXPECT_THAT(lines(d), Contains("s.json: error: training.sequence_length: must be a positive integer, got -1"));
  EXPECT_THAT(lines(d), Contains("s.json: error: strategy.zero_stage: must be 0, 1, 2 or 3 (ZeRO stage: 1 shards "
                                 "optimizer states, 2 also gradients, 3 also parameters), got 9"));
}

// ---------------------------------------------------------------------------------------
// Robustness: any input gives a value or diagnostics, never a crash.

void expect_returns(const std::string& text, const std::string& file) {
  LoadResult r = load_text(text, file);
  if (const auto* d = std::get_if<std::vector<Diagnostic>>(&r)) {
    ASSERT_FALSE(d->empty());
    for (const auto& x : *d) {
      EXPECT_EQ(x.file, file);
      EXPECT_FALSE(x.message.empty());
      EXPECT_GE(x.line, 0);
      EXPECT_GE(x.column, 0);
    }
  }
}

TEST(Robustness, EveryPrefixOfTheExamplesLoadsOrFails) {
  for (const char* name : {"gpt3-175b-a100-1024.textproto", "gpt3-175b-a100-1024.json"}) {
    std::string text = read(example(name));
    ASSERT_FALSE(text.empty());
    for (std::size_t n = 0; n <= text.size(); ++n) expect_returns(text.substr(0, n), name);
  }
}

TEST(Robustness, ByteMutationsOfTheExamplesLoadOrFail) {
  std::mt19937 rng(20240601);
  std::string interesting = "{}[]<>:\"'#\\,-.0123456789eEx \n\t\x7f\xff";
  interesting += '\0';
  for (const char* name : {"gpt3-175b-a100-1024.textproto", "gpt3-175b-a100-1024.json"}) {
    const std::string original = read(example(name));
    for (int i = 0; i < 1500; ++i) {
      std::string text = original;
      int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        std::size_t at = rng() % text.size();
        switch (rng() % 4) {
          case 0: text[at] = interesting[rng() % interesting.size()]; break;
          case 1: text[at] = static_cast<char>(rng() % 256); break;
          case 2: text.erase(at, 1 + rng() % 8); break;
          default: text.insert(at, text.substr(rng() % text.size(), 1 + rng() % 16)); break;
        }
      }
      expect_returns(text, name);
    }
  }
}

TEST(Robustness, HostileInputs) {
  std::string deep_text;
  std::string deep_json;
  for (int i = 0; i < 100000; ++i) {
    deep_text += "a { ";
    deep_json += "{\"a\": ";
  }
  auto d = errors(load_text(deep_text, "deep.textproto"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_THAT(d[0].str(), HasSubstr("deep.textproto:1:"));
  EXPECT_THAT(d[0].message, HasSubstr("nested more than 16 levels deep"));
  expect_returns(deep_json, "deep.json");
  expect_returns(std::string(100000, '['), "deep.json");
  expect_returns("model { preset: \"" + std::string(1 << 20, 'x') + "\" }", "long.textproto");
  expect_returns("model { family: " + std::string(1 << 20, 'x') + " }", "long.textproto");
  expect_returns("{\"model\": {\"family\": \"" + std::string(1 << 20, 'x') + "\"}}", "long.json");
  expect_returns("{\"model\": {\"" + std::string(1 << 20, 'x') + "\": 1}}", "long.json");
  // What a message quotes from the input is cut, so that a message stays readable.
  Text long_preset;
  long_preset.model = "model { preset: \"" + std::string(1 << 20, 'x') + "\" }";
  d = errors(long_preset.load());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_THAT(d[0].message, HasSubstr("unknown model preset \"" + std::string(80, 'x') + "…\""));
  EXPECT_LT(d[0].str().size(), 2000u);
  d = errors(load_text("{\"model\": {\"" + std::string(1 << 20, 'y') + "\": 1}}", "long.json"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_LT(d[0].str().size(), 2000u);
  Text bytes;
  bytes.model = "model { preset: \"\xff\x01\" }";
  d = errors(bytes.load());
  ASSERT_EQ(d.size(), 1u);
  EXPECT_THAT(d[0].message, HasSubstr("unknown model preset \"\\xff\\x01\""));
  std::string many;
  for (int i = 0; i < 10000; ++i) many += "x" + std::to_string(i) + ": 1\n";
  d = errors(load_text(many, "many.textproto"));
  EXPECT_EQ(d.size(), 51u);
  EXPECT_EQ(d.back().message, "9950 more errors not shown");
  // Products of huge sizes overflow int64; they must be reported, not wrapped.
  Text t;
  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 4611686018427387904 })";
  t.parallel = "parallel { tensor: 4611686018427387904 pipeline: 4611686018427387904 data: 9223372036854775807 }";
  t.model = "model { num_layers: 9223372036854775807 hidden_size: 9223372036854775807 num_attention_heads: "
            "9223372036854775807 vocab_size: 1 }";
  t.training = "training { sequence_length: 9223372036854775807 global_batch_size: 9223372036854775807 "
               "micro_batch_size: 9223372036854775807 }";
  expect_returns(t.str(), "huge.textproto");
  t.parallel = "parallel { pipeline: 3 virtual_stages: 9223372036854775807 }";
  t.cluster = R"(cluster { preset: "dgx-h100" nodes: 3 })";
  t.model = "model { num_layers: 9223372036854775806 hidden_size: 64 num_attention_heads: 1 vocab_size: 1 }";
  expect_returns(t.str(), "huge.textproto");
}

TEST(RuleParallel, UnevenSplitMustLeaveAnEvenShareForTheMiddleStages) {
  Text t;
  t.parallel = "parallel { pipeline: 4 data: 8 first_stage_layers: 3 }";
  t.training = "training { sequence_length: 2048 global_batch_size: 64 }";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_NE(d[0].str().find("parallel.first_stage_layers: first_stage_layers=3 and last_stage_layers=6 leave 15 of "
                            "num_layers=24 for the 2 middle stages, which must split them evenly"),
            std::string::npos)
      << d[0].str();
  t.parallel = "parallel { pipeline: 4 data: 8 first_stage_layers: 5 last_stage_layers: 5 }";
  auto ok = loaded(t.load());
  EXPECT_EQ(ok.training.layout.first_stage_layers, 5);
  EXPECT_EQ(ok.training.layout.last_stage_layers, 5);
}

TEST(RulePlanning, TokensAndPriceMustBePositive) {
  Text t;
  t.extra = "planning { train_tokens: -5 price_per_gpu_hour: 0 }";
  auto d = errors(t.load());
  EXPECT_THAT(lines(d), Contains(HasSubstr("planning.train_tokens: must be a number of tokens from one iteration's (global_batch_size × "
                                           "sequence_length = 1048576) to 1e+18, got -5")));
  EXPECT_THAT(lines(d), Contains(HasSubstr("planning.price_per_gpu_hour: must be a positive price per GPU-hour of at most 1e+06, got 0")));
}

TEST(RuleStrategy, InterleavingNeedsItsScheduleAndWholeGroupsOfMicroBatches) {
  Text t;
  t.parallel = "parallel { pipeline: 4 data: 8 virtual_stages: 2 }";
  t.training = "training { sequence_length: 2048 global_batch_size: 48 }";
  t.strategy = R"(strategy { pipeline_schedule: "interleaved-1f1b" })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].field, "strategy.pipeline_schedule");
  EXPECT_THAT(d[0].message, HasSubstr("interleaved-1f1b needs the micro-batches per pipeline, global_batch_size / "
                                      "(micro_batch_size × data) = 6, to be a multiple of pipeline=4 (nearest valid "
                                      "global_batch_size: 32, 64)"));
  t.strategy = R"(strategy { pipeline_schedule: "1f1b" })";
  t.training = "training { sequence_length: 2048 global_batch_size: 64 }";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].message, HasSubstr("schedule \"1f1b\" cannot run virtual_stages=2"));
}

}  // namespace
}  // namespace trainsim::scenarios

// ---------------------------------------------------------------------------------------
// strategy.passes: the pipeline written out; recompute policies' parameter messages.

namespace trainsim::scenarios {
namespace {

TEST(RulePasses, AWrittenPipelineLoadsIntoTheSpec) {
  Text t;
  t.parallel = "parallel { tensor: 2 pipeline: 2 sequence_parallel: true }";
  t.strategy = R"x(strategy { passes: "tensor(2,sp),pipeline(2),data(8),zero(1),recompute(every-k,k=3),overlap-param-gather,gpipe" })x";
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(s.training.zero_stage, 1);
  EXPECT_EQ(s.training.pipeline_schedule, "gpipe");
  EXPECT_TRUE(s.training.overlap_param_gather);
  EXPECT_EQ(strategies::to_string(s.training.passes),
            "tensor(2,sp),pipeline(2),data(8),zero(1),recompute(every-k,k=3),overlap-param-gather,gpipe");
}

TEST(RulePasses, ErrorsPointInsideTheString) {
  Text t;
  // column 21 is the string's first character
  t.strategy = R"x(strategy { passes: "tensor(1),pipeline(1),data(32),1f1b,recompute(full)" })x";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:5:57: error: strategy.passes: recompute(full) must run before 1f1b (it reshapes "
                        "what the schedule pass works from); move it earlier");
  t.strategy = R"x(strategy { passes: "tensor(1),pipeline(1),data(32),1f1b,recompute(ful)" })x";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), StartsWith("s.textproto:5:67: error: strategy.passes: recompute: unknown variant \"ful\" "
                                     "(valid: selective, full"));
  t.strategy = R"x(strategy { passes: "tensor(1), pipeline(1)" })x";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), StartsWith("s.textproto:5:31: error: strategy.passes: expected a pass name, found a space (the "
                                     "pipeline string has none) (registered passes: tensor, pipeline, data, zero"));
}

TEST(RulePasses, ExclusiveWithTheStrategyFieldsAndAgreeingWithTheParallelBlock) {
  Text t;
  t.strategy = R"x(strategy { zero_stage: 1 passes: "tensor(1),pipeline(1),data(32),1f1b" })x";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), StartsWith("s.textproto:5:12: error: strategy.zero_stage: cannot be combined with "
                                     "strategy.passes"));
  t.strategy = R"x(strategy { passes: "tensor(2),pipeline(1),data(32),1f1b" })x";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:5:21: error: strategy.passes: tensor(2) disagrees with parallel.tensor = 1: the "
                        "parallel block sizes the cluster, and the layout passes must say the same");
}

TEST(RulePasses, RecomputeParametersComeFromTheirMessage) {
  Text t;
  t.strategy = R"x(strategy { recompute: "every-k" recompute_every_k { k: 4 } })x";
  LoadedScenario s = loaded(t.load());
  EXPECT_EQ(strategies::to_string(s.training.passes), "tensor(1),pipeline(1),data(32),recompute(every-k,k=4),1f1b");
  // The spec's fields say it too (what sweep rows and the memory bound read).
  EXPECT_EQ(s.training.recompute, strategies::Recompute::EVERY_K);
  EXPECT_EQ(s.training.recompute_k, 4);
  // So the memory bound knows its activations, and those of the same pipeline written out;
  // a pipeline its fields do not say (here an overlap before the recompute, an order
  // pipeline_for does not write) gets no activation bound.
  const double every_4 = stage_activation_lower_bound_bytes(s.training);
  EXPECT_GT(every_4, 0.0);
  t.strategy = R"x(strategy { recompute: "full" })x";
  EXPECT_NE(stage_activation_lower_bound_bytes(loaded(t.load()).training), every_4);
  t.strategy = R"x(strategy { passes: "tensor(1),pipeline(1),data(32),recompute(every-k,k=4),1f1b" })x";
  EXPECT_EQ(stage_activation_lower_bound_bytes(loaded(t.load()).training), every_4);
  t.strategy =
      R"x(strategy { passes: "tensor(1),pipeline(1),data(32),overlap-grad-reduce,recompute(every-k,k=4),1f1b" })x";
  EXPECT_EQ(stage_activation_lower_bound_bytes(loaded(t.load()).training), 0.0);
  t.strategy = R"x(strategy { recompute: "every-k" recompute_every_k { k: 0 } })x";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:5:33: error: strategy.recompute_every_k: recompute(every-k,k=…): k=0 is not an "
                        "integer ≥ 1");
  t.strategy = R"x(strategy { recompute: "every-k" })x";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), "s.textproto:5:12: error: strategy.recompute: recompute(every-k,k=…): missing k (an integer "
                        "≥ 1) (its parameters go in recompute_every_k { … })");
  t.strategy = R"x(strategy { recompute: "full" recompute_every_k { k: 2 } })x";
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].str(), StartsWith("s.textproto:5:30: error: strategy.recompute_every_k: parameters of recompute "
                                     "\"every-k\", but recompute is \"full\""));
}

TEST(RulePasses, ExamplesEchoAPipelineThatParsesBackAndVerifies) {
  const std::string dir = std::string(std::getenv("TRAINSIM_SOURCE_DIR") ? std::getenv("TRAINSIM_SOURCE_DIR")
                                                                         : TRAINSIM_TEST_SOURCE_DIR) +
                          "/scenarios/examples/";
  for (const char* name : {"gpt-1.7b-a100-32.textproto", "gpt3-175b-a100-1024.textproto",
                           "gpt3-175b-a100-1024.json", "llama3-70b-h100-512.textproto"}) {
    SCOPED_TRACE(name);
    LoadedScenario s = loaded(load_file(dir + name));
    const strategies::Program p = strategies::build_program(s.training, strategies::BuildOptions{true});
    const std::string text = p.pipeline_string();
    auto parsed = strategies::parse_pipeline(text);
    ASSERT_TRUE(std::holds_alternative<strategies::Pipeline>(parsed)) << text;
    EXPECT_TRUE(strategies::check_pipeline(std::get<strategies::Pipeline>(parsed)).empty()) << text;
    EXPECT_EQ(strategies::canonical(std::get<strategies::Pipeline>(parsed)),
              strategies::canonical(strategies::pipeline_for(s.training)));
    EXPECT_EQ(strategies::to_string(std::get<strategies::Pipeline>(parsed)), text);
  }
}

// ---------------------------------------------------------------------------------------
// cluster.profile: a GPU cost profile file, such as `trainsim calibrate` writes.

std::string profile_text(const std::string& base, const std::string& name) {
  hardware::GpuProfile p = *hardware::find_profile(base);
  p.set_name(name);
  std::string text;
  google::protobuf::TextFormat::PrintToString(p, &text);
  return text;
}

// The column (1-based) where `field` starts in `line`.
int column_of(const std::string& line, const std::string& field) { return static_cast<int>(line.find(field)) + 1; }

TEST(RuleProfileFile, RelativeFileReplacesThePresetsGpuProfile) {
  TempDir dir;
  const std::string profile = dir.write("profiles/my-a100.textproto", profile_text("a100-80gb", "my-a100"));
  Text t;
  t.cluster = R"(cluster { preset: "dgx-a100-80gb" nodes: 4 profile: "../profiles/my-a100.textproto" })";
  const std::string scenario = dir.write("scenarios/s.textproto", t.str());
  LoadedScenario s = loaded(load_file(scenario));
  EXPECT_EQ(s.gpu.name(), "my-a100");
  EXPECT_EQ(s.cluster.gpu, "my-a100");
  EXPECT_EQ(s.cluster.gpus_per_node, 8);  // the node preset still gives the node
  const std::string shown = dir.str() + "/scenarios/../profiles/my-a100.textproto";
  EXPECT_THAT(s.notes, Contains("cluster.profile: GPU profile \"my-a100\" read from " + shown));
  EXPECT_THAT(s.inputs, Contains(shown));
  // From another working directory, by a relative scenario path: the same file.
  WorkingDirectory cwd(dir.str());
  EXPECT_EQ(loaded(load_file("scenarios/s.textproto")).gpu.name(), "my-a100");
}

TEST(RuleProfileFile, WithoutAPresetTheFileNamesTheGpu) {
  TempDir dir;
  dir.write("h100.textproto", profile_text("h100-sxm", "lab-h100"));
  Text t;
  t.cluster = R"(cluster { profile: "h100.textproto" gpus_per_node: 8 nodes: 4 fabric { fat_tree { nic_gbps: 400 } } })";
  LoadedScenario s = loaded(load_file(dir.write("s.textproto", t.str())));
  EXPECT_EQ(s.gpu.name(), "lab-h100");
  EXPECT_EQ(s.cluster.gpus_per_node, 8);
  // Without gpus_per_node the rule for a cluster without a preset still holds.
  t.cluster = R"(cluster { profile: "h100.textproto" nodes: 4 fabric { fat_tree { nic_gbps: 400 } } })";
  auto d = errors(load_file(dir.write("t.textproto", t.str())));
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].field, "cluster.gpus_per_node");
}

TEST(RuleProfileFile, MissingOrUnreadableFileNamesThePathAndTheField) {
  Text t;
  t.cluster = R"(cluster { preset: "dgx-a100-80gb" nodes: 4 profile: "nope.textproto" })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), fmt::format("s.textproto:3:{}: error: cluster.profile: cannot read GPU profile "
                                    "\"nope.textproto\": No such file or directory (a relative profile is read from "
                                    "the scenario file's folder)",
                                    column_of(t.cluster, "profile")));
  TempDir dir;
  t.cluster = fmt::format(R"(cluster {{ preset: "dgx-a100-80gb" nodes: 4 profile: "{}" }})", dir.str());
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), fmt::format("s.textproto:3:{}: error: cluster.profile: cannot read GPU profile \"{}\": Is a "
                                    "directory",
                                    column_of(t.cluster, "profile"), dir.str()));
}

TEST(RuleProfileFile, InvalidProfileIsAnErrorWithTheProfilesOwnPosition) {
  TempDir dir;
  // Line 2 of the profile: a field the schema does not have.
  const std::string bad = dir.write("bad.textproto", "name: \"x\"\npeak_bf16_tflops: 3\n");
  // A profile that parses but leaves a constant without its citation.
  std::string text = profile_text("a100-80gb", "uncited");
  hardware::GpuProfile p;
  google::protobuf::TextFormat::ParseFromString(text, &p);
  p.mutable_hbm_bytes_per_s()->clear_source();
  google::protobuf::TextFormat::PrintToString(p, &text);
  const std::string uncited = dir.write("uncited.textproto", text);
  Text t;
  t.cluster = fmt::format(R"(cluster {{ preset: "dgx-a100-80gb" nodes: 4 profile: "{}" }})", bad);
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].field, "cluster.profile");
  EXPECT_EQ(d[0].line, 3);
  EXPECT_THAT(d[0].message, HasSubstr("not a valid GPU profile (hardware/profile.proto):\n" + bad + ":2:"));
  EXPECT_THAT(d[0].message, HasSubstr("peak_bf16_tflops"));
  t.cluster = fmt::format(R"(cluster {{ preset: "dgx-a100-80gb" nodes: 4 profile: "{}" }})", uncited);
  d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_THAT(d[0].message, HasSubstr(uncited + ":"));
  EXPECT_THAT(d[0].message, HasSubstr("hbm_bytes_per_s"));
}

TEST(RuleProfileFile, ConflictsWithClusterGpu) {
  Text t;
  t.cluster = R"(cluster { gpu: "h100-sxm" gpus_per_node: 8 nodes: 4 fabric { fat_tree { nic_gbps: 400 } } profile: "p.textproto" })";
  auto d = errors(t.load());
  ASSERT_EQ(d.size(), 1u) << all(d);
  EXPECT_EQ(d[0].str(), fmt::format("s.textproto:3:{}: error: cluster.profile: conflicts with cluster.gpu "
                                    "\"h100-sxm\": a profile file replaces the named GPU profile; keep one of them",
                                    column_of(t.cluster, "profile")));
}

}  // namespace
}  // namespace trainsim::scenarios
