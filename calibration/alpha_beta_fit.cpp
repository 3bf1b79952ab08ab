#include "calibration/alpha_beta_fit.hpp"

#include "calibration/least_squares.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace trainsim::calibration {
namespace {

// Sorted distinct sizes, equal sizes merged by the geometric mean of their times.
std::vector<SizeTime> merge(std::vector<SizeTime> points) {
  std::map<double, std::pair<double, int>> by_size;
  for (const auto& p : points) {
    if (!(p.bytes > 0) || !(p.seconds > 0) || !std::isfinite(p.bytes) || !std::isfinite(p.seconds)) continue;
    auto& [log_sum, n] = by_size[p.bytes];
    log_sum += std::log(p.seconds);
    ++n;
  }
  std::vector<SizeTime> out;
  out.reserve(by_size.size());
  for (const auto& [bytes, acc] : by_size) out.push_back({bytes, std::exp(acc.first / acc.second)});
  return out;
}

struct LineFit {
  double alpha = 0, beta = 0, sse = 0;
};

// t = α + β·S over points [first, last], α, β ≥ 0, minimising Σ ((α + β S − t) / t)².
LineFit fit_line(const std::vector<SizeTime>& p, std::size_t first, std::size_t last) {
  std::vector<std::vector<double>> columns(2);
  std::vector<double> target;
  for (std::size_t i = first; i <= last; ++i) {
    columns[0].push_back(1.0 / p[i].seconds);
    columns[1].push_back(p[i].bytes / p[i].seconds);
    target.push_back(1.0);
  }
  NonNegativeFit f = non_negative_least_squares(columns, target);
  return {f.coefficients[0], f.coefficients[1], f.sse};
}

}  // namespace

double AlphaBetaFit::predict(double bytes) const {
  if (segments.empty()) return std::numeric_limits<double>::quiet_NaN();
  auto line = [&](const AlphaBetaSegment& s) { return s.alpha_s + s.beta_s_per_byte * bytes; };
  if (bytes <= segments.front().max_bytes) return line(segments.front());
  for (std::size_t i = 1; i < segments.size(); ++i) {
    if (bytes < segments[i].min_bytes) return std::min(line(segments[i - 1]), line(segments[i]));
    if (bytes <= segments[i].max_bytes) return line(segments[i]);
  }
  return line(segments.back());
}

AlphaBetaFit fit_alpha_beta(std::vector<SizeTime> points, const AlphaBetaOptions& options) {
  const std::vector<SizeTime> p = merge(std::move(points));
  const std::size_t n = p.size();
  const std::size_t min_points = static_cast<std::size_t>(std::max(2, options.min_points_per_segment));
  AlphaBetaFit fit;
  if (n < min_points) return fit;
  // Optimal partition by dynamic programming (segmented least squares): best[j] is the
  // least cost of points [0, j), cost = Σ segment SSE + penalty per segment.
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<double> best(n + 1, inf);
  std::vector<std::size_t> cut(n + 1, 0);
  std::vector<std::vector<LineFit>> line(n, std::vector<LineFit>(n));
  best[0] = 0;
  for (std::size_t j = min_points; j <= n; ++j) {
    for (std::size_t i = 0; i + min_points <= j; ++i) {
      if (best[i] == inf) continue;
      line[i][j - 1] = fit_line(p, i, j - 1);
      double cost = best[i] + line[i][j - 1].sse + options.segment_penalty;
      if (cost < best[j]) {
        best[j] = cost;
        cut[j] = i;
      }
    }
  }
  for (std::size_t j = n; j > 0;) {
    std::size_t i = cut[j];
    const LineFit& l = line[i][j - 1];
    fit.segments.push_back({p[i].bytes, p[j - 1].bytes, l.alpha, l.beta});
    j = i;
  }
  std::reverse(fit.segments.begin(), fit.segments.end());
  return fit;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

HoldoutResult hold_out_sizes(std::vector<SizeTime> points, int stride, const AlphaBetaOptions& options) {
  const std::vector<SizeTime> p = merge(std::move(points));
  HoldoutResult r;
  std::vector<SizeTime> kept, held;
  for (std::size_t i = 0; i < p.size(); ++i) {
    bool hold = stride > 1 && i > 0 && i + 1 < p.size() && i % static_cast<std::size_t>(stride) == 1;
    (hold ? held : kept).push_back(p[i]);
  }
  r.fit = fit_alpha_beta(kept, options);
  for (const auto& h : held) {
    r.held_back_bytes.push_back(h.bytes);
    r.relative_errors.push_back(std::abs(r.fit.predict(h.bytes) - h.seconds) / h.seconds);
  }
  r.median = median_of(r.relative_errors);
  r.max = r.relative_errors.empty() ? 0 : *std::max_element(r.relative_errors.begin(), r.relative_errors.end());
  return r;
}

}  // namespace trainsim::calibration
