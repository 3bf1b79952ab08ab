#pragma once
// Engine time: a signed 64-bit count of picoseconds (about 106 days of range).
// The fluid network model works in doubles; every conversion into Time goes through
// from_seconds / ceil_seconds so that the rounding rule is explicit and reproducible.
#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace trainsim::sim {

struct Time {
  std::int64_t ps = 0;

  static constexpr Time zero() { return Time{0}; }
  static constexpr Time max() { return Time{std::numeric_limits<std::int64_t>::max()}; }
  static constexpr Time from_ps(std::int64_t v) { return Time{v}; }
  // Nearest picosecond (ties away from zero). Used for costs computed once per task.
  static Time from_seconds(double s) { return Time{static_cast<std::int64_t>(std::llround(s * 1e12))}; }
  // Round up: a flow that needs 1.2 ps to finish is reported finished at 2 ps, never early.
  static Time ceil_seconds(double s) { return Time{static_cast<std::int64_t>(std::ceil(s * 1e12))}; }

  constexpr double seconds() const { return static_cast<double>(ps) * 1e-12; }
  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const { return Time{ps + o.ps}; }
  constexpr Time operator-(Time o) const { return Time{ps - o.ps}; }
  constexpr Time& operator+=(Time o) { ps += o.ps; return *this; }
  constexpr Time& operator-=(Time o) { ps -= o.ps; return *this; }
};

}  // namespace trainsim::sim
