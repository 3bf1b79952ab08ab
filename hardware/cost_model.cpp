#include "hardware/cost_model.hpp"

#include "hardware/detail/profile_check.hpp"
#include "hardware/gemm_tiling.hpp"
#include "hardware/gpu_profile.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <unordered_map>
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
  if (!(std::isfinite(k.accumulate_bytes) && k.accumulate_bytes >= 0))
    throw std::invalid_argument("kernel accumulate_bytes must be finite and >= 0");
  if (k.batch < 1) throw std::invalid_argument("kernel batch must be >= 1, got " + std::to_string(k.batch));
  if (k.kernels < 0) throw std::invalid_argument("kernel launch count must be >= 0, got " + std::to_string(k.kernels));
  if (k.m < 0 || k.n < 0 || k.k < 0 || ((k.m > 0 || k.n > 0 || k.k > 0) && (k.m == 0 || k.n == 0 || k.k == 0)))
    throw std::invalid_argument("kernel GEMM shape must be all 0 (unknown) or all >= 1, got m " + std::to_string(k.m) +
                                ", n " + std::to_string(k.n) + ", k " + std::to_string(k.k));
  if (k.cls == KernelClass::FUSED_ATTENTION && !(std::isfinite(k.curve_flops) && k.curve_flops > 0))
    throw std::invalid_argument("a fused attention kernel needs curve_flops > 0 (fwd + bwd FLOPs of one sequence "
                                "and head, the attention curve's unit), got " + std::to_string(k.curve_flops));
}

// Each point of a GEMM curve was measured on a square N × N × N GEMM (x = 2N³) on the GPU
// the curve comes from; its efficiency there includes that shape's quantization. Dividing
// it out leaves the efficiency of full waves, which cannot exceed the best-shape plateau
// (the last point: the maximum achievable matmul FLOPS that a search over shapes finds).
EfficiencyCurve full_wave_curve(const EfficiencyCurve& curve, const GemmTiling& measured) {
  EfficiencyCurve full = curve;
  const int last = full.point_size() - 1;
  const double plateau = full.point(last).efficiency();
  for (int i = 0; i < last; ++i) {
    auto* p = full.mutable_point(i);
    const auto n = std::max<std::int64_t>(1, std::llround(std::cbrt(p->x() / 2)));
    p->set_efficiency(std::min(plateau, p->efficiency() / wave_efficiency(GemmShape{1, n, n, n}, measured)));
  }
  return full;
}

// The profile check admits only these names in dtype_gemm_efficiency.
Dtype dtype_named(const std::string& name) {
  if (name == "fp16") return Dtype::FP16;
  if (name == "fp8") return Dtype::FP8;
  if (name == "tf32") return Dtype::TF32;
  throw std::logic_error("dtype_gemm_efficiency: unchecked dtype '" + name + "'");
}

}  // namespace

CostModel::CostModel(GpuProfile profile) : profile_(std::move(profile)) {
  static std::atomic<std::uint64_t> next_id{1};
  id_ = next_id.fetch_add(1, std::memory_order_relaxed);
  detail::require_valid_profile(profile_, detail::ProfilePart::COMPUTE, "CostModel");
  if (has_tiling()) {
    const GemmTiling measured{static_cast<std::int64_t>(profile_.gemm_curve_sm_count().value()),
                              static_cast<std::int64_t>(profile_.gemm_tile_rows().value()),
                              static_cast<std::int64_t>(profile_.gemm_tile_cols().value())};
    full_wave_gemm_ = full_wave_curve(profile_.gemm_efficiency(), measured);
  }
  for (const DtypeGemmEfficiency& e : profile_.dtype_gemm_efficiency()) {
    DtypeCurve& c = dtype_curves_[static_cast<std::size_t>(dtype_named(e.dtype()))];
    c.measured = true;
    c.curve = e.curve();
    c.tile_rows = e.tile_rows();
    c.tile_cols = e.tile_cols();
    if (has_tiling()) c.full_wave = full_wave_curve(e.curve(), GemmTiling{e.curve_sm_count(), c.tile_rows, c.tile_cols});
  }
}

