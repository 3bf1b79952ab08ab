#pragma once
// How a GEMM's output fills the GPU. cuBLAS computes the b × m × n output in tiles of
// rows × cols, one thread block per tile and one tile per SM at a time, so the tiles run
// in waves of `sms`: the last wave is partly idle (wave quantization) and the edge tiles
// compute padding (tile quantization). NVIDIA, "Matrix Multiplication Background User's
// Guide" (Deep Learning Performance documentation), sections "Tile Quantization" and
// "Wave Quantization". calibration/gemm_fit fits its time model on the same tiles.
#include <cstdint>

namespace trainsim::hardware {

struct GemmShape {
  std::int64_t b = 1, m = 0, n = 0, k = 0;  // b GEMMs of (m × k)·(k × n)
  [[nodiscard]] double flops() const {
    return 2.0 * static_cast<double>(b) * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

struct GemmTiling {
  std::int64_t sms = 0;  // tiles that run at once
  std::int64_t tile_rows = 0, tile_cols = 0;
};

// Output tiles of `shape` for tiles of rows × cols (edge tiles count whole).
[[nodiscard]] std::int64_t gemm_tiles(const GemmShape& shape, std::int64_t rows, std::int64_t cols);
// Waves of `sms` tiles that run them.
[[nodiscard]] std::int64_t gemm_waves(const GemmShape& shape, std::int64_t sms, std::int64_t rows, std::int64_t cols);

// Share of the SM time of its waves that computes useful output: b·m·n over
// waves · sms · rows · cols, for the better of the tile's two orientations (cuBLAS ships
// rows × cols and cols × rows kernels and its heuristic picks by shape). 1 for a shape
// that fills whole waves with whole tiles; needs every dimension > 0.
[[nodiscard]] double wave_efficiency(const GemmShape& shape, const GemmTiling& tiling);

}  // namespace trainsim::hardware
