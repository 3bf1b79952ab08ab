#pragma once
// One cuBLASLt matrix multiply, planned once (descriptors, layouts, the heuristic's first
// algorithm) and run many times, so that the timed loop holds only cublasLtMatmul.
// Column-major, "TN": D[m×n] = alpha · op(A)[m×k] · B[k×n], with A stored k×m (transposed)
// and B k×n, the layout cuBLASLt's FP8 kernels require on Hopper (cuBLAS documentation,
// cublasLtMatmul, FP8 notes) and the one Megatron-LM's forward GEMMs present.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <string>

#include "calibration/cuda/detail/kernels.hpp"

namespace trainsim::calibration::cuda::detail {

enum class GemmDtype : std::uint8_t { BF16, FP16, FP8, TF32 };
const char* dtype_name(GemmDtype d);  // "bf16", "fp16", "fp8", "tf32"
Elem input_elem(GemmDtype d);         // A and B
Elem output_elem(GemmDtype d);        // C and D: BF16 for FP8 inputs (Transformer Engine's output), else as inputs

class LtGemm {
 public:
  // Plans the GEMM; returns false with `why` when cuBLASLt offers no algorithm for it.
  // `output`: C and D's element type; the default is output_elem(dtype) (an fp32 output of
  // BF16 inputs is a weight gradient added into Megatron-LM's fp32 main_grad).
  LtGemm(cublasLtHandle_t handle, GemmDtype dtype, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k,
         void* workspace, std::size_t workspace_bytes, std::optional<Elem> output = std::nullopt);
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;
  ~LtGemm();
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] const std::string& why() const { return why_; }
  // Operands strided by one matrix each over the batch. beta 1 adds the product into D
  // (C = D) instead of overwriting it.
  void run(const void* a, const void* b, void* d, float alpha, cudaStream_t stream, float beta = 0) const;

 private:
  cublasLtHandle_t handle_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  void* workspace_;
  std::size_t workspace_bytes_;
  bool ok_ = false;
  std::string why_;
};

// A cuBLASLt handle and a stream for one phase, released however the phase ends.
class LtSession {
 public:
  LtSession();
  LtSession(const LtSession&) = delete;
  LtSession& operator=(const LtSession&) = delete;
  ~LtSession();
  [[nodiscard]] cublasLtHandle_t handle() const { return handle_; }
  [[nodiscard]] cudaStream_t stream() const { return stream_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace trainsim::calibration::cuda::detail
