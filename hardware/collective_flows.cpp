#include "hardware/detail/collective_flows.hpp"

#include <algorithm>
#include <unordered_map>

namespace trainsim::hardware::detail {

GroupShape group_shape(const Cluster& cluster, std::span<const std::uint32_t> ranks) {
  GroupShape g;
  // Groups are mostly a few nodes: a scan of the nodes seen so far beats a hash map's
  // allocation; a map takes over once there are many.
  constexpr std::size_t SCAN_NODES = 32;
  std::vector<std::uint32_t> nodes;
  std::unordered_map<std::uint32_t, std::size_t> node_index;
  for (const std::uint32_t r : ranks) {
    const std::uint32_t node = cluster.node_of(r);
    std::size_t index = nodes.size();
    if (nodes.size() <= SCAN_NODES) {
      index = static_cast<std::size_t>(std::find(nodes.begin(), nodes.end(), node) - nodes.begin());
    } else if (const auto it = node_index.find(node); it != node_index.end()) {
      index = it->second;
    }
    if (index == nodes.size()) {
      nodes.push_back(node);
      g.members.emplace_back();
      if (nodes.size() > SCAN_NODES) {
        if (node_index.empty())
          for (std::size_t k = 0; k < nodes.size(); ++k) node_index.emplace(nodes[k], k);
        else
          node_index.emplace(node, index);
      }
    }
    g.members[index].push_back(r);
  }
  for (const auto& m : g.members) g.ranks_per_node = std::max(g.ranks_per_node, m.size());
  g.uniform = std::all_of(g.members.begin(), g.members.end(), [&](const auto& m) { return m.size() == g.ranks_per_node; });
  return g;
}

void FlowBuilder::route(std::uint32_t src, std::uint32_t dst, double bytes_per_unit) {
  const auto r = cluster_.route(src, dst);
  links(r, bytes_per_unit);
}

void FlowBuilder::links(std::span<const std::uint32_t> link_ids, double bytes_per_unit) {
  if (link_ids.empty() || bytes_per_unit <= 0) return;
  sim::FlowTemplate f;
  f.route_begin = static_cast<std::uint32_t>(pattern_.route_links.size());
  pattern_.route_links.insert(pattern_.route_links.end(), link_ids.begin(), link_ids.end());
  f.route_end = static_cast<std::uint32_t>(pattern_.route_links.size());
  f.bytes_per_unit = bytes_per_unit;
  pattern_.flows.push_back(f);
}

namespace {

// In-order binary tree over positions 1 … m: a position's lowest set bit b is its height;
// its parent is p + b when the bit above b is clear, else p − b, climbing further while
// that lies beyond m. The root is the largest power of two <= m. Subtrees are contiguous
// ranges of positions, so most tree edges join nodes under the same leaf switch.
std::uint32_t inorder_parent(std::uint32_t p, std::uint32_t m) {
  std::uint32_t root = 1;
  while (root * 2 <= m) root *= 2;
  if (p == root) return 0;
  do {
    const std::uint32_t b = p & (~p + 1);
    p = (p & (2 * b)) != 0 ? p - b : p + b;
  } while (p > m);
  return p;
}

}  // namespace

std::uint32_t btree_parent(std::uint32_t r, std::uint32_t m, int tree) {
  // NCCL's double binary tree: tree 0 is the in-order tree over nodes in order; tree 1
  // places the nodes so that tree 0's leaves (odd positions) become its interior nodes:
  // shifted by one position when m is even, mirrored when m is odd.
  auto position = [&](std::uint32_t node) {
    if (tree == 0) return node + 1;
    return m % 2 == 0 ? (node + 1) % m + 1 : m - node;
  };
  auto node_at = [&](std::uint32_t pos) {
    if (tree == 0) return pos - 1;
    return m % 2 == 0 ? (pos + m - 2) % m : m - pos;
  };
  const std::uint32_t parent = inorder_parent(position(r), m);
  return parent == 0 ? m : node_at(parent);
}

}  // namespace trainsim::hardware::detail
