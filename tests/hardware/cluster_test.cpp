#include "hardware/cluster.hpp"

#include "hardware/gpu_profile.hpp"
#include "hardware/node_presets.hpp"
#include "hardware/topology_graph.hpp"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim::hardware {
namespace {

Cluster make_cluster(const std::string& preset, std::int64_t nodes, std::int64_t nodes_per_leaf = 32,
                     double oversubscription = 1.0) {
  const auto node = *find_node_preset(preset);
  ClusterSpec spec;
  spec.gpu = node.gpu;
  spec.nodes = nodes;
  spec.gpus_per_node = node.gpus_per_node;
  spec.nic_gbps = node.nic_gbps;
  spec.oversubscription = oversubscription;
  spec.nodes_per_leaf = nodes_per_leaf;
  spec.node_layout = node.layout;
  return Cluster(spec, *find_profile(node.gpu));
}

std::vector<LinkKind> kinds(const Cluster& c, const std::vector<std::uint32_t>& route) {
  std::vector<LinkKind> out;
  for (auto l : route) out.push_back(c.links()[l].kind);
  return out;
}

std::vector<std::uint32_t> owners(const Cluster& c, const std::vector<std::uint32_t>& route) {
  std::vector<std::uint32_t> out;
  for (auto l : route) out.push_back(c.links()[l].owner);
  return out;
}

// 8 DGX H100 nodes under one leaf per rail. Per node (hardware/node_layout.cpp): NVLink 8
// each way, GPU PCIe 8 each way, PCIE_UP/DOWN 8 NIC slots + 8 switch uplinks + 8 drives
// each way, DRAM 2 each way, the socket link 1 each way: 86. Fabric: 64 NICs each way, 8
// leaves each way. 8 × 86 + 128 + 16 = 832.
TEST(Cluster, LinkCountsAndCapacities) {
  const Cluster c = make_cluster("dgx-h100", 8);
  EXPECT_EQ(c.num_gpus(), 64u);
  ASSERT_EQ(c.links().size(), 832u);
  std::map<LinkKind, int> count;
  for (const auto& l : c.links()) {
    ++count[l.kind];
    switch (l.kind) {
      case LinkKind::NVLINK_UP:
      case LinkKind::NVLINK_DOWN:
        EXPECT_DOUBLE_EQ(l.bytes_per_s, 370.8e9);
        EXPECT_DOUBLE_EQ(l.latency_s, 3.4e-6);
        break;
      case LinkKind::NIC_UP:
      case LinkKind::NIC_DOWN:
        EXPECT_DOUBLE_EQ(l.bytes_per_s, 400e9 / 8 * 0.94);  // 47 GB/s
        EXPECT_DOUBLE_EQ(l.latency_s, 14e-6);
        break;
      case LinkKind::LEAF_UP:
      case LinkKind::LEAF_DOWN:
        EXPECT_DOUBLE_EQ(l.bytes_per_s, 8 * 400e9 / 8 * 0.94);  // 8 NICs under each rail leaf
        break;
      case LinkKind::PCIE_D2H:
      case LinkKind::PCIE_H2D:
        EXPECT_DOUBLE_EQ(l.bytes_per_s, c.gpu().pcie_bytes_per_s().value());
        EXPECT_EQ(l.latency_s, 0.0);
        break;
      case LinkKind::PCIE_UP:
      case LinkKind::PCIE_DOWN:
        EXPECT_TRUE(l.bytes_per_s == 55e9 || l.bytes_per_s == 31.5e9 / 4) << l.bytes_per_s;  // x16 or an x4 drive
        EXPECT_EQ(l.latency_s, 0.0);
        break;
      case LinkKind::MEMORY: EXPECT_DOUBLE_EQ(l.bytes_per_s, 8 * 4800e6 * 8); break;
      case LinkKind::CPU_LINK: EXPECT_DOUBLE_EQ(l.bytes_per_s, 22e9); break;
    }
  }
  EXPECT_EQ(count[LinkKind::NVLINK_UP], 64);
  EXPECT_EQ(count[LinkKind::NVLINK_DOWN], 64);
  EXPECT_EQ(count[LinkKind::NIC_UP], 64);
  EXPECT_EQ(count[LinkKind::NIC_DOWN], 64);
  EXPECT_EQ(count[LinkKind::LEAF_UP], 8);
  EXPECT_EQ(count[LinkKind::LEAF_DOWN], 8);
  EXPECT_EQ(count[LinkKind::PCIE_D2H], 64);
  EXPECT_EQ(count[LinkKind::PCIE_H2D], 64);
  EXPECT_EQ(count[LinkKind::PCIE_UP], 8 * 24);
  EXPECT_EQ(count[LinkKind::MEMORY], 8 * 4);
  EXPECT_EQ(count[LinkKind::CPU_LINK], 8 * 2);
  // A GPU's copies to and from its host cross its own PCIe link, one per direction.
  EXPECT_EQ(c.links()[c.host_route(9, true).at(0)].kind, LinkKind::PCIE_D2H);
  EXPECT_EQ(c.links()[c.host_route(9, false).back()].owner, 9u);

  const auto net = c.network();
  ASSERT_EQ(net.capacity_bytes_per_s.size(), c.links().size());
  for (std::size_t i = 0; i < net.capacity_bytes_per_s.size(); ++i) {
    EXPECT_EQ(net.capacity_bytes_per_s[i], c.links()[i].bytes_per_s);
  }
}

TEST(Cluster, A100NicUsesHdrEfficiency) {
  const Cluster c = make_cluster("dgx-a100-80gb", 2);
  for (const auto& l : c.links()) {
    if (l.kind == LinkKind::NIC_UP) {
      EXPECT_DOUBLE_EQ(l.bytes_per_s, 200e9 / 8 * 0.96);  // 24 GB/s
    }
    if (l.kind == LinkKind::NVLINK_UP) {
      EXPECT_DOUBLE_EQ(l.bytes_per_s, 240e9);
    }
  }
}

// 5 nodes, 2 per leaf group: groups {0,1}, {2,3}, {4}; oversubscription 2 halves the uplinks
// and the partial last group has one NIC per leaf.
TEST(Cluster, LeavesFollowRailsAndGroups) {
  const Cluster c = make_cluster("dgx-h100", 5, /*nodes_per_leaf=*/2, /*oversubscription=*/2.0);
  const double nic = 47e9;
  EXPECT_EQ(c.leaf_of(0), 0u);
  EXPECT_EQ(c.leaf_of(3), 3u);
  EXPECT_EQ(c.leaf_of(8 + 3), 3u);       // node 1, rail 3: same leaf
  EXPECT_EQ(c.leaf_of(16 + 3), 8u + 3);  // node 2: second group
  EXPECT_EQ(c.leaf_of(32 + 7), 16u + 7);
  std::vector<double> up(24, 0.0);
  for (const auto& l : c.links()) {
    if (l.kind == LinkKind::LEAF_UP) up.at(l.owner) = l.bytes_per_s;
  }
  EXPECT_DOUBLE_EQ(up[0], 2 * nic / 2.0);
  EXPECT_DOUBLE_EQ(up[8 + 5], 2 * nic / 2.0);
  EXPECT_DOUBLE_EQ(up[16 + 5], 1 * nic / 2.0);
}

TEST(Cluster, RoutesForTheThreeCases) {
  const Cluster c = make_cluster("dgx-h100", 4, /*nodes_per_leaf=*/2);
  EXPECT_TRUE(c.route(5, 5).empty());

  // Same node: through the NVSwitch.
  auto r = c.route(1, 6);
  EXPECT_EQ(kinds(c, r), (std::vector<LinkKind>{LinkKind::NVLINK_UP, LinkKind::NVLINK_DOWN}));
  EXPECT_EQ(owners(c, r), (std::vector<std::uint32_t>{1, 6}));

  // Other node, same rail, same leaf group: GPU to its NIC over PCIe (GPUDirect RDMA), NIC
  // to NIC through the leaf, and up the other node's PCIe tree.
  r = c.route(2, 8 + 2);
  EXPECT_EQ(kinds(c, r), (std::vector<LinkKind>{LinkKind::PCIE_D2H, LinkKind::PCIE_DOWN, LinkKind::NIC_UP,
                                                LinkKind::NIC_DOWN, LinkKind::PCIE_UP, LinkKind::PCIE_H2D}));
  EXPECT_EQ(owners(c, r), (std::vector<std::uint32_t>{2, 2, 2, 10, 10, 10}));

  // Other rail: up to the spine and down.
  r = c.route(2, 8 + 3);
  EXPECT_EQ(kinds(c, r), (std::vector<LinkKind>{LinkKind::PCIE_D2H, LinkKind::PCIE_DOWN, LinkKind::NIC_UP,
                                                LinkKind::LEAF_UP, LinkKind::LEAF_DOWN, LinkKind::NIC_DOWN,
                                                LinkKind::PCIE_UP, LinkKind::PCIE_H2D}));
  EXPECT_EQ(owners(c, r), (std::vector<std::uint32_t>{2, 2, 2, 2, 3, 11, 11, 11}));

  // Same rail, other leaf group.
  r = c.route(2, 16 + 2);
  EXPECT_EQ(owners(c, r), (std::vector<std::uint32_t>{2, 2, 2, 2, 8 + 2, 18, 18, 18}));

  EXPECT_THROW((void)c.route(0, 32), std::out_of_range);
}

// Every route between every pair of GPUs is a connected path in the topology's Boost graph,
// from the source GPU's vertex to the destination's.
TEST(Cluster, EveryRouteIsAPathInTheTopologyGraph) {
  ClusterSpec spec;
  spec.gpu = "h100-sxm";
  spec.nodes = 5;
  spec.gpus_per_node = 4;
  spec.nic_gbps = 400;
  spec.nodes_per_leaf = 2;
  const Cluster c(spec, *find_profile("h100-sxm"));
  const Topology& topo = c.topology();
  // Generic layout, per node: 4 GPUs, 4 NICs, NVSwitch, CPU, DRAM, 4 PCIe switches = 15;
  // 5 nodes = 75; fabric: 3 groups × 4 rails of leaves + 1 spine = 13.
  EXPECT_EQ(boost::num_vertices(topo.graph().base()), 75u + 12 + 1);
  EXPECT_EQ(boost::num_edges(topo.graph().base()), c.links().size());
  int checked = 0;
  for (std::uint32_t s = 0; s < c.num_gpus(); ++s) {
    for (std::uint32_t d = 0; d < c.num_gpus(); ++d) {
      const auto r = c.route(s, d);
      EXPECT_TRUE(topo.is_path(s, d, r)) << s << " -> " << d;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 400);
  // The check does catch a broken route.
  auto r = c.route(0, 4 + 1);
  std::swap(r[1], r[2]);
  EXPECT_FALSE(topo.is_path(0, 5, r));
  EXPECT_FALSE(topo.is_path(0, 6, c.route(0, 5)));
}

void expect_invalid(ClusterSpec spec, const std::string& needle) {
  try {
    Cluster c(spec, *find_profile("h100-sxm"));
    ADD_FAILURE() << "expected std::invalid_argument mentioning " << needle;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Cluster, InvalidSpecsThrow) {
  ClusterSpec ok;
  ok.gpu = "h100-sxm";
  ok.nic_gbps = 400;
  EXPECT_NO_THROW(Cluster(ok, *find_profile("h100-sxm")));

  auto s = ok;
  s.nodes = 0;
  expect_invalid(s, "nodes must be >= 1");
  s = ok;
  s.gpus_per_node = -8;
  expect_invalid(s, "gpus_per_node must be >= 1");
  s = ok;
  s.nic_gbps = 0;
  expect_invalid(s, "nic_gbps must be > 0");
  s = ok;
  s.oversubscription = 0.5;
  expect_invalid(s, "oversubscription must be >= 1");
  s = ok;
  s.nodes_per_leaf = 0;
  expect_invalid(s, "nodes_per_leaf must be >= 1");
  s = ok;
  s.gpu = "a100-80gb";
  expect_invalid(s, "gpu is 'a100-80gb' but the profile given is 'h100-sxm'");
  s = ok;
  s.nodes = std::int64_t{1} << 40;
  expect_invalid(s, "exceeds the supported");

  s = ok;
  s.fabric_levels = 3;
  expect_invalid(s, "fabric_levels must be 2 for a rail-optimized fabric, got 3");
  s.fabric = FabricKind::FAT_TREE;
  EXPECT_NO_THROW(Cluster(s, *find_profile("h100-sxm")));
  s.fabric_levels = 4;
  expect_invalid(s, "fabric_levels must be 2 or 3 for a fat tree, got 4");
  s = ok;
  s.leaves_per_pod = 0;
  expect_invalid(s, "leaves_per_pod must be >= 1");
  s = ok;
  s.node_layout = "dgx-b200";
  expect_invalid(s, "node_layout 'dgx-b200' is unknown (known: dgx-a100, dgx-h100, or empty for generic)");
  s = ok;
  s.node_layout = "dgx-a100";
  s.gpus_per_node = 4;
  expect_invalid(s, "node layout dgx-a100 holds 8 GPUs per node, not 4");

  auto p = *find_profile("h100-sxm");
  p.mutable_nic_efficiency()->set_value(0);
  EXPECT_THROW(Cluster(ok, p), std::invalid_argument);
}

TEST(NodePresets, NamesValuesAndSources) {
  EXPECT_EQ(node_preset_names(), (std::vector<std::string>{"dgx-a100-80gb", "dgx-h100", "hgx-h200"}));
  EXPECT_FALSE(find_node_preset("dgx-b200").has_value());
  const auto a = *find_node_preset("dgx-a100-80gb");
  EXPECT_EQ(a.gpu, "a100-80gb");
  EXPECT_EQ(a.gpus_per_node, 8);
  EXPECT_EQ(a.nic_gbps, 200);
  const auto h = *find_node_preset("dgx-h100");
  EXPECT_EQ(h.gpu, "h100-sxm");
  EXPECT_EQ(h.nic_gbps, 400);
  const auto h2 = *find_node_preset("hgx-h200");
  EXPECT_EQ(h2.gpu, "h200");
  EXPECT_EQ(h2.nic_gbps, 400);
  for (const auto& name : node_preset_names()) {
    const auto p = *find_node_preset(name);
    EXPECT_EQ(p.name, name);
    EXPECT_NE(p.source.find("§3.3"), std::string::npos) << name;
    EXPECT_TRUE(find_profile(p.gpu).has_value()) << name;
    EXPECT_TRUE(find_node_layout(p.layout).has_value()) << name;
  }
}

}  // namespace
}  // namespace trainsim::hardware
