#include "report/flops.hpp"

namespace trainsim::report {

double recompute_flops(const strategies::Program& program) {
  using strategies::Category;
  using strategies::Item;
  const strategies::Layout& layout = program.spec.layout;
  double flops = 0;
  for (const strategies::Role& role : program.roles) {
    double per_micro_batch = 0;
    for (const strategies::Chunk& chunk : role.chunks)
      for (const Item& it : chunk.backward)
        if (it.kind == Item::Kind::COMPUTE && it.category == Category::RECOMPUTE)
          for (const auto& op : role.segments[it.segment].ops) per_micro_batch += op.fwd_flops * it.fraction;
    flops += per_micro_batch * static_cast<double>(program.micro_batches) *
             static_cast<double>(layout.tensor * layout.data);
  }
  return flops;
}

}  // namespace trainsim::report
