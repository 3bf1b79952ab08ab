// The runs-table reader: CSV syntax, the header, and one test per rule a cell must follow.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "scenarios/runs_table.hpp"

namespace trainsim::scenarios {
namespace {

using ::testing::HasSubstr;

// A valid row of the format; tests override single cells.
std::map<std::string, std::string> base_row() {
  return {{"name", "r1"},          {"family", "gpt"},         {"layers", "4"},    {"hidden", "512"},
          {"heads", "8"},          {"kv_heads", "8"},         {"ffn", "2048"},    {"vocab", "1024"},
          {"seq", "512"},          {"gpu", "a100-80gb"},      {"gpus", "8"},      {"gpus_per_node", "8"},
          {"nic_gbps", "200"},     {"tp", "2"},               {"pp", "2"},        {"dp", ""},
          {"cp", ""},              {"ep", ""},                {"vpp", ""},        {"micro_batch", ""},
          {"global_batch", "16"},  {"recompute", ""},         {"sequence_parallel", ""},
          {"zero_stage", ""},      {"precision", ""},         {"overlap", ""},    {"metric", "iteration_time_s"},
          {"value", "0.5"}};
}

// A table with the header in `columns` order and one line per row (cells taken verbatim,
// so a test can write quoted or malformed cells).
std::string table(const std::vector<std::string>& columns, const std::vector<std::map<std::string, std::string>>& rows) {
  std::string out;
  for (std::size_t k = 0; k < columns.size(); ++k) out += (k ? "," : "") + columns[k];
  out += "\n";
  for (const auto& row : rows) {
    for (std::size_t k = 0; k < columns.size(); ++k) {
      auto it = row.find(columns[k]);
      out += (k ? "," : "") + (it == row.end() ? std::string() : it->second);
    }
    out += "\n";
  }
  return out;
}

std::string table(const std::vector<std::map<std::string, std::string>>& rows) {
  return table(required_columns(), rows);
}

std::map<std::string, std::string> with(std::map<std::string, std::string> row, const std::string& column,
                                        const std::string& value) {
  row[column] = value;
  return row;
}

RunsTable read_ok(const std::string& text) {
  auto r = read_runs_table(text, "t.csv");
  if (auto* errors = std::get_if<std::vector<TableError>>(&r)) {
    std::string all;
    for (const auto& e : *errors) all += e.str() + "\n";
    ADD_FAILURE() << all;
    return {};
  }
  return std::get<RunsTable>(r);
}

std::vector<TableError> read_errors(const std::string& text) {
  auto r = read_runs_table(text, "t.csv");
  if (std::holds_alternative<RunsTable>(r)) {
    ADD_FAILURE() << "expected errors for:\n" << text;
    return {};
  }
  return std::get<std::vector<TableError>>(r);
}

// The one error a table gives, as text.
std::string only_error(const std::string& text) {
  const auto errors = read_errors(text);
  EXPECT_EQ(errors.size(), 1u);
  return errors.empty() ? "" : errors.front().str();
}

// ---- CSV syntax (RFC 4180) ----

TEST(Csv, QuotedFieldsHoldCommasLineBreaksAndDoubledQuotes) {
  std::vector<TableError> errors;
  const auto records = parse_csv("a,\"b,c\",\"say \"\"hi\"\"\"\n\"two\nlines\",x,\n", "t.csv", errors);
  ASSERT_TRUE(errors.empty());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].fields, (std::vector<std::string>{"a", "b,c", "say \"hi\""}));
  EXPECT_EQ(records[1].fields, (std::vector<std::string>{"two\nlines", "x", ""}));
  EXPECT_EQ(records[0].line, 1);
  EXPECT_EQ(records[1].line, 2);
}

TEST(Csv, CrlfBlankLinesByteOrderMarkAndNoFinalNewline) {
  std::vector<TableError> errors;
  const auto records = parse_csv("\xEF\xBB\xBF" "a,b\r\n\r\nc,\"d\"\r\n\ne,f", "t.csv", errors);
  ASSERT_TRUE(errors.empty());
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].fields, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(records[1].fields, (std::vector<std::string>{"c", "d"}));
  EXPECT_EQ(records[1].line, 3);
  EXPECT_EQ(records[2].fields, (std::vector<std::string>{"e", "f"}));
  EXPECT_EQ(records[2].line, 5);
}

