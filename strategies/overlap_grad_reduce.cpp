// Overlapped gradient reduction (Megatron-LM --overlap-grad-reduce; PyTorch DDP buckets):
// instead of one data-parallel collective after the last backward, gradients are reduced
// in buckets while the last micro-batch's backward is still running — a bucket per layer,
// issued on the comm stream as soon as that layer's weight gradients are complete. Only
// the buckets still in flight when the backward ends stay exposed.
#include "strategies/detail/layer_params.hpp"
#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies::detail {

std::string overlap_grad_reduce(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "must run before the schedule";
  const StateBytes sb = state_bytes_per_param(program.spec);
  for (auto& role : program.roles) {
    // The tail's gradient collective becomes the buckets.
    std::vector<Item> tail;
    CollectiveNeed whole;
    bool found = false;
    for (const Item& it : role.tail) {
      const bool grad_sync = it.kind == Item::Kind::COLLECTIVE && it.collective.dim == Dim::DATA &&
                             it.collective.op != hardware::Collective::ALL_GATHER;
      if (grad_sync) {
        whole = it.collective;
        found = true;
      } else {
        tail.push_back(it);
      }
    }
    if (!found) continue;  // data = 1: nothing to reduce
    auto params = params_by_layer(role, static_cast<std::int32_t>(program.spec.model.layers));
    for (auto& chunk : role.chunks) {
      // A layer's gradients are complete after its last backward compute item.
      for (std::size_t i = 0; i < chunk.backward.size(); ++i) {
        Item& it = chunk.backward[i];
        if (it.kind != Item::Kind::COMPUTE || it.category != Category::COMPUTE) continue;
        bool last = true;
        for (std::size_t j = i + 1; j < chunk.backward.size(); ++j)
          if (chunk.backward[j].layer == it.layer && chunk.backward[j].kind == Item::Kind::COMPUTE) last = false;
        if (!last) continue;
        it.has_bucket = true;
        it.bucket = {Dim::DATA, whole.op, static_cast<double>(params[it.layer]) * sb.gradients};
      }
    }
    role.tail = std::move(tail);
  }
  program.passes_run.emplace_back("overlap-grad-reduce");
  return {};
}

}  // namespace trainsim::strategies::detail
