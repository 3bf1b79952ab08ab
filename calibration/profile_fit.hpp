#pragma once
// Turns recorded measurements into a cost profile in hardware's schema
// (hardware/profile.proto), with a fit report that states, for every fit, the error on
// measurements held back from it (whole message sizes; whole GEMM shapes).
#include <string>
#include <vector>

#include "calibration/accumulate_fit.hpp"
#include "calibration/attention_fit.hpp"
#include "calibration/copy_fit.hpp"
#include "calibration/gemm_fit.hpp"
#include "calibration/memory_fit.hpp"
#include "calibration/nccl_tests_log.hpp"
#include "hardware/profile.pb.h"

namespace trainsim::calibration {

struct CalibrationInput {
  hardware::GpuProfile base;  // what is not measured comes from here (datasheet profile)
  std::string name;           // of the new profile; empty: "<base>-calibrated"
  std::vector<NcclTestsLog> logs;
  std::vector<GemmMeasurement> gemm_bf16;
  std::string gemm_origin;  // file name, for the citation
  int sms = 0;              // streaming multiprocessors of the measured GPU (needed with GEMMs)
  // GEMMs measured in other dtypes ("fp16", "fp8", "tf32"; at most one table each): each is
  // fitted like the BF16 table, against its dtype's peak, into dtype_gemm_efficiency, the
  // curve the cost model reads for that dtype's GEMMs.
  struct GemmTable {
    std::string dtype;
    std::vector<GemmMeasurement> rows;
    std::string origin;
  };
  std::vector<GemmTable> gemm_other;
  std::vector<AttentionMeasurement> attention;  // fused attention, forward + backward
  std::string attention_origin;
  std::vector<SizedRecord> copies;  // copies.csv: α–β per kind; pinned host copies set pcie_bytes_per_s
  std::string copies_origin;
  bool skip_short_copy_kinds = false;  // a kind with too few sizes is reported, not an error (--measure)
  std::vector<SizedRecord> memory;     // memory.csv: α–β per kernel; copy/elementwise set memory_efficiency
  std::string memory_origin;
  // scripts/gpu-checks/wgrad_accumulate.cu's table: sets gemm_accumulate_bytes_per_s.
  std::vector<AccumulateMeasurement> accumulate;
  std::string accumulate_origin;
};

// The dtypes gemm_other may hold, in the order calibrate fits them.
inline constexpr const char* kOtherGemmDtypes[] = {"fp16", "fp8", "tf32"};

struct CalibrationOutput {
  hardware::GpuProfile profile;
  std::string report;  // deterministic text
  std::string error;   // non-empty: nothing was fitted
};

[[nodiscard]] CalibrationOutput calibrate(const CalibrationInput& input);

// Square GEMM sizes at which the fitted shape model is written into the profile's
// gemm_efficiency curve (FLOPs → efficiency), which the cost model reads, up to the largest
// size the measurements reach.
inline constexpr int kCurveSizes[] = {256, 512, 1024, 2048, 4096, 8192, 16384};

}  // namespace trainsim::calibration
