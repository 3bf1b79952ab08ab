// `trainsim validate`: a row → the run's spec (with the defaults named), and the command on
// small inline tables.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/validate_command.hpp"
#include "strategies/registry.hpp"

namespace trainsim::cli {
namespace {

using ::testing::HasSubstr;

// A small GPT on one A100 node: every cell with a default is left empty.
scenarios::RunRow small_row() {
  scenarios::RunRow r;
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

// ---- rows and the command ----

TEST(ValidateRow, RunsAndComparesWithTheMeasurement) {
  const RowOutcome o = validate_row(small_row(), "t.csv", strategies::Fidelity::FAST);
  ASSERT_TRUE(o.ran) << o.skip_reason;
  EXPECT_GT(o.predicted_s, 0);
  EXPECT_NEAR(o.error_pct, (o.predicted_s - 0.5) / 0.5 * 100, 1e-9);
  EXPECT_EQ(o.line, 2);
}

TEST(ValidateRow, RowTheScenarioRulesRefuseIsSkippedWithTheRule) {
  scenarios::RunRow r = small_row();
  r.tp = 3;
  r.gpus = 24;
  const RowOutcome o = validate_row(r, "t.csv", strategies::Fidelity::FAST);
  EXPECT_FALSE(o.ran);
  EXPECT_THAT(o.skip_reason, HasSubstr("column \"tp\" (parallel.tensor): "));
}

// ---- --unstated: the values an empty cell could hold ----

TEST(ValidateRow, EmptyCellsAreTriedWithEveryValueTheLayoutAllows) {
  // dp = 16 / (2 × 2) = 4 replicas of 16 / 4 = 4 sequences: micro-batches 2 and 4; two
  // stages of 2 layers: 2 virtual stages; recompute selective and full; tp 2 without
  // sequence parallelism: with it.
  const scenarios::RunRow row = small_row();
  const std::vector<UnstatedAlternative> alts = unstated_alternatives(row, "t.csv", strategies::Fidelity::FAST);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"micro_batch", "2"}, {"micro_batch", "4"}, {"vpp", "2"},
      {"recompute", "selective"}, {"recompute", "full"}, {"sequence_parallel", "1"}};
  ASSERT_EQ(alts.size(), expected.size());
  const RowOutcome by_default = validate_row(row, "t.csv", strategies::Fidelity::FAST);
  for (std::size_t i = 0; i < alts.size(); ++i) {
    EXPECT_EQ(alts[i].column, expected[i].first);
    EXPECT_EQ(alts[i].value, expected[i].second);
    ASSERT_TRUE(alts[i].ran) << alts[i].skip_reason;
    // The same prediction as the row with that cell written in, and not the default's.
    scenarios::RunRow stated = row;
    if (alts[i].column == "micro_batch") {
      stated.micro_batch = std::stoll(alts[i].value);
    } else if (alts[i].column == "vpp") {
      stated.vpp = std::stoll(alts[i].value);
    } else if (alts[i].column == "recompute") {
      stated.recompute = alts[i].value == "full" ? strategies::Recompute::FULL : strategies::Recompute::SELECTIVE;
    } else {
      stated.sequence_parallel = true;
    }
    const RowOutcome o = validate_row(stated, "t.csv", strategies::Fidelity::FAST);
    ASSERT_TRUE(o.ran) << o.skip_reason;
    EXPECT_DOUBLE_EQ(alts[i].predicted_s, o.predicted_s) << alts[i].column << "=" << alts[i].value;
    EXPECT_DOUBLE_EQ(alts[i].error_pct, o.error_pct);
    EXPECT_NE(alts[i].predicted_s, by_default.predicted_s) << alts[i].column << "=" << alts[i].value;
  }
}

TEST(ValidateRow, StatedCellsAndUnevenSplitsAreNotVaried) {
  scenarios::RunRow row = small_row();
  row.micro_batch = 1;
  row.vpp = 1;
  row.recompute = strategies::Recompute::NONE;
  row.sequence_parallel = false;
  EXPECT_TRUE(unstated_alternatives(row, "t.csv", strategies::Fidelity::FAST).empty());
  // An uneven split has no interleaving to try (its stages' layers differ).
  row = small_row();
  row.first_stage_layers = 1;
  row.last_stage_layers = 3;
  row.recompute = strategies::Recompute::NONE;
  row.sequence_parallel = false;
  const auto alts = unstated_alternatives(row, "t.csv", strategies::Fidelity::FAST);
  ASSERT_EQ(alts.size(), 2u);
  for (const auto& a : alts) EXPECT_EQ(a.column, "micro_batch");
  // Sequence parallelism that an overlap already forces on is not offered again.
  row = small_row();
  row.overlap = scenarios::Overlap{};
  row.overlap->tp_comm = true;
  for (const auto& a : unstated_alternatives(row, "t.csv", strategies::Fidelity::FAST))
    EXPECT_NE(a.column, "sequence_parallel");
  // A row that does not build has nothing to vary.
  row = small_row();
  row.tp = 3;
  row.gpus = 24;
  EXPECT_TRUE(unstated_alternatives(row, "t.csv", strategies::Fidelity::FAST).empty());
}

TEST(ValidateRow, MicroBatchesStopAtTheFirstThatDoesNotFit) {
  // A replica batch of 1,024 sequences of 8,192 tokens on a 40 GB A100: micro-batches
  // soon outgrow the memory, and the larger ones are not tried.
  scenarios::RunRow row = small_row();
  row.gpu = "a100-40gb";
  row.seq = 8192;
  row.global_batch = 4096;
  const auto alts = unstated_alternatives(row, "t.csv", strategies::Fidelity::FAST);
  std::vector<std::string> micro;
  for (const auto& a : alts)
    if (a.column == "micro_batch") micro.push_back(a.value);
  ASSERT_FALSE(micro.empty());
  ASSERT_LT(micro.size(), 10u) << "every power of two up to 1,024 was tried";
  const auto& last = *std::find_if(alts.rbegin(), alts.rend(), [](const auto& a) { return a.column == "micro_batch"; });
  EXPECT_TRUE(last.out_of_memory);
  for (const auto& a : alts) {
    if (a.column == "micro_batch" && &a != &last) {
      EXPECT_FALSE(a.out_of_memory) << a.value;
    }
  }
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

const char* HEADER =
    "name,source,family,layers,hidden,heads,kv_heads,ffn,vocab,seq,gpu,gpus,gpus_per_node,nic_gbps,tp,pp,dp,cp,ep,"
    "vpp,micro_batch,global_batch,recompute,sequence_parallel,zero_stage,precision,overlap,metric,value,notes\n";

// One row the simulator runs, one whose tensor split does not divide the FFN, one whose
// layout is wrong. (Every GPU the table names has a shipped profile.)
std::string inline_table() {
  return std::string(HEADER) +
         "small-a100,test,gpt,4,512,8,8,2048,1024,512,a100-80gb,16,8,200,2,2,,,,,,16,full,,,fp16,,"
         "iteration_time_s,0.5,\"run, with defaults\"\n"
         "small-v100,test,gpt,4,512,8,8,2047,1024,512,v100-32gb,16,8,100,2,2,4,1,1,1,1,16,none,0,0,fp16,none,"
         "iteration_time_s,0.9,ffn not split by tp\n"
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
  EXPECT_THAT(r.out, HasSubstr("    defaults: dp=4 (derived: gpus / (tp × pp × cp) = 16 / (2 × 2 × 1)), cp=1, ep=1, "
                               "vpp=1, first/last_stage_layers=even, micro_batch=1, sequence_parallel=0, zero_stage=0, "
                               "attention=flash (a fused attention kernel, as current frameworks run), overlap=none\n"));
  // Rows are checked by the scenario rules: the messages name the column and the field.
  EXPECT_THAT(r.out, HasSubstr("small-v100      0.9000  SKIPPED: column \"tp\" (parallel.tensor): tensor=2 does not "
                               "divide ffn_hidden_size=2047 (valid: 1)"));
  EXPECT_THAT(r.out, HasSubstr("small-bad       0.2000  SKIPPED: column \"dp\" (parallel.data): tensor × pipeline × "
                               "data = 2 × 2 × 3 = 12, but the cluster has 16 GPUs (2 nodes × 8)"));
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
  // Each row run carries its whole run report, breakdown included, to diagnose the error.
  EXPECT_NEAR(run.at("report").at("iteration").at("time_s").get<double>(), run.at("predicted_s").get<double>(), 1e-12);
  EXPECT_TRUE(run.at("report").contains("time_breakdown")) << run.at("report").dump();
  // Compute by kernel class, beside the exposed communication and the bubble: the classes
  // add up to compute + recompute.
  const auto& tb = run.at("report").at("time_breakdown");
  double classes = 0;
  for (const char* k : {"gemm", "attention", "memory_bound", "recompute", "overlap_slowdown"})
    classes += tb.at("compute_by_class_s").at(k).get<double>();
  EXPECT_NEAR(classes, tb.at("compute_s").get<double>() + tb.at("recompute_s").get<double>(), 1e-9);
  EXPECT_GT(tb.at("compute_by_class_s").at("gemm").get<double>(), 0);
  EXPECT_GT(run.at("predicted_s").get<double>(), 0);
  EXPECT_EQ(run.at("defaults").at(0).at("column"), "dp");
  EXPECT_EQ(j.at("rows").at(1).at("status"), "skipped");
  EXPECT_THAT(j.at("rows").at(1).at("skip_reason").get<std::string>(), HasSubstr("ffn_hidden_size=2047"));
  EXPECT_EQ(j.at("summary").at("rows_run"), 1);
  EXPECT_EQ(j.at("summary").at("rows_skipped"), 2);
  EXPECT_NEAR(j.at("summary").at("mape_pct").get<double>(), std::abs(run.at("error_pct").get<double>()), 1e-12);
  EXPECT_EQ(j.at("summary").at("worst").at("name"), "small-a100");
  std::filesystem::remove(o.table_path);
  std::filesystem::remove(o.json_path);
}

TEST(ValidateCommand, UnstatedListsTheAlternativesUnderTheRowAndKeepsTheMape) {
  ValidateOptions o;
  o.table_path = write_temp("trainsim_validate_alternatives.csv", inline_table());
  o.json_path = (std::filesystem::temp_directory_path() / "trainsim_validate_alternatives.json").string();
  const Outcome plain = run_validate(o);
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_THAT(plain.out, testing::Not(HasSubstr("unstated")));
  std::ifstream f(o.json_path);
  const auto plain_json = nlohmann::json::parse(f);
  EXPECT_FALSE(plain_json.at("rows").at(0).contains("unstated"));

  o.unstated = true;
  const Outcome with = run_validate(o);
  ASSERT_EQ(with.code, 0) << with.err;
  // Under the row's defaults, a line per empty cell varied (its recompute cell is not empty).
  EXPECT_THAT(with.out, testing::ContainsRegex("overlap=none\n    unstated micro_batch: 2 → [0-9]+\\.[0-9]{4} s "
                                               "\\([-+][0-9.]+%\\), 4 → [0-9]+\\.[0-9]{4} s \\([-+][0-9.]+%\\)\n"
                                               "    unstated vpp: 2 → [0-9]+\\.[0-9]{4} s \\([-+][0-9.]+%\\)\n"
                                               "    unstated sequence_parallel: 1 → [0-9]+\\.[0-9]{4} s \\([-+][0-9.]+%\\)\n"
                                               "small-v100"));
  // The summary still judges the documented defaults.
  const auto summary = [](const std::string& out) { return out.substr(out.find("rows run:")); };
  EXPECT_EQ(summary(with.out), summary(plain.out));
  std::ifstream g(o.json_path);
  const auto j = nlohmann::json::parse(g);
  const auto& alts = j.at("rows").at(0).at("unstated");
  // The row states its recompute (full): micro-batches 2 and 4, 2 virtual stages and
  // sequence parallelism are varied.
  ASSERT_EQ(alts.size(), 4u);
  EXPECT_EQ(alts.at(0).at("column"), "micro_batch");
  EXPECT_EQ(alts.at(0).at("value"), "2");
  EXPECT_EQ(alts.at(0).at("status"), "run");
  EXPECT_GT(alts.at(0).at("predicted_s").get<double>(), 0);
  EXPECT_EQ(alts.at(2).at("column"), "vpp");
  EXPECT_EQ(j.at("summary"), plain_json.at("summary"));
  // Skipped rows are not varied.
  EXPECT_FALSE(j.at("rows").at(1).contains("unstated"));
  std::filesystem::remove(o.table_path);
  std::filesystem::remove(o.json_path);
}

TEST(ValidateCommand, TableWithOnlySkippedRowsStillSucceeds) {
  ValidateOptions o;
  o.table_path = write_temp("trainsim_validate_skipped.csv",
                            std::string(HEADER) +
                                "only,test,gpt,4,512,8,8,2047,1024,512,b200,16,8,400,2,2,,,,,,16,,,,,,"
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

}  // namespace
}  // namespace trainsim::cli
