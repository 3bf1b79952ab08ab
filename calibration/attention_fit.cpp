#include "calibration/attention_fit.hpp"

#include "calibration/csv_rows.hpp"
#include "calibration/least_squares.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace trainsim::calibration {
namespace {

std::size_t plateau_of(const std::vector<AttentionModel::Plateau>& p, std::int64_t d, bool causal) {
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i].head_dim == d && p[i].causal == causal) return i;
  return p.size();
}

}  // namespace

double AttentionMeasurement::flops() const {
  const double per_pair = 3.5 * 4.0 * static_cast<double>(sequence) * static_cast<double>(sequence) *
                          static_cast<double>(head_dim);
  return per_pair * static_cast<double>(batch) * static_cast<double>(heads) * (causal ? 0.5 : 1.0);
}

double AttentionModel::predict(const AttentionMeasurement& m) const {
  const std::size_t i = plateau_of(plateaus, m.head_dim, m.causal);
  if (i == plateaus.size()) return 0;
  return plateaus[i].seconds_per_flop * m.flops() + pair_s * static_cast<double>(m.batch * m.heads) + call_s;
}

AttentionModel fit_attention(const std::vector<AttentionMeasurement>& data) {
  if (data.size() < 4) throw std::invalid_argument("fit_attention: at least 4 measurements are needed");
  AttentionModel model;
  for (const auto& m : data)
    if (plateau_of(model.plateaus, m.head_dim, m.causal) == model.plateaus.size())
      model.plateaus.push_back({m.head_dim, m.causal, 0});
  if (model.plateaus.size() + 2 > 8)
    throw std::invalid_argument("fit_attention: at most 6 (head_dim, causal) combinations in one fit");
  // Relative residuals: every row divided by its measured time.
  std::vector<std::vector<double>> cols(model.plateaus.size() + 2);
  std::vector<double> target;
  for (const auto& m : data) {
    const std::size_t p = plateau_of(model.plateaus, m.head_dim, m.causal);
    for (std::size_t i = 0; i < model.plateaus.size(); ++i) cols[i].push_back(i == p ? m.flops() / m.seconds : 0.0);
    cols[model.plateaus.size()].push_back(static_cast<double>(m.batch * m.heads) / m.seconds);
    cols[model.plateaus.size() + 1].push_back(1.0 / m.seconds);
    target.push_back(1.0);
  }
  NonNegativeFit f = non_negative_least_squares(cols, target);
  for (std::size_t i = 0; i < model.plateaus.size(); ++i) model.plateaus[i].seconds_per_flop = f.coefficients[i];
  model.pair_s = f.coefficients[model.plateaus.size()];
  model.call_s = f.coefficients[model.plateaus.size() + 1];
  return model;
}

std::vector<double> hold_out_sequences(const std::vector<AttentionMeasurement>& data,
                                       const std::vector<std::int64_t>& held) {
  auto is_held = [&](const AttentionMeasurement& m) {
    for (auto s : held)
      if (m.sequence == s) return true;
    return false;
  };
  std::vector<AttentionMeasurement> kept;
  for (const auto& m : data)
    if (!is_held(m)) kept.push_back(m);
  const AttentionModel model = fit_attention(kept);
  std::vector<double> errors;
  for (const auto& m : data)
    if (is_held(m)) errors.push_back(std::abs(model.predict(m) - m.seconds) / m.seconds);
  return errors;
}

std::string read_attention_csv(const std::string& text, const std::string& origin, std::vector<AttentionMeasurement>& out) {
  static const char* const kHeader = "batch,heads,sequence,head_dim,causal,flops_per_s";
  static const char* const kField[] = {"batch", "heads", "sequence", "head_dim", "causal", "flops_per_s"};
  const std::string error = read_csv_rows(text, origin, kHeader, [&](const std::vector<std::string>& fields,
                                                                      const std::string& at) -> std::string {
    double v[6];
    for (int f = 0; f < 6; ++f) {
      const char* first = fields[f].data();
      const char* last = first + fields[f].size();
      auto [p, ec] = std::from_chars(first, last, v[f]);
      const bool integer = f < 5;
      const bool bad = ec != std::errc() || p != last || !std::isfinite(v[f]) ||
                       (f == 4 ? (v[f] != 0 && v[f] != 1)
                               : (v[f] <= 0 || (integer && (v[f] != std::floor(v[f]) || v[f] > (1 << 24)))));
      if (bad) {
        return at + kField[f] + ": \"" + fields[f] + "\" is not " +
               (f == 4 ? "0 or 1" : integer ? "a positive integer up to 2^24" : "a positive number");
      }
    }
    AttentionMeasurement m;
    m.batch = static_cast<std::int64_t>(v[0]);
    m.heads = static_cast<std::int64_t>(v[1]);
    m.sequence = static_cast<std::int64_t>(v[2]);
    m.head_dim = static_cast<std::int64_t>(v[3]);
    m.causal = v[4] == 1;
    m.seconds = m.flops() / v[5];
    out.push_back(m);
    return "";
  });
  if (!error.empty()) return error;
  if (out.empty()) return origin + ": error: no measurements";
  return "";
}

}  // namespace trainsim::calibration
