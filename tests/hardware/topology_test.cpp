// The topology interface: link, vertex and route counts of every implementation (node
// layouts, two- and three-level fat trees, rail-optimized), derived by hand in comments;
// the connectivity check; reroutes around failed links; and PCIe sharing inside a node
// under the flow solver that full fidelity runs.
#include "hardware/cluster.hpp"

#include "hardware/gpu_profile.hpp"
#include "hardware/node_presets.hpp"
#include "hardware/topology_graph.hpp"
#include "sim/flow_network.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim::hardware {
namespace {

ClusterSpec spec_of(const std::string& gpu, std::int64_t nodes, std::int64_t gpus_per_node, double nic_gbps) {
  ClusterSpec s;
  s.gpu = gpu;
  s.nodes = nodes;
  s.gpus_per_node = gpus_per_node;
  s.nic_gbps = nic_gbps;
  return s;
}

ClusterSpec preset(const std::string& name, std::int64_t nodes) {
  const auto p = *find_node_preset(name);
  ClusterSpec s = spec_of(p.gpu, nodes, p.gpus_per_node, p.nic_gbps);
  s.node_layout = p.layout;
  return s;
}

Cluster build(const ClusterSpec& s) { return Cluster(s, *find_profile(s.gpu)); }

std::map<VertexKind, int> vertex_counts(const Topology& t) {
  std::map<VertexKind, int> out;
  for (const auto& v : t.vertices()) ++out[v.kind];
  return out;
}

std::map<LinkKind, int> link_counts(const Topology& t) {
  std::map<LinkKind, int> out;
  for (const auto& l : t.links()) ++out[l.kind];
  return out;
}

// Every formula route is a walk in the graph and one of the graph's shortest paths (so a
// member of the ECMP set); checked for every ordered pair of GPUs.
void expect_routes_are_shortest_paths(const Cluster& c) {
  const Topology& t = c.topology();
  for (std::uint32_t s = 0; s < c.num_gpus(); ++s) {
    for (std::uint32_t d = 0; d < c.num_gpus(); ++d) {
      const auto r = c.route(s, d);
      ASSERT_TRUE(t.is_path(s, d, r)) << s << " -> " << d;
      if (s == d) continue;
      const auto set = c.routes(s, d);
      ASSERT_FALSE(set.empty());
      EXPECT_EQ(set.front().size(), r.size()) << s << " -> " << d;
      EXPECT_NE(std::find(set.begin(), set.end(), r), set.end()) << s << " -> " << d;
    }
  }
}

// ---------------------------------------------------------------------------------------
// Node layouts, one node on a rail-optimized fabric (8 leaves, one per rail, and the spine).

TEST(NodeLayout, DgxA100) {
  const Cluster c = build(preset("dgx-a100-80gb", 1));
  const Topology& t = c.topology();
  // 2 sockets × (CPU, DRAM, 2 PCIe switches, 2 NVMe); 8 GPUs, 8 NICs, 1 NVSwitch; 8 leaves + 1 spine.
  auto v = vertex_counts(t);
  EXPECT_EQ(v[VertexKind::GPU], 8);
  EXPECT_EQ(v[VertexKind::NIC], 8);
  EXPECT_EQ(v[VertexKind::NVSWITCH], 1);
  EXPECT_EQ(v[VertexKind::CPU_ROOT], 2);
  EXPECT_EQ(v[VertexKind::HOST_MEMORY], 2);
  EXPECT_EQ(v[VertexKind::PCIE_SWITCH], 4);
  EXPECT_EQ(v[VertexKind::NVME], 4);
  EXPECT_EQ(v[VertexKind::NET_SWITCH], 9);
  EXPECT_EQ(t.vertices().size(), 38u);
  // Directed links: NVLink 8 each way; GPU PCIe 8 each way; PCIE_UP/DOWN: 8 NIC slots + 4
  // switch uplinks + 4 drives, each way; DRAM 2 × 2; socket link 1 × 2; NIC cables 8 each
  // way; leaf uplinks 8 each way. 102 in all.
  auto l = link_counts(t);
  EXPECT_EQ(l[LinkKind::NVLINK_UP], 8);
  EXPECT_EQ(l[LinkKind::PCIE_D2H], 8);
  EXPECT_EQ(l[LinkKind::PCIE_H2D], 8);
  EXPECT_EQ(l[LinkKind::PCIE_UP], 16);
  EXPECT_EQ(l[LinkKind::PCIE_DOWN], 16);
  EXPECT_EQ(l[LinkKind::MEMORY], 4);
  EXPECT_EQ(l[LinkKind::CPU_LINK], 2);
  EXPECT_EQ(l[LinkKind::NIC_UP], 8);
  EXPECT_EQ(l[LinkKind::LEAF_UP], 8);
  EXPECT_EQ(t.links().size(), 102u);
  EXPECT_EQ(boost::num_edges(t.graph().base()), 102u);
  EXPECT_EQ(boost::num_vertices(t.graph().base()), 38u);
  // Routes: GPU to GPU over NVLink (2 links); GPU to host: its PCIe link, the switch
  // uplink, the DRAM (3). GPUs 0 and 1 share switch 0's uplink; GPU 2 is on switch 1.
  EXPECT_EQ(c.route(0, 5).size(), 2u);
  const auto h0 = c.host_route(0, true);
  const auto h1 = c.host_route(1, true);
  const auto h2 = c.host_route(2, true);
  ASSERT_EQ(h0.size(), 3u);
  EXPECT_EQ(h0[1], h1[1]);
  EXPECT_NE(h0[1], h2[1]);
  EXPECT_EQ(h0[2], h2[2]);  // GPUs 0-3 on socket 0
  EXPECT_NE(h0[2], c.host_route(4, true)[2]);
  EXPECT_EQ(t.links()[h0[1]].bytes_per_s, 25e9);  // Gen4 x16
  EXPECT_TRUE(t.is_path(0, c.node_topology().memory_vertex(0), h0));
  EXPECT_TRUE(t.is_path(c.node_topology().memory_vertex(0), 0, c.host_route(0, false)));
}

TEST(NodeLayout, DgxH100) {
  const Cluster c = build(preset("dgx-h100", 1));
  const Topology& t = c.topology();
  // 2 sockets × (CPU, DRAM, 4 PCIe switches, 4 NVMe) = 20; + 8 + 8 + 1 + 9 = 46.
  auto v = vertex_counts(t);
  EXPECT_EQ(v[VertexKind::PCIE_SWITCH], 8);
  EXPECT_EQ(v[VertexKind::NVME], 8);
  EXPECT_EQ(t.vertices().size(), 46u);
  // PCIE_UP: 8 NIC slots + 8 uplinks + 8 drives = 24 each way; with NVLink 16, GPU PCIe 16,
  // DRAM 4, socket 2, NIC 16, leaf 16: 48 + 16 + 16 + 4 + 2 + 16 + 16 = 118.
  auto l = link_counts(t);
  EXPECT_EQ(l[LinkKind::PCIE_UP], 24);
  EXPECT_EQ(t.links().size(), 118u);
  // One GPU per switch: no two GPUs share an uplink.
  EXPECT_NE(c.host_route(0, true)[1], c.host_route(1, true)[1]);
  EXPECT_EQ(t.links()[c.host_route(0, true)[1]].bytes_per_s, 55e9);  // Gen5 x16
  expect_routes_are_shortest_paths(c);
}

TEST(NodeLayout, GenericWithoutAPreset) {
  const Cluster c = build(spec_of("a100-80gb", 2, 4, 200));
  const Topology& t = c.topology();
  // Per node: 4 GPUs, 4 NICs, NVSwitch, 1 CPU, 1 DRAM, 4 PCIe switches = 15; × 2 = 30;
  // fabric: 1 leaf group × 4 rails + spine = 5. 35 vertices.
  EXPECT_EQ(t.vertices().size(), 35u);
  // Per node, duplex: 4 NVLink, 4 GPU PCIe, 4 NIC slots, 4 uplinks, 1 DRAM = 17; × 2 = 34;
  // fabric: 8 NIC cables + 4 leaf uplinks = 12. 46 duplex = 92 links.
  EXPECT_EQ(t.links().size(), 92u);
  // Across nodes on one rail: GPU -> switch -> NIC -> leaf -> NIC -> switch -> GPU.
  const auto r = c.route(1, 5);
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(t.links()[r[0]].kind, LinkKind::PCIE_D2H);
  EXPECT_EQ(t.links()[r[1]].kind, LinkKind::PCIE_DOWN);
  EXPECT_EQ(t.links()[r[2]].kind, LinkKind::NIC_UP);
  EXPECT_EQ(t.links()[r[3]].kind, LinkKind::NIC_DOWN);
  EXPECT_EQ(t.links()[r[4]].kind, LinkKind::PCIE_UP);
  EXPECT_EQ(t.links()[r[5]].kind, LinkKind::PCIE_H2D);
  // Other rail: through the spine, 8 links.
  EXPECT_EQ(c.route(1, 6).size(), 8u);
  expect_routes_are_shortest_paths(c);
}

// ---------------------------------------------------------------------------------------
// Rail-optimized: 4 nodes of 8 H100s, 2 nodes per leaf, so 2 groups × 8 rails = 16 leaves.

TEST(RailOptimized, CountsAndOversubscription) {
  for (const double o : {1.0, 2.0, 4.0}) {
    ClusterSpec s = preset("dgx-h100", 4);
    s.nodes_per_leaf = 2;
    s.oversubscription = o;
    const Cluster c = build(s);
    const Topology& t = c.topology();
    // Per node: 8 GPUs + 8 NICs + NVSwitch + 20 socket vertices = 37; fabric 16 leaves + 1 spine.
    EXPECT_EQ(t.vertices().size(), 4u * 37 + 17);
    auto l = link_counts(t);
    EXPECT_EQ(l[LinkKind::NIC_UP], 32);
    EXPECT_EQ(l[LinkKind::LEAF_UP], 16);
    // A leaf carries 2 NICs of 0.94 × 50 GB/s up, divided by the oversubscription.
    for (const auto& link : t.links()) {
      if (link.kind == LinkKind::LEAF_UP) {
        EXPECT_DOUBLE_EQ(link.bytes_per_s, 2 * 47e9 / o);
      }
    }
    // Same rail, same group: 6 links; same rail, other group, or other rail: 8 (spine).
    EXPECT_EQ(c.route(3, 8 + 3).size(), 6u);
    EXPECT_EQ(c.route(3, 16 + 3).size(), 8u);
    EXPECT_EQ(c.route(3, 8 + 4).size(), 8u);
    // One spine vertex: one shortest path through the fabric for a same-rail pair.
    EXPECT_EQ(c.routes(3, 16 + 3).size(), 1u);
    EXPECT_EQ(c.leaf_of(16 + 3), 8u + 3);
  }
}

// ---------------------------------------------------------------------------------------
// Fat trees on the generic layout (one GPU and its NIC per PCIe switch): 4 GPUs per node,
// 2 nodes per leaf, so d = 8 NICs per leaf and u = ceil(8 / o) uplinks per leaf.

TEST(FatTree, TwoLevelsCountsAndEcmp) {
  for (const double o : {1.0, 2.0, 4.0}) {
    ClusterSpec s = spec_of("h100-sxm", 8, 4, 400);
    s.fabric = FabricKind::FAT_TREE;
    s.nodes_per_leaf = 2;
    s.oversubscription = o;
    const Cluster c = build(s);
    const Topology& t = c.topology();
    const int u = static_cast<int>(8 / o);  // 8, 4, 2 spines
    // 32 NICs on 4 leaves; every leaf has one link to every spine.
    auto v = vertex_counts(t);
    EXPECT_EQ(v[VertexKind::NET_SWITCH], 4 + u);
    auto l = link_counts(t);
    EXPECT_EQ(l[LinkKind::NIC_UP], 32);
    EXPECT_EQ(l[LinkKind::LEAF_UP], 4 * u);
    EXPECT_EQ(l[LinkKind::LEAF_DOWN], 4 * u);
    // Up-bandwidth of a leaf: u ports of one NIC's rate, o times less than its 8 NICs down.
    double leaf0_up = 0;
    for (const auto& link : t.links()) {
      if (link.kind == LinkKind::LEAF_UP && t.vertex_name(link.from) == "leaf0") leaf0_up += link.bytes_per_s;
    }
    EXPECT_NEAR(leaf0_up, 8 * 47e9 / o, 1.0);
    // Same leaf (nodes 0 and 1): 6 links, one path. Other leaf: 8 links, u paths.
    EXPECT_EQ(c.route(0, 4).size(), 6u);
    EXPECT_EQ(c.routes(0, 4).size(), 1u);
    EXPECT_EQ(c.route(0, 8).size(), 8u);
    EXPECT_EQ(c.routes(0, 8).size(), static_cast<std::size_t>(u));
    expect_routes_are_shortest_paths(c);
  }
}

TEST(FatTree, ThreeLevelsCountsAndEcmp) {
  for (const double o : {1.0, 2.0, 4.0}) {
    // 16 nodes × 4 = 64 NICs on 8 leaves; 2 leaves per pod, so 4 pods.
    ClusterSpec s = spec_of("h100-sxm", 16, 4, 400);
    s.fabric = FabricKind::FAT_TREE;
    s.fabric_levels = 3;
    s.nodes_per_leaf = 2;
    s.leaves_per_pod = 2;
    s.oversubscription = o;
    const Cluster c = build(s);
    const Topology& t = c.topology();
    const int u = static_cast<int>(8 / o);  // aggregation switches per pod: 8, 4, 2
    // Switches: 8 leaves, 4u aggregation, u × 2 core.
    auto v = vertex_counts(t);
    EXPECT_EQ(v[VertexKind::NET_SWITCH], 8 + 4 * u + 2 * u);
    // Links up: leaf -> aggregation 8 × u; aggregation -> core 4u × 2.
    auto l = link_counts(t);
    EXPECT_EQ(l[LinkKind::NIC_UP], 64);
    EXPECT_EQ(l[LinkKind::LEAF_UP], 8 * u + 4 * u * 2);
    // Same leaf: 6 links. Same pod (leaves 0 and 1: nodes 0-1 and 2-3): 8 links, u paths.
    // Other pod (node 4 is on leaf 2, pod 1): 10 links, u × 2 paths (a plane's cores).
    EXPECT_EQ(c.route(0, 4).size(), 6u);
    EXPECT_EQ(c.route(0, 8).size(), 8u);
    EXPECT_EQ(c.routes(0, 8).size(), static_cast<std::size_t>(u));
    EXPECT_EQ(c.route(0, 16).size(), 10u);
    EXPECT_EQ(c.routes(0, 16).size(), static_cast<std::size_t>(u * 2));
    expect_routes_are_shortest_paths(c);
  }
}

// ---------------------------------------------------------------------------------------
// Connectivity and faults.

TEST(Topology, DisconnectedTopologyIsRejectedNamingThePair) {
  Topology t;
  const auto a = t.add_vertex(VertexKind::GPU, 0, 0);
  const auto b = t.add_vertex(VertexKind::NVSWITCH, 0, 0);
  t.add_vertex(VertexKind::GPU, 0, 1);  // no links
  t.add_duplex(a, b, LinkKind::NVLINK_UP, LinkKind::NVLINK_DOWN, 1e9, 0, 0);
  try {
    t.finish();
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "topology is disconnected: no path from gpu0 to gpu1 (a vertex without links)");
  }
}