TEST(Csv, RecordLineIsWhereAQuotedFieldSpanningLinesStarted) {
  std::vector<TableError> errors;
  const auto records = parse_csv("h\n\"1\n2\n3\"\nnext\n", "t.csv", errors);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1].line, 2);
  EXPECT_EQ(records[2].line, 5);
}

TEST(Csv, UnclosedQuoteIsAnErrorAtTheLineItOpened) {
  std::vector<TableError> errors;
  parse_csv("a,b\nc,\"never closed\nmore\n", "t.csv", errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 2);
  EXPECT_THAT(errors[0].str(), HasSubstr("never closed"));
}

TEST(Csv, QuoteInsideAnUnquotedFieldIsAnError) {
  std::vector<TableError> errors;
  const auto records = parse_csv("a,b\nc,d\"e\nf,g\n", "t.csv", errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 2);
  EXPECT_THAT(errors[0].message, HasSubstr("enclose the whole field in double quotes"));
  ASSERT_EQ(records.size(), 2u);  // reading resumed on the next line
  EXPECT_EQ(records[1].fields, (std::vector<std::string>{"f", "g"}));
}

TEST(Csv, TextAfterAClosingQuoteIsAnError) {
  std::vector<TableError> errors;
  parse_csv("a,b\n\"c\"x,d\n", "t.csv", errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 2);
  EXPECT_THAT(errors[0].message, HasSubstr("'x' after a closing quote"));
}

// ---- header ----

TEST(RunsTable, ReadsEveryColumnOfARow) {
  auto row = base_row();
  row["dp"] = "2";
  row["vpp"] = "2";
  row["micro_batch"] = "4";
  row["recompute"] = "selective";
  row["sequence_parallel"] = "1";
  row["zero_stage"] = "1";
  row["precision"] = "fp16";
  row["overlap"] = "\"grad_reduce, tp_comm\"";
  row["family"] = "llama";
  row["kv_heads"] = "4";
  const RunsTable t = read_ok(table({row}));
  ASSERT_EQ(t.rows.size(), 1u);
  const RunRow& r = t.rows[0];
  EXPECT_EQ(r.line, 2);
  EXPECT_EQ(r.name, "r1");
  EXPECT_EQ(r.family, models::Family::LLAMA);
  EXPECT_EQ(r.layers, 4);
  EXPECT_EQ(r.kv_heads, 4);
  EXPECT_EQ(r.ffn, 2048);
  EXPECT_EQ(r.gpu, "a100-80gb");
  EXPECT_DOUBLE_EQ(r.nic_gbps, 200);
  EXPECT_EQ(r.dp, 2);
  EXPECT_EQ(r.cp, std::nullopt);
  EXPECT_EQ(r.vpp, 2);
  EXPECT_EQ(r.micro_batch, 4);
  EXPECT_EQ(r.recompute, strategies::Recompute::SELECTIVE);
  EXPECT_EQ(r.sequence_parallel, true);
  EXPECT_EQ(r.zero_stage, 1);
  EXPECT_EQ(r.precision, hardware::Dtype::FP16);
  EXPECT_EQ(r.overlap, (Overlap{true, false, true}));
  EXPECT_EQ(r.metric, "iteration_time_s");
  EXPECT_DOUBLE_EQ(r.value, 0.5);
}

TEST(RunsTable, OptionalColumnsAttentionAndUnevenSplitAreRead) {
  auto columns = required_columns();
  columns.insert(columns.end(), optional_columns().begin(), optional_columns().end());
  auto row = base_row();
  row["attention"] = "unfused";
  row["first_stage_layers"] = "1";
  row["last_stage_layers"] = "3";
  RunsTable t = read_ok(table(columns, {row}));
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].flash_attention, false);
  EXPECT_EQ(t.rows[0].first_stage_layers, 1);
  EXPECT_EQ(t.rows[0].last_stage_layers, 3);
  row["attention"] = "flash";
  row["first_stage_layers"] = "";
  t = read_ok(table(columns, {row}));
  EXPECT_EQ(t.rows[0].flash_attention, true);
  EXPECT_EQ(t.rows[0].first_stage_layers, std::nullopt);
  // Present but empty, or absent (a table written before the columns existed): unset.
  EXPECT_EQ(read_ok(table({base_row()})).rows[0].flash_attention, std::nullopt);
  row["attention"] = "fused";
  EXPECT_THAT(only_error(table(columns, {row})),
              HasSubstr("t.csv:2: error: column \"attention\": unknown attention \"fused\" (valid: flash, unfused)"));
  row["attention"] = "flash";
  row["last_stage_layers"] = "0";
  EXPECT_THAT(only_error(table(columns, {row})), HasSubstr("column \"last_stage_layers\": 0 is out of range"));
}

