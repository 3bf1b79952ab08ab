#pragma once
// Parameters of one rank per layer group (−1 embedding, layer index, num_layers head) of a
// role, read off its backward templates (each op appears in exactly one backward item).
#include <cstdint>
#include <map>

#include "strategies/program.hpp"

namespace trainsim::strategies::detail {

// Parameters held outside any op (the last stage's copy of a tied embedding) are counted
// with the head, group `head_group`.
inline std::map<std::int32_t, std::int64_t> params_by_layer(const Role& role, std::int32_t head_group) {
  std::map<std::int32_t, std::int64_t> out;
  std::int64_t counted = 0;
  // A layer's items are consecutive: its entry is looked up once per run of them.
  auto at = out.end();
  for (const auto& chunk : role.chunks)
    for (const auto& it : chunk.backward) {
      if (it.kind != Item::Kind::COMPUTE || it.category != Category::COMPUTE) continue;
      if (at == out.end() || at->first != it.layer) at = out.try_emplace(it.layer, 0).first;
      for (const auto& op : role.segments[it.segment].ops) {
        at->second += op.params;
        counted += op.params;
      }
    }
  if (counted != role.params) out[head_group] += role.params - counted;
  return out;
}

}  // namespace trainsim::strategies::detail
