#pragma once
// The shipped GPU profiles (hardware/profiles/*.textproto, embedded at build time) and
// loading of user profile files.
#include <optional>
#include <string>
#include <vector>

#include "hardware/profile.pb.h"

namespace trainsim::hardware {

// A shipped profile by name ("a100-80gb", "h100-sxm", "h200"); nullopt if unknown.
std::optional<GpuProfile> find_profile(const std::string& name);
std::vector<std::string> profile_names();  // sorted

// Parses a profile in protobuf text format. Returns an error message naming
// origin:line:column on failure, empty on success.
std::string parse_profile(const std::string& text, const std::string& origin, GpuProfile& out);

// Evaluates a curve at x (piecewise-linear in log2 x, clamped at the end points).
double evaluate(const EfficiencyCurve& curve, double x);

}  // namespace trainsim::hardware
