// Megatron tensor parallelism (Shoeybi et al. 2019): every op is sharded over the tensor
// group as models/ describes (column-parallel QKV/fc1, row-parallel proj/fc2, heads split),
// with an all-reduce where a row-parallel region ends in forward and where a
// column-parallel region begins in backward; with sequence parallelism (Korthikanti et
// al. 2022) those become reduce-scatter / all-gather pairs and norms are sharded too.
#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies::detail {

std::string tensor_parallel(Program& program, const PassArgs& args) {
  if (is_scheduled(program)) return "must run before the schedule";
  Layout want;
  want.tensor = args.get("size");
  want.sequence_parallel = args.get("sp") != 0;
  if (want.tensor < 1) return "tensor size must be positive";
  if (program.spec.model.heads % want.tensor != 0)
    return "tensor=" + std::to_string(want.tensor) + " does not divide the attention heads";
  program.applied.tensor = want.tensor;
  program.applied.sequence_parallel = want.sequence_parallel;
  if (want.sequence_parallel && want.tensor > 1 && program.spec.sequence % want.tensor != 0)
    return "sequence parallelism needs tensor=" + std::to_string(want.tensor) + " to divide the sequence length " +
           std::to_string(program.spec.sequence);
  for (auto& role : program.roles) rebuild_role(role, program);
  return {};
}

}  // namespace trainsim::strategies::detail
