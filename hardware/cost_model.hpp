#pragma once
// Op time on a device: a roofline of FLOPs and bytes with the profile's achieved
// efficiencies, plus the profile's per-kernel overhead.
#include <array>
#include <cstdint>

#include "hardware/profile.pb.h"
#include "sim/time.hpp"

namespace trainsim::hardware {

enum class Dtype : std::uint8_t { BF16, FP16, FP8, TF32, FP32 };
const char* to_string(Dtype d);  // "bf16", "fp16", …
// GEMM: cuBLAS dense or strided-batched GEMMs, read on the GEMM curve at the call's FLOPs.
// FUSED_ATTENTION: a fused attention kernel, read on the attention curve at curve_flops.
enum class KernelClass : std::uint8_t { GEMM, FUSED_ATTENTION, MEMORY };

struct Kernel {
  KernelClass cls = KernelClass::MEMORY;
  Dtype dtype = Dtype::BF16;
  double flops = 0;
  double bytes = 0;            // HBM traffic
  std::int64_t batch = 1;      // GEMM batch (heads); flops are the total over the batch
  std::int64_t kernels = 1;    // launches this op costs
  // GEMM: output rows, output columns and reduction length of each of the `batch` GEMMs,
  // for the wave and tile quantization of the profile's tiling (0: shape unknown, the
  // curve by FLOPs alone).
  std::int64_t m = 0, n = 0, k = 0;
  // FUSED_ATTENTION: where the attention curve is read, in the unit it was measured in
  // (forward + backward FLOPs of one sequence and head, non-causal; must be > 0).
  double curve_flops = 0;
  bool causal = false;   // FUSED_ATTENTION: a causal mask (the profile's causal curve, if it has one)
  bool dropout = false;  // FUSED_ATTENTION: attention dropout inside the kernel
  // GEMM: bytes its epilogue moves beyond writing a fresh result, adding the product into an
  // existing buffer instead (beta 1: a weight gradient accumulated into main_grad). They add
  // time at the profile's gemm_accumulate_bytes_per_s, beside the roofline of `bytes`.
  double accumulate_bytes = 0;
};

class CostModel {
 public:
  explicit CostModel(GpuProfile profile);
  double peak_flops(Dtype dtype) const;
  // Achieved FLOP/s for this kernel's compute part.
  double achieved_flops(const Kernel& kernel) const;
  // The most FLOP/s any compute kernel in `dtype` (a GEMM or a fused attention) reaches on
  // this GPU: no achieved_flops of such a kernel exceeds it (each curve's highest point at
  // the peak; wave quantization only lowers a GEMM's). A lower bound on compute time divides
  // FLOPs by this, not by the datasheet peak, which no kernel reaches.
  double max_achieved_flops(Dtype dtype) const;
  // The least time this kernel could take: seconds() with its FLOPs at max_achieved_flops
  // (its bytes, epilogue and launches as seconds() prices them). Not cached.
  double least_seconds(const Kernel& kernel) const;
  // Cached per (kernel shape, this cost model) for the life of the thread, so that the
  // variants of a sweep that share a cost model price each op shape once.
  double seconds(const Kernel& kernel) const;
  double seconds_uncached(const Kernel& kernel) const;
  sim::Time time(const Kernel& kernel) const { return sim::Time::from_seconds(seconds(kernel)); }
  const GpuProfile& profile() const { return profile_; }

 private:
  bool has_tiling() const;
  // GEMM efficiency of this kernel's shape: the curve at its FLOPs, with the shape's wave
  // and tile quantization where the profile has a tiling and the kernel its shape.
  double gemm_curve(const Kernel& kernel) const;
  // A kernel's time given the seconds of its compute part: the roofline with its memory
  // traffic, then the accumulating epilogue and the launches.
  double with_memory_and_launches(const Kernel& kernel, double compute_s) const;
  // FP8 GEMMs without a curve of their own follow the BF16 GEMM curve's shape, scaled by
  // this so that its plateau is the measured best-shape FP8 efficiency; 0 when the profile
  // has no such measurement (achieved_flops then refuses FP8 GEMMs).
  double fp8_scale_of_bf16_curve() const;
  GpuProfile profile_;
  // gemm_efficiency with each point divided by the wave efficiency of the square GEMM it
  // was measured at (capped at the best-shape plateau): the efficiency of full waves.
  // Empty without a tiling in the profile.
  EfficiencyCurve full_wave_gemm_;
  // A measured curve of the dtype (dtype_gemm_efficiency), indexed by Dtype; its GEMMs read
  // it, of their own peak, instead of gemm_efficiency. `full_wave` as full_wave_gemm_,
  // with the entry's own tiles on its curve_sm_count SMs (empty without a tiling).
  struct DtypeCurve {
    bool measured = false;
    EfficiencyCurve curve, full_wave;
    std::int64_t tile_rows = 0, tile_cols = 0;
  };
  std::array<DtypeCurve, 5> dtype_curves_;
  std::uint64_t id_;  // distinct per constructed model (copies share it: same profile), for the cache
};

}  // namespace trainsim::hardware
