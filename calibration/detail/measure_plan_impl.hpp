#pragma once
// Template bodies of calibration/measure_plan.hpp.
#include <cstddef>
#include <vector>

namespace trainsim::calibration {

template <typename T>
std::vector<T> spread_order(const std::vector<T>& v) {
  std::size_t bits = 0;
  while ((std::size_t{1} << bits) < v.size()) ++bits;
  std::vector<T> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < (std::size_t{1} << bits); ++i) {
    std::size_t r = 0;
    for (std::size_t b = 0; b < bits; ++b)
      if (i & (std::size_t{1} << b)) r |= std::size_t{1} << (bits - 1 - b);
    if (r < v.size()) out.push_back(v[r]);
  }
  return out;
}

template <typename T>
std::vector<T> thin_out(const std::vector<T>& v, std::size_t limit) {
  if (v.size() <= limit) return v;
  if (limit == 0) return {};
  if (limit == 1) return {v.front()};
  std::vector<T> out;
  out.reserve(limit);
  for (std::size_t i = 0; i < limit; ++i) out.push_back(v[i * (v.size() - 1) / (limit - 1)]);
  return out;
}

}  // namespace trainsim::calibration
