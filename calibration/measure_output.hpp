#pragma once
// The files `trainsim calibrate --measure` writes, one folder per run, in the formats the
// fits read back (so that measuring and fitting are separate steps, and a run's raw data
// can be committed and refitted later):
//   run.csv                 field,value: host, driver, CUDA, cuBLAS, NCCL versions, and per
//                           GPU its name, SMs, memory, compute capability and clocks
//   gemm-<dtype>.csv        b,m,n,k,flops_per_s (calibration/gemm_fit.hpp's read_gemm_csv)
//   attention.csv           path,pass,causal,batch,heads,sequence,head_dim,seconds
//   memory.csv              kernel,bytes,seconds (kernel "launch": bytes 0, seconds per launch)
//   copies.csv              kind,bytes,seconds
//   nccl/<collective>-<n>gpu-<algo>-<proto>.txt   nccl-tests' current text format
// Host code only: the CUDA side fills these records; tests write and read them without a GPU.
#include <cstdint>
#include <string>
#include <vector>

#include "calibration/gemm_fit.hpp"
#include "calibration/measure_plan.hpp"

namespace trainsim::calibration {

struct DeviceRecord {
  int index = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::string pci_bus;  // "0000:18:00"
  int sms = 0;
  int compute_capability = 0;  // major·10 + minor
  std::int64_t memory_bytes = 0;
  int sm_clock_max_mhz = 0, memory_clock_max_mhz = 0;
  // Clocks read through NVML when the driver provides it; −1: not available.
  int sm_clock_mhz = -1, memory_clock_mhz = -1;
};

struct RunRecord {
  std::string host;
  std::string driver;  // the kernel driver's version ("550.54.15"); "unknown" without NVML
  int cuda_driver_api = 0, cuda_runtime = 0;  // 13000 = 13.0
  std::int64_t cublaslt = 0;                  // cublasLtGetVersion()
  int nccl = 0;                               // ncclGetVersion()
  bool quick = false;
  std::vector<DeviceRecord> devices;
  std::vector<std::string> notes;  // what was skipped and why ("fp8: needs compute capability 89+")
};

struct AttentionRecord {
  std::string path = "unfused";  // "unfused": cuBLASLt batched GEMMs + our softmax kernels
  std::string pass;              // "forward", "backward"
  AttentionProblem problem;
  double seconds = 0;
};

struct SizedRecord {
  std::string kind;  // memory.csv: the kernel; copies.csv: "h2d-pinned", "peer-0-1", …
  std::int64_t bytes = 0;
  double seconds = 0;
};

struct CollectiveRow {
  std::int64_t bytes = 0;  // nccl-tests' size: the whole buffer
  std::int64_t count = 0;  // elements passed to NCCL
  double out_of_place_us = 0, in_place_us = 0;
};

struct CollectiveRecord {
  std::string collective;  // "all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv"
  std::string algorithm = "auto", protocol = "auto";  // NCCL_ALGO / NCCL_PROTO, "auto" when unset
  std::string type = "float", redop = "sum";
  int root = -1;
  int warmup_iters = 0, iters = 0;
  std::string host;
  std::vector<DeviceRecord> devices;  // the ranks, in order
  std::vector<CollectiveRow> rows;
};

[[nodiscard]] std::string write_run_csv(const RunRecord& run);
[[nodiscard]] std::string write_gemm_csv(const std::string& dtype, const RunRecord& run,
                                         const std::vector<GemmMeasurement>& rows);
[[nodiscard]] std::string write_attention_csv(const std::vector<AttentionRecord>& rows);
[[nodiscard]] std::string write_sized_csv(const std::vector<SizedRecord>& rows);  // memory.csv, copies.csv
// The table nccl-tests prints (the current format: root column, #wrong), so that the same
// reader ingests it as a log brought from elsewhere. #wrong is "N/A": results are not checked.
[[nodiscard]] std::string write_nccl_tests_log(const CollectiveRecord& run);
// nccl-tests' bus-bandwidth factor for `collective` over `ranks` (reference §2.2).
[[nodiscard]] double bus_bandwidth_factor(const std::string& collective, int ranks);
// "nccl/all_reduce-8gpu-Ring-LL.txt"
[[nodiscard]] std::string collective_file_name(const CollectiveRecord& run);

}  // namespace trainsim::calibration
