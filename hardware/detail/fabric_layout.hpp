#pragma once
// Numbering of a Cluster's links and leaves, shared by the Cluster (which creates them in
// this order) and by the topology graph (which must name the same ids).
//
//   link 4g+0 NVLINK_UP   GPU g -> its node's NVSwitch
//   link 4g+1 NVLINK_DOWN NVSwitch -> GPU g
//   link 4g+2 NIC_UP      GPU g -> its leaf
//   link 4g+3 NIC_DOWN    leaf -> GPU g
//   link 4G+2l+0 LEAF_UP  leaf l -> spine       (G = number of GPUs)
//   link 4G+2l+1 LEAF_DOWN spine -> leaf l
//
// Leaf l = group * gpus_per_node + rail, where rail is the GPU's index in its node and
// group = node / nodes_per_leaf: one leaf per rail per group of nodes, as in a DGX
// SuperPOD scalable unit (reference §3.3).
#include <cstdint>

#include "hardware/cluster.hpp"

namespace trainsim::hardware::detail {

inline std::uint32_t nvlink_up_link(std::uint32_t gpu) { return 4 * gpu; }
inline std::uint32_t nvlink_down_link(std::uint32_t gpu) { return 4 * gpu + 1; }
inline std::uint32_t nic_up_link(std::uint32_t gpu) { return 4 * gpu + 2; }
inline std::uint32_t nic_down_link(std::uint32_t gpu) { return 4 * gpu + 3; }
inline std::uint32_t leaf_up_link(std::uint32_t num_gpus, std::uint32_t leaf) { return 4 * num_gpus + 2 * leaf; }
inline std::uint32_t leaf_down_link(std::uint32_t num_gpus, std::uint32_t leaf) { return 4 * num_gpus + 2 * leaf + 1; }

inline std::int64_t num_leaf_groups(const ClusterSpec& spec) {
  return (spec.nodes + spec.nodes_per_leaf - 1) / spec.nodes_per_leaf;
}
inline std::int64_t num_leaves(const ClusterSpec& spec) { return num_leaf_groups(spec) * spec.gpus_per_node; }

}  // namespace trainsim::hardware::detail
