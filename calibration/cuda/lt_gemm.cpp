#include "calibration/cuda/detail/lt_gemm.hpp"

#include "calibration/cuda/detail/check.hpp"
#include "calibration/cuda/detail/lt_api.hpp"

namespace trainsim::calibration::cuda::detail {
namespace {

cudaDataType_t cuda_type(Elem e) {
  switch (e) {
    case Elem::F32: return CUDA_R_32F;
    case Elem::F16: return CUDA_R_16F;
    case Elem::BF16: return CUDA_R_16BF;
    case Elem::E4M3: return CUDA_R_8F_E4M3;
  }
  return CUDA_R_32F;
}

cublasLtMatrixLayout_t layout(Elem e, std::int64_t rows, std::int64_t cols, std::int64_t batch) {
  cublasLtMatrixLayout_t l = nullptr;
  TRAINSIM_CHECK(lt().cublasLtMatrixLayoutCreate(&l, cuda_type(e), static_cast<std::uint64_t>(rows),
                                            static_cast<std::uint64_t>(cols), rows));
  if (batch > 1) {
    const auto count = static_cast<std::int32_t>(batch);
    const std::int64_t stride = rows * cols;
    TRAINSIM_CHECK(lt().cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    TRAINSIM_CHECK(
        lt().cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return l;
}

}  // namespace

const char* dtype_name(GemmDtype d) {
  switch (d) {
    case GemmDtype::BF16: return "bf16";
    case GemmDtype::FP16: return "fp16";
    case GemmDtype::FP8: return "fp8";
    case GemmDtype::TF32: return "tf32";
  }
  return "?";
}

Elem input_elem(GemmDtype d) {
  switch (d) {
    case GemmDtype::BF16: return Elem::BF16;
    case GemmDtype::FP16: return Elem::F16;
    case GemmDtype::FP8: return Elem::E4M3;
    case GemmDtype::TF32: return Elem::F32;
  }
  return Elem::F32;
}

Elem output_elem(GemmDtype d) { return d == GemmDtype::FP8 ? Elem::BF16 : input_elem(d); }

LtGemm::LtGemm(cublasLtHandle_t handle, GemmDtype dtype, std::int64_t batch, std::int64_t m, std::int64_t n,
               std::int64_t k, void* workspace, std::size_t workspace_bytes, std::optional<Elem> output)
    : handle_(handle), workspace_(workspace), workspace_bytes_(workspace_bytes) {
  const cublasComputeType_t compute = dtype == GemmDtype::TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  TRAINSIM_CHECK(lt().cublasLtMatmulDescCreate(&op_, compute, CUDA_R_32F));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  TRAINSIM_CHECK(lt().cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  TRAINSIM_CHECK(lt().cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  a_ = layout(input_elem(dtype), k, m, batch);
  b_ = layout(input_elem(dtype), k, n, batch);
  d_ = layout(output.value_or(output_elem(dtype)), m, n, batch);
  cublasLtMatmulPreference_t pref = nullptr;
  TRAINSIM_CHECK(lt().cublasLtMatmulPreferenceCreate(&pref));
  TRAINSIM_CHECK(lt().cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &workspace_bytes_, sizeof workspace_bytes_));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s = lt().cublasLtMatmulAlgoGetHeuristic(handle_, op_, a_, b_, d_, d_, pref, 1, &result, &found);
  lt().cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
    why_ = "cuBLASLt has no algorithm for it (status " + std::to_string(static_cast<int>(s)) + ")";
    return;
  }
  algo_ = result.algo;
  ok_ = true;
}

LtGemm::~LtGemm() {
  if (d_) lt().cublasLtMatrixLayoutDestroy(d_);
  if (b_) lt().cublasLtMatrixLayoutDestroy(b_);
  if (a_) lt().cublasLtMatrixLayoutDestroy(a_);
  if (op_) lt().cublasLtMatmulDescDestroy(op_);
}

void LtGemm::run(const void* a, const void* b, void* d, float alpha, cudaStream_t stream, float beta) const {
  TRAINSIM_CHECK(lt().cublasLtMatmul(handle_, op_, &alpha, a, a_, b, b_, &beta, d, d_, d, d_, &algo_, workspace_,
                                workspace_bytes_, stream));
}

LtSession::LtSession() {
  TRAINSIM_CHECK(lt().cublasLtCreate(&handle_));
  if (const cudaError_t e = cudaStreamCreate(&stream_); e != cudaSuccess) {
    lt().cublasLtDestroy(handle_);
    TRAINSIM_CHECK(e);
  }
}

LtSession::~LtSession() {
  cudaStreamDestroy(stream_);
  lt().cublasLtDestroy(handle_);
}

}  // namespace trainsim::calibration::cuda::detail
