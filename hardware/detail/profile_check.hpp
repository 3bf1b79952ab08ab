#pragma once
// Semantic checks of a GpuProfile, shared by the profile parser (which turns each problem
// into origin:line:col through the ParseInfoTree) and by the constructors of CostModel and
// Cluster (which refuse a profile they cannot compute with).
#include "hardware/profile.pb.h"

#include <google/protobuf/descriptor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::hardware::detail {

// One step of a field path: a field of the current message, and the element index for a
// repeated field (-1 for a singular one).
struct FieldStep {
  const google::protobuf::FieldDescriptor* field = nullptr;
  int index = -1;
};

struct ProfileProblem {
  std::vector<FieldStep> path;  // empty: the message as a whole
  std::string message;
};

// Which fields a caller relies on.
enum class ProfilePart : std::uint8_t {
  ALL,      // a profile file: every field present, every constant cited
  COMPUTE,  // CostModel: peaks, HBM, efficiencies, kernel overhead
  NETWORK,  // Cluster: NVLink, NIC and their latencies
};

// Problems in the order of the fields in profile.proto. `require_sources`: every Cited
// and curve must name its source (profile files must; profiles built in code need not).
std::vector<ProfileProblem> check_profile(const GpuProfile& profile, ProfilePart part, bool require_sources);

// "gemm_efficiency.point[2].efficiency"
std::string path_string(const std::vector<FieldStep>& path);

// Throws std::invalid_argument listing every problem, prefixed by `who` and the profile name.
void require_valid_profile(const GpuProfile& profile, ProfilePart part, const char* who);

// The variable each curve must be a function of (what the cost model passes as x).
inline constexpr const char* GEMM_VARIABLE = "gemm_flops";
inline constexpr const char* BATCHED_GEMM_VARIABLE = "fwd_bwd_flops_per_sequence_head";

}  // namespace trainsim::hardware::detail
