#pragma once
// Declarations of every pass function listed in strategies/passes.def.
#include <string>

#include "strategies/program.hpp"

namespace trainsim::strategies::detail {
#define TRAINSIM_PASS(name, kind, function, description) std::string function(Program& program);
#include "strategies/passes.def"
#undef TRAINSIM_PASS
}  // namespace trainsim::strategies::detail
