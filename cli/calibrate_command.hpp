#pragma once
// `trainsim calibrate`: fits a cost profile (hardware/profile.proto) to measurements.
// Recorded measurements — nccl-tests logs (text or -J JSON) and GEMM throughput tables —
// are fitted on any machine. Measuring on the local GPUs needs a build with the CUDA
// toolkit's benchmarks, which this version does not have yet: asked to measure, the
// command says so and fails.
#include <iosfwd>
#include <string>
#include <vector>

namespace trainsim::cli {

struct CalibrateOptions {
  std::string base;                     // shipped profile the fit starts from ("h100-sxm")
  std::string name;                     // of the written profile; empty: "<base>-calibrated"
  std::vector<std::string> nccl_tests;  // nccl-tests logs
  std::string collective;               // for logs that do not name theirs
  std::string gemm_csv;                 // "b,m,n,k,flops_per_s", BF16
  int sms = 0;                          // SMs of the GPU the GEMMs ran on
  std::string out_path;                 // the profile (.textproto); required
  std::string report_path;              // empty: the report goes to stdout
};

int calibrate_command(const CalibrateOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
