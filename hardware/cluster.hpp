#pragma once
// A cluster: nodes (an NVSwitch domain and a PCIe tree each, hardware/node_topology.hpp)
// whose NICs, one per GPU, are joined by a fabric (hardware/fabric.hpp). The Cluster holds
// their one Topology and answers routes: by formula on the regular structure, through
// the topology's graph when a scenario fails a link on the formula's path.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hardware/fabric.hpp"
#include "hardware/node_topology.hpp"
#include "hardware/profile.pb.h"
#include "hardware/topology.hpp"
#include "sim/plan.hpp"

namespace trainsim::hardware {

struct ClusterSpec {
  std::string gpu;               // profile name
  std::int64_t nodes = 1;
  std::int64_t gpus_per_node = 8;
  double nic_gbps = 200;         // line rate of each GPU's NIC, Gb/s
  double oversubscription = 1.0; // leaf down-bandwidth / leaf up-bandwidth
  std::int64_t nodes_per_leaf = 32;  // rail-optimized: one leaf per rail per this many nodes
  FabricKind fabric = FabricKind::RAIL_OPTIMIZED;
  std::int64_t fabric_levels = 2;    // fat tree: 2 or 3; rail-optimized: 2
  std::int64_t leaves_per_pod = 8;   // three-level fat tree
  std::string node_layout;           // hardware/node_layout.cpp; empty: the generic layout
  std::vector<LinkFault> link_faults;
  bool operator==(const ClusterSpec&) const = default;
};

class Cluster {
 public:
  Cluster(ClusterSpec spec, GpuProfile gpu);

  const ClusterSpec& spec() const { return spec_; }
  const GpuProfile& gpu() const { return gpu_; }
  std::uint32_t num_gpus() const { return static_cast<std::uint32_t>(spec_.nodes * spec_.gpus_per_node); }
  std::uint32_t node_of(std::uint32_t gpu) const { return gpu / static_cast<std::uint32_t>(spec_.gpus_per_node); }
  std::uint32_t leaf_of(std::uint32_t gpu) const { return fabric_->leaf_of(gpu); }

  const Topology& topology() const { return *topology_; }
  const NodeTopology& node_topology() const { return *nodes_; }
  const std::vector<Link>& links() const { return topology_->links(); }
  // Directed link ids a message from GPU src to GPU dst crosses (empty when src == dst):
  // NVLink inside a node; else the GPU's PCIe link to its NIC, the fabric, and down again.
  std::vector<std::uint32_t> route(std::uint32_t src, std::uint32_t dst) const;
  // Every shortest path from GPU src to GPU dst (the ECMP set), from the graph.
  std::vector<std::vector<std::uint32_t>> routes(std::uint32_t src, std::uint32_t dst) const;
  // The links a copy between a GPU and its socket's memory crosses: its PCIe link, its
  // PCIe switch's uplink, the DRAM.
  std::vector<std::uint32_t> host_route(std::uint32_t gpu, bool to_host) const;
  // Seconds for a copy of `bytes` when every GPU of the node copies the same way at once
  // (a symmetric program's closed form): each link of the route shared by the GPUs whose
  // host routes cross it.
  double host_copy_seconds(std::uint32_t gpu, bool to_host, double bytes) const;
  sim::NetworkSpec network() const;
  // Distinct per constructed cluster (copies share it: the same links), so that what depends
  // only on the cluster can be cached across the variants of a sweep.
  std::uint64_t id() const { return id_; }

 private:
  std::uint32_t check_gpu(std::uint32_t gpu, const char* what) const;

  ClusterSpec spec_;
  GpuProfile gpu_;
  std::uint64_t id_ = 0;
  // Shared, immutable once built: copies of a Cluster are cheap.
  std::shared_ptr<Topology> topology_;
  std::shared_ptr<NodeTopology> nodes_;
  std::shared_ptr<Fabric> fabric_;
  std::shared_ptr<std::vector<std::uint32_t>> host_sharers_;  // per link: GPUs whose host routes cross it
};

}  // namespace trainsim::hardware
