#pragma once
// The phases of a measuring run. Each works under its own deadline (checked before every
// measurement), records what it skipped and why in `notes`, and throws MeasureError only
// when the device itself fails.
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "calibration/accumulate_fit.hpp"
#include "calibration/cuda/detail/lt_gemm.hpp"
#include "calibration/measure_output.hpp"
#include "calibration/measure_plan.hpp"

namespace trainsim::calibration::cuda::detail {

struct Phase {
  TimeBudget budget;
  double target_s = 0.02;  // how long each timed batch should run
  std::vector<std::string>* notes = nullptr;
  std::ostream* progress = nullptr;
  void note(const std::string& text) const;
};

// What a phase over a list of shapes or problems left out, noted once at its end: those
// whose buffers did not fit in free memory, those cuBLASLt had no algorithm for, and those
// the time budget cut.
struct Skipped {
  std::size_t too_large = 0, unsupported = 0, cut = 0;
  // `what` names the phase in the notes ("gemm bf16"), `things` its items ("shapes").
  void note(const Phase& phase, const std::string& what, const char* things, std::size_t planned) const;
};

// Fills the run's versions and its devices (without clocks under load).
RunRecord describe_run(int device_count, bool quick);
// Current SM and memory clocks through NVML, when the driver's libnvidia-ml is present
// (loaded at run time, so that the program starts on machines without the driver).
void read_clocks(RunRecord& run);

std::vector<GemmMeasurement> measure_gemms(const Phase& phase, GemmDtype dtype, const std::vector<GemmShape>& shapes);
// Weight-gradient shapes (m × n over k tokens) writing BF16, adding into fp32 and into BF16.
std::vector<AccumulateMeasurement> measure_accumulating_gemms(const Phase& phase, const std::vector<GemmShape>& shapes);
std::vector<AttentionRecord> measure_attention(const Phase& phase, const std::vector<AttentionProblem>& problems);
#ifdef TRAINSIM_HAVE_CUDNN
// cuDNN's fused scaled-dot-product attention, forward and backward (sdpa_phase.cpp; built
// only when CMake finds cuDNN 9).
std::vector<AttentionRecord> measure_fused_attention(const Phase& phase, const std::vector<AttentionProblem>& problems);
#endif
std::vector<SizedRecord> measure_memory_kernels(const Phase& phase, const std::vector<std::int64_t>& sizes);
std::vector<SizedRecord> measure_copies(const Phase& phase, int device_count, const std::vector<std::int64_t>& sizes);
// Every collective over every local GPU count from 2, first as NCCL chooses, then per
// forced algorithm and protocol; `done` receives each finished sweep (to write its log).
void measure_collectives(const Phase& phase, const RunRecord& run, const std::vector<std::int64_t>& sizes,
                         const std::function<void(const CollectiveRecord&)>& done);

}  // namespace trainsim::calibration::cuda::detail
