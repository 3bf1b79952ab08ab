#pragma once
// Small text helpers shared by the CLI's commands.
#include <string>
#include <vector>

namespace trainsim::cli::detail {

inline std::string join(const std::vector<std::string>& items, const char* separator = ", ") {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

}  // namespace trainsim::cli::detail
