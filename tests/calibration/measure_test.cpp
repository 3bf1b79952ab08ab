// The measuring harness itself (built only with the CUDA toolkit). On a machine without a
// GPU it must refuse in one line; on a GPU machine a short run must write files the fits
// read. Each test skips, with the reason, where the machine cannot show what it checks.
#include "calibration/cuda/measure.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "calibration/accumulate_fit.hpp"
#include "calibration/attention_records.hpp"
#include "calibration/memory_fit.hpp"
#include "calibration/nccl_tests_log.hpp"
#include "calibration/cuda/detail/lt_api.hpp"
#include "cli/calibrate_command.hpp"

namespace trainsim::calibration::cuda {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// cuBLASLt is opened on first use, not at the process's start; it needs no GPU to say its
// version.
TEST(Measure, CuBlasLtOpensOnFirstUse) {
  EXPECT_GT(detail::lt().cublasLtGetVersion(), 0u);
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  EXPECT_NE(text.str().find("libcublasLt"), std::string::npos) << "opened, yet not mapped";
}

TEST(Measure, WithoutAGpuSaysSoInOneLineAndFails) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "this machine has a CUDA GPU: the no-GPU refusal cannot be shown here";
  const auto dir = std::filesystem::temp_directory_path() / "trainsim_measure_nogpu";
  std::ostringstream out, err;
  MeasureResult r = measure({true, dir.string(), 0, {}}, out, err);
  EXPECT_EQ(r.status, 1);
  const std::string e = err.str();
  EXPECT_EQ(e.rfind("error: calibrate --measure: no CUDA GPU on this machine (cudaGetDeviceCount", 0), 0u) << e;
  EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 1) << e;
  EXPECT_FALSE(std::filesystem::exists(dir / "run.csv"));

  // Through the command: the same line, exit status 1, no profile written.
  cli::CalibrateOptions o;
  o.base = "h100-sxm";
  o.measure = true;
  o.quick = true;
  o.out_path = (dir / "p.textproto").string();
  std::ostringstream out2, err2;
  EXPECT_EQ(cli::calibrate_command(o, out2, err2), 1);
  EXPECT_EQ(err2.str(), e);
  EXPECT_FALSE(std::filesystem::exists(o.out_path));
}

TEST(Measure, AShortRunOnAGpuWritesFilesTheFitsRead) {
  if (cuda_device_count() <= 0) GTEST_SKIP() << "no CUDA GPU on this machine: the harness cannot run here";
  const auto dir = std::filesystem::temp_directory_path() / "trainsim_measure_gpu";
  std::filesystem::remove_all(dir);
  std::ostringstream out, err;
  MeasureResult r = measure({true, dir.string(), 20, {}}, out, err);  // 20 s: a few of everything
  ASSERT_EQ(r.status, 0) << err.str();
  EXPECT_LT(r.seconds, 60);
  ASSERT_FALSE(r.run.devices.empty());
  EXPECT_GT(r.run.devices[0].sms, 0);
  EXPECT_GT(r.run.cuda_runtime, 0);
  EXPECT_GT(r.run.nccl, 0);
  std::vector<GemmMeasurement> gemms;
  ASSERT_EQ(read_gemm_csv(slurp(dir / "gemm-bf16.csv"), "gemm-bf16.csv", gemms), "");
  for (const auto& g : gemms) EXPECT_GT(g.seconds, 0);
  EXPECT_NE(slurp(dir / "memory.csv").find("\nlaunch,0,"), std::string::npos);
  std::vector<SizedRecord> memory;  // what calibrate --memory-csv reads
  EXPECT_EQ(read_sized_csv(slurp(dir / "memory.csv"), "memory.csv", memory, kLaunchKernel), "");
  EXPECT_NE(slurp(dir / "run.csv").find("gpu0.name,"), std::string::npos);
  // attention.csv: what calibrate --attention-csv reads (a 20-second run may measure none).
  const std::string attention_text = slurp(dir / "attention.csv");
  if (std::count(attention_text.begin(), attention_text.end(), '\n') > 1) {
    std::vector<AttentionRecord> attention;
    EXPECT_EQ(read_attention_records(attention_text, "attention.csv", attention), "");
    std::printf("attention.csv: %zu rows, %zu fused problems with both passes\n", attention.size(),
                fused_attention_measurements(attention).measurements.size());
  }
  if (std::filesystem::is_directory(dir / "nccl")) {
    for (const auto& entry : std::filesystem::directory_iterator(dir / "nccl")) {
      NcclTestsResult log = read_nccl_tests(slurp(entry.path()), entry.path().string());
      EXPECT_TRUE(std::holds_alternative<NcclTestsLog>(log)) << entry.path();
    }
  }
}

// The accumulate phase alone: weight-gradient shapes timed three ways, in the table
// `calibrate --accumulate-csv` reads, whose fit prices held-back shapes within 5 % (median).
TEST(Measure, AccumulatingGemmsOnAGpuGiveTheTableTheFitReads) {
  if (cuda_device_count() <= 0) GTEST_SKIP() << "no CUDA GPU on this machine: the harness cannot run here";
  const auto dir = std::filesystem::temp_directory_path() / "trainsim_measure_accumulate";
  std::filesystem::remove_all(dir);
  std::ostringstream out, err;
  MeasureResult r = measure({true, dir.string(), 45, MeasurePhases::parse("gemm-accumulate")}, out, err);
  ASSERT_EQ(r.status, 0) << err.str();
  std::vector<AccumulateMeasurement> rows;
  ASSERT_EQ(read_accumulate_csv(slurp(dir / "wgrad-accumulate.csv"), "wgrad-accumulate.csv", rows), "");
  ASSERT_GE(rows.size(), kMinAccumulateShapes);
  const auto [fit_on, held] = hold_back_every_fourth(rows);
  const AccumulateFit f = fit_accumulate(fit_on, held);
  std::vector<double> e = f.fp32_errors;
  std::sort(e.begin(), e.end());
  std::printf("%zu weight-gradient shapes: %.4g B/s; held back median %.2f %%\n", rows.size(), f.bytes_per_s,
              100 * e[e.size() / 2]);
  EXPECT_LE(e[e.size() / 2], 0.05);
}

}  // namespace
}  // namespace trainsim::calibration::cuda
