// nccl-tests ingestion: the three formats of one recorded run, and every rejection rule.
#include "calibration/nccl_tests_log.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/calibration/test_data.hpp"

namespace trainsim::calibration {
namespace {

using testing::read_data;

const std::string kRun = "nccl-tests/h100-16gpu-all_reduce";

NcclTestsLog must_read(const std::string& text, const std::string& origin, std::string_view collective = {}) {
  NcclTestsResult r = read_nccl_tests(text, origin, collective);
  if (auto* e = std::get_if<LogError>(&r)) ADD_FAILURE() << to_string(*e);
  return std::holds_alternative<NcclTestsLog>(r) ? std::get<NcclTestsLog>(r) : NcclTestsLog{};
}

std::string must_fail(const std::string& text, std::string_view collective = "all_reduce") {
  NcclTestsResult r = read_nccl_tests(text, "bad.log", collective);
  if (auto* e = std::get_if<LogError>(&r)) return to_string(*e);
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(NcclTestsLog, CurrentTextFormat) {
  NcclTestsLog log = must_read(read_data(kRun + ".txt"), "h100.txt", "all_reduce");
  EXPECT_EQ(log.format, NcclTestsFormat::TEXT);
  EXPECT_EQ(log.collective, "all_reduce");
  EXPECT_EQ(log.ranks, 16);
  EXPECT_EQ(log.nodes, 2);
  EXPECT_EQ(log.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(log.algorithm, "auto");
  ASSERT_EQ(log.rows.size(), 31u);
  EXPECT_EQ(log.skipped_rows, 0);
  const NcclTestsRow& last = log.rows.back();
  EXPECT_EQ(last.size_bytes, 8589934592u);
  EXPECT_EQ(last.count, 2147483648u);
  EXPECT_EQ(last.type, "float");
  EXPECT_EQ(last.redop, "sum");
  EXPECT_EQ(last.root, -1);
  EXPECT_DOUBLE_EQ(last.out_of_place.time_us, 47535);
  EXPECT_DOUBLE_EQ(last.out_of_place.busbw_gbps, 338.82);
  ASSERT_TRUE(last.in_place.has_value());
  EXPECT_DOUBLE_EQ(last.in_place->time_us, 47743);
}

// The same run in all three formats reads to the same rows.
TEST(NcclTestsLog, ThreeFormatsOfOneRunReadAlike) {
  NcclTestsLog text = must_read(read_data(kRun + ".txt"), "a.txt", "all_reduce");
  NcclTestsLog older = must_read(read_data(kRun + "-older.txt"), "b.txt", "all_reduce");
  NcclTestsLog json = must_read(read_data(kRun + ".json"), "c.json");
  EXPECT_EQ(older.format, NcclTestsFormat::TEXT_OLDER);
  EXPECT_EQ(json.format, NcclTestsFormat::JSON);
  for (const NcclTestsLog* other : {&older, &json}) {
    EXPECT_EQ(other->collective, "all_reduce");
    EXPECT_EQ(other->ranks, 16);
    EXPECT_EQ(other->nodes, 2);
    ASSERT_EQ(other->rows.size(), text.rows.size());
    for (std::size_t i = 0; i < text.rows.size(); ++i) {
      EXPECT_EQ(other->rows[i].size_bytes, text.rows[i].size_bytes);
      EXPECT_EQ(other->rows[i].out_of_place.time_us, text.rows[i].out_of_place.time_us);
      EXPECT_EQ(other->rows[i].in_place->time_us, text.rows[i].in_place->time_us);
    }
  }
}

const char* kHeader =
    "# Collective test starting: all_reduce_perf\n"
    "#  Rank  0 Group  0 Pid  1 on h0 device  0 [0000:18:00] GPU\n"
    "#  Rank  1 Group  0 Pid  1 on h0 device  1 [0000:19:00] GPU\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
const char* kRow1 = "     1048576        262144     float     sum      -1    20.00   52.43   52.43      0    20.00   52.43   52.43      0\n";
const char* kRow2 = "     2097152        524288     float     sum      -1    30.00   69.91   69.91      0    30.00   69.91   69.91      0\n";
const char* kFooter = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 61.17\n";

TEST(NcclTestsLog, SmallValidLogAndNoise) {
  std::string text = std::string("NCCL version 2.21.5+cuda12.4\n") + kHeader + kRow1 +
                     "host:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Init COMPLETE\n" + "[1] " + kRow2 + kFooter;
  NcclTestsLog log = must_read(text, "ok.log");
  EXPECT_EQ(log.rows.size(), 2u);
  EXPECT_EQ(log.ranks, 2);
  EXPECT_EQ(log.nodes, 1);
}

TEST(NcclTestsLog, CutMidTableIsAnError) {
  std::string text = std::string(kHeader) + kRow1 + "     2097152        524288     float     sum      -1    30.00";
  EXPECT_EQ(must_fail(text), "bad.log:7: error: the log ends inside the table (no '# Out of bounds values' footer "
                             "after its last row): was it cut mid-table?");
}

TEST(NcclTestsLog, WrongResultsRejectTheRun) {
  std::string row = "     1048576        262144     float     sum      -1    20.00   52.43   52.43      3    20.00   52.43   52.43      0\n";
  EXPECT_EQ(must_fail(std::string(kHeader) + row + kFooter),
            "bad.log:6: error: out-of-place #wrong = 3: the run computed wrong results, its timings are not "
            "measurements of a correct collective");
  EXPECT_NE(must_fail(std::string(kHeader) + kRow1 + "# Out of bounds values : 12 FAILED\n").find(
                "bad.log:7: error: nccl-tests found 12 out-of-bounds values"),
            std::string::npos);
}

TEST(NcclTestsLog, NonNumericRowIsSkippedAndCounted) {
  std::string bad = "     4194304       1048576     float     sum      -1    abc   52.43   52.43      0    20.00   52.43   52.43      0\n";
  std::string garbled = "     8388608       2097152     float     sum      -1    20.00   52.43   52.43      0    20.00\n";
  NcclTestsLog log = must_read(std::string(kHeader) + kRow1 + bad + garbled + kRow2 + kFooter, "x.log");
  EXPECT_EQ(log.rows.size(), 2u);
  EXPECT_EQ(log.skipped_rows, 2);
  ASSERT_EQ(log.warnings.size(), 2u);
  EXPECT_EQ(log.warnings[0], "x.log:7: warning: out-of-place time \"abc\" is not a non-negative number; row skipped");
  EXPECT_EQ(log.warnings[1], "x.log:8: warning: expected 13 fields as the header at line 4 announces, found 10; row skipped");
}

TEST(NcclTestsLog, AlgbwThatDisagreesWithSizeOverTimeIsSkipped) {
  std::string row = "     1048576        262144     float     sum      -1    20.00   99.00   99.00      0    20.00   52.43   52.43      0\n";
  NcclTestsLog log = must_read(std::string(kHeader) + row + kRow2 + kFooter, "x.log");
  EXPECT_EQ(log.rows.size(), 1u);
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_NE(log.warnings[0].find("x.log:6: warning: out-of-place algbw 99 GB/s disagrees with size/time"), std::string::npos);
}

TEST(NcclTestsLog, MixedFormatsAreAnError) {
  std::string older_header =
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n";
  EXPECT_EQ(must_fail(std::string(kHeader) + older_header + kRow1 + kFooter),
            "bad.log:6: error: a table header with other columns than the one at line 4 (mixed nccl-tests formats in "
            "one file)");
  EXPECT_EQ(must_fail(std::string(kHeader) + kRow1 + "{\"results\": []}\n" + kFooter),
            "bad.log:7: error: JSON inside a text log (mixed formats): give the -J report and the text log as two files");
}

TEST(NcclTestsLog, RowsBeforeHeaderOrSecondRunAreErrors) {
  EXPECT_NE(must_fail(std::string(kRow1) + kHeader + kFooter).find("bad.log:1: error: data row before any table header"),
            std::string::npos);
  EXPECT_NE(must_fail(std::string(kHeader) + kRow1 + kFooter + "# Collective test starting: all_gather_perf\n")
                .find("bad.log:9: error: a second nccl-tests run starts here"),
            std::string::npos);
}

TEST(NcclTestsLog, CollectiveMustBeKnown) {
  std::string no_name = std::string(kHeader).substr(std::string(kHeader).find('\n') + 1) + kRow1 + kFooter;
  EXPECT_NE(must_fail(no_name, "").find("which collective was measured?"), std::string::npos);
  EXPECT_EQ(must_fail(std::string(kHeader) + kRow1 + kFooter, "all_gather"),
            "bad.log: error: the log measured all_reduce, not all_gather");
  EXPECT_EQ(collective_of_binary("./build/reduce_scatter_perf_mpi"), "reduce_scatter");
  EXPECT_EQ(collective_of_binary("hypercube_perf"), "");
}

TEST(NcclTestsLog, JsonErrors) {
  std::string json = read_data(kRun + ".json");
  // Cut short: a parse error with the line where the text ends.
  NcclTestsResult cut = read_nccl_tests(json.substr(0, json.size() / 2), "r.json");
  ASSERT_TRUE(std::holds_alternative<LogError>(cut));
  EXPECT_GT(std::get<LogError>(cut).line, 1);
  EXPECT_NE(std::get<LogError>(cut).message.find("not valid JSON"), std::string::npos);
  // A row with nwrong > 0.
  std::string wrong = json;
  wrong.replace(wrong.find("\"nwrong\": 0.0"), 13, "\"nwrong\": 5.0");
  EXPECT_EQ(must_fail(wrong), "bad.log: error: results[0].out_of_place.nwrong: the run computed wrong results, its "
                              "timings are not measurements of a correct collective");
  // A non-numeric time is skipped with a warning.
  std::string text_time = json;
  text_time.replace(text_time.find("\"time\": 135.8"), 13, "\"time\": \"x\"");
  NcclTestsLog log = must_read(text_time, "r.json");
  EXPECT_EQ(log.skipped_rows, 1);
  EXPECT_EQ(log.rows.size(), 30u);
  EXPECT_EQ(must_fail("{\"args\": [\"all_reduce_perf\"]}"),
            "bad.log: error: results: missing: the report has no results list (was the run interrupted?)");
}

}  // namespace
}  // namespace trainsim::calibration
