// The attention fit on recorded real measurements: FlashAttention-2's published A100 chart
// (tests/data/calibration/README.md).
#include "calibration/attention_fit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "calibration/alpha_beta_fit.hpp"
#include "tests/calibration/test_data.hpp"

namespace trainsim::calibration {
namespace {

std::vector<AttentionMeasurement> recorded() {
  std::vector<AttentionMeasurement> data;
  EXPECT_EQ(read_attention_csv(testing::read_data("attention/a100-fa2-fwd-bwd.csv"), "fa2.csv", data), "");
  return data;
}

TEST(AttentionFit, PredictsHeldBackSequenceLengths) {
  const auto data = recorded();
  ASSERT_EQ(data.size(), 21u);
  // Whole sequence lengths held back, in every head dimension and mask at once: 2k and 8k
  // (inside the range), then 1k (only the two causal panels have a legible 1k label).
  const std::vector<double> e = hold_out_sequences(data, {2048, 8192});
  ASSERT_EQ(e.size(), 8u);
  const double med = median_of(e), worst = *std::max_element(e.begin(), e.end());
  std::printf("attention: 2k and 8k held back (8 points): median error %.2f %%, max %.2f %%\n", 100 * med, 100 * worst);
  EXPECT_LT(med, 0.05);
  EXPECT_LT(worst, 0.10);
  const std::vector<double> e1 = hold_out_sequences(data, {1024});
  ASSERT_EQ(e1.size(), 2u);
  std::printf("attention: 1k held back (2 points): errors %.2f %%, %.2f %%\n", 100 * e1[0], 100 * e1[1]);
  EXPECT_LT(*std::max_element(e1.begin(), e1.end()), 0.10);
}

TEST(AttentionFit, EfficiencyRisesWithSequenceLengthAndHeadDimension) {
  const AttentionModel m = fit_attention(recorded());
  ASSERT_EQ(m.plateaus.size(), 4u);
  auto speed = [&](std::int64_t s, std::int64_t d, bool causal) {
    AttentionMeasurement a{16384 / s, 2048 / d, s, d, causal, 0};
    return a.flops() / m.predict(a);
  };
  for (std::int64_t d : {64, 128}) {
    for (bool causal : {false, true}) {
      double previous = 0;
      for (std::int64_t s : {512, 1024, 2048, 4096, 8192, 16384}) {
        EXPECT_GT(speed(s, d, causal), previous) << "s=" << s << " d=" << d;
        previous = speed(s, d, causal);
      }
    }
    // The plateau (measured 176 and 203 TFLOP/s at 16k) is within a few % of the chart.
  }
  EXPECT_NEAR(speed(16384, 64, false) / 176e12, 1.0, 0.03);
  EXPECT_NEAR(speed(16384, 128, false) / 203e12, 1.0, 0.03);
  EXPECT_GT(speed(16384, 128, false), speed(16384, 64, false));
}

TEST(AttentionFit, CsvErrorsNameLineAndField) {
  std::vector<AttentionMeasurement> out;
  EXPECT_EQ(read_attention_csv("b,h\n", "a.csv", out),
            "a.csv:1: error: expected the header \"batch,heads,sequence,head_dim,causal,flops_per_s\"");
  EXPECT_EQ(read_attention_csv("batch,heads,sequence,head_dim,causal,flops_per_s\n1,16,2048,128,2,1e14\n", "a.csv", out),
            "a.csv:2: error: causal: \"2\" is not 0 or 1");
  EXPECT_EQ(read_attention_csv("batch,heads,sequence,head_dim,causal,flops_per_s\n1,16,2048,128,0\n", "a.csv", out),
            "a.csv:2: error: expected 6 fields (batch,heads,sequence,head_dim,causal,flops_per_s), found 5");
  EXPECT_EQ(read_attention_csv("batch,heads,sequence,head_dim,causal,flops_per_s\n1,16,-4,128,0,1e14\n", "a.csv", out),
            "a.csv:2: error: sequence: \"-4\" is not a positive integer up to 2^24");
  EXPECT_EQ(read_attention_csv("# nothing\n", "a.csv", out), "a.csv: error: no measurements");
}

}  // namespace
}  // namespace trainsim::calibration
