// Wave and tile quantization of a GEMM's output tiles, against hand counts.
#include "hardware/gemm_tiling.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace trainsim::hardware {
namespace {

constexpr GemmTiling kA100{108, 256, 128};  // 108 SMs (reference §3.1), 256 × 128 tiles
constexpr GemmTiling kH100{132, 256, 128};  // 132 SMs

// NVIDIA's guide example: 1792² output in 256 × 128 tiles is 7 · 14 = 98 tiles, one wave of
// 108 on A100 with 10 SMs idle: 98/108 of the wave computes.
TEST(GemmTiling, OnePartialWave) {
  const GemmShape s{1, 1792, 1792, 4096};
  EXPECT_EQ(gemm_tiles(s, 256, 128), 98);
  EXPECT_EQ(gemm_waves(s, 108, 256, 128), 1);
  EXPECT_DOUBLE_EQ(wave_efficiency(s, kA100), 98.0 / 108);
}

// GPT-39B on A100, tensor 8, micro-batch 1, sequence 2048: the fc1 GEMM's output is
// 2048 tokens × 4096 columns. 256 × 128 tiles: 8 · 32 = 256; 128 × 256: 16 · 16 = 256 —
// 3 waves of 108 either way (324 slots): 256/324 computes.
TEST(GemmTiling, TensorParallelMlpGemmOnA100) {
  const GemmShape fc1{1, 2048, 4096, 8192};
  EXPECT_EQ(gemm_waves(fc1, 108, 256, 128), 3);
  EXPECT_EQ(gemm_waves(fc1, 108, 128, 256), 3);
  EXPECT_DOUBLE_EQ(wave_efficiency(fc1, kA100), 256.0 / 324);
  // The same GEMM on H100's 132 SMs: 2 waves (264 slots), 256/264.
  EXPECT_DOUBLE_EQ(wave_efficiency(fc1, kH100), 256.0 / 264);
}

// Edge tiles: m = 300 rows need 2 tiles of 256 rows (212 padded) or 3 of 128 (84 padded);
// n = 100 columns 1 tile of 128 or 1 of 256. Orientation 256 × 128: 2 tiles, 1 wave,
// useful 300·100 of 108·256·128 slots; 128 × 256: 3 tiles, 1 wave, the same slots. The
// better of the two is equal here, and the share is 30000 / 3538944.
TEST(GemmTiling, EdgeTilesArePadding) {
  const GemmShape s{1, 300, 100, 64};
  EXPECT_EQ(gemm_tiles(s, 256, 128), 2);
  EXPECT_EQ(gemm_tiles(s, 128, 256), 3);
  EXPECT_DOUBLE_EQ(wave_efficiency(s, kA100), 300.0 * 100 / (108.0 * 256 * 128));
}

// The orientation matters where one dimension is not a multiple of 256: m = 128, n = 27648
// (216 · 128). 256 × 128: 1 · 216 = 216 tiles = 2 full waves, but each tile half padding
// (rows 128 of 256): 0.5. 128 × 256: 1 · 108 = 108 tiles, one full wave, no padding: 1.
TEST(GemmTiling, TheBetterOrientationIsTaken) {
  const GemmShape s{1, 128, 27648, 1024};
  EXPECT_DOUBLE_EQ(wave_efficiency(s, kA100), 1.0);
  EXPECT_DOUBLE_EQ(wave_efficiency(s, GemmTiling{108, 256, 256}), 0.5);
}

// A batch of GEMMs shares the waves: 8 heads × (2048 × 2048 scores) = 8 · 8 · 16 = 1024
// tiles of 256 × 128 = 9.48 waves of 108 → 10 waves (1080 slots): 1024/1080.
TEST(GemmTiling, BatchedGemmTilesShareWaves) {
  const GemmShape s{8, 2048, 2048, 128};
  EXPECT_EQ(gemm_tiles(s, 256, 128), 1024);
  EXPECT_DOUBLE_EQ(wave_efficiency(s, kA100), 1024.0 / 1080);
}

TEST(GemmTiling, RefusesEmptyShapesAndTiles) {
  EXPECT_THROW((void)gemm_tiles(GemmShape{1, 0, 4, 4}, 256, 128), std::invalid_argument);
  EXPECT_THROW((void)gemm_tiles(GemmShape{1, 4, 4, 4}, 0, 128), std::invalid_argument);
  EXPECT_THROW((void)gemm_waves(GemmShape{1, 4, 4, 4}, 0, 256, 128), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::hardware
