#include "cli/memory_budget.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include "strategies/plan_size.hpp"

namespace trainsim::cli {

namespace {

// The estimate counts the Program and the Plan; the cost model, the cluster's graph, the
// report and the allocator's slack come on top.
constexpr double SHARE_FOR_THE_PLAN = 0.8;

}  // namespace

double default_memory_budget() {
  double bytes = 0;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) bytes = static_cast<double>(pages) * static_cast<double>(page);
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit limit {};
    if (::getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      const auto cap = static_cast<double>(limit.rlim_cur);
      bytes = bytes > 0 ? std::min(bytes, cap) : cap;
    }
  }
  if (!(bytes > 0)) bytes = 4.0 * 1024 * 1024 * 1024;  // unknown: assume a small machine
  return SHARE_FOR_THE_PLAN * bytes;
}

std::optional<double> parse_bytes(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [rest, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || !std::isfinite(value) || value <= 0) return std::nullopt;
  std::string unit(rest, end);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  if (unit == "k" || unit == "kib" || unit == "kb") scale = 1024.0;
  if (unit == "m" || unit == "mib" || unit == "mb") scale = 1024.0 * 1024;
  if (unit == "g" || unit == "gib" || unit == "gb") scale = 1024.0 * 1024 * 1024;
  if (unit == "t" || unit == "tib" || unit == "tb") scale = 1024.0 * 1024 * 1024 * 1024;
  if (scale == 0 || !std::isfinite(value * scale)) return std::nullopt;
  return value * scale;
}

std::string memory_budget_help() {
  return fmt::format("memory the run may plan to use, e.g. 4G or 512M (default: {}, 80% of the physical memory or "
                     "the process's limit); a scenario whose plan would need more is refused with the fidelity "
                     "or sizes to change",
                     strategies::format_bytes(default_memory_budget()));
}

}  // namespace trainsim::cli
