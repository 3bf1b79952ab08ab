#include "hardware/cost_model.hpp"

#include "hardware/gpu_profile.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>

namespace trainsim::hardware {
namespace {

CostModel model(const std::string& name) { return CostModel(*find_profile(name)); }

// A shipped profile with the published H100 square-GEMM sweep's kind of curve: efficiencies
// at N = 1024, 2048, 4096, 8192 measured on 132 SMs, cuBLAS's 256 × 128 tiles, and no
// per-dtype curves or fits, so that every GEMM reads these four known points.
GpuProfile with_square_sweep(const std::string& name, const double (&efficiency)[4]) {
  GpuProfile p = *find_profile(name);
  auto* curve = p.mutable_gemm_efficiency();
  curve->clear_point();
  const double n[] = {1024, 2048, 4096, 8192};
  for (int i = 0; i < 4; ++i) {
    auto* pt = curve->add_point();
    pt->set_x(2 * n[i] * n[i] * n[i]);
    pt->set_efficiency(efficiency[i]);
  }
  p.mutable_gemm_tile_rows()->set_value(256);
  p.mutable_gemm_tile_cols()->set_value(128);
  p.mutable_gemm_curve_sm_count()->set_value(132);
  p.clear_dtype_gemm_efficiency();
  p.clear_gemm_fit();
  return p;
}

// These tests check the cost model's arithmetic on a curve whose points they know: the H100
// profile as it shipped before it took its GEMM rates from our own measurement, with the
// published square-GEMM sweep (N = 1024 … 8192: 176.6, 676.6, 788.7, 797.5 TFLOP/s, capped at
// the MAMF 794.5).
GpuProfile published_h100() { return with_square_sweep("h100-sxm", {0.178564, 0.684125, 0.797472, 0.803337}); }

// A 16384^3 BF16 GEMM is past the last point of the H100 curve (plateau = MAMF 794.5/989),
// and its 1.6 GB of operands take far less than its FLOPs: time = flops / (989e12 · 0.803337)
// plus one kernel overhead.
TEST(CostModel, BigGemmIsComputeBoundAtPeakTimesEfficiency) {
  const auto m = CostModel(published_h100());
  Kernel k;
  k.cls = KernelClass::GEMM;
  k.dtype = Dtype::BF16;
  k.flops = 2.0 * 16384.0 * 16384.0 * 16384.0;
  k.bytes = 3.0 * 16384.0 * 16384.0 * 2.0;
  const double eff = m.profile().gemm_efficiency().point(3).efficiency();
  EXPECT_DOUBLE_EQ(m.achieved_flops(k), 989e12 * eff);
  const double expected = k.flops / (989e12 * eff) + m.profile().kernel_overhead_s().value();
  std::printf("16384^3 BF16 GEMM on H100: %.6f ms (%.1f TFLOP/s achieved)\n", m.seconds(k) * 1e3,
              m.achieved_flops(k) / 1e12);
  EXPECT_NEAR(m.seconds(k), expected, 1e-12);
  EXPECT_EQ(m.time(k), sim::Time::from_seconds(expected));
}

// A weight gradient added into fp32 main_grad: 6·m·n extra epilogue bytes at the profile's
// measured rate (4.649 TB/s on the H100), on top of the same GEMM writing BF16, even for a
// compute-bound shape whose roofline would hide them (the measurement says they are not
// hidden). The rest of the kernel's time does not change.
TEST(CostModel, AccumulatingIntoABufferAddsItsExtraBytesAtTheMeasuredRate) {
  const auto m = model("h100-sxm");
  Kernel k;
  k.cls = KernelClass::GEMM;
  k.m = 8192, k.n = 2048, k.k = 4096;  // the 1.7B model's fc1 weight gradient
  k.flops = 2.0 * 8192 * 2048 * 4096;
  k.bytes = 2.0 * (8192.0 * 4096 + 4096.0 * 2048 + 8192.0 * 2048);
  const double plain = m.seconds(k);
  k.accumulate_bytes = 6.0 * 8192 * 2048;  // (2·4 − 2)·m·n
  EXPECT_NEAR(m.seconds(k) - plain, 6.0 * 8192 * 2048 / 4.649e12, 1e-12);
  EXPECT_NEAR(m.seconds(k) - plain, 21.65e-6, 0.05e-6);  // 100.7 MB at 4.649 TB/s
  k.accumulate_bytes = -1;
  EXPECT_THROW((void)m.seconds(k), std::invalid_argument);
}

TEST(CostModel, SmallGemmUsesTheCurve) {
  const auto m = CostModel(published_h100());
  Kernel k;
  k.cls = KernelClass::GEMM;
  k.flops = 2.0 * 2048 * 2048 * 2048;
  k.kernels = 0;
  // The profile stores 676.6/989 to 6 digits.
  EXPECT_NEAR(m.seconds(k), k.flops / 676.6e12, 1e-5 * k.flops / 676.6e12);
}

// A GEMM kernel of (m × k)·(k × n) with its FLOPs, as the ops give it to the cost model.
Kernel gemm(Dtype dtype, std::int64_t m, std::int64_t n, std::int64_t k) {
  Kernel g;
  g.cls = KernelClass::GEMM;
  g.dtype = dtype;
  g.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  g.m = m;
  g.n = n;
  g.k = k;
  return g;
}

// The A100 as it shipped before it derived its GEMM curve from our H100 measurement: the
// published H100 square-GEMM sweep scaled to the A100's MAMF (N = 1024 … 8192: 0.193211,
// 0.740241, 0.862885, 0.869231). Its N = 4096 point is capped by the plateau, which the
// shipped curve's points are not; without per-dtype curves its FP16 GEMMs read this one.
GpuProfile published_a100() { return with_square_sweep("a100-80gb", {0.193211, 0.740241, 0.862885, 0.869231}); }

// GEMM efficiency in a layer's shape on A100 (tiling 256 × 128 in waves of 108; the curve's points
// were measured on H100's 132 SMs). The fc1 GEMM of GPT-39B at tensor 8, 2048 tokens:
// m 2048, n 4096, k 8192, 2^37 FLOPs = the curve's N = 4096 point. Full-wave efficiency
// there: 0.862885 measured at N = 4096 on 132 SMs, where 16 · 32 = 512 tiles take 4 waves
// (528 slots), so 0.862885 · 528/512 = 0.88985, capped at the plateau 0.869231 (the
// best-shape MAMF). The shape's own quantization: 256 tiles in 3 waves of 108 = 256/324.
TEST(CostModel, GemmShapeQuantizesIntoWavesOverTheSms) {
  const CostModel m(published_a100());
  const Kernel k = gemm(Dtype::FP16, 2048, 4096, 8192);
  EXPECT_NEAR(m.achieved_flops(k), 312e12 * 0.869231 * 256 / 324, 1e3);
  // Without its shape the kernel is read on the curve by FLOPs alone, as before.
  Kernel by_flops = k;
  by_flops.m = by_flops.n = by_flops.k = 0;
  EXPECT_NEAR(m.achieved_flops(by_flops), 312e12 * 0.862885, 1e3);
  // Between points the full-wave curve interpolates in log2 FLOPs: at N = 2048 (132 SMs:
  // 8 · 16 = 128 tiles, 1 wave) the point is 0.740241 · 132/128; a 2048 × 2048 × 2048 GEMM
  // on A100 is 128 tiles in 2 waves of 108: 128/216.
  EXPECT_NEAR(m.achieved_flops(gemm(Dtype::BF16, 2048, 2048, 2048)), 312e12 * 0.740241 * 132 / 128 * 128 / 216, 1e3);
}

// The shipped A100 curve: our H100 measurement's shape model carried to the A100 (its 108
// SMs and peak; tests/calibration/measured_gpus_test.cpp) at square N, in 64 × 64 tiles.
// GPT-39B's fc1 at tensor 8 (m 2048, n 4096, k 8192, 2^37 FLOPs) is the N = 4096 point,
// 0.781663: there 64 · 64 = 4096 tiles took 38 waves of 108 (4104 slots), so full waves run
// at 0.781663 · 4104/4096 = 0.78319, under the plateau 0.796486. The fc1's own 32 · 64 = 2048
// tiles take 19 waves: 2048/2052.
TEST(CostModel, DerivedA100CurveRequantizesWithTheTilesItWasFittedWith) {
  const auto m = model("a100-80gb");
  EXPECT_NEAR(m.achieved_flops(gemm(Dtype::BF16, 2048, 4096, 8192)), 312e12 * 0.781663 * 4104 / 4096 * 2048 / 2052,
              1e3);
  // A 2048³ GEMM is its own point, 0.691840: its quantization, 1024 tiles in 10 waves (1080
  // slots), divided out and applied again.
  EXPECT_NEAR(m.achieved_flops(gemm(Dtype::BF16, 2048, 2048, 2048)), 312e12 * 0.691840, 1e3);
  // A 2048 × 2048 × 4096 GEMM reads the curve between the two points, in log2 FLOPs, a third
  // of the way, with the 2048³ GEMM's quantization: 1024 tiles in 10 waves of 108.
  const double full_2048 = 0.691840 * 1080 / 1024, full_4096 = 0.781663 * 4104 / 4096;
  EXPECT_NEAR(m.achieved_flops(gemm(Dtype::BF16, 2048, 2048, 4096)),
              312e12 * (full_2048 + (full_4096 - full_2048) / 3) * 1024 / 1080, 1e3);
  // FP16 GEMMs read the FP16 curve, derived alike from the H100's FP16 model: 2048³ at 0.653809.
  EXPECT_NEAR(m.achieved_flops(gemm(Dtype::FP16, 2048, 2048, 2048)), 312e12 * 0.653809, 1e3);
}

// A profile without a tiling (sm_count 0, e.g. one built in code) reads the curve by FLOPs
// whatever the shape; a half-given tiling or shape is refused.
TEST(CostModel, TilingIsOptionalAndWhole) {
  auto profile = published_h100();
  profile.mutable_sm_count()->set_value(0);
  profile.mutable_gemm_tile_rows()->set_value(0);
  profile.mutable_gemm_tile_cols()->set_value(0);
  profile.mutable_gemm_curve_sm_count()->set_value(0);
  const CostModel plain(profile);
  Kernel k;
  k.cls = KernelClass::GEMM;
  k.flops = 2.0 * 2048 * 2048 * 2048;
  k.m = k.n = k.k = 2048;
  EXPECT_NEAR(plain.achieved_flops(k), 989e12 * 0.684125, 1e3);
  profile.mutable_sm_count()->set_value(132);
  EXPECT_THROW(CostModel{profile}, std::invalid_argument);
  const auto h100 = CostModel(published_h100());
  k.n = 0;
  EXPECT_THROW((void)h100.seconds(k), std::invalid_argument);
}

// A GEMM curve measured in its own dtype (dtype_gemm_efficiency) replaces gemm_efficiency
// for that dtype only. H100's FP16 and BF16 peaks are equal (989 TFLOP/s), so with FP16's
// own curve flat at 0.4 where BF16's big-GEMM plateau is 0.803337, an FP16 GEMM takes
// 0.803337 / 0.4 of the BF16 one; BF16 and TF32 keep the shipped curve. Read by FLOPs
// (no shape) and with a shape: the FP16 curve carries its own tiles (64 × 64 on 132 SMs).
TEST(CostModel, AMeasuredDtypeCurveReplacesTheGemmCurveForThatDtype) {
  auto profile = published_h100();
  auto* e = profile.add_dtype_gemm_efficiency();
  e->set_dtype("fp16");
  e->set_tile_rows(64);
  e->set_tile_cols(64);
  e->set_curve_sm_count(132);
  e->mutable_curve()->set_variable("gemm_flops");
  for (double x : {1e9, 1e13}) {
    auto* pt = e->mutable_curve()->add_point();
    pt->set_x(x);
    pt->set_efficiency(0.4);
  }
  const CostModel measured(profile);
  const CostModel shipped = CostModel(published_h100());
  Kernel k;
  k.cls = KernelClass::GEMM;
  k.flops = 2.0 * 16384.0 * 16384.0 * 16384.0;
  k.kernels = 0;
  k.dtype = Dtype::BF16;
  const double bf16 = measured.seconds_uncached(k);
  EXPECT_DOUBLE_EQ(bf16, shipped.seconds_uncached(k));
  k.dtype = Dtype::FP16;
  EXPECT_NEAR(measured.seconds_uncached(k) / bf16, 0.803337 / 0.4, 1e-6);
  EXPECT_NEAR(shipped.seconds_uncached(k) / bf16, 1.0, 1e-12);
  k.dtype = Dtype::TF32;
  EXPECT_DOUBLE_EQ(measured.seconds_uncached(k), shipped.seconds_uncached(k));
  // With a shape: 4096 × 4096 × 4096 is 64 · 64 = 4096 tiles of 64 × 64, 32 waves of 132
  // (4224 slots). The curve's first point, divided by its own square shape's quantization
  // (64 × 64 tiles on 132 SMs), is capped at the plateau 0.4: the full-wave curve is 0.4
  // flat, times this shape's 4096/4224.
  k.dtype = Dtype::FP16;
  k.flops = 2.0 * 4096 * 4096 * 4096;
  k.m = k.n = k.k = 4096;
  EXPECT_NEAR(measured.achieved_flops(k), 989e12 * 0.4 * 4096 / 4224, 1e3);
}

// A measured FP8 curve is already a fraction of the FP8 peak: fp8_gemm_efficiency (which
// scales the BF16 curve when FP8 was not measured) no longer applies.
TEST(CostModel, AMeasuredFp8CurveIsOfTheFp8Peak) {
  auto profile = published_h100();
  auto* e = profile.add_dtype_gemm_efficiency();
  e->set_dtype("fp8");
  e->set_tile_rows(128);
  e->set_tile_cols(128);
  e->set_curve_sm_count(132);
  e->mutable_curve()->set_variable("gemm_flops");
  auto* pt = e->mutable_curve()->add_point();
  pt->set_x(1e12);
  pt->set_efficiency(0.6);
  const CostModel m(profile);
  Kernel k;
  k.cls = KernelClass::GEMM;
  k.dtype = Dtype::FP8;
  k.flops = 2.0 * 16384.0 * 16384.0 * 16384.0;
  EXPECT_DOUBLE_EQ(m.achieved_flops(k), 1979e12 * 0.6);
}

// A LayerNorm-like op: 1 GB moved, a few FLOPs per byte: memory-bound at hbm × 0.675.
TEST(CostModel, ElementwiseOpIsMemoryBound) {
  const auto m = model("a100-80gb");
  Kernel k;
  k.cls = KernelClass::MEMORY;
  k.flops = 5e9;
  k.bytes = 1e9;
  EXPECT_DOUBLE_EQ(m.achieved_flops(k), 0.0);
  EXPECT_NEAR(m.seconds(k), 1e9 / (2039e9 * 0.675) + 3e-6, 1e-15);
}

// A GEMM with huge operands and few FLOPs is limited by memory: the roofline takes the max.
TEST(CostModel, GemmWithLittleReuseIsMemoryBound) {
  const auto m = model("h200");
  Kernel k;
  k.cls = KernelClass::GEMM;
  k.flops = 1e12;
  k.bytes = 1e11;
  k.kernels = 2;
  const double memory = 1e11 / (4.8e12 * 0.675);
  ASSERT_GT(memory, k.flops / m.achieved_flops(k));
  EXPECT_NEAR(m.seconds(k), memory + 2 * 3.77e-6, 1e-12);  // H200's measured launch cost
}

// A fused attention kernel is read on its curve at curve_flops (fwd + bwd FLOPs of one
// sequence and head, the benchmark's unit), whatever its own FLOPs or batch.
TEST(CostModel, FusedAttentionIsReadInTheCurvesUnit) {
  const auto m = CostModel(published_h100());
  Kernel k;
  k.cls = KernelClass::FUSED_ATTENTION;
  k.batch = 64;
  k.flops = 64 * 4.0 * 8192 * 8192 * 128;     // a forward of 64 heads at seqlen 8k
  k.curve_flops = 14.0 * 8192 * 8192 * 128;  // the curve's 8k point: 0.567721 of 989 TFLOP/s
  EXPECT_NEAR(m.achieved_flops(k), 0.567721 * 989e12, 1e7);
  k.curve_flops = 14.0 * 1024 * 1024 * 128;  // the 1k point: 0.412673
  EXPECT_NEAR(m.achieved_flops(k), 0.412673 * 989e12, 1e7);
  // Causal: half the work, read at the same x on the causal curve (measured lower).
  k.flops /= 2;
  k.causal = true;
  EXPECT_NEAR(m.achieved_flops(k), 0.300608 * 989e12, 1e7);
  k.curve_flops = 14.0 * 8192 * 8192 * 128;
  EXPECT_NEAR(m.achieved_flops(k), 0.499254 * 989e12, 1e7);
  // A profile without a causal curve (A100: FlashAttention-2's chart) reads the other one.
  const auto a100 = model("a100-80gb");
  Kernel noncausal = k;
  noncausal.causal = false;
  EXPECT_EQ(a100.achieved_flops(k), a100.achieved_flops(noncausal));
  EXPECT_NE(m.seconds(k), m.seconds(noncausal));  // and the cache keeps the two apart
  // Attention dropout inside the kernel: the measured factor at the same x (8k: 0.676638).
  Kernel dropped = k;
  dropped.dropout = true;
  EXPECT_NEAR(m.achieved_flops(dropped), 0.499254 * 0.676638 * 989e12, 1e7);
  EXPECT_GT(m.seconds(dropped), m.seconds(k));
  EXPECT_EQ(a100.achieved_flops(dropped), a100.achieved_flops(k));  // no measurement: no factor
  k.curve_flops = 0;  // no point on the curve: refused, not defaulted
  EXPECT_THROW((void)m.seconds(k), std::invalid_argument);
}

// FP8 GEMMs follow the (BF16-measured) GEMM curve scaled to the measured FP8 plateau:
// at the plateau 1402.6 of 1979 TFLOPS (H100 FP8 MAMF), not the BF16 efficiency at FP8 peak.
TEST(CostModel, Fp8GemmsRunAtTheMeasuredFp8Efficiency) {
  const auto m = CostModel(published_h100());
  Kernel k;
  k.cls = KernelClass::GEMM;
  k.dtype = Dtype::FP8;
  k.flops = 1e15;  // on the plateau
  // (the profile's efficiencies are rounded to 6 digits: relative 1e-5, as elsewhere here)
  EXPECT_NEAR(m.achieved_flops(k), 1402.6e12, 1402.6e12 * 1e-5);
  k.flops = 2.0 * 2048 * 2048 * 2048;  // N = 2048: the curve's 676.6/794.5 of the plateau
  EXPECT_NEAR(m.achieved_flops(k), 1402.6e12 * 676.6 / 794.5, 1402.6e12 * 1e-5);
  k.dtype = Dtype::BF16;
  EXPECT_NEAR(m.achieved_flops(k), 676.6e12, 676.6e12 * 1e-5);
}

TEST(CostModel, Fp8OnA100Throws) {
  const auto m = model("a100-80gb");
  Kernel k;
  k.cls = KernelClass::GEMM;
  k.dtype = Dtype::FP8;
  k.flops = 1e12;
  try {
    (void)m.seconds(k);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("a100-80gb"), std::string::npos) << what;
    EXPECT_NE(what.find("fp8"), std::string::npos) << what;
  }
  EXPECT_THROW((void)m.peak_flops(Dtype::FP8), std::invalid_argument);
  // An FP8 element-wise op needs no tensor cores.
  k.cls = KernelClass::MEMORY;
  k.bytes = 1e6;
  EXPECT_GT(m.seconds(k), 0.0);
  // FP8 on H100 is fine.
  EXPECT_DOUBLE_EQ(CostModel(published_h100()).peak_flops(Dtype::FP8), 1979e12);
}

TEST(CostModel, PeaksPerDtype) {
  const auto m = model("a100-80gb");
  EXPECT_DOUBLE_EQ(m.peak_flops(Dtype::BF16), 312e12);
  EXPECT_DOUBLE_EQ(m.peak_flops(Dtype::FP16), 312e12);
  EXPECT_DOUBLE_EQ(m.peak_flops(Dtype::TF32), 156e12);
  EXPECT_DOUBLE_EQ(m.peak_flops(Dtype::FP32), 19.5e12);
}

TEST(CostModel, RejectsBadKernelsAndProfiles) {
  const auto m = CostModel(published_h100());
  Kernel k;
  k.cls = KernelClass::FUSED_ATTENTION;
  k.curve_flops = 1e9;
  k.flops = 1e9;
  k.batch = 0;
  EXPECT_THROW((void)m.seconds(k), std::invalid_argument);
  k.batch = 1;
  k.bytes = -1;
  EXPECT_THROW((void)m.seconds(k), std::invalid_argument);

  auto p = published_h100();
  p.mutable_gemm_efficiency()->clear_point();
  try {
    CostModel bad(p);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gemm_efficiency: has no points"), std::string::npos) << e.what();
  }
  p = published_h100();
  p.mutable_hbm_bytes_per_s()->set_value(0);
  EXPECT_THROW(CostModel{p}, std::invalid_argument);
}

}  // namespace