TEST(Topology, FaultsThatIsolateAGpuAreRejected) {
  ClusterSpec s = spec_of("h100-sxm", 2, 2, 400);
  // GPU 0 has two cables, its NVLink and its PCIe link: failing both cuts it off.
  s.link_faults = {{"gpu0", "node0.nvswitch", 0}, {"gpu0", "node0.pcie0", 0}};
  try {
    build(s);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cluster spec: topology is disconnected: no path from gpu0 to gpu1 once the "
                                         "failed links are removed"),
              std::string::npos)
        << e.what();
  }
}

TEST(Topology, UnknownNameOrUnjoinedPairIsAnError) {
  ClusterSpec s = spec_of("h100-sxm", 2, 2, 400);
  s.link_faults = {{"leaf7", "spine0", 0}};
  EXPECT_THROW(build(s), std::invalid_argument);
  s.link_faults = {{"gpu0", "leaf0", 0}};
  try {
    build(s);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "cluster spec: link fault: no link joins gpu0 and leaf0");
  }
}

TEST(Topology, FailedSpineLinkReroutesThroughAnotherSpine) {
  ClusterSpec s = spec_of("h100-sxm", 8, 4, 400);
  s.fabric = FabricKind::FAT_TREE;
  s.nodes_per_leaf = 2;
  const Cluster healthy = build(s);
  // GPU 0 (leaf 0) to GPU 8 (leaf 1): the formula picks spine (0 + 8) mod 8 = 0.
  const auto before = healthy.route(0, 8);
  const Topology& ht = healthy.topology();
  EXPECT_EQ(ht.vertex_name(ht.links()[before[3]].to), "spine0");
  s.link_faults = {{"leaf0", "spine0", 0}};
  const Cluster c = build(s);
  const Topology& t = c.topology();
  const auto after = c.route(0, 8);
  EXPECT_TRUE(t.is_path(0, 8, after));
  EXPECT_EQ(after.size(), before.size());  // another spine: as short
  for (const auto l : after) EXPECT_FALSE(t.failed(l));
  EXPECT_NE(t.vertex_name(t.links()[after[3]].to), "spine0");
  EXPECT_EQ(c.routes(0, 8).size(), 7u);  // 8 spines less the failed one
  // A route the fault does not touch keeps its formula.
  EXPECT_EQ(c.route(0, 4), healthy.route(0, 4));
  // Every pair still routes on a path without failed links.
  for (std::uint32_t a = 0; a < c.num_gpus(); ++a) {
    for (std::uint32_t b = 0; b < c.num_gpus(); ++b) {
      const auto r = c.route(a, b);
      ASSERT_TRUE(t.is_path(a, b, r));
      for (const auto l : r) ASSERT_FALSE(t.failed(l));
    }
  }
}