TEST(RunsTable, EmptyOptionalCellsStayUnset) {
  const RunsTable t = read_ok(table({base_row()}));
  ASSERT_EQ(t.rows.size(), 1u);
  const RunRow& r = t.rows[0];
  EXPECT_FALSE(r.dp || r.cp || r.ep || r.vpp || r.micro_batch || r.recompute || r.sequence_parallel ||
               r.zero_stage || r.precision || r.overlap);
}

TEST(RunsTable, ColumnsAreFoundByNameInAnyOrderAndExtraColumnsAreIgnored) {
  std::vector<std::string> columns(required_columns().rbegin(), required_columns().rend());
  columns.insert(columns.begin() + 3, "comment");
  columns.push_back("notes");
  auto row = with(base_row(), "comment", "\"whatever, really\"");
  row["notes"] = "\"from 137.0 TFLOP/s, \"\"quoted\"\"\"";
  const RunsTable t = read_ok(table(columns, {row}));
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].name, "r1");
  EXPECT_EQ(t.rows[0].tp, 2);
  EXPECT_EQ(t.rows[0].notes, "from 137.0 TFLOP/s, \"quoted\"");
}

TEST(RunsTable, RowsKeepFileOrder) {
  const RunsTable t = read_ok(table({with(base_row(), "name", "b"), with(base_row(), "name", "a")}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].name, "b");
  EXPECT_EQ(t.rows[1].name, "a");
  EXPECT_EQ(t.rows[1].line, 3);
}

TEST(RunsTable, MissingRequiredColumnIsNamed) {
  std::vector<std::string> columns;
  for (const auto& c : required_columns())
    if (c != "vpp") columns.push_back(c);
  const std::string e = only_error(table(columns, {base_row()}));
  EXPECT_THAT(e, HasSubstr("t.csv:1: error: column \"vpp\": missing required column"));
  EXPECT_THAT(e, HasSubstr("add it to the header"));
}

TEST(RunsTable, TableWithoutHeaderRowIsAnError) {
  std::string text = table({base_row()});
  text = text.substr(text.find('\n') + 1);  // drop the header
  const std::string e = only_error(text);
  EXPECT_THAT(e, HasSubstr("t.csv:1: error: no header row"));
  EXPECT_THAT(e, HasSubstr("required columns:"));
}

TEST(RunsTable, EmptyFileIsAnError) {
  EXPECT_THAT(only_error(""), HasSubstr("t.csv:1: error: empty table"));
  EXPECT_THAT(only_error("\n\n"), HasSubstr("empty table"));
}

TEST(RunsTable, HeaderOnlyIsATableWithoutRows) {
  EXPECT_TRUE(read_ok(table({})).rows.empty());
}

TEST(RunsTable, ColumnNamedTwiceIsAnError) {
  std::vector<std::string> columns = required_columns();
  columns.push_back("tp");
  EXPECT_THAT(only_error(table(columns, {base_row()})), HasSubstr("t.csv:1: error: column \"tp\": named twice"));
}

TEST(RunsTable, RecordWithTheWrongNumberOfFieldsIsAnError) {
  // An unquoted comma in notes splits the field.
  std::vector<std::string> columns = required_columns();
  columns.push_back("notes");
  const std::string e = only_error(table(columns, {with(base_row(), "notes", "a, b")}));
  EXPECT_THAT(e, HasSubstr("t.csv:2: error: the record has"));
  EXPECT_THAT(e, HasSubstr("must be enclosed in double quotes"));
}

// ---- cells ----

TEST(RunsTable, NonNumericValueNamesLineColumnAndWhatIsValid) {
  EXPECT_THAT(only_error(table({with(base_row(), "layers", "twenty")})),
              HasSubstr("t.csv:2: error: column \"layers\": \"twenty\" is not a whole number (valid: a whole number from 1 to "));
  EXPECT_THAT(only_error(table({with(base_row(), "tp", "2.5")})), HasSubstr("column \"tp\": \"2.5\" is not a whole number"));
  EXPECT_THAT(only_error(table({with(base_row(), "nic_gbps", "fast")})),
              HasSubstr("column \"nic_gbps\": \"fast\" is not a number (valid: a number from 0.001 to 1e+06"));
  EXPECT_THAT(only_error(table({with(base_row(), "value", "3.5s")})), HasSubstr("column \"value\": \"3.5s\" is not a number"));
  EXPECT_THAT(only_error(table({with(base_row(), "micro_batch", "x")})), HasSubstr("column \"micro_batch\""));
}

