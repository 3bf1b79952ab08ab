// GEMM shape model fitted on recorded sm_90 BF16 measurements, judged on held-back shapes.
#include "calibration/gemm_fit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "calibration/alpha_beta_fit.hpp"
#include "tests/calibration/test_data.hpp"

namespace trainsim::calibration {
namespace {

// H100 SXM: 132 SMs, 989 TFLOPS dense BF16 (../shared/reference/nccl-and-hardware.md §3.1).
constexpr int kSms = 132;
constexpr double kPeak = 989e12;

std::vector<GemmMeasurement> recorded() {
  std::vector<GemmMeasurement> data;
  std::string err = read_gemm_csv(testing::read_data("gemm/sm90-bf16-xla.csv"), "sm90.csv", data);
  EXPECT_EQ(err, "");
  return data;
}

// Acceptance (issue 10): held-back GEMM shapes within 10 % (median). Every fourth shape of
// the table (whole shapes) is held back from the fit.
TEST(GemmFit, HeldBackShapesOfRecordedH100) {
  std::vector<GemmMeasurement> data = recorded();
  ASSERT_EQ(data.size(), 111u);
  std::vector<GemmMeasurement> fit_on, held;
  for (std::size_t i = 0; i < data.size(); ++i) (i % 4 == 3 ? held : fit_on).push_back(data[i]);
  GemmModel m = fit_gemm(fit_on, kSms, kPeak);
  std::vector<double> errors;
  for (const auto& h : held) errors.push_back(std::abs(m.predict(h.shape) - h.seconds) / h.seconds);
  double med = median_of(errors);
  std::printf("tile %dx%d launch %.2f us eff %.3f wave %.3f us byte %.3g s/B; %zu held back: median %.2f %%, max %.2f %%\n",
              m.tile_m, m.tile_n, m.launch_s * 1e6, m.efficiency, m.wave_s * 1e6, m.s_per_byte, errors.size(),
              100 * med, 100 * *std::max_element(errors.begin(), errors.end()));
  EXPECT_EQ(held.size(), 27u);
  EXPECT_LE(med, 0.10);
  EXPECT_GT(m.efficiency, 0.5);
  EXPECT_LE(m.efficiency, 1.0);
}

// The TF32 table of the same run (OpenXLA's "f32xf32->f32" on sm_90, 112 shapes), against
// H100 SXM's dense TF32 peak of 494.5 TFLOP/s (reference §3.1), the same fourth of the
// shapes held back. On this table the shape model does NOT meet the 10 % median
// (measured: 11.42 %, max 27.6 %; printed below): the table's TF32 throughput is not
// monotonic in the batch (4096³: 401.6 TFLOP/s at b 1, 340.1 at b 2, 346.9 at b 4), which
// a tile-and-wave model cannot follow. What is asserted is that the fitted model is far
// better than pricing every GEMM at one efficiency (the median throughput of the shapes it
// was fitted on), which a broken fit would not be. Its padded-work efficiency comes out
// slightly above 1 (1.016): the additive operand-traffic term takes part of the large
// shapes' time, so that coefficient is not bounded by the peak here (the BF16 fit's is).
TEST(GemmFit, HeldBackShapesOfRecordedH100Tf32) {
  std::vector<GemmMeasurement> data;
  ASSERT_EQ(read_gemm_csv(testing::read_data("gemm/sm90-tf32-xla.csv"), "tf32.csv", data), "");
  ASSERT_EQ(data.size(), 112u);
  std::vector<GemmMeasurement> fit_on, held;
  for (std::size_t i = 0; i < data.size(); ++i) (i % 4 == 3 ? held : fit_on).push_back(data[i]);
  GemmModel m = fit_gemm(fit_on, kSms, 494.5e12);
  std::vector<double> throughput;
  for (const auto& f : fit_on) throughput.push_back(f.shape.flops() / f.seconds);
  const double one_efficiency = median_of(throughput);
  std::vector<double> errors, flat_errors;
  for (const auto& h : held) {
    errors.push_back(std::abs(m.predict(h.shape) - h.seconds) / h.seconds);
    flat_errors.push_back(std::abs(h.shape.flops() / one_efficiency - h.seconds) / h.seconds);
  }
  const double med = median_of(errors), flat = median_of(flat_errors);
  std::printf("TF32: tile %dx%d launch %.2f us eff %.3f wave %.3f us byte %.3g s/B; %zu held back: median %.2f %%, "
              "max %.2f %% (issue 10 asks for <= 10 %%: %s); one efficiency for all: median %.2f %%\n",
              m.tile_m, m.tile_n, m.launch_s * 1e6, m.efficiency, m.wave_s * 1e6, m.s_per_byte, errors.size(),
              100 * med, 100 * *std::max_element(errors.begin(), errors.end()), med <= 0.10 ? "met" : "NOT met",
              100 * flat);
  EXPECT_EQ(held.size(), 28u);
  EXPECT_LT(med, flat / 2);
  EXPECT_GT(m.efficiency, 0.5);
}

TEST(GemmFit, CsvErrorsNameLineAndField) {
  std::vector<GemmMeasurement> out;
  EXPECT_EQ(read_gemm_csv("b,m,n,k,flops_per_s\n1,2,3,x,5\n", "g.csv", out),
            "g.csv:2: error: k: \"x\" is not a positive integer up to 2^24");
  EXPECT_EQ(read_gemm_csv("b,m,n,k\n", "g.csv", out), "g.csv:1: error: expected the header \"b,m,n,k,flops_per_s\"");
  EXPECT_EQ(read_gemm_csv("b,m,n,k,flops_per_s\n1,2,3\n", "g.csv", out),
            "g.csv:2: error: n: missing (5 fields: b,m,n,k,flops_per_s)");
  EXPECT_EQ(read_gemm_csv("b,m,n,k,flops_per_s\n1,2,3,4,-5\n", "g.csv", out),
            "g.csv:2: error: flops_per_s: \"-5\" is not a positive number");
}

// A model carried to another GPU keeps its times and tiles, takes that GPU's SMs and peak,
// divides its per-byte time by the bandwidth ratio and scales its full-wave efficiency,
// never past 1. A 4096³ GEMM in 64 × 64 tiles: 4096 tiles, 38 waves of 108 (4104 slots):
// launch 5 us + 38 waves · 0.2 us + 2 · 4104 · 64² · 4096 FLOPs of padded work at
// 0.8 · 1.5 = 1.2 → 1 of 312 TFLOP/s + 2 · 3 · 4096² operand bytes at 1e-15 s / 0.5.
TEST(GemmFit, TransferKeepsTimesAndScalesTheRates) {
  const GemmModel measured{132, 989e12, 64, 64, 5e-6, 0.8, 0.2e-6, 1e-15};
  const GemmModel a100 = transfer_gemm(measured, 108, 312e12, 1.5, 0.5);
  EXPECT_EQ(a100.sms, 108);
  EXPECT_EQ(a100.tile_m, 64);
  EXPECT_DOUBLE_EQ(a100.launch_s, 5e-6);
  EXPECT_DOUBLE_EQ(a100.wave_s, 0.2e-6);
  EXPECT_DOUBLE_EQ(a100.efficiency, 1.0);
  EXPECT_DOUBLE_EQ(a100.s_per_byte, 2e-15);
  const double t = 5e-6 + 38 * 0.2e-6 + 2.0 * 4104 * 64 * 64 * 4096 / 312e12 + 2e-15 * 2 * 3 * 4096.0 * 4096;
  EXPECT_NEAR(a100.predict(GemmShape{1, 4096, 4096, 4096}), t, 1e-12);
  EXPECT_NEAR(square_efficiency(a100, 4096), 2.0 * 4096 * 4096 * 4096 / (t * 312e12), 1e-12);
  EXPECT_DOUBLE_EQ(transfer_gemm(measured, 108, 312e12, 0.5, 1).efficiency, 0.4);
  EXPECT_THROW((void)transfer_gemm(measured, 0, 312e12, 1, 1), std::invalid_argument);
  EXPECT_THROW((void)transfer_gemm(measured, 108, 0, 1, 1), std::invalid_argument);
  EXPECT_THROW((void)transfer_gemm(measured, 108, 312e12, 0, 1), std::invalid_argument);
  EXPECT_THROW((void)transfer_gemm(measured, 108, 312e12, 1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::calibration
