#include "strategies/time_breakdown.hpp"

#include <vector>

#include "sim/attribution.hpp"

namespace trainsim::strategies {

TimeBreakdown break_down(const Lowered& lowered, const sim::Timeline& tl, std::uint32_t device) {
  // sim wants the folded tasks' parts flat, one row of plan categories per folded task.
  std::vector<sim::Time> flat;
  flat.reserve(lowered.parts.size() * static_cast<std::size_t>(Category::COUNT));
  for (const auto& row : lowered.parts) flat.insert(flat.end(), row.begin(), row.end());
  const sim::StreamAttribution a =
      sim::attribute_stream(lowered.plan, tl, device, COMPUTE_STREAM, {lowered.parts_of_task, flat});
  auto seconds = [&](Category c) {
    const auto i = static_cast<std::size_t>(c);
    return i < a.by_category_s.size() ? a.by_category_s[i] : 0.0;
  };
  TimeBreakdown b;
  b.rank = device < lowered.device_rank.size() ? lowered.device_rank[device] : device;
  b.compute_s = seconds(Category::COMPUTE);
  b.recompute_s = seconds(Category::RECOMPUTE);
  b.optimizer_s = seconds(Category::OPTIMIZER);
  b.exposed_tp_s = seconds(Category::TP_COMM);
  b.exposed_dp_s = seconds(Category::DP_COMM);
  b.exposed_pp_s = seconds(Category::PP_COMM);
  b.bubble_s = a.idle_s;
  return b;
}

}  // namespace trainsim::strategies
