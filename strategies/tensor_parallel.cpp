// Megatron tensor parallelism (Shoeybi et al. 2019): every op is sharded over the tensor
// group as models/ describes (column-parallel QKV/fc1, row-parallel proj/fc2, heads split),
// with an all-reduce where a row-parallel region ends in forward and where a
// column-parallel region begins in backward; with sequence parallelism (Korthikanti et
// al. 2022) those become reduce-scatter / all-gather pairs and norms are sharded too.
#include "strategies/detail/pass_functions.hpp"
#include "strategies/layout_rules.hpp"

namespace trainsim::strategies::detail {

std::string tensor_parallel(Program& program, const PassArgs& args) {
  if (is_scheduled(program)) return "must run before the schedule";
  Layout want;
  want.tensor = args.get("size");
  want.sequence_parallel = args.get("sp") != 0;
  if (want.tensor < 1) return "tensor size must be positive";
  if (auto e = tensor_divides_heads(want.tensor, program.spec.model.heads); !e.empty()) return e;
  if (auto e = tensor_divides_kv_heads(want.tensor, program.spec.model.kv_heads); !e.empty()) return e;
  if (auto e = tensor_divides_ffn(want.tensor, program.spec.model.ffn_hidden); !e.empty()) return e;
  program.applied.tensor = want.tensor;
  program.applied.sequence_parallel = want.sequence_parallel;
  if (auto e = sequence_parallel_divides_sequence(want.sequence_parallel, want.tensor, program.spec.sequence);
      !e.empty())
    return e;
  program.templates_stale = true;  // every op's shard changed; build_program rebuilds before they are read
  return {};
}

}  // namespace trainsim::strategies::detail
