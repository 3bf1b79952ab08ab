#include "calibration/copy_fit.hpp"

#include "calibration/csv_rows.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace trainsim::calibration {
namespace {

// A second segment would have to lower the sum of squared relative residuals by more than
// any n-point fit can have (each residual of a non-negative fit through t > 0 is ≤ 1 in
// practice): one line per kind.
AlphaBetaOptions one_line() {
  AlphaBetaOptions o;
  o.segment_penalty = 1e12;
  o.min_points_per_segment = 2;
  return o;
}

bool valid_kind(const std::string& k) {
  if (k.empty() || k.size() > 64) return false;
  for (char c : k)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  return true;
}

}  // namespace

std::string read_sized_csv(const std::string& text, const std::string& origin, std::vector<SizedRecord>& out,
                           const std::string& zero_bytes_kind) {
  static const char* const kHeader = "kind,bytes,seconds";
  bool header_seen = false;
  const std::size_t before = out.size();
  const std::string error = read_csv_rows(text, origin, kHeader, [&](const std::vector<std::string>& f,
                                                                      const std::string& at) -> std::string {
    SizedRecord r;
    if (!valid_kind(f[0])) return at + "kind: \"" + f[0] + "\" is not a name of lower-case letters, digits, '-' and '_'";
    r.kind = f[0];
    {
      const char* last = f[1].data() + f[1].size();
      auto [p, ec] = std::from_chars(f[1].data(), last, r.bytes);
      const bool zero_ok = !zero_bytes_kind.empty() && r.kind == zero_bytes_kind;
      if (ec != std::errc() || p != last || r.bytes < 0 || (r.bytes == 0 && !zero_ok))
        return at + "bytes: \"" + f[1] + "\" is not a positive integer" +
               (zero_bytes_kind.empty() ? "" : " (0 only for kind \"" + zero_bytes_kind + "\")");
    }
    {
      const char* last = f[2].data() + f[2].size();
      auto [p, ec] = std::from_chars(f[2].data(), last, r.seconds);
      if (ec != std::errc() || p != last || !std::isfinite(r.seconds) || r.seconds <= 0)
        return at + "seconds: \"" + f[2] + "\" is not a positive number";
    }
    out.push_back(std::move(r));
    return "";
  }, &header_seen);
  if (!error.empty()) return error;
  if (!header_seen) return origin + ": error: empty file; expected the header \"" + std::string(kHeader) + "\"";
  if (out.size() == before) return origin + ": error: no measurements";
  return "";
}

std::vector<CopyKindFit> fit_copies(const std::vector<SizedRecord>& rows, const std::string& origin,
                                    std::string& error, std::vector<std::string>* skipped, const std::string& noun) {
  std::vector<CopyKindFit> fits;
  std::vector<std::vector<SizeTime>> points;
  for (const auto& r : rows) {
    std::size_t i = 0;
    while (i < fits.size() && fits[i].kind != r.kind) ++i;
    if (i == fits.size()) {
      fits.push_back({});
      fits.back().kind = r.kind;
      points.emplace_back();
    }
    points[i].push_back({static_cast<double>(r.bytes), r.seconds});
  }
  for (std::size_t i = 0; i < fits.size(); ++i) {
    CopyKindFit& k = fits[i];
    std::vector<double> distinct;
    for (const auto& p : points[i]) distinct.push_back(p.bytes);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    k.sizes = static_cast<int>(distinct.size());
    if (distinct.size() > kMaxCopySizes) {
      error = origin + ": error: " + noun + " \"" + k.kind + "\" has " + std::to_string(k.sizes) +
              " distinct sizes; at most " + std::to_string(kMaxCopySizes) + " are fitted (the fit is cubic in them)";
      return {};
    }
    const AlphaBetaFit all = fit_alpha_beta(points[i], one_line());
    if (k.sizes < kMinCopySizes || all.segments.size() != 1) {
      const std::string why = noun + " \"" + k.kind + "\" has " + std::to_string(k.sizes) +
                              " distinct sizes; the fit with held-back sizes needs at least " +
                              std::to_string(kMinCopySizes);
      if (skipped == nullptr) {
        error = origin + ": error: " + why;
        return {};
      }
      skipped->push_back(why);
      k.sizes = -1;  // dropped below
      continue;
    }
    k.alpha_s = all.segments[0].alpha_s;
    const double beta = all.segments[0].beta_s_per_byte;
    k.bytes_per_s = beta > 0 ? 1 / beta : 0;
    k.held = hold_out_sizes(points[i], kCopyHoldoutStride, one_line());
  }
  fits.erase(std::remove_if(fits.begin(), fits.end(), [](const CopyKindFit& k) { return k.sizes < 0; }), fits.end());
  return fits;
}

}  // namespace trainsim::calibration
