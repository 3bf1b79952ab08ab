#pragma once
#include <string>
#include <vector>

namespace trainsim::hardware::detail {
struct EmbeddedProfile {
  const char* name;
  const char* origin;  // repository path, for error messages
  const char* text;
};
const std::vector<EmbeddedProfile>& embedded_profiles();
}  // namespace trainsim::hardware::detail
