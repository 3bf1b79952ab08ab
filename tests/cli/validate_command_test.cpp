// `trainsim validate`: a row → the run's spec (with the defaults named), and the command on
// small inline tables.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/validate_command.hpp"
#include "strategies/registry.hpp"

namespace trainsim::cli {
namespace {

using ::testing::HasSubstr;

// A small GPT on one A100 node: every cell with a default is left empty.
RunRow small_row() {
  RunRow r;
  r.line = 2;
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

std::vector<std::string> default_columns(const MappedRow& m) {
  std::vector<std::string> columns;
  for (const auto& d : m.defaults) columns.push_back(d.column);
  return columns;
}

const DefaultUsed* find_default(const MappedRow& m, const std::string& column) {
  for (const auto& d : m.defaults)
    if (d.column == column) return &d;
  return nullptr;
}

// ---- mapping ----

TEST(MapRow, GptRowBecomesTheSpecAndCluster) {
  const MappedRow m = map_row(small_row());
  ASSERT_TRUE(m.skip_reasons.empty()) << m.skip_reasons.front();
  const auto& model = m.training.model;
  EXPECT_EQ(model.name, "small");
  EXPECT_EQ(model.family, models::Family::GPT);
  EXPECT_EQ(model.layers, 4);
  EXPECT_EQ(model.hidden, 512);
  EXPECT_EQ(model.heads, 8);
  EXPECT_EQ(model.kv_heads, 8);
  EXPECT_EQ(model.ffn_hidden, 2048);
  EXPECT_EQ(model.vocab, 1024);
  EXPECT_TRUE(model.tied_embedding);
  EXPECT_EQ(model.max_positions, 512);
  EXPECT_EQ(m.training.sequence, 512);
  EXPECT_EQ(m.training.global_batch, 16);

  EXPECT_EQ(m.cluster.gpu, "a100-80gb");
  ASSERT_TRUE(m.gpu.has_value());
  EXPECT_EQ(m.gpu->name(), "a100-80gb");
  EXPECT_EQ(m.cluster.nodes, 2);
  EXPECT_EQ(m.cluster.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(m.cluster.nic_gbps, 200);
  EXPECT_DOUBLE_EQ(m.cluster.oversubscription, 1.0);
  EXPECT_EQ(m.cluster.nodes_per_leaf, 32);

  EXPECT_EQ(m.training.layout.tensor, 2);
  EXPECT_EQ(m.training.layout.pipeline, 2);
  EXPECT_EQ(m.training.layout.data, 4);
}

TEST(MapRow, EveryEmptyCellTakesItsDefaultAndIsNamed) {
  const MappedRow m = map_row(small_row());
  EXPECT_EQ(default_columns(m), (std::vector<std::string>{"dp", "cp", "ep", "vpp", "micro_batch", "recompute",
                                                          "sequence_parallel", "attention", "zero_stage", "precision",
                                                          "overlap"}));
  const auto& t = m.training;
  EXPECT_EQ(t.layout.data, 4);
  EXPECT_THAT(find_default(m, "dp")->str(), HasSubstr("dp=4 (derived: gpus / (tp × pp) = 16 / (2 × 2))"));
  EXPECT_EQ(t.layout.virtual_stages, 1);
  EXPECT_EQ(t.pipeline_schedule, "1f1b");
  EXPECT_EQ(t.micro_batch, 1);
  EXPECT_EQ(t.recompute, strategies::Recompute::NONE);
  EXPECT_FALSE(t.layout.sequence_parallel);
  EXPECT_EQ(t.zero_stage, 0);
  EXPECT_EQ(t.dtype, hardware::Dtype::BF16);
  EXPECT_FALSE(t.overlap_grad_reduce || t.overlap_param_gather || t.overlap_tp_comm);
  EXPECT_EQ(find_default(m, "precision")->str(), "precision=bf16");
  EXPECT_EQ(find_default(m, "recompute")->str(), "recompute=none");
  EXPECT_EQ(find_default(m, "zero_stage")->str(), "zero_stage=0");
}

TEST(MapRow, StatedCellsAreUsedAndNotNamedAsDefaults) {
  RunRow r = small_row();
  r.dp = 4;
  r.cp = 1;
  r.ep = 1;
  r.vpp = 2;
  r.micro_batch = 2;
  r.recompute = strategies::Recompute::SELECTIVE;
  r.sequence_parallel = true;
  r.zero_stage = 1;
  r.precision = hardware::Dtype::FP16;
  r.overlap = Overlap{true, true, true};
  const MappedRow m = map_row(r);
  ASSERT_TRUE(m.skip_reasons.empty()) << m.skip_reasons.front();
  // The attention kernel has no column: it is always derived, from the source's year.
  ASSERT_EQ(m.defaults.size(), 1u);
  EXPECT_EQ(m.defaults.front().column, "attention");
  const auto& t = m.training;
  EXPECT_EQ(t.layout.data, 4);
  EXPECT_EQ(t.layout.virtual_stages, 2);
  EXPECT_EQ(t.pipeline_schedule, "interleaved-1f1b");
  EXPECT_EQ(t.micro_batch, 2);
  EXPECT_EQ(t.recompute, strategies::Recompute::SELECTIVE);
  EXPECT_TRUE(t.layout.sequence_parallel);
  EXPECT_EQ(t.zero_stage, 1);
  EXPECT_EQ(t.dtype, hardware::Dtype::FP16);
  EXPECT_TRUE(t.overlap_grad_reduce && t.overlap_param_gather && t.overlap_tp_comm);
}

TEST(MapRow, LlamaIsUntiedWithoutPositionTable) {
  RunRow r = small_row();
  r.family = models::Family::LLAMA;
  r.kv_heads = 2;
  r.ffn = 1376;
  const MappedRow m = map_row(r);
  ASSERT_TRUE(m.skip_reasons.empty()) << m.skip_reasons.front();
  EXPECT_EQ(m.training.model.family, models::Family::LLAMA);
  EXPECT_FALSE(m.training.model.tied_embedding);
  EXPECT_EQ(m.training.model.max_positions, 0);
  EXPECT_EQ(m.training.model.kv_heads, 2);
  EXPECT_EQ(m.training.model.ffn_hidden, 1376);
}

TEST(MapRow, ParamGatherOverlapDefaultsZeroStageToOneAndSaysWhy) {
  RunRow r = small_row();
  r.overlap = Overlap{false, true, false};
  const MappedRow m = map_row(r);
  EXPECT_EQ(m.training.zero_stage, 1);
  EXPECT_TRUE(m.training.overlap_param_gather);
  const DefaultUsed* d = find_default(m, "zero_stage");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->value, "1");
  EXPECT_THAT(d->why, HasSubstr("distributed optimizer"));
  EXPECT_EQ(find_default(m, "overlap"), nullptr);
}

TEST(MapRow, ParamGatherWithZeroStageZeroIsInconsistent) {
  RunRow r = small_row();
  r.overlap = Overlap{false, true, false};
  r.zero_stage = 0;
  const MappedRow m = map_row(r);
  ASSERT_EQ(m.skip_reasons.size(), 1u);
  EXPECT_THAT(m.skip_reasons[0], HasSubstr("param_gather, which needs the distributed optimizer"));
}

// Every GPU the runs table names has a shipped profile (hardware/profiles/).
TEST(MapRow, EveryTableGpuHasAProfile) {
  for (const char* gpu : {"v100-32gb", "a100-40gb", "a100-80gb", "h100-sxm", "h800", "h200", "b200"}) {
    RunRow r = small_row();
    r.gpu = gpu;
    const MappedRow m = map_row(r);
    ASSERT_TRUE(m.gpu.has_value()) << gpu;
    EXPECT_EQ(m.gpu->name(), gpu);
    EXPECT_TRUE(m.skip_reasons.empty()) << gpu;
  }
}

TEST(MapRow, ContextAndExpertParallelismAreSkipped) {
  RunRow r = small_row();
  r.cp = 2;
  r.dp = 2;  // tp × pp × cp × dp = 16
  MappedRow m = map_row(r);
  ASSERT_EQ(m.skip_reasons.size(), 1u);
  EXPECT_EQ(m.skip_reasons[0], "context parallelism not built yet (cp=2)");

  r = small_row();
  r.ep = 4;
  m = map_row(r);
  ASSERT_EQ(m.skip_reasons.size(), 1u);
  EXPECT_EQ(m.skip_reasons[0], "expert parallelism not built yet (ep=4)");
  r.cp = 1;
  r.ep = 1;
  EXPECT_TRUE(map_row(r).skip_reasons.empty());
}

TEST(MapRow, InconsistentLayoutIsSkippedNamingTheColumns) {
  RunRow r = small_row();
  r.dp = 3;
  EXPECT_THAT(map_row(r).skip_reasons.at(0), HasSubstr("tp × pp × cp × dp = 2 × 2 × 1 × 3 = 12, but gpus=16"));
  r = small_row();
  r.tp = 3;
  r.gpus = 24;
  EXPECT_THAT(map_row(r).skip_reasons.at(0), HasSubstr("tp=3 does not divide heads=8"));
  r = small_row();
  r.global_batch = 6;
  EXPECT_THAT(map_row(r).skip_reasons.at(0), HasSubstr("global_batch=6 is not divisible by micro_batch × dp"));
  r = small_row();
  r.gpus = 12;
  EXPECT_THAT(map_row(r).skip_reasons.at(0), HasSubstr("gpus=12 is not a multiple of gpus_per_node=8"));
  r = small_row();
  r.vpp = 4;
  EXPECT_THAT(map_row(r).skip_reasons.at(0), HasSubstr("vpp=4 needs layers=4 divisible by pp × vpp = 8"));
  r = small_row();
  r.gpus = 0;  // only a RunRow built by code can hold this; the reader rejects it
  EXPECT_THAT(map_row(r).skip_reasons.at(0), HasSubstr("gpus=0"));
}

// ---- rows and the command ----

TEST(ValidateRow, RunsAndComparesWithTheMeasurement) {
  const RowOutcome o = validate_row(small_row(), strategies::Fidelity::FAST);
  ASSERT_TRUE(o.ran) << o.skip_reason;
  EXPECT_GT(o.predicted_s, 0);
  EXPECT_NEAR(o.error_pct, (o.predicted_s - 0.5) / 0.5 * 100, 1e-9);
  EXPECT_EQ(o.line, 2);
}

TEST(ValidateRow, RunThatCannotBeBuiltIsSkippedWithTheStrategiesReason) {
  RunRow r = small_row();
  r.zero_stage = 3;
  const RowOutcome o = validate_row(r, strategies::Fidelity::FAST);
  if (strategies::find_pass(strategies::PassInvocation{"zero", {{"", "3"}}}) != nullptr)
    GTEST_SKIP() << "zero(3) is implemented now";
  EXPECT_FALSE(o.ran);
  EXPECT_THAT(o.skip_reason, HasSubstr("zero: unknown variant \"3\""));
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

const char* HEADER =
    "name,source,family,layers,hidden,heads,kv_heads,ffn,vocab,seq,gpu,gpus,gpus_per_node,nic_gbps,tp,pp,dp,cp,ep,"
    "vpp,micro_batch,global_batch,recompute,sequence_parallel,zero_stage,precision,overlap,metric,value,notes\n";

// One row the simulator runs, one with a layout not built yet (context parallelism), one
// whose layout is wrong.
std::string inline_table() {
  return std::string(HEADER) +
         "small-a100,test,gpt,4,512,8,8,2048,1024,512,a100-80gb,16,8,200,2,2,,,,,,16,full,,,fp16,,"
         "iteration_time_s,0.5,\"run, with defaults\"\n"
         "small-cp,test,gpt,4,512,8,8,2048,1024,512,v100-32gb,16,8,100,2,2,2,2,1,1,1,16,none,0,0,fp16,none,"
         "iteration_time_s,0.9,cp not built\n"
         "small-bad,test,llama,4,512,8,8,1376,1024,512,h100-sxm,16,8,400,2,2,3,1,1,1,1,16,none,0,0,bf16,none,"
         "iteration_time_s,0.2,dp does not fit\n";
}

struct Outcome {
  int code;
  std::string out, err;
};

Outcome run_validate(const ValidateOptions& o) {
  std::ostringstream out, err;
  const int code = validate_command(o, out, err);
  return {code, out.str(), err.str()};
}

TEST(ValidateCommand, InlineTableListsRunAndSkippedRowsAndTheSummary) {
  ValidateOptions o;
  o.table_path = write_temp("trainsim_validate_inline.csv", inline_table());
  const Outcome r = run_validate(o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("(3 rows, fidelity fast)"));
  EXPECT_THAT(r.out, testing::ContainsRegex("small-a100 +0\\.5000 +[0-9]+\\.[0-9]{4} +[-+][0-9]+\\.[0-9]{2}%"));
  EXPECT_THAT(r.out, HasSubstr("    defaults: dp=4 (derived: gpus / (tp × pp) = 16 / (2 × 2)), cp=1, ep=1, vpp=1, "
                               "micro_batch=1, sequence_parallel=0, attention=flash (the source names no year: a "
                               "fused attention kernel, as current frameworks use), zero_stage=0, overlap=none\n"));
  EXPECT_THAT(r.out, HasSubstr("small-cp        0.9000  SKIPPED: context parallelism not built yet (cp=2)"));
  EXPECT_THAT(r.out, HasSubstr("small-bad       0.2000  SKIPPED: inconsistent row: tp × pp × cp × dp = 2 × 2 × 1 × 3 = "
                               "12, but gpus=16"));
  EXPECT_THAT(r.out, HasSubstr("rows run: 1, skipped: 2\n"));
  EXPECT_THAT(r.out, HasSubstr("over the 1 rows run\n"));
  EXPECT_THAT(r.out, HasSubstr("worst row: small-a100 ("));
  std::filesystem::remove(o.table_path);
}

TEST(ValidateCommand, OutputIsDeterministicAndJsonCarriesTheSameFigures) {
  ValidateOptions o;
  o.table_path = write_temp("trainsim_validate_json.csv", inline_table());
  o.json_path = (std::filesystem::temp_directory_path() / "trainsim_validate.json").string();
  const Outcome a = run_validate(o);
  ASSERT_EQ(a.code, 0) << a.err;
  std::ifstream f(o.json_path);
  const std::string first_json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const Outcome b = run_validate(o);
  std::ifstream g(o.json_path);
  const std::string second_json((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>());
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(first_json, second_json);

  const auto j = nlohmann::json::parse(first_json);
  EXPECT_EQ(j.at("schema_version"), VALIDATION_SCHEMA_VERSION);
  ASSERT_EQ(j.at("rows").size(), 3u);
  const auto& run = j.at("rows").at(0);
  EXPECT_EQ(run.at("status"), "run");
  EXPECT_GT(run.at("predicted_s").get<double>(), 0);
  EXPECT_EQ(run.at("defaults").at(0).at("column"), "dp");
  EXPECT_EQ(j.at("rows").at(1).at("status"), "skipped");
  EXPECT_THAT(j.at("rows").at(1).at("skip_reason").get<std::string>(), HasSubstr("context parallelism"));
  EXPECT_EQ(j.at("summary").at("rows_run"), 1);
  EXPECT_EQ(j.at("summary").at("rows_skipped"), 2);
  EXPECT_NEAR(j.at("summary").at("mape_pct").get<double>(), std::abs(run.at("error_pct").get<double>()), 1e-12);
  EXPECT_EQ(j.at("summary").at("worst").at("name"), "small-a100");
  std::filesystem::remove(o.table_path);
  std::filesystem::remove(o.json_path);
}

TEST(ValidateCommand, TableWithOnlySkippedRowsStillSucceeds) {
  ValidateOptions o;
  o.table_path = write_temp("trainsim_validate_skipped.csv",
                            std::string(HEADER) +
                                "only,test,gpt,4,512,8,8,2048,1024,512,b200,16,8,400,2,2,,2,,,,16,,,,,,"
                                "iteration_time_s,0.1,\n");
  const Outcome r = run_validate(o);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("rows run: 0, skipped: 1\n"));
  EXPECT_THAT(r.out, HasSubstr("mean absolute percentage error: n/a (no row ran)"));
  std::filesystem::remove(o.table_path);
}

TEST(ValidateCommand, BadTableExitsOneWithFileLineColumn) {
  ValidateOptions o;
  o.table_path = write_temp("trainsim_validate_bad.csv",
                            std::string(HEADER) +
                                "r,test,gpt,4,512,8,8,2048,1024,512,a100-80gb,16,8,200,2,2,,,,,,16,,,,,overlap_all,"
                                "iteration_time_s,0.1,\n");
  const Outcome r = run_validate(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr(o.table_path + ":2: error: column \"overlap\": unknown overlap \"overlap_all\""));
  std::filesystem::remove(o.table_path);
}

TEST(ValidateCommand, MissingTableAndUnwritableJsonAreErrors) {
  ValidateOptions o;
  o.table_path = "/nonexistent/runs.csv";
  Outcome r = run_validate(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/runs.csv: error: cannot read file"));

  o.table_path = write_temp("trainsim_validate_unwritable.csv", std::string(HEADER));
  o.json_path = "/nonexistent-dir/out.json";
  r = run_validate(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot open for writing"));
  std::filesystem::remove(o.table_path);
}

TEST(ValidateCommand, HelpNamesEveryDefault) {
  const std::string help = defaults_help();
  for (const char* d : {"dp ", "cp, ep", "vpp ", "micro_batch ", "recompute ", "sequence_parallel ", "zero_stage ",
                        "precision ", "overlap ", "param_gather", "bf16"})
    EXPECT_THAT(help, HasSubstr(d));
}

TEST(MapRow, AttentionFollowsTheSourceYearAndTpOverlapImpliesSequenceParallel) {
  RunRow r = small_row();
  r.source = "Narayanan et al. 2021 (SC21) Table 1";
  MappedRow m = map_row(r);
  EXPECT_FALSE(m.training.flash_attention);
  EXPECT_THAT(find_default(m, "attention")->str(), HasSubstr("attention=unfused (the source is from 2021"));
  r.source = "Megatron-LM README, 2024";
  r.overlap = Overlap{false, false, true};
  m = map_row(r);
  EXPECT_TRUE(m.training.flash_attention);
  EXPECT_TRUE(m.training.layout.sequence_parallel);
  EXPECT_THAT(find_default(m, "sequence_parallel")->str(), HasSubstr("sequence_parallel=1 (overlap has tp_comm"));
}

}  // namespace
}  // namespace trainsim::cli
