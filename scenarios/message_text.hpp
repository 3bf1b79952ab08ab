#pragma once
// Small text helpers for messages about what a file held (scenarios, runs tables) and for
// the commands that print them.
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace trainsim::scenarios {

inline std::string join(const std::vector<std::string>& items, const char* separator = ", ") {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

// `s` with every byte outside printable ASCII written as \xNN, so that a message about
// whatever a file held stays one clean line of valid text.
inline std::string printable(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f)
      out += c;
    else
      out += fmt::format("\\x{:02x}", u);
  }
  return out;
}

}  // namespace trainsim::scenarios
