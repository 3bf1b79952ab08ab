// Block recompute of every k-th layer (Megatron's --recompute-granularity full with
// --recompute-method block/uniform and --recompute-num-layers k; Chen et al. 2016's √n
// checkpointing with segments of k): the layers of a chunk are cut into segments of k
// consecutive layers (the last one may be shorter). Forward keeps only each segment's
// input — the input of its first layer, 2·s·b·h bytes, /t with sequence parallelism — and
// nothing else of the segment's layers. In backward, right before the segment's last layer
// (the first of the segment to be back-propagated), the forward of all its layers is
// recomputed, collectives included, allocating their activations; each layer's backward
// frees its own, and the segment's first layer's backward also frees the kept input.
// k = 1 is exactly `recompute(full)`.
//
// Peak activations of one micro-batch in flight (L layers of a chunk, k dividing L, A a
// layer's activations, C the checkpoint, E what the embedding and head keep): right after
// the first segment backward meets is recomputed, every segment's input is still held and
// its k layers are whole, so peak = E + (L/k)·C + k·A (minimised near k = √(L·C/A)).
#include "strategies/detail/pass_functions.hpp"
#include "strategies/detail/recompute_segments.hpp"

namespace trainsim::strategies::detail {

std::string recompute_every_k(Program& program, const PassArgs& args) {
  if (is_scheduled(program)) return "must run before the schedule";
  const std::int64_t k = args.get("k");
  recompute_in_segments(program, k);
  return {};
}

}  // namespace trainsim::strategies::detail
