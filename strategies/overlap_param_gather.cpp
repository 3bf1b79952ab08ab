// Overlapped parameter gather (Megatron-LM --overlap-param-gather, with the distributed
// optimizer): the all-gather of updated parameters is not waited for after the optimizer
// step; it is issued in buckets on the data-parallel stream and each layer's forward waits
// only for its own bucket. In the steady state of training this is the next iteration's
// start, which is what one simulated iteration shows: buckets at the iteration's start,
// overlapping the first micro-batch's forward.
#include "strategies/detail/buckets.hpp"
#include "strategies/detail/layer_params.hpp"
#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies::detail {

std::string overlap_param_gather(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "must run before the schedule";
  if (program.spec.zero_stage < 1)
    return "needs the distributed optimizer (zero_stage ≥ 1): without it no parameters are gathered";
  const StateBytes sb = state_bytes_per_param(program.spec);
  const std::int64_t bucket_params = default_bucket_params(program.applied.data);
  const std::uint8_t stream = program.stream("dp-comm");
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
    const auto params = params_by_layer(role, static_cast<std::int32_t>(program.spec.model.layers));
    std::map<std::int32_t, std::int32_t> bucket_layer;  // layer → the layer its bucket is named by
    static const Label BUCKET("dp-param-allgather-bucket");  // interned once, not per bucket or layer
    for (auto& chunk : role.chunks) {
      // Buckets in the order the forward needs them.
      std::vector<std::int32_t> order;
      for (const Item& it : chunk.forward)
        if (it.kind == Item::Kind::COMPUTE && (order.empty() || order.back() != it.layer)) order.push_back(it.layer);
      for (const Bucket& b : make_buckets(order, params, bucket_params)) {
        Item gather;
        gather.kind = Item::Kind::COLLECTIVE;
        gather.collective = {Dim::DATA, hardware::Collective::ALL_GATHER, static_cast<double>(b.params) * sb.weights};
        gather.category = Category::DP_COMM;
        gather.stream = stream;
        gather.layer = b.layers.front();
        gather.label = BUCKET;
        for (const std::int32_t l : b.layers) bucket_layer[l] = gather.layer;
        role.prologue.push_back(std::move(gather));
      }
      // A layer's first forward item waits for its bucket.
      std::int32_t seen = -2;
      for (auto& it : chunk.forward) {
        if (it.kind != Item::Kind::COMPUTE || it.layer == seen) continue;
        seen = it.layer;
        it.deps.push_back(Dep::iteration_item(BUCKET, bucket_layer[it.layer] - it.layer));
      }
    }
  }
  program.passes_run.emplace_back("overlap-param-gather");
  return {};
}

}  // namespace trainsim::strategies::detail
