#pragma once
// `trainsim calibrate`: fits a cost profile (hardware/profile.proto) to measurements.
// Recorded measurements — nccl-tests logs (text or -J JSON) and GEMM throughput tables —
// are fitted on any machine. `--measure` first measures this machine's GPUs with the CUDA
// harness (calibration/cuda, in builds that found the CUDA toolkit) into a folder of raw
// measurements, then fits those; without a GPU, or in a build without the harness, it
// says so in one line and fails.
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
  std::string gemm_fp16_csv, gemm_fp8_csv, gemm_tf32_csv;  // the same columns, other dtypes
  int sms = 0;                          // SMs of the GPU the GEMMs ran on
  std::string attention_csv;            // fused attention "batch,heads,sequence,head_dim,causal,flops_per_s"
  std::string copies_csv;               // copy times "kind,bytes,seconds" (the harness's copies.csv)
  std::string memory_csv;               // memory-bound kernel times "kind,bytes,seconds" (the harness's memory.csv)
  std::string accumulate_csv;           // weight-gradient GEMMs adding into fp32 (scripts/gpu-checks/wgrad_accumulate.cu)
  std::string out_path;                 // the profile (.textproto); required
  std::string report_path;              // empty: the report goes to stdout
  bool measure = false;                 // measure the local GPUs first
  bool quick = false;                   // with measure: bounded to 10 minutes on one GPU
  std::string measure_dir;              // raw measurements; empty: "<out>.measurements"
  std::string phases;                   // with measure: comma-separated phases; empty: every phase
};

int calibrate_command(const CalibrateOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
