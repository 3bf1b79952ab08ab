#pragma once
// Error checks for CUDA, cuBLASLt and NCCL calls: a failed call throws MeasureError naming
// the call and where it was made, so that a phase can record why it stopped and the run
// goes on with the next phase.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace trainsim::calibration::cuda::detail {

struct MeasureError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess)
    throw MeasureError(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " + cudaGetErrorString(e));
}
inline void check(cublasStatus_t e, const char* call, const char* file, int line) {
  if (e != CUBLAS_STATUS_SUCCESS)
    throw MeasureError(std::string(file) + ":" + std::to_string(line) + ": " + call + ": cuBLAS status " +
                       std::to_string(static_cast<int>(e)));
}
inline void check(ncclResult_t e, const char* call, const char* file, int line) {
  if (e != ncclSuccess)
    throw MeasureError(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " + ncclGetErrorString(e));
}

#define TRAINSIM_CHECK(call) ::trainsim::calibration::cuda::detail::check((call), #call, __FILE__, __LINE__)

// Seconds on a monotonic clock: the budgets and the host-timed collectives use it.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Device memory owned by one object.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) TRAINSIM_CHECK(cudaMalloc(&ptr_, bytes));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  [[nodiscard]] void* get() const { return ptr_; }
  [[nodiscard]] std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Free device memory of the current device, bytes.
inline std::size_t free_device_bytes() {
  std::size_t free = 0, total = 0;
  TRAINSIM_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

// Seconds per call of `launch` (which enqueues work on `stream`), timed with CUDA events:
// one warm-up call, one timed call to size the batches, then three batches of enough calls
// to last `target_s` each (at least 1, at most 1000 calls); the median batch's mean.
template <typename Launch>
double time_on_stream(cudaStream_t stream, double target_s, Launch&& launch) {
  cudaEvent_t start, stop;
  TRAINSIM_CHECK(cudaEventCreate(&start));
  TRAINSIM_CHECK(cudaEventCreate(&stop));
  auto batch = [&](int calls) {
    TRAINSIM_CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < calls; ++i) launch();
    TRAINSIM_CHECK(cudaEventRecord(stop, stream));
    TRAINSIM_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    TRAINSIM_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms * 1e-3 / calls;
  };
  double result = 0;
  try {
    batch(1);  // warm-up: first-call costs (module load, heuristics, page mapping)
    const double once = batch(1);
    int calls = once > 0 ? static_cast<int>(target_s / once) : 1000;
    calls = calls < 1 ? 1 : (calls > 1000 ? 1000 : calls);
    double t[3] = {batch(calls), batch(calls), batch(calls)};
    if (t[0] > t[1]) std::swap(t[0], t[1]);
    if (t[1] > t[2]) std::swap(t[1], t[2]);
    if (t[0] > t[1]) std::swap(t[0], t[1]);
    result = t[1];
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return result;
}

}  // namespace trainsim::calibration::cuda::detail