TEST(RunsTable, OutOfRangeValueNamesTheValidRange) {
  EXPECT_THAT(only_error(table({with(base_row(), "tp", "0")})), HasSubstr("column \"tp\": 0 is out of range (valid: a whole number from 1 to "));
  EXPECT_THAT(only_error(table({with(base_row(), "zero_stage", "4")})),
              HasSubstr("column \"zero_stage\": 4 is out of range (valid: 0, 1, 2 or 3"));
  EXPECT_THAT(only_error(table({with(base_row(), "sequence_parallel", "2")})),
              HasSubstr("column \"sequence_parallel\": 2 is out of range (valid: 0 or 1)"));
  EXPECT_THAT(only_error(table({with(base_row(), "value", "-1")})), HasSubstr("column \"value\": -1 is out of range"));
  EXPECT_THAT(only_error(table({with(base_row(), "value", "inf")})), HasSubstr("column \"value\": inf is out of range"));
  EXPECT_THAT(only_error(table({with(base_row(), "layers", "99999999999999999999")})), HasSubstr("is too large"));
}

TEST(RunsTable, EmptyCellWithoutDefaultIsAnError) {
  EXPECT_THAT(only_error(table({with(base_row(), "heads", "")})),
              HasSubstr("t.csv:2: error: column \"heads\": empty, and this column has no default"));
  EXPECT_THAT(only_error(table({with(base_row(), "name", "")})), HasSubstr("column \"name\": empty"));
  EXPECT_THAT(only_error(table({with(base_row(), "gpu", "")})), HasSubstr("column \"gpu\": empty"));
}

TEST(RunsTable, UnknownGpuListsTheFormatsGpus) {
  EXPECT_THAT(only_error(table({with(base_row(), "gpu", "h100")})),
              HasSubstr("column \"gpu\": unknown gpu \"h100\" (valid: v100-32gb, a100-40gb, a100-80gb, h100-sxm, "
                        "h800, h200, b200)"));
}

TEST(RunsTable, UnknownFamilyRecomputePrecisionMetricTokens) {
  EXPECT_THAT(only_error(table({with(base_row(), "family", "bert")})),
              HasSubstr("column \"family\": unknown family \"bert\" (valid: gpt, llama)"));
  EXPECT_THAT(only_error(table({with(base_row(), "recompute", "partial")})),
              HasSubstr("column \"recompute\": unknown recompute \"partial\" (valid: none, selective, full)"));
  EXPECT_THAT(only_error(table({with(base_row(), "precision", "fp32")})),
              HasSubstr("column \"precision\": unknown precision \"fp32\" (valid: fp16, bf16, fp8)"));
  EXPECT_THAT(only_error(table({with(base_row(), "metric", "tflops")})),
              HasSubstr("column \"metric\": unknown metric \"tflops\" (valid: iteration_time_s)"));
}

TEST(RunsTable, OverlapTokens) {
  EXPECT_EQ(read_ok(table({with(base_row(), "overlap", "none")})).rows.at(0).overlap, Overlap{});
  EXPECT_EQ(read_ok(table({with(base_row(), "overlap", "\"grad_reduce,param_gather,tp_comm\"")})).rows.at(0).overlap,
            (Overlap{true, true, true}));
  EXPECT_EQ(read_ok(table({with(base_row(), "overlap", "param_gather")})).rows.at(0).overlap,
            (Overlap{false, true, false}));
  EXPECT_THAT(only_error(table({with(base_row(), "overlap", "\"grad_reduce,dp_comm\"")})),
              HasSubstr("column \"overlap\": unknown overlap \"dp_comm\" (valid: none, or a comma-separated list of "
                        "grad_reduce, param_gather, tp_comm)"));
  EXPECT_THAT(only_error(table({with(base_row(), "overlap", "\"grad_reduce,,tp_comm\"")})), HasSubstr("empty item"));
}

TEST(RunsTable, DuplicateRowNameNamesBothLines) {
  const std::string e = only_error(table({base_row(), with(base_row(), "name", "r2"), base_row()}));
  EXPECT_THAT(e, HasSubstr("t.csv:4: error: column \"name\": duplicate row name \"r1\" (first used on line 2"));
}

