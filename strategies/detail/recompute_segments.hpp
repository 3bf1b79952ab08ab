#pragma once
// Recompute in segments of k consecutive layers of a chunk, shared by recompute(full) (k = 1)
// and recompute(every-k): forward keeps only each segment's input (2·s·b·h bytes, /t with
// sequence parallelism); right before a segment's first backward item, the forward of all its
// layers runs again, collectives included, allocating their activations; each layer's
// backward frees its own, and the segment's first layer's backward also frees the input.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "strategies/program.hpp"

namespace trainsim::strategies::detail {

inline void recompute_in_segments(Program& program, std::int64_t k) {
  const TrainingSpec& spec = program.spec;
  const bool sp = program.applied.sequence_parallel && program.applied.tensor > 1;
  const std::int64_t checkpoint =
      2 * spec.micro_batch * spec.sequence * spec.model.hidden / (sp ? program.applied.tensor : 1);
  const std::int32_t num_layers = static_cast<std::int32_t>(spec.model.layers);
  auto is_layer = [&](std::int32_t g) { return g >= 0 && g < num_layers; };

  for (auto& role : program.roles)
    for (auto& chunk : role.chunks) {
      // Segment of a layer: its position in the chunk / k; −1 for the embedding and head.
      const std::int32_t first_layer = chunk.layers.empty() ? 0 : chunk.layers.front();
      auto segment_of = [&](std::int32_t g) -> std::int64_t { return is_layer(g) ? (g - first_layer) / k : -1; };
      auto starts_segment = [&](std::int32_t g) { return is_layer(g) && (g - first_layer) % k == 0; };
      // (Backward is built first, from forward as it was: forward changes after.)
      const std::vector<Item>& original = chunk.forward;
      // Backward: before the segment's first backward item, the forward of all its layers
      // (each segment's forward items, in template order, listed once).
      // (As rows of one array, segment_begin[s] … segment_begin[s + 1]: a vector per segment
      // allocated once per layer of every chunk.)
      std::vector<std::uint32_t> segment_begin, forward_of_segment;
      for (const Item& x : original) {
        if (!is_layer(x.layer)) continue;
        const auto s = static_cast<std::size_t>(segment_of(x.layer));
        if (segment_begin.size() <= s + 1) segment_begin.resize(s + 2, 0);
        ++segment_begin[s + 1];
      }
      for (std::size_t s = 1; s < segment_begin.size(); ++s) segment_begin[s] += segment_begin[s - 1];
      forward_of_segment.resize(segment_begin.empty() ? 0 : segment_begin.back());
      {
        std::vector<std::uint32_t> fill(segment_begin);
        for (std::uint32_t j = 0; j < original.size(); ++j) {
          if (!is_layer(original[j].layer)) continue;
          forward_of_segment[fill[static_cast<std::size_t>(segment_of(original[j].layer))]++] = j;
        }
      }
      const std::size_t segments = segment_begin.empty() ? 0 : segment_begin.size() - 1;
      static const Label RECOMPUTE("recompute");
      // A collective's label → "recompute-" + it, named once per thread (naming takes the table's lock).
      thread_local std::unordered_map<Label, Label, LabelIdentityHash> redone;
      std::vector<Item> backward;
      backward.reserve(chunk.backward.size() + original.size());
      for (std::size_t i = 0; i < chunk.backward.size(); ++i) {
        const Item& it = chunk.backward[i];
        const bool first_of_segment =
            is_layer(it.layer) && (i == 0 || segment_of(chunk.backward[i - 1].layer) != segment_of(it.layer));
        const auto s = first_of_segment ? static_cast<std::size_t>(segment_of(it.layer)) : 0;
        if (first_of_segment && s < segments) {
          for (std::uint32_t f = segment_begin[s]; f < segment_begin[s + 1]; ++f) {
            const std::uint32_t j = forward_of_segment[f];
            Item r = original[j];
            if (r.kind == Item::Kind::COMPUTE) {
              r.category = Category::RECOMPUTE;
              r.label = RECOMPUTE;
            } else {
              auto [pos, fresh] = redone.try_emplace(r.label);
              if (fresh) pos->second = Label("recompute-" + r.label.str());
              r.label = pos->second;
            }
            backward.push_back(std::move(r));
          }
        }
        backward.push_back(it);
      }
      // The segment's first layer's last backward compute item also releases the input: the
      // first such item met walking back, unless a compute item of its layer (a recompute)
      // comes after it.
      std::vector<bool> later_compute(static_cast<std::size_t>(num_layers), false);
      for (std::size_t i = backward.size(); i-- > 0;) {
        Item& it = backward[i];
        if (it.kind != Item::Kind::COMPUTE || !is_layer(it.layer)) continue;
        const bool last = !later_compute[static_cast<std::size_t>(it.layer)];
        later_compute[static_cast<std::size_t>(it.layer)] = true;
        if (last && starts_segment(it.layer) && it.category != Category::RECOMPUTE) it.free_bytes += checkpoint;
      }
      chunk.backward = std::move(backward);
      // Forward keeps only each segment's input, on its first layer's first compute item.
      std::int32_t seen = -1;
      for (auto& it : chunk.forward) {
        if (it.kind != Item::Kind::COMPUTE || !is_layer(it.layer)) continue;
        it.alloc_bytes = it.layer != seen && starts_segment(it.layer) ? checkpoint : 0;
        seen = it.layer;
      }
    }
}

}  // namespace trainsim::strategies::detail