bool CostModel::has_tiling() const {
  // The profile check made the four whole and all 0 or all > 0; a non-finite value (only a
  // profile built in code can carry one past it) means no tiling rather than a bad cast.
  for (const double v : {profile_.sm_count().value(), profile_.gemm_tile_rows().value(),
                         profile_.gemm_tile_cols().value(), profile_.gemm_curve_sm_count().value()})
    if (!(std::isfinite(v) && v > 0)) return false;
  return true;
}

double CostModel::gemm_curve(const Kernel& kernel) const {
  const DtypeCurve& own = dtype_curves_[static_cast<std::size_t>(kernel.dtype)];
  const EfficiencyCurve& curve = own.measured ? own.curve : profile_.gemm_efficiency();
  if (!has_tiling() || kernel.m == 0) return evaluate(curve, kernel.flops);
  const GemmTiling tiling{static_cast<std::int64_t>(profile_.sm_count().value()),
                          own.measured ? own.tile_rows : static_cast<std::int64_t>(profile_.gemm_tile_rows().value()),
                          own.measured ? own.tile_cols : static_cast<std::int64_t>(profile_.gemm_tile_cols().value())};
  return evaluate(own.measured ? own.full_wave : full_wave_gemm_, kernel.flops) *
         wave_efficiency(GemmShape{kernel.batch, kernel.m, kernel.n, kernel.k}, tiling);
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
    case KernelClass::GEMM: {
      const double curve = gemm_curve(kernel);
      // A curve measured in the kernel's own dtype is already a fraction of its peak.
      if (kernel.dtype != Dtype::FP8 || dtype_curves_[static_cast<std::size_t>(Dtype::FP8)].measured)
        return peak_flops(kernel.dtype) * curve;
      const double scale = fp8_scale_of_bf16_curve();
      if (!(scale > 0)) {
        throw std::invalid_argument("GPU '" + profile_.name() +
                                    "' has no measured FP8 GEMM efficiency (fp8_gemm_efficiency is 0): "
                                    "choose another precision or GPU");
      }
      return peak_flops(kernel.dtype) * curve * scale;
    }
    case KernelClass::FUSED_ATTENTION: {
      // The curve was measured per (sequence, head) at a sequence length; the kernel says
      // where it stands on that axis, whatever share of the FLOPs it runs (causal: half).
      const double mask =
          evaluate(kernel.causal && profile_.has_causal_attention_efficiency() ? profile_.causal_attention_efficiency()
                                                                                : profile_.batched_gemm_efficiency(),
                   kernel.curve_flops);
      const double dropout = kernel.dropout && profile_.has_dropout_attention_efficiency()
                                 ? evaluate(profile_.dropout_attention_efficiency(), kernel.curve_flops)
                                 : 1.0;
      return peak_flops(kernel.dtype) * mask * dropout;
    }
    case KernelClass::MEMORY:
      return 0.0;  // no compute part: its time is the HBM traffic alone
  }
  return 0.0;
}

double CostModel::fp8_scale_of_bf16_curve() const {
  const auto& points = profile_.gemm_efficiency().point();
  const double plateau = points.empty() ? 0.0 : points[points.size() - 1].efficiency();
  const double fp8 = profile_.fp8_gemm_efficiency().value();
  return fp8 > 0 && plateau > 0 ? fp8 / plateau : 0.0;
}

namespace {

double highest_point(const EfficiencyCurve& curve) {
  double top = 0;
  for (const auto& p : curve.point()) top = std::max(top, p.efficiency());
  return top;
}

}  // namespace

double CostModel::max_achieved_flops(Dtype dtype) const {
  // As achieved_flops reads the curves, each at its highest point: a GEMM's curve (its
  // dtype's own if measured; the full-wave curve never rises above the curve's plateau),
  // a fused attention's mask curve times the dropout curve where that would help it.
  double gemm = 0;
  const DtypeCurve& own = dtype_curves_[static_cast<std::size_t>(dtype)];
  if (own.measured) {
    gemm = highest_point(own.curve);
  } else {
    gemm = highest_point(profile_.gemm_efficiency());
    if (dtype == Dtype::FP8) gemm *= fp8_scale_of_bf16_curve();
  }
  double mask = highest_point(profile_.batched_gemm_efficiency());
  if (profile_.has_causal_attention_efficiency())
    mask = std::max(mask, highest_point(profile_.causal_attention_efficiency()));
  const double dropout =
      profile_.has_dropout_attention_efficiency() ? highest_point(profile_.dropout_attention_efficiency()) : 1.0;
  return peak_flops(dtype) * std::max(gemm, mask * std::max(1.0, dropout));
}

