#include "report/compute_classes.hpp"

#include <array>
#include <span>
#include <vector>

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
  // How many times each (segment, cost) runs as compute and as recompute over the iteration
  // (fractions summed), then each op of it priced alone, exactly as lower prices a segment
  // (segment_seconds sums its ops): one pass over the steps with one add per item, since a
  // sweep analyzes every variant and a role has tens of thousands of items.
  constexpr std::size_t COSTS = strategies::COST_KINDS;
  const std::size_t keys = role->segments.size() * COSTS;
  std::vector<double> as_compute(keys, 0.0), as_recompute(keys, 0.0);
  auto count = [&](std::span<const strategies::Item> items, double times) {
    for (const strategies::Item& it : items) {
      if (it.kind != strategies::Item::Kind::COMPUTE || it.stream != strategies::COMPUTE_STREAM) continue;
      const std::size_t key = static_cast<std::size_t>(it.segment) * COSTS + static_cast<std::size_t>(it.cost);
      if (it.category == strategies::Category::COMPUTE) {
        as_compute[key] += times * it.fraction;
      } else if (it.category == strategies::Category::RECOMPUTE) {
        as_recompute[key] += times * it.fraction;
      }
    }
  };
  // A whole template run is the same items every micro-batch: counted per template, then
  // each template's items visited once.
  std::vector<double> whole_runs(role->chunks.size() * 2, 0.0);
  auto template_of = [](const strategies::Step& step) {
    return step.list == strategies::ItemList::FORWARD ? 0u : step.list == strategies::ItemList::BACKWARD ? 1u : 2u;
  };
  for (const strategies::Step& step : role->steps) {
    if (step.kind != strategies::Step::Kind::ITEM) continue;
    const unsigned t = template_of(step);
    if (step.whole_run && t < 2 && step.index == 0 && step.count == role->list(step.list, step.chunk).size()) {
      whole_runs[static_cast<std::size_t>(step.chunk) * 2 + t] += 1;
      continue;
    }
    count(role->items(step), 1.0);
  }
  for (std::size_t c = 0; c < role->chunks.size(); ++c) {
    if (whole_runs[c * 2] > 0) count(role->chunks[c].forward, whole_runs[c * 2]);
    if (whole_runs[c * 2 + 1] > 0) count(role->chunks[c].backward, whole_runs[c * 2 + 1]);
  }
  double priced_total = 0;
  for (std::size_t key = 0; key < keys; ++key) {
    if (as_compute[key] == 0 && as_recompute[key] == 0) continue;
    std::array<double, CLASSES> row{};
    const auto what = static_cast<strategies::Cost>(key % COSTS);
    for (const models::Op& op : role->segments[key / COSTS].ops) {
      strategies::Segment one;
      one.ops = {op};
      row[class_of(op.cls)] += strategies::segment_seconds(one, what, program.spec.dtype, cost);
    }
    out.gemm_s += row[GEMM] * as_compute[key];
    out.attention_s += row[ATTENTION] * as_compute[key];
    out.memory_bound_s += row[MEMORY_BOUND] * as_compute[key];
    out.recompute_s += (row[GEMM] + row[ATTENTION] + row[MEMORY_BOUND]) * as_recompute[key];
    priced_total += (row[GEMM] + row[ATTENTION] + row[MEMORY_BOUND]) * (as_compute[key] + as_recompute[key]);
  }
  out.slowdown_s = simulated_s - priced_total;
  return out;
}

}  // namespace trainsim::report
