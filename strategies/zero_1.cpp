// ZeRO stage 1 as Megatron's distributed optimizer does it (Rajbhandari et al. 2020;
// Megatron-LM --use-distributed-optimizer): the fp32 optimizer states (master weights and
// moments) are sharded over the d data-parallel ranks; gradients stay whole in fp32 and are
// reduce-scattered instead of all-reduced; each rank updates its 1/d shard and the updated
// 16-bit parameters are all-gathered. Model states: 6 + 12/d bytes per parameter with
// fp32 gradients (formulas.md).
#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies::detail {

std::string zero_1(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "must run before the schedule";
  const std::int64_t d = program.applied.data;
  const StateBytes sb = state_bytes_per_param(program.spec);
  for (auto& role : program.roles) {
    role.static_bytes[static_cast<int>(MemClass::OPTIMIZER_STATES)] /= static_cast<double>(d);
    std::vector<Item> tail;
    for (Item it : role.tail) {
      if (it.kind == Item::Kind::COLLECTIVE && it.collective.dim == Dim::DATA &&
          it.collective.op == hardware::Collective::ALL_REDUCE) {
        it.collective.op = hardware::Collective::REDUCE_SCATTER;
        static const Label REDUCE_SCATTER("dp-grad-reducescatter");  // interned once, not per item
        it.label = REDUCE_SCATTER;
        tail.push_back(it);
        continue;
      }
      if (it.category == Category::OPTIMIZER) {
        // Each rank's gradient norm covers its shard only, so Megatron's distributed
        // optimizer also sums the squared norms over the data group (4 bytes). Not modelled:
        // as a rendezvous of the data group in the tail, full fidelity charges its members'
        // wait to the bubble where fast fidelity charges the pipeline transfer it follows
        // (tests/strategies/fidelity_agreement_test.cpp, 288-GPU case), for a collective of
        // tens of microseconds.
        // Each rank steps only its shard of the states (and of 16-bit gradients' fp32 main
        // gradients); the whole gradient buffer is still zeroed.
        const double p = static_cast<double>(role.params);
        role.segments[it.segment].ops = {optimizer_step_op(program.spec, p / static_cast<double>(d), p)};
        it.alloc_bytes = std::llround(p / static_cast<double>(d) * sb.main_gradients);
        it.free_bytes = it.alloc_bytes;
        tail.push_back(it);
        if (d > 1) {
          Item gather;
          gather.kind = Item::Kind::COLLECTIVE;
          gather.collective = {Dim::DATA, hardware::Collective::ALL_GATHER,
                               static_cast<double>(role.params) * sb.weights};
          gather.category = Category::DP_COMM;
          gather.stream = program.stream("dp-comm");
          gather.layer = it.layer;
          static const Label GATHER("dp-param-allgather");
          gather.label = GATHER;
          gather.deps = {Dep::every_stream()};
          tail.push_back(gather);
        }
        continue;
      }
      tail.push_back(it);
    }
    role.tail = std::move(tail);
  }
  return {};
}

}  // namespace trainsim::strategies::detail
