#pragma once
// A cluster: nodes of GPUs joined by an NVSwitch (scale-up), one NIC per GPU on a
// rail-optimized two-level fat tree (scale-out). Links are directed; routes between GPUs
// are computed algorithmically from the regular structure.
#include <cstdint>
#include <string>
#include <vector>

#include "hardware/profile.pb.h"
#include "sim/plan.hpp"

namespace trainsim::hardware {

struct ClusterSpec {
  std::string gpu;               // profile name
  std::int64_t nodes = 1;
  std::int64_t gpus_per_node = 8;
  double nic_gbps = 200;         // line rate of each GPU's NIC, Gb/s
  double oversubscription = 1.0; // leaf down-bandwidth / leaf up-bandwidth
  std::int64_t nodes_per_leaf = 32;  // one leaf per rail per this many nodes
  bool operator==(const ClusterSpec&) const = default;
};

enum class LinkKind : std::uint8_t { NVLINK_UP, NVLINK_DOWN, NIC_UP, NIC_DOWN, LEAF_UP, LEAF_DOWN, PCIE_D2H, PCIE_H2D };

struct Link {
  LinkKind kind;
  double bytes_per_s = 0;
  double latency_s = 0;
  std::uint32_t owner = 0;  // GPU index for NVLINK/NIC links, leaf index for LEAF links
};

class Cluster {
 public:
  Cluster(ClusterSpec spec, GpuProfile gpu);

  const ClusterSpec& spec() const { return spec_; }
  const GpuProfile& gpu() const { return gpu_; }
  std::uint32_t num_gpus() const { return static_cast<std::uint32_t>(spec_.nodes * spec_.gpus_per_node); }
  std::uint32_t node_of(std::uint32_t gpu) const { return gpu / static_cast<std::uint32_t>(spec_.gpus_per_node); }
  std::uint32_t leaf_of(std::uint32_t gpu) const;

  const std::vector<Link>& links() const { return links_; }
  // Directed link ids a message from src to dst crosses (empty when src == dst).
  std::vector<std::uint32_t> route(std::uint32_t src, std::uint32_t dst) const;
  // The links a copy between a GPU and its host's memory crosses (its PCIe link, one per
  // direction, at the profile's pinned-copy bandwidth).
  std::vector<std::uint32_t> host_route(std::uint32_t gpu, bool to_host) const;
  sim::NetworkSpec network() const;
  // Distinct per constructed cluster (copies share it: the same links), so that what depends
  // only on the cluster can be cached across the variants of a sweep.
  std::uint64_t id() const { return id_; }

 private:
  ClusterSpec spec_;
  GpuProfile gpu_;
  std::uint64_t id_ = 0;
  std::vector<Link> links_;
  std::uint32_t num_leaves_ = 0;
};

}  // namespace trainsim::hardware
