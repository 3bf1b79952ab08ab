// Selective activation recompute (Korthikanti et al. 2022): the attention core (QKᵀ,
// softmax, its dropout, scores × V) keeps nothing in forward (the 5·a·s²·b/t term) and is
// recomputed right before the backward item that needs it.
#include <algorithm>
#include <cstdint>
#include <map>

#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies::detail {

namespace {
constexpr std::uint32_t NO_REDO = ~0u;  // a backward segment with nothing to recompute
}  // namespace

std::string recompute_selective(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "must run before the schedule";
  for (auto& role : program.roles) {
    // Identical layers share their segments (program.hpp), and so their recompute segment.
    std::map<std::uint32_t, std::uint32_t> redo_of;  // backward segment → its recompute segment
    for (auto& chunk : role.chunks) {
      for (auto& it : chunk.forward)
        if (it.kind == Item::Kind::COMPUTE) it.alloc_bytes -= activation_bytes(role.segments[it.segment], true);
      std::vector<Item> backward;
      for (const Item& it : chunk.backward) {
        if (it.kind == Item::Kind::COMPUTE) {
          auto [known, fresh] = redo_of.try_emplace(it.segment, NO_REDO);
          if (fresh) {
            Segment redo;
            for (const auto& op : role.segments[it.segment].ops)
              if (op.selective_recompute) redo.ops.push_back(op);
            if (!redo.ops.empty()) {
              std::reverse(redo.ops.begin(), redo.ops.end());  // backward segments list ops in reverse
              redo.name = role.segments[it.segment].name + ".recompute";
              redo.of_layer = role.segments[it.segment].of_layer;
              known->second = static_cast<std::uint32_t>(role.segments.size());
              role.segments.push_back(std::move(redo));
            }
          }
          if (known->second != NO_REDO) {
            Item r;
            r.kind = Item::Kind::COMPUTE;
            r.cost = Cost::FORWARD;
            r.deps = Dep::previous();
            r.category = Category::RECOMPUTE;
            r.layer = it.layer;
            static const Label RECOMPUTE("recompute");  // interned once, not per item
            r.label = RECOMPUTE;
            r.segment = known->second;
            r.alloc_bytes = activation_bytes(role.segments[r.segment], true);
            backward.push_back(std::move(r));
          }
        }
        backward.push_back(it);
      }
      chunk.backward = std::move(backward);
    }
  }
  return {};
}

}  // namespace trainsim::strategies::detail
