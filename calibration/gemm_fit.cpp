#include "calibration/gemm_fit.hpp"

#include "calibration/least_squares.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace trainsim::calibration {
namespace {

struct Terms {
  double padded = 0, waves = 0, bytes = 0;
};

Terms terms(const GemmShape& s, int sms, double peak, int tile_m, int tile_n) {
  const double waves = static_cast<double>(hardware::gemm_waves(s, sms, tile_m, tile_n));
  Terms t;
  t.padded = 2.0 * waves * sms * tile_m * tile_n * static_cast<double>(s.k) / peak;
  t.waves = waves;
  t.bytes = 2.0 * static_cast<double>(s.b) *
            (static_cast<double>(s.m) * s.k + static_cast<double>(s.k) * s.n + static_cast<double>(s.m) * s.n);
  return t;
}

}  // namespace

double GemmModel::predict(const GemmShape& s) const {
  Terms t = terms(s, sms, peak_flops, tile_m, tile_n);
  return launch_s + t.padded / efficiency + wave_s * t.waves + s_per_byte * t.bytes;
}

double square_efficiency(const GemmModel& m, int n) {
  const GemmShape s{1, n, n, n};
  return std::min(1.0, s.flops() / (m.predict(s) * m.peak_flops));
}

GemmModel transfer_gemm(const GemmModel& measured, int sms, double peak_flops, double efficiency_ratio,
                        double bandwidth_ratio) {
  if (sms <= 0 || !(peak_flops > 0) || !(efficiency_ratio > 0) || !(bandwidth_ratio > 0))
    throw std::invalid_argument("transfer_gemm: SM count, peak, efficiency and bandwidth ratios must be positive");
  GemmModel m = measured;
  m.sms = sms;
  m.peak_flops = peak_flops;
  m.efficiency = std::min(1.0, measured.efficiency * efficiency_ratio);
  m.s_per_byte = measured.s_per_byte / bandwidth_ratio;
  return m;
}

GemmModel fit_gemm(const std::vector<GemmMeasurement>& data, int sms, double peak_flops) {
  if (data.size() < 4) throw std::invalid_argument("fit_gemm: at least 4 measured shapes are needed");
  if (sms <= 0 || !(peak_flops > 0)) throw std::invalid_argument("fit_gemm: SM count and peak must be positive");
  GemmModel best;
  double best_sse = std::numeric_limits<double>::infinity();
  for (int tm : {64, 128, 256}) {
    for (int tn : {64, 128, 256}) {
      // Relative residuals: divide every row by the measured time.
      std::vector<std::vector<double>> cols(4);
      std::vector<double> target;
      for (const auto& d : data) {
        Terms t = terms(d.shape, sms, peak_flops, tm, tn);
        cols[0].push_back(1.0 / d.seconds);
        cols[1].push_back(t.padded / d.seconds);
        cols[2].push_back(t.waves / d.seconds);
        cols[3].push_back(t.bytes / d.seconds);
        target.push_back(1.0);
      }
      NonNegativeFit f = non_negative_least_squares(cols, target);
      if (f.coefficients[1] <= 0 || f.sse >= best_sse) continue;
      best_sse = f.sse;
      best = GemmModel{sms, peak_flops, tm, tn, f.coefficients[0], 1.0 / f.coefficients[1], f.coefficients[2],
                       f.coefficients[3]};
    }
  }
  if (!std::isfinite(best_sse)) throw std::runtime_error("fit_gemm: no tile size gave a usable fit");
  return best;
}

std::string read_gemm_csv(const std::string& text, const std::string& origin, std::vector<GemmMeasurement>& out) {
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  bool header_seen = false;
  static const char* const kField[] = {"b", "m", "n", "k", "flops_per_s"};
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (!header_seen) {
      header_seen = true;
      if (line != "b,m,n,k,flops_per_s")
        return origin + ":" + std::to_string(line_no) + ": error: expected the header \"b,m,n,k,flops_per_s\"";
      continue;
    }
    double v[5];
    std::size_t start = 0;
    for (int f = 0; f < 5; ++f) {
      std::size_t comma = f < 4 ? line.find(',', start) : line.size();
      if (comma == std::string::npos) {
        return origin + ":" + std::to_string(line_no) + ": error: " + kField[f] + ": missing (5 fields: b,m,n,k,flops_per_s)";
      }
      const char* first = line.data() + start;
      const char* last = line.data() + comma;
      auto [p, ec] = std::from_chars(first, last, v[f]);
      if (ec != std::errc() || p != last || !std::isfinite(v[f]) || v[f] <= 0 || (f < 4 && (v[f] != std::floor(v[f]) || v[f] > 1 << 24))) {
        return origin + ":" + std::to_string(line_no) + ": error: " + kField[f] + ": \"" + std::string(first, last) +
               "\" is not " + (f < 4 ? "a positive integer up to 2^24" : "a positive number");
      }
      start = comma + 1;
    }
    GemmMeasurement m;
    m.shape = GemmShape{static_cast<std::int64_t>(v[0]), static_cast<std::int64_t>(v[1]), static_cast<std::int64_t>(v[2]),
                        static_cast<std::int64_t>(v[3])};
    m.seconds = m.shape.flops() / v[4];
    out.push_back(m);
  }
  if (out.empty()) return origin + ": error: no measurements";
  return "";
}

}  // namespace trainsim::calibration