// Op costs are cached per (kernel shape, cost model) for the life of the thread: a hit gives
// what pricing gives, and two cost models never see each other's entries — a profile with a
// slower GEMM curve prices the same kernel slower, whichever is asked first.
TEST(CostModel, CachedCostsStayPerModel) {
  Kernel k;
  k.cls = KernelClass::GEMM;
  k.flops = 3e12;
  k.bytes = 1e8;
  const CostModel fast = CostModel(published_h100());
  GpuProfile slow_profile = published_h100();
  for (auto& p : *slow_profile.mutable_gemm_efficiency()->mutable_point()) p.set_efficiency(p.efficiency() / 2);
  const CostModel slow(slow_profile);
  const double s1 = slow.seconds(k), f1 = fast.seconds(k);
  EXPECT_DOUBLE_EQ(f1, fast.seconds_uncached(k));
  EXPECT_DOUBLE_EQ(s1, slow.seconds_uncached(k));
  EXPECT_GT(s1, 1.5 * f1);
  EXPECT_DOUBLE_EQ(fast.seconds(k), f1);  // a hit
  const CostModel copy = slow;            // a copy prices as its original
  EXPECT_DOUBLE_EQ(copy.seconds(k), s1);
  Kernel bad = k;
  bad.bytes = -1;
  EXPECT_THROW((void)fast.seconds(bad), std::invalid_argument);
  EXPECT_THROW((void)fast.seconds(bad), std::invalid_argument);  // a failure is never cached
}

}  // namespace trainsim::hardware

