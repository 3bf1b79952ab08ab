#include "report/flops.hpp"

#include <cstdint>

namespace trainsim::report {

double recompute_flops(const strategies::Program& program) {
  using strategies::Category;
  using strategies::Item;
  const strategies::Layout& layout = program.spec.layout;
  double flops = 0;
  double per_micro_batch = 0;
  std::uint64_t counted = 0;  // Role::restored_from of the role counted last
  for (const strategies::Role& role : program.roles) {
    // A restored middle stage holds stage 1's items but for their layers: its count is the
    // one before, without reading its thousands of items again.
    if (role.restored_from == 0 || role.restored_from != counted) {
      per_micro_batch = 0;
      for (const strategies::Chunk& chunk : role.chunks)
        for (const Item& it : chunk.backward)
          if (it.kind == Item::Kind::COMPUTE && it.category == Category::RECOMPUTE)
            for (const auto& op : role.segments[it.segment].ops) per_micro_batch += op.fwd_flops * it.fraction;
      counted = role.restored_from;
    }
    flops += per_micro_batch * static_cast<double>(program.micro_batches) *
             static_cast<double>(layout.tensor * layout.data);
  }
  return flops;
}

}  // namespace trainsim::report
