#pragma once
// The measuring harness of `trainsim calibrate --measure` (built only when CMake finds the
// CUDA toolkit): times cuBLASLt GEMMs, the unfused attention path, memory-bound kernels,
// kernel launches, copies and NCCL collectives on this machine's GPUs under a time budget,
// and writes the raw measurements into a folder in the formats of
// calibration/measure_output.hpp, which `calibrate` then fits.
#include <iosfwd>
#include <string>

#include "calibration/measure_output.hpp"
#include "calibration/measure_plan.hpp"

namespace trainsim::calibration::cuda {

struct MeasureOptions {
  bool quick = false;   // bounded to 10 minutes on one GPU
  std::string out_dir;  // created if missing; files in it are replaced
  // Seconds the whole run may take; 0: the plan's bound (10 minutes quick, 4 hours full).
  // Tests set a few seconds.
  double time_limit_s = 0;
  MeasurePhases phases;  // default: every phase
};

// CUDA devices this process sees; −1 when the runtime or driver cannot tell (no driver).
[[nodiscard]] int cuda_device_count();

struct MeasureResult {
  int status = 0;  // 0: measured; 1: no GPU or a failure, already reported on `err`
  RunRecord run;
  double seconds = 0;  // wall time of the whole run
};

// Without a usable GPU (cudaGetDeviceCount fails or finds none) this prints one line on
// `err` and returns status 1. Progress goes to `out`.
[[nodiscard]] MeasureResult measure(const MeasureOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainsim::calibration::cuda