namespace {

struct KernelKey {
  std::uint64_t model;
  std::uint64_t flops_bits, bytes_bits, curve_bits, accumulate_bits;
  std::int64_t batch, kernels, m, n, k;
  std::uint8_t cls, dtype;
  bool causal, dropout;
  bool operator==(const KernelKey&) const = default;
};
struct KernelKeyHash {
  std::size_t operator()(const KernelKey& k) const {
    std::uint64_t h = k.model;
    for (const std::uint64_t v : {k.flops_bits, k.bytes_bits, k.curve_bits, k.accumulate_bits,
                                  static_cast<std::uint64_t>(k.batch),
                                  static_cast<std::uint64_t>(k.kernels), static_cast<std::uint64_t>(k.m),
                                  static_cast<std::uint64_t>(k.n), static_cast<std::uint64_t>(k.k),
                                  std::uint64_t{k.dropout} << 17 | std::uint64_t{k.causal} << 16 | std::uint64_t{k.cls} << 8 | k.dtype})
      h = (h ^ v) * 0x100000001B3ull + (h >> 31);
    return static_cast<std::size_t>(h);
  }
};
// Enough for every op shape of many models on several GPU types; cleared when full.
constexpr std::size_t MAX_CACHED_KERNELS = std::size_t{1} << 18;

}  // namespace

double CostModel::seconds(const Kernel& kernel) const {
  thread_local std::unordered_map<KernelKey, double, KernelKeyHash> cache;
  const KernelKey key{id_, std::bit_cast<std::uint64_t>(kernel.flops), std::bit_cast<std::uint64_t>(kernel.bytes),
                      std::bit_cast<std::uint64_t>(kernel.curve_flops),
                      std::bit_cast<std::uint64_t>(kernel.accumulate_bytes), kernel.batch, kernel.kernels, kernel.m, kernel.n, kernel.k, static_cast<std::uint8_t>(kernel.cls),
                      static_cast<std::uint8_t>(kernel.dtype), kernel.causal, kernel.dropout};
  if (const auto hit = cache.find(key); hit != cache.end()) return hit->second;
  const double s = seconds_uncached(kernel);  // throws on a bad kernel: nothing is cached
  if (cache.size() >= MAX_CACHED_KERNELS) cache.clear();
  cache.emplace(key, s);
  return s;
}

double CostModel::seconds_uncached(const Kernel& kernel) const {
  check_kernel(kernel);
  double compute_s = 0;
  if (kernel.cls != KernelClass::MEMORY && kernel.flops > 0) compute_s = kernel.flops / achieved_flops(kernel);
  return with_memory_and_launches(kernel, compute_s);
}

double CostModel::least_seconds(const Kernel& kernel) const {
  check_kernel(kernel);
  double compute_s = 0;
  if (kernel.cls != KernelClass::MEMORY && kernel.flops > 0)
    compute_s = kernel.flops / max_achieved_flops(kernel.dtype);
  return with_memory_and_launches(kernel, compute_s);
}

double CostModel::with_memory_and_launches(const Kernel& kernel, double compute_s) const {
  const double memory_s =
      kernel.bytes / (profile_.hbm_bytes_per_s().value() * profile_.memory_efficiency().value());
  // Roofline: compute and memory traffic overlap inside a kernel, so the slower one sets the
  // time; the launch/tail overhead does not overlap with either.
  // The accumulating epilogue's extra bytes were measured to add time beside the rest of
  // the kernel (tests/data/calibration/harness/*/wgrad-accumulate.csv), not to hide in it.
  const double accumulate_s =
      kernel.accumulate_bytes > 0 ? kernel.accumulate_bytes / profile_.gemm_accumulate_bytes_per_s().value() : 0.0;
  return std::max(compute_s, memory_s) + accumulate_s +
         static_cast<double>(kernel.kernels) * profile_.kernel_overhead_s().value();
}

}  // namespace trainsim::hardware
