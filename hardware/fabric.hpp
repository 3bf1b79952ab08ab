#pragma once
// The scale-out fabric: the switches and links that join the nodes' NICs. Each kind is one
// file (hardware/fabric_<kind>.cpp) that builds its part of the Topology and routes
// between two NICs by formula; make_fabric below is the one place that lists the kinds.
// Adding a kind (dragonfly, torus) is one file and one line there.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hardware/topology.hpp"

namespace trainsim::hardware {

enum class FabricKind : std::uint8_t { RAIL_OPTIMIZED, FAT_TREE };

struct FabricSpec {
  FabricKind kind = FabricKind::RAIL_OPTIMIZED;
  std::int64_t levels = 2;            // switch levels; rail-optimized: 2; fat tree: 2 or 3
  double oversubscription = 1.0;      // leaf down-bandwidth / leaf up-bandwidth
  std::int64_t nodes_per_leaf = 32;   // rail-optimized: one leaf per rail per this many nodes;
                                      // fat tree: every NIC of this many nodes on one leaf
  std::int64_t leaves_per_pod = 8;    // three-level fat tree: leaves under one pod's aggregation switches
};

// What a fabric joins: NIC k (k = node × rails + rail) is vertex first_nic_vertex + k.
struct FabricInput {
  std::uint32_t nodes = 0;
  std::uint32_t rails = 0;  // NICs per node
  std::uint32_t first_nic_vertex = 0;
  double nic_bytes_per_s = 0;
  double latency_s = 0;
};

class Fabric {
 public:
  virtual ~Fabric() = default;
  // Adds the fabric's switches and links (the NICs' own links to their switch included).
  virtual void build(Topology& t, const FabricInput& in, const FabricSpec& spec) = 0;
  // Appends the links from NIC src to NIC dst (src != dst): one path of the ECMP set, the
  // same one for the same pair every time.
  virtual void route(std::uint32_t src_nic, std::uint32_t dst_nic, std::vector<std::uint32_t>& out) const = 0;
  // The switch a NIC is cabled to (its leaf): NICs on one leaf are one hop apart.
  virtual std::uint32_t leaf_of(std::uint32_t nic) const = 0;
};

std::unique_ptr<Fabric> make_fabric(FabricKind kind);
std::string fabric_kind_name(FabricKind kind);  // "rail-optimized", "fat-tree"

}  // namespace trainsim::hardware
