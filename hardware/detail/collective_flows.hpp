#pragma once
// Shared by the collective algorithm files (hardware/collective_*.cpp): a group as NCCL's
// topology sees it (nodes, and each node's members in the order given), and a builder
// that appends flows to a CommPattern.
#include <cstdint>
#include <span>
#include <vector>

#include "hardware/cluster.hpp"
#include "hardware/nccl_tuning.hpp"
#include "sim/plan.hpp"

namespace trainsim::hardware::detail {

struct GroupShape {
  std::vector<std::vector<std::uint32_t>> members;  // per node, in order of first appearance
  std::size_t ranks_per_node = 0;                   // the most members of any node (NCCL's ppn)
  bool uniform = true;                              // every node has ranks_per_node members
};
GroupShape group_shape(const Cluster& cluster, std::span<const std::uint32_t> ranks);

class FlowBuilder {
 public:
  FlowBuilder(const Cluster& cluster, sim::CommPattern& pattern) : cluster_(cluster), pattern_(pattern) {}
  // A flow along the route src -> dst carrying bytes_per_unit × S.
  void route(std::uint32_t src, std::uint32_t dst, double bytes_per_unit);
  // A flow over the given links (a GPU's NVLink to or from the NVSwitch for NVLS).
  void links(std::span<const std::uint32_t> link_ids, double bytes_per_unit);
  const Cluster& cluster() const { return cluster_; }

 private:
  const Cluster& cluster_;
  sim::CommPattern& pattern_;
};

// Algorithm files: each appends the flows of one algorithm for the whole buffer S (bytes
// per unit of S, before protocol efficiency).
void ring_flows(FlowBuilder& out, Collective c, std::span<const std::uint32_t> ranks);
// All-reduce as NCCL's tree: a chain through each node's members, and between nodes, for
// every rail, two complementary binary trees (the double binary tree) carrying half each.
void tree_flows(FlowBuilder& out, std::span<const std::uint32_t> ranks);
// The double binary tree between nodes for one rail, per_tree × S over each tree edge each way.
void inter_node_trees(FlowBuilder& out, const GroupShape& g, std::size_t rail, double per_tree);
// NVLS (inside one node) and NVLSTree (NVLS inside each node, trees between nodes).
void nvls_flows(FlowBuilder& out, Collective c, std::span<const std::uint32_t> ranks, double nvls_efficiency);
void nvls_tree_flows(FlowBuilder& out, std::span<const std::uint32_t> ranks, double nvls_efficiency);
void pat_flows(FlowBuilder& out, std::span<const std::uint32_t> ranks);
// Broadcast / reduce: one pipelined chain from (or to) ranks[0], the root.
void chain_flows(FlowBuilder& out, Collective c, std::span<const std::uint32_t> ranks);
void all_to_all_flows(FlowBuilder& out, std::span<const std::uint32_t> ranks);

// Parent of node r (0 … m−1) in one of the two binary trees of NCCL's double binary
// tree; a root has parent m (none).
std::uint32_t btree_parent(std::uint32_t r, std::uint32_t m, int tree);

}  // namespace trainsim::hardware::detail
