#include "report/compute_classes.hpp"

#include <array>
#include <map>
#include <utility>

#include "strategies/lower.hpp"

namespace trainsim::report {

namespace {

enum Class : int { GEMM, ATTENTION, MEMORY_BOUND, CLASSES };

Class class_of(models::ComputeClass c) {
  switch (c) {
    case models::ComputeClass::GEMM: return GEMM;
    case models::ComputeClass::BATCHED_GEMM:
    case models::ComputeClass::FUSED_ATTENTION: return ATTENTION;
    case models::ComputeClass::ELEMENTWISE: return MEMORY_BOUND;
  }
  return MEMORY_BOUND;
}

}  // namespace

ComputeByClass compute_by_class(const strategies::Program& program, std::int32_t stage,
                                const hardware::CostModel& cost, double simulated_s) {
  ComputeByClass out;
  const strategies::Role* role = nullptr;
  for (const auto& r : program.roles)
    if (r.stage == stage) role = &r;
  if (role == nullptr) return out;
  // Each op priced alone, exactly as lower prices a segment (segment_seconds sums its ops),
  // once per (segment, cost); steps repeat the same segments every micro-batch.
  std::map<std::pair<std::uint32_t, strategies::Cost>, std::array<double, CLASSES>> priced;
  auto seconds = [&](const strategies::Item& it) -> const std::array<double, CLASSES>& {
    auto [pos, fresh] = priced.try_emplace({it.segment, it.cost});
    if (fresh) {
      pos->second.fill(0);
      for (const models::Op& op : role->segments[it.segment].ops) {
        strategies::Segment one;
        one.ops = {op};
        pos->second[class_of(op.cls)] += strategies::segment_seconds(one, it.cost, program.spec.dtype, cost);
      }
    }
    return pos->second;
  };
  double priced_total = 0;
  for (const strategies::Step& step : role->steps) {
    if (step.kind != strategies::Step::Kind::ITEM) continue;
    for (const strategies::Item& it : role->items(step)) {
      if (it.kind != strategies::Item::Kind::COMPUTE || it.stream != strategies::COMPUTE_STREAM) continue;
      if (it.category != strategies::Category::COMPUTE && it.category != strategies::Category::RECOMPUTE) continue;
      const auto& s = seconds(it);
      for (int c = 0; c < CLASSES; ++c) {
        const double v = s[static_cast<std::size_t>(c)] * it.fraction;
        priced_total += v;
        if (it.category == strategies::Category::RECOMPUTE) {
          out.recompute_s += v;
        } else if (c == GEMM) {
          out.gemm_s += v;
        } else if (c == ATTENTION) {
          out.attention_s += v;
        } else {
          out.memory_bound_s += v;
        }
      }
    }
  }
  out.slowdown_s = simulated_s - priced_total;
  return out;
}

}  // namespace trainsim::report
