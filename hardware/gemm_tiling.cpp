#include "hardware/gemm_tiling.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trainsim::hardware {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

void check(const GemmShape& s) {
  if (s.b < 1 || s.m < 1 || s.n < 1 || s.k < 1)
    throw std::invalid_argument("GEMM shape needs b, m, n, k >= 1, got " + std::to_string(s.b) + ", " +
                                std::to_string(s.m) + ", " + std::to_string(s.n) + ", " + std::to_string(s.k));
}

}  // namespace

std::int64_t gemm_tiles(const GemmShape& shape, std::int64_t rows, std::int64_t cols) {
  check(shape);
  if (rows < 1 || cols < 1) throw std::invalid_argument("GEMM tile needs rows and cols >= 1");
  return shape.b * ceil_div(shape.m, rows) * ceil_div(shape.n, cols);
}

std::int64_t gemm_waves(const GemmShape& shape, std::int64_t sms, std::int64_t rows, std::int64_t cols) {
  if (sms < 1) throw std::invalid_argument("GEMM waves need an SM count >= 1, got " + std::to_string(sms));
  return ceil_div(gemm_tiles(shape, rows, cols), sms);
}

double wave_efficiency(const GemmShape& shape, const GemmTiling& t) {
  const double useful = static_cast<double>(shape.b) * static_cast<double>(shape.m) * static_cast<double>(shape.n);
  auto share = [&](std::int64_t rows, std::int64_t cols) {
    const double slots = static_cast<double>(gemm_waves(shape, t.sms, rows, cols)) * static_cast<double>(t.sms) *
                         static_cast<double>(rows) * static_cast<double>(cols);
    return useful / slots;
  };
  return std::max(share(t.tile_rows, t.tile_cols), share(t.tile_cols, t.tile_rows));
}

}  // namespace trainsim::hardware
