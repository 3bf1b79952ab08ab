// NVLS: NVLink SHARP on Hopper and later. The NVSwitch reduces (multimem.ld_reduce) and
// multicasts (multimem.st), so a GPU's data crosses its NVLink once instead of n−1 times
// around a ring. Per GPU of an n-GPU group, per unit of S (the whole buffer):
//   all-reduce      up 1 (every shard read by the switch) + 1/n (its reduced shard stored),
//                   down 1/n (its reduced shard) + 1 (every shard multicast back);
//   reduce-scatter  up 1, down 1/n;   all-gather  up 1/n, down 1.
// The switch moves those bytes at the NVLS efficiency (reference §1.3 nvlsEfficiency) of the
// NVLink rate. NVLSTree is NVLS inside every node, and between nodes, per rail (one per
// local GPU, each with 1/k of the buffer), NCCL's double binary tree.
// Check against measurement: 8 × H100, all-reduce, up 9/8·S at 0.85 × 370.8 GB/s gives an
// algorithm bandwidth of 280 GB/s, bus bandwidth 490 GB/s; measured ~480 (reference §2.4).
#include "hardware/detail/collective_flows.hpp"

namespace trainsim::hardware::detail {
namespace {

void switch_flows(FlowBuilder& out, const std::vector<std::uint32_t>& node, double up, double down, double eff) {
  const NodeTopology& links = out.cluster().node_topology();
  for (const std::uint32_t g : node) {
    const std::uint32_t up_link = links.nvlink_up(g), down_link = links.nvlink_down(g);
    out.links({&up_link, 1}, up / eff);
    out.links({&down_link, 1}, down / eff);
  }
}

}  // namespace

void nvls_flows(FlowBuilder& out, Collective c, std::span<const std::uint32_t> ranks, double eff) {
  if (ranks.size() < 2) return;
  const GroupShape g = group_shape(out.cluster(), ranks);
  for (const auto& node : g.members) {
    const double shard = 1.0 / static_cast<double>(node.size());
    switch (c) {
      case Collective::ALL_REDUCE: switch_flows(out, node, 1 + shard, shard + 1, eff); break;
      case Collective::REDUCE_SCATTER: switch_flows(out, node, 1, shard, eff); break;
      case Collective::ALL_GATHER: switch_flows(out, node, shard, 1, eff); break;
      default: break;
    }
  }
}

void nvls_tree_flows(FlowBuilder& out, std::span<const std::uint32_t> ranks, double eff) {
  if (ranks.size() < 2) return;
  const GroupShape g = group_shape(out.cluster(), ranks);
  for (const auto& node : g.members) {
    const double shard = 1.0 / static_cast<double>(node.size());
    if (node.size() > 1) switch_flows(out, node, 1 + shard, shard + 1, eff);
  }
  const double per_rail = 1.0 / static_cast<double>(g.ranks_per_node);
  if (g.members.size() > 1)
    for (std::size_t j = 0; j < g.ranks_per_node; ++j) inter_node_trees(out, g, j, per_rail / 2);
}

}  // namespace trainsim::hardware::detail
