#include "hardware/cost_model.hpp"

#include "hardware/detail/profile_check.hpp"
#include "hardware/gpu_profile.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace trainsim::hardware {

const char* to_string(Dtype d) {
  switch (d) {
    case Dtype::BF16: return "bf16";
    case Dtype::FP16: return "fp16";
    case Dtype::FP8: return "fp8";
    case Dtype::TF32: return "tf32";
    case Dtype::FP32: return "fp32";
  }
  return "unknown dtype";
}

namespace {

void check_kernel(const Kernel& k) {
  if (!(std::isfinite(k.flops) && k.flops >= 0)) throw std::invalid_argument("kernel flops must be finite and >= 0");
  if (!(std::isfinite(k.bytes) && k.bytes >= 0)) throw std::invalid_argument("kernel bytes must be finite and >= 0");
  if (k.batch < 1) throw std::invalid_argument("kernel batch must be >= 1, got " + std::to_string(k.batch));
  if (k.kernels < 0) throw std::invalid_argument("kernel launch count must be >= 0, got " + std::to_string(k.kernels));
}

}  // namespace

CostModel::CostModel(GpuProfile profile) : profile_(std::move(profile)) {
  detail::require_valid_profile(profile_, detail::ProfilePart::COMPUTE, "CostModel");
}

double CostModel::peak_flops(Dtype dtype) const {
  double peak = 0;
  switch (dtype) {
    case Dtype::BF16: peak = profile_.peak_bf16_flops().value(); break;
    case Dtype::FP16: peak = profile_.peak_fp16_flops().value(); break;
    case Dtype::FP8: peak = profile_.peak_fp8_flops().value(); break;
    case Dtype::TF32: peak = profile_.peak_tf32_flops().value(); break;
    case Dtype::FP32: peak = profile_.peak_fp32_flops().value(); break;
  }
  // A zero peak means the GPU has no such units; returning it would turn into a division by
  // zero (an infinite op time) somewhere downstream, so refuse here with a usable message.
  if (!(peak > 0)) {
    throw std::invalid_argument("GPU '" + profile_.name() + "' has no " + to_string(dtype) +
                                " peak (its profile gives 0 FLOP/s): choose another precision or GPU");
  }
  return peak;
}

double CostModel::achieved_flops(const Kernel& kernel) const {
  check_kernel(kernel);
  switch (kernel.cls) {
    case KernelClass::GEMM:
      return peak_flops(kernel.dtype) * evaluate(profile_.gemm_efficiency(), kernel.flops);
    case KernelClass::BATCHED_GEMM:
      // The attention core is `batch` independent small GEMMs: their efficiency follows
      // the size of one of them, not of the sum.
      return peak_flops(kernel.dtype) *
             evaluate(profile_.batched_gemm_efficiency(), kernel.flops / static_cast<double>(kernel.batch));
    case KernelClass::MEMORY:
      return 0.0;  // no compute part: its time is the HBM traffic alone
  }
  return 0.0;
}

double CostModel::seconds(const Kernel& kernel) const {
  check_kernel(kernel);
  double compute_s = 0;
  if (kernel.cls != KernelClass::MEMORY && kernel.flops > 0) compute_s = kernel.flops / achieved_flops(kernel);
  const double memory_s =
      kernel.bytes / (profile_.hbm_bytes_per_s().value() * profile_.memory_efficiency().value());
  // Roofline: compute and memory traffic overlap inside a kernel, so the slower one sets the
  // time; the launch/tail overhead does not overlap with either.
  return std::max(compute_s, memory_s) +
         static_cast<double>(kernel.kernels) * profile_.kernel_overhead_s().value();
}

}  // namespace trainsim::hardware
