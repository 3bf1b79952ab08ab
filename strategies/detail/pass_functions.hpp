#pragma once
// Declarations of every pass function listed in strategies/passes.def.
#include <string>

#include "strategies/program.hpp"
#include "strategies/registry.hpp"

namespace trainsim::strategies::detail {
#define TRAINSIM_PASS(name, variant, kind, function, params, needs, gives, description) \
  std::string function(Program& program, const PassArgs& args);
#include "strategies/passes.def"
#undef TRAINSIM_PASS
}  // namespace trainsim::strategies::detail
