// All-reduce as NCCL's tree runs it (pipelined reduce up, broadcast down). The buffer is
// split over k = ranks-per-node rails (NCCL's channels, each on its own NIC). For rail j:
//   * inside each node, a chain that starts at member j and visits the others: every chain
//     edge carries the rail's S/k up (reduce) and down (broadcast);
//   * between nodes, the double binary tree: two binary trees over the nodes whose interior
//     nodes are each other's leaves, each carrying half the rail's data, S/(2k), over every
//     tree edge in both directions, member j to member j (one rail).
// On one node it is the chain alone. Per GPU the NVLink traffic equals the ring's,
// 2(k−1)/k·S, and per NIC it is 2·S/k (interior in one tree: up + two children; leaf in the
// other: up), the ring's 2(n−1)/n·S/k within (n−1)/n.
#include "hardware/detail/collective_flows.hpp"

namespace trainsim::hardware::detail {

namespace {

void chain(FlowBuilder& out, const std::vector<std::uint32_t>& node, std::size_t head, double per_rail) {
  const std::size_t size = node.size();
  for (std::size_t t = 0; t + 1 < size; ++t) {
    const std::uint32_t a = node[(head + t) % size], b = node[(head + t + 1) % size];
    out.route(b, a, per_rail);  // reduce toward the head
    out.route(a, b, per_rail);  // broadcast from it
  }
}

}  // namespace

void inter_node_trees(FlowBuilder& out, const GroupShape& g, std::size_t rail, double per_tree) {
  const auto m = static_cast<std::uint32_t>(g.members.size());
  for (int tree = 0; tree < 2; ++tree)
    for (std::uint32_t r = 0; r < m; ++r) {
      const std::uint32_t p = btree_parent(r, m, tree);
      if (p == m) continue;
      const std::uint32_t child = g.members[r][rail % g.members[r].size()];
      const std::uint32_t parent = g.members[p][rail % g.members[p].size()];
      out.route(child, parent, per_tree);
      out.route(parent, child, per_tree);
    }
}

void tree_flows(FlowBuilder& out, std::span<const std::uint32_t> ranks) {
  if (ranks.size() < 2) return;
  const GroupShape g = group_shape(out.cluster(), ranks);
  const std::size_t k = g.ranks_per_node;
  const double per_rail = 1.0 / static_cast<double>(k);
  for (std::size_t j = 0; j < k; ++j) {
    for (const auto& node : g.members) chain(out, node, j % node.size(), per_rail);
    if (g.members.size() > 1) inter_node_trees(out, g, j, per_rail / 2);
  }
}

}  // namespace trainsim::hardware::detail
