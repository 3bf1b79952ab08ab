// Full activation recompute (Chen et al. 2016; Megatron's --recompute-granularity full,
// uniform, one layer per checkpoint): a transformer layer keeps only its input in forward
// (2·s·b·h bytes, /t with sequence parallelism) and reruns its whole forward, collectives
// included, right before its backward.
#include "strategies/detail/pass_functions.hpp"
#include "strategies/detail/recompute_segments.hpp"

namespace trainsim::strategies::detail {

std::string recompute_full(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "must run before the schedule";
  recompute_in_segments(program, 1);  // every layer its own segment
  return {};
}

}  // namespace trainsim::strategies::detail
