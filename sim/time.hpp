#pragma once
// Engine time: a signed 64-bit count of picoseconds (about 106 days of range).
// The fluid network model works in doubles; every conversion into Time goes through
// from_seconds / ceil_seconds so that the rounding rule is explicit and reproducible.
// Neither a conversion nor a sum may leave the range silently: a wrapped sum would be a
// negative time, and a run would end in garbage or an assertion far from the cause. Both
// throw TimeRangeError instead, which callers report as "the iteration is too long".
#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace trainsim::sim {

// A time outside the int64-picosecond range (or not a number).
class TimeRangeError : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

struct Time {
  std::int64_t ps = 0;

  // The range in seconds, for messages: 2^63 ps ≈ 9.22e6 s ≈ 106.75 days.
  static constexpr double MAX_SECONDS = 9.223372036854775807e6;

  static constexpr Time zero() { return Time{0}; }
  static constexpr Time max() { return Time{std::numeric_limits<std::int64_t>::max()}; }
  static constexpr Time from_ps(std::int64_t v) { return Time{v}; }
  // Nearest picosecond (ties away from zero). Used for costs computed once per task.
  static Time from_seconds(double s) { return Time{checked_ps(std::round(s * 1e12), s)}; }
  // Round up: a flow that needs 1.2 ps to finish is reported finished at 2 ps, never early.
  static Time ceil_seconds(double s) { return Time{checked_ps(std::ceil(s * 1e12), s)}; }

  constexpr double seconds() const { return static_cast<double>(ps) * 1e-12; }
  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const { return Time{checked_sum(ps, o.ps)}; }
  constexpr Time operator-(Time o) const { return Time{checked_difference(ps, o.ps)}; }
  constexpr Time& operator+=(Time o) { ps = checked_sum(ps, o.ps); return *this; }
  constexpr Time& operator-=(Time o) { ps = checked_difference(ps, o.ps); return *this; }

 private:
  [[noreturn]] static void out_of_range(const std::string& what) {
    throw TimeRangeError(what + " is outside the engine's time range (int64 picoseconds: at most " +
                         std::to_string(MAX_SECONDS) + " s, about 106 days)");
  }
  // `ps` already rounded; `s` as given, for the message. 2^63 is exactly representable,
  // so `< 2^63` is the exact test (NaN fails it too).
  static std::int64_t checked_ps(double ps, double s) {
    constexpr double LIMIT = 9223372036854775808.0;  // 2^63
    if (!(ps < LIMIT && ps >= -LIMIT)) [[unlikely]]
      out_of_range("a duration of " + std::to_string(s) + " s");
    return static_cast<std::int64_t>(ps);
  }
  static constexpr std::int64_t checked_sum(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) [[unlikely]]
      out_of_range(std::to_string(a) + " ps + " + std::to_string(b) + " ps");
    return r;
  }
  static constexpr std::int64_t checked_difference(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_sub_overflow(a, b, &r)) [[unlikely]]
      out_of_range(std::to_string(a) + " ps - " + std::to_string(b) + " ps");
    return r;
  }
};

}  // namespace trainsim::sim
