// Overlapped gradient reduction (Megatron-LM --overlap-grad-reduce; PyTorch DDP buckets):
// instead of one data-parallel collective after the last backward, gradients are reduced in
// buckets of Megatron's size while the backward is still running. A bucket is issued on the
// data-parallel stream after the last accumulation of its gradients — the backward of its
// last layer in every micro-batch, whatever order the schedule runs them in. Only the
// buckets still in flight when the backward ends stay exposed.
#include "strategies/detail/buckets.hpp"
#include "strategies/detail/layer_params.hpp"
#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies::detail {

std::string overlap_grad_reduce(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "must run before the schedule";
  const StateBytes sb = state_bytes_per_param(program.spec);
  const std::int64_t bucket_params = default_bucket_params(program.applied.data);
  for (auto& role : program.roles) {
    // The tail's gradient collective becomes the buckets.
    std::vector<Item> tail;
    const Item* whole = nullptr;
    for (const Item& it : role.tail) {
      const bool grad_sync = it.kind == Item::Kind::COLLECTIVE && it.collective.dim == Dim::DATA &&
                             it.collective.op != hardware::Collective::ALL_GATHER;
      // The first: the data pass puts the gradient sync at the tail's front (ZeRO-1's
      // gradient-norm all-reduce comes later and stays).
      if (grad_sync && whole == nullptr) whole = &it;
    }
    if (whole == nullptr) continue;  // data = 1: nothing to reduce
    const auto params = params_by_layer(role, static_cast<std::int32_t>(program.spec.model.layers));
    const Label& bwd = compute_label(Direction::BACKWARD);  // compared by number, item by item
    for (const auto& chunk : role.chunks) {
      // Layers in the order their gradients complete: the backward's order.
      std::vector<std::int32_t> order;
      for (const Item& it : chunk.backward)
        if (it.kind == Item::Kind::COMPUTE && it.label == bwd && (order.empty() || order.back() != it.layer))
          order.push_back(it.layer);
      for (const Bucket& b : make_buckets(order, params, bucket_params)) {
        Item bucket = *whole;
        bucket.collective.bytes = static_cast<double>(b.params) * sb.gradients;
        bucket.layer = b.layers.back();
        static const Label BUCKET("dp-grad-bucket");  // interned once, not per bucket
        bucket.label = BUCKET;
        bucket.deps = {Dep::item(bwd, Direction::BACKWARD, 0, Dep::On::END, Dep::MicroBatch::EVERY)};
        role.floating.push_back(std::move(bucket));
      }
    }
    for (const Item& it : role.tail)
      if (&it != whole) tail.push_back(it);
    role.tail = std::move(tail);
  }
  program.passes_run.emplace_back("overlap-grad-reduce");
  return {};
}

}  // namespace trainsim::strategies::detail
