#pragma once
// Parallel degrees must divide a model's dimensions (heads, layers, groups); error
// messages list the degrees that would be valid.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace trainsim::models {

// The divisors of n that are at most `limit`, as "1, 2, 4, 8" (at most 24 listed, then
// "…"); empty for n ≤ 0 or n > 10¹², so that hostile sizes stay fast.
inline std::string divisor_list(std::int64_t n, std::int64_t limit = std::numeric_limits<std::int64_t>::max()) {
  constexpr std::int64_t MAX_FACTORED = 1'000'000'000'000;
  constexpr std::size_t MAX_LISTED = 24;
  if (n <= 0 || n > MAX_FACTORED) return "";
  std::vector<std::int64_t> low, high;
  for (std::int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  std::string out;
  std::size_t listed = 0;
  for (std::int64_t d : low) {
    if (d > limit) break;
    if (!out.empty()) out += ", ";
    if (listed++ == MAX_LISTED) {
      out += "…";
      break;
    }
    out += std::to_string(d);
  }
  return out;
}

}  // namespace trainsim::models
