#pragma once
// The cost of adding a GEMM's product into an existing buffer instead of writing it: the
// weight-gradient GEMMs Megatron-LM accumulates into the fp32 main_grad (gradient-
// accumulation fusion, its default). Input is what scripts/gpu-checks/wgrad_accumulate.cu
// prints: per weight-gradient shape (m × n output, k reduction) the time writing a fresh
// BF16 result and the times adding into an fp32 and into a BF16 buffer (cuBLASLt, beta 1).
//
// Model (hardware/profile.proto, gemm_accumulate_bytes_per_s): adding into a g-byte buffer
// reads it and writes it back, g·m·n twice, where the plain GEMM writes e·m·n once; those
// (2g − e)·m·n extra bytes add time at one rate R on top of the plain GEMM. R is fitted on
// the fp32 rows (g = 4, e = 2) by least squares of the relative time residuals.
#include <cstddef>
#include <string>
#include <vector>

namespace trainsim::calibration {

// Shapes the calibrate fit needs: three to fit on after every fourth is held back.
inline constexpr std::size_t kMinAccumulateShapes = 4;

struct AccumulateMeasurement {
  std::string shape;
  double m = 0, n = 0, k = 0;
  double plain_s = 0;          // BF16 output, beta 0
  double fp32_accumulate_s = 0;
  double bf16_accumulate_s = 0;
};

struct AccumulateFit {
  double bytes_per_s = 0;  // R
  // Relative errors of plain_s + extra bytes / R against the measured fp32 and BF16
  // accumulating times, and of plain_s alone against the fp32 ones (the term left out).
  std::vector<double> fp32_errors, bf16_errors, without_errors;
};

// Extra bytes of adding an m × n product into a `buffer_bytes` buffer instead of writing
// it in `result_bytes` elements.
double accumulate_extra_bytes(double m, double n, double buffer_bytes, double result_bytes);

// Reads the CSV (header "shape,m,n,k,bf16_out_s,fp32_accumulate_s,bf16_accumulate_s,ratio";
// '#' lines skipped). Appends to `out`; returns "" or an error naming origin, line and field.
[[nodiscard]] std::string read_accumulate_csv(const std::string& text, const std::string& origin,
                                              std::vector<AccumulateMeasurement>& out);

// The table in the same columns (`# comment` first, when given); shape names must hold no comma.
[[nodiscard]] std::string write_accumulate_csv(const std::vector<AccumulateMeasurement>& rows,
                                               const std::string& comment = "");

// The shapes split for a held-back check: every fourth held back, the rest to fit on.
struct AccumulateSplit {
  std::vector<AccumulateMeasurement> fit_on, held;
};
[[nodiscard]] AccumulateSplit hold_back_every_fourth(const std::vector<AccumulateMeasurement>& rows);

// R fitted on `fit_on`, its errors measured on `check` (both non-empty).
AccumulateFit fit_accumulate(const std::vector<AccumulateMeasurement>& fit_on,
                             const std::vector<AccumulateMeasurement>& check);

}  // namespace trainsim::calibration
