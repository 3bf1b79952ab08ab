#pragma once
// GEMM time as a function of shape. A GEMM of b × (m × k)·(k × n) runs as output tiles of
// tile_m × tile_n, one per thread block, spread over the SMs in waves; the last wave is
// partly idle (wave quantization) and edge tiles compute padding (tile quantization).
// The model, linear in its four non-negative coefficients:
//   tiles  = b · ⌈m / tile_m⌉ · ⌈n / tile_n⌉,   waves = ⌈tiles / SMs⌉
//   t = launch + (1/efficiency) · 2·waves·SMs·tile_m·tile_n·k / peak   (the padded work)
//         + wave_s · waves                                             (each wave's prologue/epilogue)
//         + s_per_byte · 2·b·(m·k + k·n + m·n)                         (operand traffic, saturation of small shapes)
// Tile sizes are chosen among the sizes cuBLAS/CUTLASS kernels use (64, 128, 256) by the
// best fit on the measured shapes. References: NVIDIA "Matrix Multiplication Background
// User's Guide" (tile and wave quantization); CUTLASS threadblock tile sizes.
#include "hardware/gemm_tiling.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::calibration {

// The shape and its tiling are hardware/gemm_tiling.hpp's, which the cost model reads too.
using GemmShape = hardware::GemmShape;

struct GemmMeasurement {
  GemmShape shape;
  double seconds = 0;
};

struct GemmModel {
  int sms = 0;
  double peak_flops = 0;
  int tile_m = 128, tile_n = 128;
  double launch_s = 0;
  double efficiency = 1;  // of the padded work, at full waves
  double wave_s = 0;
  double s_per_byte = 0;
  [[nodiscard]] double predict(const GemmShape& s) const;
};

// The model's efficiency on a square N × N × N GEMM (x = 2N³ on the cost model's gemm_flops
// curve): its FLOPs over the predicted time at the peak, at most 1.
[[nodiscard]] double square_efficiency(const GemmModel& m, int n);

// A measured model carried to a GPU that has no measurement of its own: that GPU's SMs and
// peak; the measured launch and per-wave times as they are (times, not rates); the per-byte
// time divided by `bandwidth_ratio`, the GPU's HBM bandwidth over the measured one's; and the
// full-wave efficiency times `efficiency_ratio`, the ratio of the two GPUs' best-shape
// efficiencies (maximum achievable matmul FLOPS over peak), at most 1.
[[nodiscard]] GemmModel transfer_gemm(const GemmModel& measured, int sms, double peak_flops, double efficiency_ratio,
                                      double bandwidth_ratio);

// Fits the model to measurements of one dtype on one GPU (`sms` streaming multiprocessors,
// `peak_flops` its dense tensor peak for the dtype). Needs at least 4 measurements.
[[nodiscard]] GemmModel fit_gemm(const std::vector<GemmMeasurement>& data, int sms, double peak_flops);

// Reads "b,m,n,k,flops_per_s" rows (a header line and '#' comments allowed). Errors name
// origin:line and the field; returns an empty string on success.
std::string read_gemm_csv(const std::string& text, const std::string& origin, std::vector<GemmMeasurement>& out);

}  // namespace trainsim::calibration
