// Collectives made of point-to-point transfers: broadcast and reduce (NCCL runs them as one
// pipelined chain from or to the root, every chain edge carrying the whole buffer), and
// all-to-all (every rank sends S/n to every other; direct and pairwise move the same bytes
// and differ in the steps they pay).
#include "hardware/detail/collective_flows.hpp"

namespace trainsim::hardware::detail {

void chain_flows(FlowBuilder& out, Collective c, std::span<const std::uint32_t> ranks) {
  // The root's node first, then the others, each node's members together, so the chain
  // leaves each node once.
  std::vector<std::uint32_t> order;
  for (const auto& node : group_shape(out.cluster(), ranks).members) order.insert(order.end(), node.begin(), node.end());
  for (std::size_t i = 0; i + 1 < order.size(); ++i) {
    if (c == Collective::REDUCE) out.route(order[i + 1], order[i], 1.0);
    else out.route(order[i], order[i + 1], 1.0);
  }
}

void all_to_all_flows(FlowBuilder& out, std::span<const std::uint32_t> ranks) {
  const auto n = static_cast<double>(ranks.size());
  for (const std::uint32_t src : ranks)
    for (const std::uint32_t dst : ranks)
      if (src != dst) out.route(src, dst, 1.0 / n);
}

}  // namespace trainsim::hardware::detail
