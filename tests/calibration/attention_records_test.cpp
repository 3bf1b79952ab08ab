// The harness's attention.csv read back, and its fused rows paired into the attention fit's
// forward + backward measurements. Parser and pairing rules on hand-written rows; the fit
// itself is judged on real measurements in attention_fit_test.cpp.
#include "calibration/attention_records.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/calibrate_command.hpp"

namespace trainsim::calibration {
namespace {

const std::string kHeader = "path,pass,causal,batch,heads,sequence,head_dim,seconds\n";

std::string read_error(const std::string& rows) {
  std::vector<AttentionRecord> out;
  return read_attention_records(kHeader + rows, "a.csv", out);
}

TEST(AttentionRecords, WhatTheHarnessWritesReadsBack) {
  std::vector<AttentionRecord> rows = {
      {"unfused", "forward", {2, 16, 1024, 128, true}, 1.25e-3},
      {"cudnn-sdpa", "backward", {1, 32, 4096, 96, false}, 3.5e-2},
  };
  std::vector<AttentionRecord> back;
  ASSERT_EQ(read_attention_records("# a comment\n" + write_attention_csv(rows), "a.csv", back), "");
  ASSERT_EQ(back.size(), 2u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(back[i].path, rows[i].path);
    EXPECT_EQ(back[i].pass, rows[i].pass);
    EXPECT_EQ(back[i].problem.batch, rows[i].problem.batch);
    EXPECT_EQ(back[i].problem.heads, rows[i].problem.heads);
    EXPECT_EQ(back[i].problem.sequence, rows[i].problem.sequence);
    EXPECT_EQ(back[i].problem.head_dim, rows[i].problem.head_dim);
    EXPECT_EQ(back[i].problem.causal, rows[i].problem.causal);
    EXPECT_DOUBLE_EQ(back[i].seconds, rows[i].seconds);
  }
}

TEST(AttentionRecords, ErrorsNameLineAndField) {
  std::vector<AttentionRecord> out;
  EXPECT_EQ(read_attention_records("batch,heads\n", "a.csv", out),
            "a.csv:1: error: expected the header \"path,pass,causal,batch,heads,sequence,head_dim,seconds\"");
  EXPECT_EQ(read_attention_records("# only a comment\n", "a.csv", out),
            "a.csv: error: empty file; expected the header \"path,pass,causal,batch,heads,sequence,head_dim,seconds\"");
  EXPECT_EQ(read_error(""), "a.csv: error: no measurements");
  EXPECT_EQ(read_error("flash,forward,0,1,1,512,64,1e-3\n"),
            "a.csv:2: error: path: \"flash\" is not unfused or cudnn-sdpa");
  EXPECT_EQ(read_error("unfused,fwd,0,1,1,512,64,1e-3\n"), "a.csv:2: error: pass: \"fwd\" is not forward or backward");
  EXPECT_EQ(read_error("unfused,forward,yes,1,1,512,64,1e-3\n"), "a.csv:2: error: causal: \"yes\" is not 0 or 1");
  EXPECT_EQ(read_error("unfused,forward,0,1,0,512,64,1e-3\n"),
            "a.csv:2: error: heads: \"0\" is not a positive integer up to 2^24");
  EXPECT_EQ(read_error("unfused,forward,0,1,1,512,6.4,1e-3\n"),
            "a.csv:2: error: head_dim: \"6.4\" is not a positive integer up to 2^24");
  EXPECT_EQ(read_error("unfused,forward,0,1,1,512,64,-1\n"), "a.csv:2: error: seconds: \"-1\" is not a positive number");
  EXPECT_EQ(read_error("unfused,forward,0,1,1,512,64\n"),
            "a.csv:2: error: expected 8 fields (path,pass,causal,batch,heads,sequence,head_dim,seconds), found 7");
  EXPECT_EQ(read_error("cudnn-sdpa,forward,0,1,1,512,64,1e-3\ncudnn-sdpa,forward,0,1,1,512,64,2e-3\n"),
            "a.csv:3: error: the cudnn-sdpa forward pass of this problem is timed twice");
}

// A fused problem's forward and backward rows (in either order) become one measurement of
// their summed time; unfused rows are counted, not fitted; a row without its other pass
// (the budget ended the phase between them) is counted and skipped.
TEST(AttentionRecords, FusedPassesPairIntoForwardPlusBackward) {
  std::vector<AttentionRecord> rows;
  ASSERT_EQ(read_attention_records(kHeader +
                                       "unfused,forward,0,1,16,2048,128,1e-3\n"
                                       "unfused,backward,0,1,16,2048,128,2e-3\n"
                                       "cudnn-sdpa,backward,1,2,16,2048,128,3e-3\n"
                                       "cudnn-sdpa,forward,0,2,16,2048,128,1.5e-3\n"
                                       "cudnn-sdpa,forward,1,2,16,2048,128,1e-3\n"
                                       "cudnn-sdpa,forward,0,1,8,4096,64,4e-3\n",
                                   "a.csv", rows),
            "");
  const FusedAttention fused = fused_attention_measurements(rows);
  EXPECT_EQ(fused.unfused_rows, 2u);
  EXPECT_EQ(fused.unpaired_rows, 2u);  // the non-causal 2048 forward and the 4096 forward
  ASSERT_EQ(fused.measurements.size(), 1u);
  const AttentionMeasurement& m = fused.measurements[0];
  EXPECT_EQ(m.batch, 2);
  EXPECT_EQ(m.heads, 16);
  EXPECT_EQ(m.sequence, 2048);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_TRUE(m.causal);
  EXPECT_DOUBLE_EQ(m.seconds, 4e-3);
}

// Through the command: --attention-csv takes the harness's attention.csv too (its header
// says which table it is); one without fused rows has nothing to fit.
TEST(AttentionRecords, TheCommandRefusesAHarnessTableWithoutFusedRows) {
  const auto dir = std::filesystem::temp_directory_path() / "trainsim_attention_records_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "attention.csv") << kHeader << "unfused,forward,0,1,16,2048,128,1e-3\n";
  cli::CalibrateOptions o;
  o.base = "h100-sxm";
  o.attention_csv = (dir / "attention.csv").string();
  o.out_path = (dir / "out.textproto").string();
  std::ostringstream out, err;
  EXPECT_EQ(cli::calibrate_command(o, out, err), 1);
  EXPECT_NE(err.str().find("attention.csv: note: 1 rows of the unfused path not fitted"), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("attention.csv: error: no fused attention problem (path cudnn-sdpa, forward and "
                           "backward) to fit"),
            std::string::npos)
      << err.str();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::calibration
