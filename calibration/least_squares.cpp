#include "calibration/least_squares.hpp"

#include <Eigen/Dense>

#include <limits>
#include <stdexcept>

namespace trainsim::calibration {

NonNegativeFit non_negative_least_squares(const std::vector<std::vector<double>>& columns,
                                          const std::vector<double>& target) {
  const std::size_t k = columns.size();
  const std::size_t n = target.size();
  if (k == 0 || k > 8) throw std::invalid_argument("non_negative_least_squares: 1 to 8 columns");
  for (const auto& c : columns) {
    if (c.size() != n) throw std::invalid_argument("non_negative_least_squares: column length differs from target");
  }
  Eigen::MatrixXd a(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(k));
  for (std::size_t j = 0; j < k; ++j) {
    for (std::size_t i = 0; i < n; ++i) a(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = columns[j][i];
  }
  const Eigen::VectorXd b = Eigen::Map<const Eigen::VectorXd>(target.data(), static_cast<Eigen::Index>(n));
  NonNegativeFit best;
  best.coefficients.assign(k, 0.0);
  best.sse = b.squaredNorm();  // the empty set: every coefficient zero
  for (unsigned mask = 1; mask < (1u << k); ++mask) {
    std::vector<Eigen::Index> used;
    for (std::size_t j = 0; j < k; ++j) {
      if (mask & (1u << j)) used.push_back(static_cast<Eigen::Index>(j));
    }
    if (used.size() > n) continue;
    Eigen::MatrixXd sub(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(used.size()));
    for (std::size_t u = 0; u < used.size(); ++u) sub.col(static_cast<Eigen::Index>(u)) = a.col(used[u]);
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(sub);
    if (qr.rank() < static_cast<Eigen::Index>(used.size())) continue;
    Eigen::VectorXd x = qr.solve(b);
    if ((x.array() < 0).any() || !x.allFinite()) continue;
    double sse = (sub * x - b).squaredNorm();
    if (sse < best.sse) {
      best.sse = sse;
      best.coefficients.assign(k, 0.0);
      for (std::size_t u = 0; u < used.size(); ++u) best.coefficients[static_cast<std::size_t>(used[u])] = x(static_cast<Eigen::Index>(u));
    }
  }
  return best;
}

}  // namespace trainsim::calibration
