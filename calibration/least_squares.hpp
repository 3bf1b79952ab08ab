#pragma once
// Linear least squares with non-negative coefficients (Eigen). Every cost term a fit uses
// (a latency, a time per byte, a time per wave) is physical and cannot be negative; an
// unconstrained fit that drives one below zero is compensating noise with another term.
#include <vector>

namespace trainsim::calibration {

struct NonNegativeFit {
  std::vector<double> coefficients;  // one per column, ≥ 0
  double sse = 0;                    // Σ (A·x − b)²
};

// Minimises ‖A·x − b‖² subject to x ≥ 0, with A given by columns (at most 8). The optimum
// is the unconstrained least-squares solution on its set of non-zero coefficients (the KKT
// conditions behind Lawson and Hanson's active-set method), so with few columns every subset
// is solved (column-pivoting Householder QR) and the best feasible one kept: exact, and
// simple enough to trust.
[[nodiscard]] NonNegativeFit non_negative_least_squares(const std::vector<std::vector<double>>& columns,
                                                        const std::vector<double>& target);

}  // namespace trainsim::calibration
