#pragma once
// Strategy passes: each is a function Program → Program (in place) registered under the
// name scenario files use. strategies/passes.def lists every pass (LLVM PassRegistry.def).
#include <string>
#include <string_view>
#include <vector>

#include "strategies/program.hpp"

namespace trainsim::strategies {

enum class PassKind : std::uint8_t { LAYOUT, SCHEDULE, MEMORY, OVERLAP };
const char* to_string(PassKind k);

// Why a pass cannot run on this program (empty: it ran).
using PassFn = std::string (*)(Program&);

struct PassInfo {
  const char* name;
  PassKind kind;
  PassFn run;
  const char* description;  // one line, with its citation
};

const std::vector<PassInfo>& all_passes();
const PassInfo* find_pass(std::string_view name);
std::vector<std::string> pass_names(PassKind kind);  // sorted

// The pass pipeline a spec asks for, in order: layout (tensor, pipeline, data), then the
// schedule, then memory strategies (zero-N, recompute), then overlap.
// Returns the names; unknown names are left in so that run_pipeline can report them.
std::vector<std::string> pipeline_for(const TrainingSpec& spec);

// Runs initial_program + every pass of pipeline_for(spec). Throws std::invalid_argument
// with a message naming the pass and the valid names when a pass is unknown or refuses.
Program build_program(const TrainingSpec& spec);

}  // namespace trainsim::strategies
