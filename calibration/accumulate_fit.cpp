#include "calibration/accumulate_fit.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "calibration/csv_rows.hpp"

#include <fmt/format.h>

namespace trainsim::calibration {
namespace {

constexpr double FP32_BUFFER = 4, BF16 = 2;
constexpr const char* kHeader = "shape,m,n,k,bf16_out_s,fp32_accumulate_s,bf16_accumulate_s,ratio";

std::string read_positive(const std::string& text, const std::string& at, const char* field, double& v) {
  const char* last = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), last, v);
  if (ec != std::errc() || p != last || !std::isfinite(v) || v <= 0)
    return at + field + ": \"" + text + "\" is not a positive number";
  return "";
}

}  // namespace

double accumulate_extra_bytes(double m, double n, double buffer_bytes, double result_bytes) {
  return (2 * buffer_bytes - result_bytes) * m * n;
}

std::string read_accumulate_csv(const std::string& text, const std::string& origin,
                                std::vector<AccumulateMeasurement>& out) {
  bool header_seen = false;
  const std::size_t before = out.size();
  const std::string error = read_csv_rows(
      text, origin, kHeader,
      [&](const std::vector<std::string>& f, const std::string& at) -> std::string {
        AccumulateMeasurement r;
        r.shape = f[0];
        if (r.shape.empty()) return at + "shape: empty (name the GEMM)";
        for (const auto& [i, name, v] : {std::tuple{1, "m", &r.m}, std::tuple{2, "n", &r.n}, std::tuple{3, "k", &r.k},
                                         std::tuple{4, "bf16_out_s", &r.plain_s},
                                         std::tuple{5, "fp32_accumulate_s", &r.fp32_accumulate_s},
                                         std::tuple{6, "bf16_accumulate_s", &r.bf16_accumulate_s}}) {
          if (std::string e = read_positive(f[static_cast<std::size_t>(i)], at, name, *v); !e.empty()) return e;
        }
        out.push_back(std::move(r));
        return "";
      },
      &header_seen);
  if (!error.empty()) return error;
  if (!header_seen) return origin + ": error: empty file; expected the header \"" + std::string(kHeader) + "\"";
  if (out.size() == before) return origin + ": error: no measurements";
  return "";
}

std::string write_accumulate_csv(const std::vector<AccumulateMeasurement>& rows, const std::string& comment) {
  std::string out;
  if (!comment.empty()) out += "# " + comment + "\n";
  out += std::string(kHeader) + "\n";
  for (const auto& r : rows)
    out += fmt::format("{},{:.0f},{:.0f},{:.0f},{:.6e},{:.6e},{:.6e},{:.4f}\n", r.shape, r.m, r.n, r.k, r.plain_s,
                       r.fp32_accumulate_s, r.bf16_accumulate_s, r.fp32_accumulate_s / r.plain_s);
  return out;
}

AccumulateSplit hold_back_every_fourth(const std::vector<AccumulateMeasurement>& rows) {
  AccumulateSplit split;
  for (std::size_t i = 0; i < rows.size(); ++i) (i % 4 == 3 ? split.held : split.fit_on).push_back(rows[i]);
  return split;
}

AccumulateFit fit_accumulate(const std::vector<AccumulateMeasurement>& fit_on,
                             const std::vector<AccumulateMeasurement>& check) {
  if (fit_on.empty() || check.empty()) throw std::invalid_argument("fit_accumulate: no measurements");
  // Relative residuals, (plain + x/R − measured) / measured, as the α–β fits weigh theirs:
  // absolute ones let the few largest weights (a vocabulary's logits) set R alone.
  double ww = 0, wy = 0;
  for (const auto& r : fit_on) {
    const double w = accumulate_extra_bytes(r.m, r.n, FP32_BUFFER, BF16) / r.fp32_accumulate_s;
    ww += w * w;
    wy += w * (r.fp32_accumulate_s - r.plain_s) / r.fp32_accumulate_s;
  }
  if (!(wy > 0)) throw std::invalid_argument("fit_accumulate: accumulating is not slower than writing");
  AccumulateFit fit;
  fit.bytes_per_s = ww / wy;
  for (const auto& r : check) {
    const double fp32 = r.plain_s + accumulate_extra_bytes(r.m, r.n, FP32_BUFFER, BF16) / fit.bytes_per_s;
    const double bf16 = r.plain_s + accumulate_extra_bytes(r.m, r.n, BF16, BF16) / fit.bytes_per_s;
    fit.fp32_errors.push_back(std::abs(fp32 - r.fp32_accumulate_s) / r.fp32_accumulate_s);
    fit.bf16_errors.push_back(std::abs(bf16 - r.bf16_accumulate_s) / r.bf16_accumulate_s);
    fit.without_errors.push_back(std::abs(r.plain_s - r.fp32_accumulate_s) / r.fp32_accumulate_s);
  }
  return fit;
}

}  // namespace trainsim::calibration
