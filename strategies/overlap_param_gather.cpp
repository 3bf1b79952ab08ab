// Overlapped parameter gather (Megatron-LM --overlap-param-gather, with the distributed
// optimizer): the all-gather of updated parameters is not waited for after the optimizer
// step; it is issued per layer on the comm stream and each layer's first forward waits
// only for its own bucket. In the steady state of training this is the next iteration's
// start, which is what one simulated iteration shows: buckets at the iteration's start,
// overlapping the first micro-batch's forward.
#include "strategies/detail/layer_params.hpp"
#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies::detail {

std::string overlap_param_gather(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "must run before the schedule";
  if (program.spec.zero_stage < 1)
    return "needs the distributed optimizer (zero_stage ≥ 1): without it no parameters are gathered";
  const StateBytes sb = state_bytes_per_param(program.spec);
  for (auto& role : program.roles) {
    std::vector<Item> tail;
    bool found = false;
    for (const Item& it : role.tail) {
      if (it.kind == Item::Kind::COLLECTIVE && it.collective.dim == Dim::DATA &&
          it.collective.op == hardware::Collective::ALL_GATHER)
        found = true;
      else
        tail.push_back(it);
    }
    if (!found) continue;  // data = 1
    role.tail = std::move(tail);
    auto params = params_by_layer(role, static_cast<std::int32_t>(program.spec.model.layers));
    std::map<std::int32_t, std::int32_t> bucket_of_layer;
    // Buckets in the order the forward needs them.
    for (const auto& chunk : role.chunks)
      for (const auto& it : chunk.forward) {
        if (it.kind != Item::Kind::COMPUTE || bucket_of_layer.count(it.layer)) continue;
        Item gather;
        gather.kind = Item::Kind::COLLECTIVE;
        gather.collective = {Dim::DATA, hardware::Collective::ALL_GATHER, static_cast<double>(params[it.layer]) * sb.weights};
        gather.category = Category::DP_COMM;
        gather.stream = Stream::DP_COMM;
        gather.layer = it.layer;
        gather.label = "dp-param-allgather-bucket";
        bucket_of_layer[it.layer] = static_cast<std::int32_t>(role.prologue.size());
        role.prologue.push_back(gather);
      }
    for (auto& chunk : role.chunks) {
      std::int32_t seen = -2;
      for (auto& it : chunk.forward) {
        if (it.kind != Item::Kind::COMPUTE || it.layer == seen) continue;
        seen = it.layer;
        it.waits_for_prologue = bucket_of_layer[it.layer];
      }
    }
  }
  program.passes_run.emplace_back("overlap-param-gather");
  return {};
}

}  // namespace trainsim::strategies::detail