TEST(Topology, FailedNicCableReroutesThroughAnotherRail) {
  // Rail-optimized, 2 nodes of 4: GPU 0's NIC cable fails; its traffic to node 1 leaves
  // over NVLink to a GPU of the node and that GPU's NIC.
  ClusterSpec s = spec_of("h100-sxm", 2, 4, 400);
  s.link_faults = {{"nic0", "leaf0", 0}};
  const Cluster c = build(s);
  const auto r = c.route(0, 4);
  EXPECT_TRUE(c.topology().is_path(0, 4, r));
  EXPECT_EQ(c.topology().links()[r[0]].kind, LinkKind::NVLINK_UP);
  for (const auto l : r) EXPECT_FALSE(c.topology().failed(l));
}

// ---------------------------------------------------------------------------------------
// Flows on the node topology, with the solver full fidelity runs (max-min fairness).

double rate_alone(const Cluster& c, const std::vector<std::uint32_t>& route) {
  sim::FlowNetwork net(c.network().capacity_bytes_per_s);
  return net.rate(net.start(sim::Time::zero(), route, 1e9, 0));
}

std::vector<double> rates_together(const Cluster& c, const std::vector<std::vector<std::uint32_t>>& routes) {
  sim::FlowNetwork net(c.network().capacity_bytes_per_s);
  std::vector<sim::FlowId> ids;
  for (std::uint32_t i = 0; i < routes.size(); ++i) ids.push_back(net.add_flow(sim::Time::zero(), routes[i], 1e9, i));
  net.solve(sim::Time::zero());
  std::vector<double> out;
  for (const auto f : ids) out.push_back(net.rate(f));
  return out;
}