namespace trainsim::hardware {
namespace {

// max_achieved_flops is what the search's time lower bound divides FLOPs by
// (least_seconds): no kernel of its dtype may reach more, nor take less than
// least_seconds. Checked on every shipped profile and dtype it has a peak for, over GEMMs of
// many sizes and shapes (square, skinny, batched, with and without a shape) and fused
// attention kernels across the curves' range (causal, dropout); and the ceiling is reached,
// on some kernel, to within the curve's interpolation.
TEST(CostModel, NoKernelOutrunsTheMostAchievedFlops) {
  for (const std::string& name : profile_names()) {
    const CostModel m = model(name);
    for (const Dtype d : {Dtype::BF16, Dtype::FP16, Dtype::FP8, Dtype::TF32, Dtype::FP32}) {
      const bool has_peak = [&] {
        try {
          return m.peak_flops(d) > 0;
        } catch (const std::invalid_argument&) {
          return false;
        }
      }();
      if (!has_peak) continue;
      const double ceiling = m.max_achieved_flops(d);
      EXPECT_LE(ceiling, m.peak_flops(d) * (1 + 1e-12)) << name << " " << to_string(d);
      double best = 0;
      auto check = [&](const Kernel& k) {
        double achieved = 0;
        try {
          achieved = m.achieved_flops(k);
        } catch (const std::invalid_argument&) {
          return;  // e.g. FP8 on a GPU without a measured FP8 efficiency
        }
        best = std::max(best, achieved);
        EXPECT_LE(m.least_seconds(k), m.seconds(k) * (1 + 1e-12)) << name << " " << to_string(d);
        EXPECT_LE(achieved, ceiling * (1 + 1e-12))
            << name << " " << to_string(d) << " class " << static_cast<int>(k.cls) << " flops " << k.flops << " m "
            << k.m << " n " << k.n << " k " << k.k;
      };
      for (double x = 1e6; x < 1e16; x *= 1.7) {
        Kernel g;
        g.cls = KernelClass::GEMM;
        g.dtype = d;
        g.flops = x;
        check(g);  // shape unknown: the curve alone
        const auto side = std::max<std::int64_t>(1, std::llround(std::cbrt(x / 2)));
        for (const auto& [rows, cols, batch] : {std::tuple{side, side, 1}, std::tuple{side * 4, side / 4 + 1, 1},
                                                 std::tuple{side / 2 + 1, side * 2, 4}}) {
          g.m = rows;
          g.n = cols;
          g.k = std::max<std::int64_t>(1, std::llround(x / (2.0 * static_cast<double>(rows * cols * batch))));
          g.batch = batch;
          g.flops = 2.0 * static_cast<double>(g.m * g.n * g.k * g.batch);
          g.bytes = 2.0 * static_cast<double>(g.batch * (g.m * g.k + g.k * g.n + g.m * g.n));
          check(g);
        }
        Kernel a;
        a.cls = KernelClass::FUSED_ATTENTION;
        a.dtype = d;
        a.curve_flops = x;
        a.flops = x;
        for (const bool causal : {false, true})
          for (const bool dropout : {false, true}) {
            a.causal = causal;
            a.dropout = dropout;
            check(a);
          }
      }
      if (best > 0) EXPECT_GT(best, 0.95 * ceiling) << name << " " << to_string(d) << ": the ceiling is never reached";
    }
  }
}

}  // namespace
}  // namespace trainsim::hardware
