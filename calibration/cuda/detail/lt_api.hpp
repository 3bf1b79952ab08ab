#pragma once
// cuBLASLt, opened on first use instead of linked: the library is half a gigabyte with
// thousands of static constructors and took a third of a second to load, which every
// trainsim process paid at start (`trainsim run`, a test, a notebook cell) though only
// `calibrate --measure` calls it. The functions keep their cuBLASLt names and types.
#include <cublasLt.h>

namespace trainsim::calibration::cuda::detail {

struct LtApi {
  decltype(&::cublasLtCreate) cublasLtCreate;
  decltype(&::cublasLtDestroy) cublasLtDestroy;
  decltype(&::cublasLtGetVersion) cublasLtGetVersion;
  decltype(&::cublasLtMatmul) cublasLtMatmul;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) cublasLtMatmulAlgoGetHeuristic;
  decltype(&::cublasLtMatmulDescCreate) cublasLtMatmulDescCreate;
  decltype(&::cublasLtMatmulDescDestroy) cublasLtMatmulDescDestroy;
  decltype(&::cublasLtMatmulDescSetAttribute) cublasLtMatmulDescSetAttribute;
  decltype(&::cublasLtMatmulPreferenceCreate) cublasLtMatmulPreferenceCreate;
  decltype(&::cublasLtMatmulPreferenceDestroy) cublasLtMatmulPreferenceDestroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) cublasLtMatmulPreferenceSetAttribute;
  decltype(&::cublasLtMatrixLayoutCreate) cublasLtMatrixLayoutCreate;
  decltype(&::cublasLtMatrixLayoutDestroy) cublasLtMatrixLayoutDestroy;
  decltype(&::cublasLtMatrixLayoutSetAttribute) cublasLtMatrixLayoutSetAttribute;
};

// The library's functions, opened once per process (thread-safe). Throws MeasureError
// naming the library and the loader's reason when it cannot be opened or lacks a function.
const LtApi& lt();

}  // namespace trainsim::calibration::cuda::detail