TEST(RunsTable, EveryErrorIsReportedInFileOrder) {
  const auto errors = read_errors(table({with(base_row(), "gpu", "tpu"), with(with(base_row(), "name", "r2"), "layers", "x")}) +
                                  "\"unclosed\n");
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].line, 2);
  EXPECT_EQ(errors[0].column, "gpu");
  EXPECT_EQ(errors[1].line, 3);
  EXPECT_EQ(errors[1].column, "layers");
  EXPECT_EQ(errors[2].line, 4);
}

TEST(RunsTable, MissingFileIsAnErrorNotACrash) {
  auto r = read_runs_table_file("/nonexistent/runs.csv");
  ASSERT_TRUE(std::holds_alternative<std::vector<TableError>>(r));
  EXPECT_THAT(std::get<std::vector<TableError>>(r).at(0).str(),
              HasSubstr("/nonexistent/runs.csv: error: cannot read file"));
  auto d = read_runs_table_file("/");
  ASSERT_TRUE(std::holds_alternative<std::vector<TableError>>(d));
}

TEST(RunsTable, BinaryGarbageIsAnErrorNotACrash) {
  std::string garbage;
  for (int k = 0; k < 4096; ++k) garbage += static_cast<char>((k * 7919) % 256);
  auto r = read_runs_table(garbage, "g.csv");
  EXPECT_TRUE(std::holds_alternative<std::vector<TableError>>(r));
}


// ---- issue 12: values valid one by one, absurd together; unknown columns; unbounded reads ----

TEST(RunsTable, SizesHaveUpperBoundsNamedInTheError) {
  EXPECT_THAT(only_error(table({with(base_row(), "layers", "2147483647")})),
              HasSubstr("column \"layers\": 2147483647 is out of range (valid: a whole number from 1 to 10000"));
  EXPECT_THAT(only_error(table({with(base_row(), "hidden", "9223372036854775807")})),
              HasSubstr("column \"hidden\": 9223372036854775807 is out of range (valid: a whole number from 1 to "
                        "1048576"));
  EXPECT_THAT(only_error(table({with(with(base_row(), "micro_batch", "16777216"), "seq", "16777216")})),
              HasSubstr("column \"micro_batch\": micro_batch × seq = 16777216 × 16777216 tokens per micro-batch is "
                        "too many (at most 67108864)"));
}

TEST(RunsTable, MeasuredValueOutsideTheEngineRangeIsAnError) {
  // 1e-320 is a positive double (subnormal); the error percentage over it would be +inf.
  EXPECT_THAT(only_error(table({with(base_row(), "value", "1e-320")})),
              HasSubstr("column \"value\": 1e-320 is out of range (valid: a number from 1e-06 to 9e+06"));
  EXPECT_THAT(only_error(table({with(base_row(), "nic_gbps", "1e-9")})),
              HasSubstr("column \"nic_gbps\": 1e-9 is out of range (valid: a number from 0.001 to 1e+06"));
}

TEST(RunsTable, UnknownColumnsAreNamedInAWarning) {
  auto columns = required_columns();
  columns.push_back("nic_gpbs");  // misspelt: its cells would otherwise be ignored unnoticed
  columns.push_back("comment");
  const RunsTable t = read_ok(table(columns, {base_row()}));
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_THAT(t.warnings[0].str(), HasSubstr("t.csv:1: warning: unknown columns \"comment\", \"nic_gpbs\" ignored "
                                             "(known columns: name, family,"));
  EXPECT_THAT(t.warnings[0].str(), HasSubstr("value, first_stage_layers, last_stage_layers, attention, source, notes)"));
  // The provenance columns are known.
  columns = required_columns();
  columns.push_back("source");
  EXPECT_TRUE(read_ok(table(columns, {base_row()})).warnings.empty());
}

TEST(RunsTable, ADeviceIsNotReadUntilMemoryRunsOut) {
  const auto r = read_runs_table_file("/dev/zero");
  const auto* errors = std::get_if<std::vector<TableError>>(&r);
  ASSERT_NE(errors, nullptr);
  ASSERT_EQ(errors->size(), 1u);
  EXPECT_EQ(errors->front().str(), "/dev/zero: error: cannot read file: not a regular file (a device, pipe or socket "
                                   "is not read: /dev/zero, for one, never ends)");
}

}  // namespace
}  // namespace trainsim::scenarios
