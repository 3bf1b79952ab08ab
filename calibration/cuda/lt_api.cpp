#include "calibration/cuda/detail/lt_api.hpp"

#include <dlfcn.h>

#include <string>

#include "calibration/cuda/detail/check.hpp"

namespace trainsim::calibration::cuda::detail {
namespace {

// The toolkit's library that the build found (TRAINSIM_CUBLASLT_PATH), then its file name
// on the loader's search path (another machine may keep the toolkit elsewhere).
void* open_library(std::string& why) {
  for (const char* name : {TRAINSIM_CUBLASLT_PATH, TRAINSIM_CUBLASLT_NAME}) {
    if (void* h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
    const char* e = ::dlerror();
    why += std::string(why.empty() ? "" : "; ") + (e != nullptr ? e : name);
  }
  return nullptr;
}

LtApi load() {
  std::string why;
  void* h = open_library(why);
  if (h == nullptr) throw MeasureError("cannot open cuBLASLt: " + why);
  LtApi api{};
  auto bind = [&](auto& fn, const char* symbol) {
    void* p = ::dlsym(h, symbol);
    if (p == nullptr) throw MeasureError(std::string("cuBLASLt (") + TRAINSIM_CUBLASLT_NAME + ") has no " + symbol);
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  bind(api.cublasLtCreate, "cublasLtCreate");
  bind(api.cublasLtDestroy, "cublasLtDestroy");
  bind(api.cublasLtGetVersion, "cublasLtGetVersion");
  bind(api.cublasLtMatmul, "cublasLtMatmul");
  bind(api.cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
  bind(api.cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate");
  bind(api.cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy");
  bind(api.cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
  bind(api.cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
  bind(api.cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
  bind(api.cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
  bind(api.cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
  bind(api.cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
  bind(api.cublasLtMatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
  return api;
}

}  // namespace

const LtApi& lt() {
  static const LtApi api = load();  // a failed load throws and is tried again next call
  return api;
}

}  // namespace trainsim::calibration::cuda::detail
