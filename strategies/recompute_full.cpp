// Full activation recompute (Chen et al. 2016; Megatron's --recompute-granularity full,
// uniform, one layer per checkpoint): a transformer layer keeps only its input in forward
// (2·s·b·h bytes, /t with sequence parallelism) and reruns its whole forward, collectives
// included, right before its backward.
#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies::detail {

std::string recompute_full(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "must run before the schedule";
  const TrainingSpec& spec = program.spec;
  const bool sp = program.applied.sequence_parallel && program.applied.tensor > 1;
  const std::int64_t checkpoint =
      2 * spec.micro_batch * spec.sequence * spec.model.hidden / (sp ? program.applied.tensor : 1);
  const std::int32_t num_layers = static_cast<std::int32_t>(spec.model.layers);
  auto is_layer = [&](std::int32_t g) { return g >= 0 && g < num_layers; };

  for (auto& role : program.roles)
    for (auto& chunk : role.chunks) {
    const std::vector<Item> original = chunk.forward;
    // Forward keeps only each layer's input, on the layer's first compute item.
    std::int32_t seen = -1;
    for (auto& it : chunk.forward) {
      if (it.kind != Item::Kind::COMPUTE || !is_layer(it.layer)) continue;
      it.alloc_bytes = it.layer != seen ? checkpoint : 0;
      seen = it.layer;
    }
    // Backward: before a layer's first backward item, its forward again.
    std::vector<Item> backward;
    for (std::size_t i = 0; i < chunk.backward.size(); ++i) {
      const Item& it = chunk.backward[i];
      const bool first_of_layer = is_layer(it.layer) && (i == 0 || chunk.backward[i - 1].layer != it.layer);
      if (first_of_layer) {
        for (const Item& f : original) {
          if (f.layer != it.layer) continue;
          Item r = f;
          if (r.kind == Item::Kind::COMPUTE) {
            r.category = Category::RECOMPUTE;
            r.label = "recompute";
          } else {
            r.label = "recompute-" + r.label;
          }
          backward.push_back(std::move(r));
        }
      }
      backward.push_back(it);
    }
    // The layer's last backward compute item also releases the kept input.
    for (std::size_t i = backward.size(); i-- > 0;) {
      Item& it = backward[i];
      if (it.kind != Item::Kind::COMPUTE || !is_layer(it.layer) || it.category == Category::RECOMPUTE) continue;
      bool last = true;
      for (std::size_t j = i + 1; j < backward.size(); ++j)
        if (backward[j].layer == it.layer && backward[j].kind == Item::Kind::COMPUTE) last = false;
      if (last) it.free_bytes += checkpoint;
    }
    chunk.backward = std::move(backward);
    }
  return {};
}

}  // namespace trainsim::strategies::detail
