// A runs-table row becomes a scenario (scenarios/run_row.hpp): each cell the field it stands
// for, each empty cell its documented default (named), and the scenario rules decide whether
// the row can be built — the same rules, and the same messages, as a scenario file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenarios/run_row.hpp"

namespace trainsim::scenarios {
namespace {

using ::testing::HasSubstr;

// A small GPT on two A100 nodes: every cell with a default is left empty.
RunRow small_row() {
  RunRow r;
  r.line = 7;
  r.name = "small";
  r.family = models::Family::GPT;
  r.layers = 4;
  r.hidden = 512;
  r.heads = 8;
  r.kv_heads = 8;
  r.ffn = 2048;
  r.vocab = 1024;
  r.seq = 512;
  r.gpu = "a100-80gb";
  r.gpus = 16;
  r.gpus_per_node = 8;
  r.nic_gbps = 200;
  r.tp = 2;
  r.pp = 2;
  r.global_batch = 16;
  r.metric = "iteration_time_s";
  r.value = 0.5;
  return r;
}

const LoadedScenario& loaded(const LoadedRow& row) {
  if (const auto* problems = std::get_if<std::vector<Diagnostic>>(&row.scenario)) {
    std::string all;
    for (const auto& d : *problems) all += d.str() + "\n";
    ADD_FAILURE() << all;
    static const LoadedScenario none;
    return none;
  }
  return std::get<LoadedScenario>(row.scenario);
}

// Every problem's line, joined.
std::string problems(const LoadedRow& row) {
  const auto* p = std::get_if<std::vector<Diagnostic>>(&row.scenario);
  if (p == nullptr) return "";
  std::string all;
  for (const auto& d : *p) all += d.str() + "\n";
  return all;
}

std::vector<std::string> default_columns(const LoadedRow& m) {
  std::vector<std::string> columns;
  for (const auto& d : m.defaults) columns.push_back(d.column);
  return columns;
}

const DefaultUsed* find_default(const LoadedRow& m, const std::string& column) {
  for (const auto& d : m.defaults)
    if (d.column == column) return &d;
  return nullptr;
}

TEST(RunRow, GptRowBecomesTheSpecAndCluster) {
  const LoadedRow m = load_row(small_row(), "t.csv");
  const LoadedScenario& s = loaded(m);
  const auto& model = s.training.model;
  EXPECT_EQ(s.proto.name(), "small");
  EXPECT_EQ(model.family, models::Family::GPT);
  EXPECT_EQ(model.layers, 4);
  EXPECT_EQ(model.hidden, 512);
  EXPECT_EQ(model.heads, 8);
  EXPECT_EQ(model.kv_heads, 8);
  EXPECT_EQ(model.ffn_hidden, 2048);
  EXPECT_EQ(model.vocab, 1024);
  EXPECT_TRUE(model.tied_embedding);
  EXPECT_EQ(model.max_positions, 512);
  EXPECT_EQ(s.training.sequence, 512);
  EXPECT_EQ(s.training.global_batch, 16);

  EXPECT_EQ(s.cluster.gpu, "a100-80gb");
  EXPECT_EQ(s.gpu.name(), "a100-80gb");
  EXPECT_EQ(s.cluster.nodes, 2);
  EXPECT_EQ(s.cluster.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(s.cluster.nic_gbps, 200);
  EXPECT_DOUBLE_EQ(s.cluster.oversubscription, 1.0);
  EXPECT_EQ(s.cluster.nodes_per_leaf, 32);

  EXPECT_EQ(s.training.layout.tensor, 2);
  EXPECT_EQ(s.training.layout.pipeline, 2);
  EXPECT_EQ(s.training.layout.data, 4);
}

TEST(RunRow, EveryEmptyCellTakesItsDefaultAndIsNamed) {
  const LoadedRow m = load_row(small_row(), "t.csv");
  EXPECT_EQ(default_columns(m),
            (std::vector<std::string>{"dp", "cp", "ep", "vpp", "first/last_stage_layers", "micro_batch", "recompute",
                                      "sequence_parallel", "zero_stage", "precision", "attention", "overlap"}));
  const auto& t = loaded(m).training;
  EXPECT_EQ(t.layout.data, 4);
  EXPECT_EQ(find_default(m, "dp")->str(), "dp=4 (derived: gpus / (tp × pp × cp) = 16 / (2 × 2 × 1))");
  EXPECT_EQ(t.layout.virtual_stages, 1);
  EXPECT_EQ(t.layout.first_stage_layers, 0);
  EXPECT_EQ(t.layout.last_stage_layers, 0);
  EXPECT_EQ(t.pipeline_schedule, "1f1b");
  EXPECT_EQ(t.micro_batch, 1);
  EXPECT_EQ(t.recompute, strategies::Recompute::NONE);
  EXPECT_FALSE(t.layout.sequence_parallel);
  EXPECT_EQ(t.zero_stage, 0);
  EXPECT_EQ(t.dtype, hardware::Dtype::BF16);
  EXPECT_TRUE(t.flash_attention);
  EXPECT_FALSE(t.overlap_grad_reduce || t.overlap_param_gather || t.overlap_tp_comm);
  EXPECT_EQ(find_default(m, "precision")->str(), "precision=bf16");
  EXPECT_EQ(find_default(m, "recompute")->str(), "recompute=none");
  EXPECT_EQ(find_default(m, "zero_stage")->str(), "zero_stage=0");
  EXPECT_THAT(find_default(m, "attention")->str(), HasSubstr("attention=flash"));
}

TEST(RunRow, StatedCellsAreUsedAndNotNamedAsDefaults) {
  RunRow r = small_row();
  r.layers = 8;
  r.dp = 4;
  r.cp = 1;
  r.ep = 1;
  r.vpp = 2;
  r.micro_batch = 2;
  r.recompute = strategies::Recompute::SELECTIVE;
  r.sequence_parallel = true;
  r.zero_stage = 1;
  r.precision = hardware::Dtype::FP16;
  r.flash_attention = false;
  r.overlap = Overlap{true, true, true};
  const LoadedRow m = load_row(r, "t.csv");
  EXPECT_EQ(default_columns(m), std::vector<std::string>{"first/last_stage_layers"});
  const auto& t = loaded(m).training;
  EXPECT_EQ(t.layout.data, 4);
  EXPECT_EQ(t.layout.virtual_stages, 2);
  EXPECT_EQ(t.pipeline_schedule, "interleaved-1f1b");
  EXPECT_EQ(t.micro_batch, 2);
  EXPECT_EQ(t.recompute, strategies::Recompute::SELECTIVE);
  EXPECT_TRUE(t.layout.sequence_parallel);
  EXPECT_EQ(t.zero_stage, 1);
  EXPECT_EQ(t.dtype, hardware::Dtype::FP16);
  EXPECT_FALSE(t.flash_attention);
  EXPECT_TRUE(t.overlap_grad_reduce && t.overlap_param_gather && t.overlap_tp_comm);
}

TEST(RunRow, UnevenPipelineSplitComesFromItsColumns) {
  RunRow r = small_row();
  r.layers = 10;
  r.pp = 4;
  r.gpus = 8;
  r.global_batch = 8;
  r.first_stage_layers = 1;
  r.last_stage_layers = 3;
  const LoadedRow m = load_row(r, "t.csv");
  EXPECT_EQ(find_default(m, "first/last_stage_layers"), nullptr);
  const auto& t = loaded(m).training;
  EXPECT_EQ(t.layout.first_stage_layers, 1);
  EXPECT_EQ(t.layout.last_stage_layers, 3);
  // 10 − 1 − 3 = 6 layers do not split evenly over 4 stages' middle... they do over the 2
  // middle stages (3 each); 7 would not:
  r.layers = 11;
  EXPECT_THAT(problems(load_row(r, "t.csv")), HasSubstr("t.csv:7: error: column \"first_stage_layers\""));
}

TEST(RunRow, LlamaIsUntiedWithoutPositionTable) {
  RunRow r = small_row();
  r.family = models::Family::LLAMA;
  r.kv_heads = 2;
  r.ffn = 1376;
  const LoadedRow m = load_row(r, "t.csv");
  const auto& model = loaded(m).training.model;
  EXPECT_EQ(model.family, models::Family::LLAMA);
  EXPECT_FALSE(model.tied_embedding);
  EXPECT_EQ(model.max_positions, 0);
  EXPECT_EQ(model.kv_heads, 2);
  EXPECT_EQ(model.ffn_hidden, 1376);
}

TEST(RunRow, ParamGatherOverlapDefaultsZeroStageToOneAndSaysWhy) {
  RunRow r = small_row();
  r.overlap = Overlap{false, true, false};
  const LoadedRow m = load_row(r, "t.csv");
  EXPECT_EQ(loaded(m).training.zero_stage, 1);
  EXPECT_TRUE(loaded(m).training.overlap_param_gather);
  const DefaultUsed* d = find_default(m, "zero_stage");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->value, "1");
  EXPECT_THAT(d->why, HasSubstr("distributed optimizer"));
  EXPECT_EQ(find_default(m, "overlap"), nullptr);
}

TEST(RunRow, TpOverlapImpliesSequenceParallelAndSaysWhy) {
  RunRow r = small_row();
  r.overlap = Overlap{false, false, true};
  const LoadedRow m = load_row(r, "t.csv");
  EXPECT_TRUE(loaded(m).training.layout.sequence_parallel);
  EXPECT_THAT(find_default(m, "sequence_parallel")->str(), HasSubstr("sequence_parallel=1 (overlap has tp_comm"));
}

TEST(RunRow, GpuWithoutProfileIsRefusedByTheScenarioRule) {
  RunRow r = small_row();
  r.gpu = "no-such-gpu";
  EXPECT_THAT(problems(load_row(r, "t.csv")),
              HasSubstr("t.csv:7: error: column \"gpu\" (cluster.gpu): unknown GPU profile"));
  // Every GPU the runs table names has a shipped profile.
  for (const char* gpu : {"v100-32gb", "a100-40gb", "a100-80gb", "h100-sxm", "h800", "h200", "b200"}) {
    r.gpu = gpu;
    EXPECT_EQ(problems(load_row(r, "t.csv")), "") << gpu;
  }
}

TEST(RunRow, ContextAndExpertParallelismAreRefusedByTheScenarioRule) {
  RunRow r = small_row();
  r.cp = 2;
  r.dp = 2;  // tp × pp × cp × dp = 16
  EXPECT_THAT(problems(load_row(r, "t.csv")), HasSubstr("column \"cp\" (parallel.context)"));
  r = small_row();
  r.ep = 4;
  EXPECT_THAT(problems(load_row(r, "t.csv")), HasSubstr("column \"ep\" (parallel.expert)"));
}

TEST(RunRow, InconsistentLayoutIsRefusedNamingTheColumn) {
  RunRow r = small_row();
  r.dp = 3;
  EXPECT_THAT(problems(load_row(r, "t.csv")), HasSubstr("column \"dp\" (parallel.data)"));
  r = small_row();
  r.tp = 3;
  r.gpus = 24;
  EXPECT_THAT(problems(load_row(r, "t.csv")), HasSubstr("column \"tp\" (parallel.tensor)"));
  r = small_row();
  r.global_batch = 6;
  EXPECT_THAT(problems(load_row(r, "t.csv")), HasSubstr("column \"global_batch\" (training.global_batch_size)"));
  r = small_row();
  r.gpus = 12;
  EXPECT_THAT(problems(load_row(r, "t.csv")),
              HasSubstr("t.csv:7: error: column \"gpus\": gpus=12 is not a multiple of gpus_per_node=8"));
  r = small_row();
  r.vpp = 4;
  EXPECT_THAT(problems(load_row(r, "t.csv")), HasSubstr("column \"vpp\" (parallel.virtual_stages)"));
  r = small_row();
  r.gpus = 0;  // only a RunRow built by code can hold this; the reader rejects it
  EXPECT_NE(problems(load_row(r, "t.csv")), "");
}

TEST(RunRow, ParamGatherWithZeroStageZeroIsRefused) {
  RunRow r = small_row();
  r.overlap = Overlap{false, true, false};
  r.zero_stage = 0;
  EXPECT_THAT(problems(load_row(r, "t.csv")), HasSubstr("t.csv:7: error: column \"overlap\""));
}

TEST(RunRow, Fp8OnAGpuWithoutFp8TensorCoresIsRefused) {
  RunRow r = small_row();
  r.precision = hardware::Dtype::FP8;
  EXPECT_THAT(problems(load_row(r, "t.csv")), HasSubstr("column \"precision\" (training.precision): FP8 needs FP8"));
  r.gpu = "h100-sxm";
  EXPECT_EQ(problems(load_row(r, "t.csv")), "");
}

TEST(RunRow, HelpNamesEveryDefault) {
  const std::string help = row_defaults_help();
  for (const char* d : {"dp ", "cp, ep", "vpp ", "first_stage_layers", "micro_batch ", "recompute ",
                        "sequence_parallel ", "zero_stage ", "precision ", "attention ", "overlap ", "param_gather",
                        "bf16"})
    EXPECT_THAT(help, HasSubstr(d));
}

}  // namespace
}  // namespace trainsim::scenarios
