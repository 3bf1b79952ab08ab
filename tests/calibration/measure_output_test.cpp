// The harness's files read back by the readers the fits use, checked without a GPU.
#include "calibration/measure_output.hpp"

#include <gtest/gtest.h>

#include "calibration/memory_fit.hpp"
#include "calibration/nccl_tests_log.hpp"

namespace trainsim::calibration {
namespace {

CollectiveRecord sample(const std::string& collective, int ranks) {
  CollectiveRecord c;
  c.collective = collective;
  c.algorithm = "Ring";
  c.protocol = "LL128";
  c.host = "node-a";
  c.warmup_iters = 5;
  c.iters = 20;
  for (int r = 0; r < ranks; ++r) {
    DeviceRecord d;
    d.index = r;
    d.name = "NVIDIA H100 80GB HBM3";
    d.pci_bus = "0000:1" + std::to_string(r) + ":00";
    c.devices.push_back(d);
  }
  // Times of several magnitudes, one past 10 ms (printed without decimals, as nccl-tests does).
  const double us[] = {12.34, 13.5, 40.25, 980.6, 24361.4};
  std::int64_t bytes = 1024;
  for (double t : us) {
    c.rows.push_back({bytes, bytes / 4, t, t * 1.01});
    bytes *= 64;
  }
  return c;
}

TEST(MeasureOutput, CollectiveLogReadsBackAsAnNcclTestsRun) {
  CollectiveRecord c = sample("all_reduce", 4);
  const std::string text = write_nccl_tests_log(c);
  NcclTestsResult r = read_nccl_tests(text, "measured.txt");
  ASSERT_TRUE(std::holds_alternative<NcclTestsLog>(r)) << to_string(std::get<LogError>(r)) << "\n" << text;
  const auto& log = std::get<NcclTestsLog>(r);
  EXPECT_EQ(log.format, NcclTestsFormat::TEXT);
  EXPECT_EQ(log.collective, "all_reduce");
  EXPECT_EQ(log.ranks, 4);
  EXPECT_EQ(log.nodes, 1);
  EXPECT_EQ(log.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(log.algorithm, "Ring");
  EXPECT_EQ(log.protocol, "LL128");
  EXPECT_EQ(log.skipped_rows, 0) << (log.warnings.empty() ? "" : log.warnings.front());
  ASSERT_EQ(log.rows.size(), c.rows.size());
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    EXPECT_EQ(log.rows[i].size_bytes, static_cast<std::uint64_t>(c.rows[i].bytes));
    EXPECT_NEAR(log.rows[i].out_of_place.time_us, c.rows[i].out_of_place_us, 0.5);
    EXPECT_FALSE(log.rows[i].out_of_place.wrong.has_value());  // "N/A": results not checked
    // nccl-tests' all-reduce bus bandwidth: algbw · 2(n−1)/n.
    EXPECT_NEAR(log.rows[i].out_of_place.busbw_gbps, log.rows[i].out_of_place.algbw_gbps * 1.5, 0.011);
  }
  EXPECT_EQ(collective_file_name(c), "nccl/all_reduce-4gpu-Ring-LL128.txt");
}

TEST(MeasureOutput, EveryCollectiveReadsBack) {
  for (const char* name : {"all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"}) {
    CollectiveRecord c = sample(name, 8);
    c.algorithm = c.protocol = "auto";
    NcclTestsResult r = read_nccl_tests(write_nccl_tests_log(c), "measured.txt");
    ASSERT_TRUE(std::holds_alternative<NcclTestsLog>(r)) << name << ": " << to_string(std::get<LogError>(r));
    EXPECT_EQ(std::get<NcclTestsLog>(r).collective, name);
    EXPECT_EQ(std::get<NcclTestsLog>(r).algorithm, "auto");
  }
  EXPECT_NE(write_nccl_tests_log(sample("alltoall", 2)).find("no in-place form"), std::string::npos);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor("all_gather", 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor("broadcast", 8), 1.0);
}

TEST(MeasureOutput, GemmCsvReadsBackForTheFit) {
  RunRecord run;
  run.cublaslt = 130000;
  run.cuda_runtime = 13000;
  run.devices.push_back({});
  run.devices[0].name = "NVIDIA H100 80GB HBM3";
  std::vector<GemmMeasurement> rows = {{{1, 2048, 4608, 12288}, 1.21e-4}, {{1, 12288, 4608, 2048}, 1.3e-4}};
  std::vector<GemmMeasurement> back;
  ASSERT_EQ(read_gemm_csv(write_gemm_csv("bf16", run, rows), "gemm-bf16.csv", back), "");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].shape.m, 12288);
  EXPECT_NEAR(back[0].seconds / rows[0].seconds, 1.0, 1e-6);
}

TEST(MeasureOutput, RunCsvRecordsVersionsAndClocks) {
  RunRecord run;
  run.host = "node-a";
  run.driver = "550.54.15";
  run.cuda_driver_api = 12040;
  run.cuda_runtime = 13000;
  run.nccl = 22803;
  DeviceRecord d;
  d.name = "NVIDIA A100-SXM4-80GB";
  d.sms = 108;
  d.sm_clock_mhz = 1410;
  run.devices.push_back(d);
  run.notes.push_back("gemm fp8: skipped, no FP8, really");
  const std::string s = write_run_csv(run);
  for (const char* line : {"driver,550.54.15\n", "cuda_driver_api,12.4\n", "cuda_runtime,13.0\n", "nccl,22803\n",
                           "gpu0.name,NVIDIA A100-SXM4-80GB\n", "gpu0.sms,108\n", "gpu0.sm_clock_mhz,1410\n",
                           "note0,gemm fp8: skipped; no FP8; really\n"})
    EXPECT_NE(s.find(line), std::string::npos) << line;
}

}  // namespace
// memory.csv as the harness writes it (with its launch row) reads back for the memory fit.
TEST(MeasureOutput, MemoryCsvReadsBackWithItsLaunchRow) {
  const std::vector<SizedRecord> rows = {{"launch", 0, 2.5e-6}, {"elementwise", 1 << 20, 1e-5}};
  std::vector<SizedRecord> back;
  ASSERT_EQ(read_sized_csv(write_sized_csv(rows), "memory.csv", back, kLaunchKernel), "");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].kind, "launch");
  EXPECT_EQ(back[0].bytes, 0);
  EXPECT_EQ(back[1].bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(back[1].seconds, 1e-5);
}

}  // namespace trainsim::calibration
