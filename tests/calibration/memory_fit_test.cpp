// Memory-bound (HBM) bandwidth fit on a real recorded copy sweep (see
// tests/data/calibration/README.md, memory/): sizes above the L2 cut, whole sizes held back.
#include "calibration/memory_fit.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "calibration/profile_fit.hpp"
#include "cli/calibrate_command.hpp"
#include "hardware/gpu_profile.hpp"
#include "tests/calibration/test_data.hpp"

namespace trainsim::calibration {
namespace {

std::vector<SizedRecord> arc_copy() {
  std::vector<SizedRecord> rows;
  EXPECT_EQ(read_sized_csv(testing::read_data("memory/arc-a370m-copy.csv"), "arc.csv", rows, kLaunchKernel), "");
  return rows;
}

// Issue 10 names no bar for memory-bound kernels; its 5 % for copies applies (a copy is
// what this sweep times). 14 sizes, 8 MB … 759 MB of traffic; the 8 below 100 MB are left
// out (L2 cut, memory_fit.hpp), and of the six fitted (134 MB … 759 MB) every third from
// the second is held back whole and predicted by the line fitted on the other four.
TEST(MemoryFit, HeldBackSizesOfARecordedCopySweep) {
  const std::vector<SizedRecord> rows = arc_copy();
  ASSERT_EQ(rows.size(), 14u);
  std::string error;
  const MemoryFit fit = fit_memory(rows, "arc.csv", error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(fit.rows_below_l2, 8);
  ASSERT_EQ(fit.kernels.size(), 1u);
  const CopyKindFit& f = fit.kernels[0];
  EXPECT_EQ(f.kind, "copy");
  EXPECT_EQ(f.sizes, 6);
  ASSERT_EQ(f.held.held_back_bytes, (std::vector<double>{189812528, 536870912}));
  std::printf("copy: alpha %.2f us, bandwidth %.3f GB/s; held back: median %.2f %%, max %.2f %%\n", f.alpha_s * 1e6,
              f.bytes_per_s * 1e-9, 100 * f.held.median, 100 * f.held.max);
  for (std::size_t i = 0; i < f.held.held_back_bytes.size(); ++i)
    std::printf("  %.0f B: %.2f %%\n", f.held.held_back_bytes[i], 100 * f.held.relative_errors[i]);
  EXPECT_LE(f.held.median, 0.05);
  // The benchmark's own figure at the largest size is 93.4 GB/s (bytes over time, α included):
  // the fitted bandwidth, α taken out, is at least that and within 10 % of it.
  EXPECT_GE(f.bytes_per_s, 93.0e9);
  EXPECT_LE(f.bytes_per_s, 93.4e9 * 1.1);
}

TEST(MemoryFit, LaunchRowsAndSmallSizesAreLeftOut) {
  std::vector<SizedRecord> rows = arc_copy();
  rows.push_back({"launch", 0, 3e-6});
  std::string error;
  const MemoryFit fit = fit_memory(rows, "arc.csv", error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(fit.kernels.size(), 1u);
  EXPECT_EQ(fit.rows_below_l2, 8);

  std::vector<SizedRecord> small;
  for (const auto& r : rows)
    if (r.bytes < 100000000) small.push_back(r);
  const MemoryFit none = fit_memory(small, "arc.csv", error);
  EXPECT_TRUE(none.kernels.empty());
  EXPECT_EQ(error, "arc.csv: error: no memory-kernel rows with at least 100 MB of traffic (smaller ones can be "
                   "served from L2); measure larger sizes");
  std::vector<std::string> skipped;
  error.clear();
  EXPECT_TRUE(fit_memory(small, "arc.csv", error, &skipped).kernels.empty());
  EXPECT_EQ(error, "");
  EXPECT_EQ(skipped, (std::vector<std::string>{"no memory-kernel rows with at least 100 MB of traffic"}));
}

TEST(MemoryFit, TooFewSizesAboveL2IsAnError) {
  std::vector<SizedRecord> rows = arc_copy();
  rows.pop_back();  // five sizes above the cut
  std::string error;
  EXPECT_TRUE(fit_memory(rows, "arc.csv", error).kernels.empty());
  EXPECT_EQ(error,
            "arc.csv: error: memory kernel \"copy\" has 5 distinct sizes; the fit with held-back sizes needs at least 6");
}

TEST(MemoryFit, ReaderAllowsZeroBytesOnlyForLaunch) {
  auto read = [](const std::string& text) {
    std::vector<SizedRecord> rows;
    return read_sized_csv(text, "m.csv", rows, kLaunchKernel);
  };
  EXPECT_EQ(read("kind,bytes,seconds\nlaunch,0,3e-6\n"), "");
  EXPECT_EQ(read("kind,bytes,seconds\nelementwise,0,3e-6\n"),
            "m.csv:2: error: bytes: \"0\" is not a positive integer (0 only for kind \"launch\")");
  EXPECT_EQ(read("kind,bytes,seconds\nlaunch,-1,3e-6\n"),
            "m.csv:2: error: bytes: \"-1\" is not a positive integer (0 only for kind \"launch\")");
}

// The streaming kernel's fitted bandwidth over the base profile's HBM bandwidth becomes
// memory_efficiency, cited with the file, α and the held-back errors; also through the CLI.
TEST(MemoryFit, StreamingKernelSetsMemoryEfficiency) {
  CalibrationInput in;
  in.base = *hardware::find_profile("a100-80gb");
  in.memory = arc_copy();
  in.memory_origin = "arc.csv";
  CalibrationOutput out = calibrate(in);
  ASSERT_EQ(out.error, "");
  std::string error;
  const MemoryFit fit = fit_memory(in.memory, "arc.csv", error);
  EXPECT_DOUBLE_EQ(out.profile.memory_efficiency().value(),
                   fit.kernels[0].bytes_per_s / in.base.hbm_bytes_per_s().value());
  const std::string& source = out.profile.memory_efficiency().source();
  EXPECT_NE(source.find("copy alpha-beta fit to arc.csv (6 sizes of at least 100 MB traffic, alpha "), std::string::npos)
      << source;
  EXPECT_NE(source.find("held back: median error"), std::string::npos) << source;
  EXPECT_NE(out.report.find("memory_efficiency = "), std::string::npos) << out.report;
  std::printf("%s", out.report.c_str());

  // An elementwise kernel, when measured, is the one that sets it.
  for (const auto& r : arc_copy()) in.memory.push_back({"elementwise", r.bytes, r.seconds * 1.25});
  out = calibrate(in);
  ASSERT_EQ(out.error, "");
  EXPECT_NEAR(out.profile.memory_efficiency().value(),
              fit.kernels[0].bytes_per_s / 1.25 / in.base.hbm_bytes_per_s().value(), 1e-9);
  EXPECT_NE(out.profile.memory_efficiency().source().find("elementwise alpha-beta fit"), std::string::npos);

  // A fitted bandwidth above the base profile's HBM bandwidth is refused (wrong base profile).
  in.memory = arc_copy();
  for (auto& r : in.memory) r.seconds /= 100;
  out = calibrate(in);
  EXPECT_NE(out.error.find("arc.csv: error: memory kernel \"copy\": fitted bandwidth "), std::string::npos) << out.error;
  EXPECT_NE(out.error.find("exceeds the base profile's hbm_bytes_per_s"), std::string::npos) << out.error;

  cli::CalibrateOptions o;
  o.base = "a100-80gb";
  o.memory_csv = testing::data_path("memory/arc-a370m-copy.csv");
  o.out_path = (std::filesystem::temp_directory_path() / "trainsim_memory_fit.textproto").string();
  std::ostringstream cout_, cerr_;
  EXPECT_EQ(cli::calibrate_command(o, cout_, cerr_), 0) << cerr_.str();
  EXPECT_NE(cout_.str().find("copy            6 sizes"), std::string::npos) << cout_.str();
  std::filesystem::remove(o.out_path);
  o.memory_csv = testing::data_path("memory/no-such-file.csv");
  std::ostringstream c2, e2;
  EXPECT_EQ(cli::calibrate_command(o, c2, e2), 1);
  EXPECT_NE(e2.str().find("no-such-file.csv: error: cannot read file"), std::string::npos) << e2.str();
}

}  // namespace
}  // namespace trainsim::calibration