TEST(PcieSharing, TwoGpusCopyingToHostThroughOneSwitchUplinkGetHalfEach) {
  // DGX A100: GPUs 0 and 1 sit on PCIe switch 0, whose Gen4 x16 uplink (25 GB/s) is the
  // only way to the CPU. Alone a copy runs at 25 GB/s (its own link and the uplink are
  // both 25); together each gets 12.5.
  const Cluster c = build(preset("dgx-a100-80gb", 1));
  EXPECT_DOUBLE_EQ(rate_alone(c, c.host_route(0, true)), 25e9);
  const auto both = rates_together(c, {c.host_route(0, true), c.host_route(1, true)});
  EXPECT_DOUBLE_EQ(both[0], 12.5e9);
  EXPECT_DOUBLE_EQ(both[1], 12.5e9);
  // GPU 2 is on switch 1: it does not share, and copies back to the GPU go the other way.
  const auto other = rates_together(c, {c.host_route(0, true), c.host_route(2, true), c.host_route(1, false)});
  EXPECT_DOUBLE_EQ(other[0], 25e9);
  EXPECT_DOUBLE_EQ(other[1], 25e9);
  EXPECT_DOUBLE_EQ(other[2], 25e9);
  // The closed form fast fidelity uses: every GPU of the node copies at once, two per uplink.
  EXPECT_DOUBLE_EQ(c.host_copy_seconds(0, true, 25e9), 2.0);
  // DGX H100: one GPU per switch, nothing shared on the way to the socket's DRAM.
  const Cluster h = build(preset("dgx-h100", 1));
  // Each copy runs at its GPU's own pinned rate (54.18 GB/s measured), below the switch's
  // 55 GB/s Gen5 x16 uplink.
  const double gpu_link = h.gpu().pcie_bytes_per_s().value();
  EXPECT_LT(gpu_link, 55e9);
  const auto apart = rates_together(h, {h.host_route(0, true), h.host_route(1, true)});
  EXPECT_DOUBLE_EQ(apart[0], gpu_link);
  EXPECT_DOUBLE_EQ(apart[1], gpu_link);
  EXPECT_DOUBLE_EQ(h.host_copy_seconds(0, true, gpu_link), 1.0);
}

TEST(PcieSharing, NicTrafficAndAnOffloadCopyOnOneSwitchShareIt) {
  const Cluster c = build(preset("dgx-a100-80gb", 2));
  // GPU 0 sends to GPU 8 on the other node (GPUDirect RDMA: GPU 0 -> switch -> NIC 0) while
  // it copies to host (GPU 0 -> switch -> uplink): both leave through GPU 0's 25 GB/s PCIe
  // link, 12.5 GB/s each (the NIC's 0.96 × 25 = 24 GB/s does not bind).
  const auto send = c.route(0, 8);
  EXPECT_DOUBLE_EQ(rate_alone(c, send), 24e9);
  auto r = rates_together(c, {send, c.host_route(0, true)});
  EXPECT_DOUBLE_EQ(r[0], 12.5e9);
  EXPECT_DOUBLE_EQ(r[1], 12.5e9);
  // NIC 1 writing received data to host memory (its slot, switch 0's uplink, DRAM) and GPU
  // 0's offload copy share switch 0's uplink: 12.5 GB/s each.
  const auto nic_to_host = c.node_topology().nic_host_route(1, true);
  EXPECT_TRUE(c.topology().is_path(c.node_topology().nic_vertex(1), c.node_topology().memory_vertex(1), nic_to_host));
  r = rates_together(c, {nic_to_host, c.host_route(0, true)});
  EXPECT_DOUBLE_EQ(r[0], 12.5e9);
  EXPECT_DOUBLE_EQ(r[1], 12.5e9);
  // On the other switch, no sharing.
  r = rates_together(c, {c.node_topology().nic_host_route(2, true), c.host_route(0, true)});
  EXPECT_DOUBLE_EQ(r[0], 25e9);
  EXPECT_DOUBLE_EQ(r[1], 25e9);
}

TEST(PcieSharing, DegradedLinkSlowsTheFlowsOnIt) {
  ClusterSpec s = preset("dgx-h100", 2);
  const Cluster healthy = build(s);
  // A NIC cable at half rate: GPU 0's traffic to node 1 drops from 47 to 23.5 GB/s; GPU 1's
  // does not change.
  s.link_faults = {{"nic0", "leaf0", 0.5}};
  const Cluster c = build(s);
  EXPECT_DOUBLE_EQ(rate_alone(healthy, healthy.route(0, 8)), 47e9);
  EXPECT_DOUBLE_EQ(rate_alone(c, c.route(0, 8)), 23.5e9);
  EXPECT_EQ(c.route(0, 8), healthy.route(0, 8));  // degraded, not failed: same path
  EXPECT_DOUBLE_EQ(rate_alone(c, c.route(1, 9)), 47e9);
  // A degraded switch uplink slows host copies under it.
  s.link_faults = {{"node0.pcie0", "node0.cpu0", 0.25}};
  const Cluster slow = build(s);
  EXPECT_DOUBLE_EQ(rate_alone(slow, slow.host_route(0, true)), 55e9 * 0.25);
}

}  // namespace
}  // namespace trainsim::hardware
