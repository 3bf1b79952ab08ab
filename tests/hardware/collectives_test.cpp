#include "hardware/collectives.hpp"

#include "hardware/detail/collective_flows.hpp"
#include "hardware/gpu_profile.hpp"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim::hardware {
namespace {

Cluster h100_cluster(std::int64_t nodes, std::int64_t gpus_per_node = 8, std::int64_t nodes_per_leaf = 32,
                     double oversubscription = 1.0) {
  ClusterSpec spec;
  spec.gpu = "h100-sxm";
  spec.nodes = nodes;
  spec.gpus_per_node = gpus_per_node;
  spec.nic_gbps = 400;
  spec.nodes_per_leaf = nodes_per_leaf;
  spec.oversubscription = oversubscription;
  return Cluster(spec, *find_profile("h100-sxm"));
}

// Bytes per unit of S that the pattern puts on each link.
std::map<std::uint32_t, double> link_loads(const sim::CommPattern& p) {
  std::map<std::uint32_t, double> load;
  for (const auto& f : p.flows) {
    for (auto i = f.route_begin; i < f.route_end; ++i) load[p.route_links[i]] += f.bytes_per_unit;
  }
  return load;
}

// Load per link kind: every used link of a kind must carry the same load (symmetric
// groups); returns that load and how many links of the kind are used.
struct KindLoad {
  double load = 0;
  int links = 0;
};
std::map<LinkKind, KindLoad> loads_by_kind(const Cluster& c, const sim::CommPattern& p) {
  std::map<LinkKind, KindLoad> out;
  for (const auto& [link, load] : link_loads(p)) {
    auto& k = out[c.links()[link].kind];
    if (k.links > 0) {
      EXPECT_NEAR(k.load, load, 1e-12) << "link " << link;
    }
    k.load = load;
    ++k.links;
  }
  return out;
}

std::vector<std::uint32_t> iota(std::uint32_t n, std::uint32_t first = 0, std::uint32_t stride = 1) {
  std::vector<std::uint32_t> v(n);
  for (std::uint32_t i = 0; i < n; ++i) v[i] = first + i * stride;
  return v;
}

TEST(Collectives, Names) {
  EXPECT_STREQ(to_string(Collective::ALL_REDUCE), "all-reduce");
  EXPECT_STREQ(to_string(Collective::REDUCE_SCATTER), "reduce-scatter");
  EXPECT_STREQ(to_string(Collective::ALL_GATHER), "all-gather");
  EXPECT_STREQ(to_string(Collective::SEND_RECV), "send-recv");
}

// 8 GPUs of one node: 8 flows i -> i+1, each NVLink up and down link carries one flow of
// factor·S; latency = NCCL's Ring/Simple base 8.4 µs + steps × 3.4 µs (NVLink).
TEST(Collectives, RingInOneNode) {
  const Cluster c = h100_cluster(2);
  const auto ranks = iota(8);
  struct Case {
    Collective coll;
    const char* name;
    double factor;
    int steps;
  };
  for (const Case k : {Case{Collective::ALL_REDUCE, "ring/Simple-all-reduce[8]", 2.0 * 7 / 8, 14},
                       Case{Collective::REDUCE_SCATTER, "ring/Simple-reduce-scatter[8]", 7.0 / 8, 7},
                       Case{Collective::ALL_GATHER, "ring/Simple-all-gather[8]", 7.0 / 8, 7}}) {
    SCOPED_TRACE(k.name);
    const auto p = ring_pattern(c, k.coll, ranks);
    EXPECT_EQ(p.name, k.name);
    ASSERT_EQ(p.flows.size(), 8u);
    for (const auto& f : p.flows) EXPECT_DOUBLE_EQ(f.bytes_per_unit, k.factor);
    const auto by_kind = loads_by_kind(c, p);
    ASSERT_EQ(by_kind.size(), 2u);
    EXPECT_EQ(by_kind.at(LinkKind::NVLINK_UP).links, 8);
    EXPECT_DOUBLE_EQ(by_kind.at(LinkKind::NVLINK_UP).load, k.factor);
    EXPECT_EQ(by_kind.at(LinkKind::NVLINK_DOWN).links, 8);
    EXPECT_DOUBLE_EQ(by_kind.at(LinkKind::NVLINK_DOWN).load, k.factor);
    EXPECT_EQ(p.latency, sim::Time::from_seconds((8.4 + k.steps * 3.4) * 1e-6));
  }
}

// One GPU per node on 8 nodes (rail 0 of each): the ring runs NIC to NIC under one leaf.
// Every step crosses the network: 8.4 + steps × 14 µs (one GPU per node: NET Tree/Simple).
TEST(Collectives, RingAcrossNodesOneGpuEach) {
  const Cluster c = h100_cluster(8);
  const auto ranks = iota(8, 0, 8);
  const auto p = ring_pattern(c, Collective::ALL_REDUCE, ranks);
  EXPECT_EQ(p.name, "ring/Simple-all-reduce[8]");
  ASSERT_EQ(p.flows.size(), 8u);
  const auto by_kind = loads_by_kind(c, p);
  // The NICs, and on the way to and from them each GPU's PCIe link and its NIC's slot.
  ASSERT_EQ(by_kind.size(), 6u);
  EXPECT_EQ(by_kind.at(LinkKind::NIC_UP).links, 8);
  EXPECT_DOUBLE_EQ(by_kind.at(LinkKind::NIC_UP).load, 1.75);
  EXPECT_DOUBLE_EQ(by_kind.at(LinkKind::NIC_DOWN).load, 1.75);
  for (const LinkKind k : {LinkKind::PCIE_D2H, LinkKind::PCIE_DOWN, LinkKind::PCIE_UP, LinkKind::PCIE_H2D}) {
    EXPECT_EQ(by_kind.at(k).links, 8);
    EXPECT_DOUBLE_EQ(by_kind.at(k).load, 1.75);
  }
  EXPECT_EQ(p.latency, sim::Time::from_seconds((8.4 + 14 * 14.0) * 1e-6));

  const auto ag = ring_pattern(c, Collective::ALL_GATHER, ranks);
  EXPECT_DOUBLE_EQ(loads_by_kind(c, ag).at(LinkKind::NIC_UP).load, 7.0 / 8);
  EXPECT_EQ(ag.latency, sim::Time::from_seconds((8.4 + 7 * 14.0) * 1e-6));
}

// 4 GPUs on each of 4 nodes: 4 rings of 16 flows, each carrying factor·S/4. Every GPU sends
// once per ring; over the rings each NIC carries S·factor/4 each way and each NVLink the
// other 3/4; the rings stay on their rails (no spine traffic).
TEST(Collectives, FourRingsForFourGpusPerNode) {
  const Cluster c = h100_cluster(4);
  std::vector<std::uint32_t> ranks;
  for (std::uint32_t node = 0; node < 4; ++node) {
    for (std::uint32_t g = 0; g < 4; ++g) ranks.push_back(node * 8 + g);
  }
  for (const Collective coll : {Collective::ALL_REDUCE, Collective::REDUCE_SCATTER, Collective::ALL_GATHER}) {
    SCOPED_TRACE(to_string(coll));
    const double factor = coll == Collective::ALL_REDUCE ? 2.0 * 15 / 16 : 15.0 / 16;
    const auto p = ring_pattern(c, coll, ranks);
    EXPECT_NE(p.name.find("[16]"), std::string::npos) << p.name;
    ASSERT_EQ(p.flows.size(), 64u);
    std::map<std::uint32_t, int> sends;
    for (const auto& f : p.flows) {
      EXPECT_DOUBLE_EQ(f.bytes_per_unit, factor / 4);
      ++sends[c.links()[p.route_links[f.route_begin]].owner];
    }
    ASSERT_EQ(sends.size(), 16u);
    for (const auto& [gpu, n] : sends) EXPECT_EQ(n, 4) << gpu;
    const auto by_kind = loads_by_kind(c, p);
    // NVLink, NIC, and the GPU-NIC PCIe links each way; no LEAF links: rings stay on their rails.
    ASSERT_EQ(by_kind.size(), 8u);
    EXPECT_EQ(by_kind.count(LinkKind::LEAF_UP), 0u);
    EXPECT_EQ(by_kind.at(LinkKind::PCIE_D2H).links, 16);
    EXPECT_DOUBLE_EQ(by_kind.at(LinkKind::PCIE_D2H).load, factor / 4);
    EXPECT_EQ(by_kind.at(LinkKind::NIC_UP).links, 16);
    EXPECT_DOUBLE_EQ(by_kind.at(LinkKind::NIC_UP).load, factor / 4);
    EXPECT_EQ(by_kind.at(LinkKind::NIC_DOWN).links, 16);
    EXPECT_DOUBLE_EQ(by_kind.at(LinkKind::NIC_DOWN).load, factor / 4);
    EXPECT_EQ(by_kind.at(LinkKind::NVLINK_UP).links, 16);
    EXPECT_DOUBLE_EQ(by_kind.at(LinkKind::NVLINK_UP).load, 3 * factor / 4);
    EXPECT_DOUBLE_EQ(by_kind.at(LinkKind::NVLINK_DOWN).load, 3 * factor / 4);
  }
}

// An odd number of nodes still keeps every ring on its rails when k >= 3; with k = 2 one
// hop per ring has to change rails (documented in collectives.cpp).
TEST(Collectives, OddNodeCounts) {
  const Cluster c = h100_cluster(3);
  std::vector<std::uint32_t> three;
  std::vector<std::uint32_t> two;
  for (std::uint32_t node = 0; node < 3; ++node) {
    for (std::uint32_t g = 0; g < 3; ++g) three.push_back(node * 8 + g);
    two.push_back(node * 8);
    two.push_back(node * 8 + 4);
  }
  const auto p3 = ring_pattern(c, Collective::ALL_REDUCE, three);
  EXPECT_EQ(p3.flows.size(), 27u);
  const auto k3 = loads_by_kind(c, p3);
  EXPECT_EQ(k3.count(LinkKind::LEAF_UP), 0u);
  EXPECT_EQ(k3.at(LinkKind::NIC_UP).links, 9);

  const auto p2 = ring_pattern(c, Collective::ALL_REDUCE, two);
  EXPECT_EQ(p2.flows.size(), 12u);
  const auto l2 = link_loads(p2);
  int nic_up = 0;
  int leaf_up = 0;
  for (const auto& [link, load] : l2) {
    nic_up += c.links()[link].kind == LinkKind::NIC_UP;
    leaf_up += c.links()[link].kind == LinkKind::LEAF_UP;
  }
  EXPECT_EQ(nic_up, 6) << "each NIC still sends once";
  EXPECT_EQ(leaf_up, 2) << "one rail change per ring";
}

TEST(Collectives, SendRecvIsOneFlow) {
  const Cluster c = h100_cluster(2);
  auto p = ring_pattern(c, Collective::SEND_RECV, std::vector<std::uint32_t>{3, 11});
  EXPECT_EQ(p.name, "send-recv[3->11]");
  ASSERT_EQ(p.flows.size(), 1u);
  EXPECT_DOUBLE_EQ(p.flows[0].bytes_per_unit, 1.0);
  EXPECT_EQ(std::vector<std::uint32_t>(p.route_links.begin(), p.route_links.end()), c.route(3, 11));
  EXPECT_EQ(p.latency, sim::Time::from_seconds(14e-6));
  p = ring_pattern(c, Collective::SEND_RECV, std::vector<std::uint32_t>{3, 5});
  EXPECT_EQ(p.latency, sim::Time::from_seconds(3.4e-6));
  EXPECT_DOUBLE_EQ(closed_form_seconds(c, Collective::SEND_RECV, std::vector<std::uint32_t>{3, 5}, 1e9),
                   3.4e-6 + 1e9 / 370.8e9);
}

TEST(Collectives, GroupOfOneIsFree) {
  const Cluster c = h100_cluster(1);
  const auto p = ring_pattern(c, Collective::ALL_REDUCE, std::vector<std::uint32_t>{5});
  EXPECT_EQ(p.name, "ring/Simple-all-reduce[1]");
  EXPECT_TRUE(p.flows.empty());
  EXPECT_EQ(p.latency, sim::Time::zero());
  EXPECT_EQ(closed_form_seconds(c, Collective::ALL_REDUCE, std::vector<std::uint32_t>{5}, 1e9), 0.0);
}

TEST(Collectives, BadGroupsThrow) {
  const Cluster c = h100_cluster(1);
  EXPECT_THROW(ring_pattern(c, Collective::ALL_REDUCE, std::vector<std::uint32_t>{}), std::invalid_argument);
  EXPECT_THROW(ring_pattern(c, Collective::ALL_REDUCE, std::vector<std::uint32_t>{0, 1, 1}), std::invalid_argument);
  EXPECT_THROW(ring_pattern(c, Collective::ALL_REDUCE, std::vector<std::uint32_t>{0, 8}), std::invalid_argument);
  EXPECT_THROW(ring_pattern(c, Collective::SEND_RECV, std::vector<std::uint32_t>{0, 1, 2}), std::invalid_argument);
  EXPECT_THROW(ring_pattern(c, Collective::SEND_RECV, std::vector<std::uint32_t>{2, 2}), std::invalid_argument);
}

// formulas.md: all-reduce 2(n−1)α + 2(n−1)/n·S/β; reduce-scatter / all-gather (n−1)α + (n−1)/n·S/β.
TEST(Collectives, RingClosedForm) {
  EXPECT_DOUBLE_EQ(ring_closed_form_seconds(Collective::ALL_REDUCE, 8, 1e9, 1e-5, 1e11), 14e-5 + 1.75e-2);
  EXPECT_DOUBLE_EQ(ring_closed_form_seconds(Collective::REDUCE_SCATTER, 8, 1e9, 1e-5, 1e11), 7e-5 + 0.875e-2);
  EXPECT_DOUBLE_EQ(ring_closed_form_seconds(Collective::ALL_GATHER, 4, 0, 2e-6, 1e11), 6e-6);
  EXPECT_DOUBLE_EQ(ring_closed_form_seconds(Collective::SEND_RECV, 2, 1e9, 1e-5, 1e11), 1e-5 + 1e-2);
  EXPECT_EQ(ring_closed_form_seconds(Collective::ALL_REDUCE, 1, 1e9, 1e-5, 1e11), 0.0);
  EXPECT_THROW((void)ring_closed_form_seconds(Collective::ALL_REDUCE, 0, 1e9, 1e-5, 1e11), std::invalid_argument);
  EXPECT_THROW((void)ring_closed_form_seconds(Collective::ALL_REDUCE, 4, 1e9, 1e-5, 0), std::invalid_argument);
}

// closed_form_seconds with a ring: NCCL's latency, and β from the bottleneck link given the
// pattern's own flows.
TEST(Collectives, ClosedFormUsesThePatternsBottleneck) {
  const double nic = 47e9;
  const double S = 1 << 30;
  const AlgorithmChoice ring{Algorithm::RING, Protocol::SIMPLE, 1, 0.0};
  {
    // One node: 8.4 + 14·3.4 µs.
    const Cluster c = h100_cluster(2);
    EXPECT_DOUBLE_EQ(closed_form_seconds(c, Collective::ALL_REDUCE, iota(8), S, ring),
                     ring_closed_form_seconds(Collective::ALL_REDUCE, 8, S, 0, 370.8e9) + 56.0e-6);
  }
  {
    // One GPU per node: 8.4 + 7·14 µs.
    const Cluster c = h100_cluster(8);
    EXPECT_NEAR(closed_form_seconds(c, Collective::ALL_GATHER, iota(8, 0, 8), S, ring),
                ring_closed_form_seconds(Collective::ALL_GATHER, 8, S, 0, nic) + 106.4e-6, 1e-12);
  }
  {
    // 4 rings: each NIC carries a quarter, NVLink three quarters at 370.8 GB/s: the NIC
    // still limits, at 4 × 47 GB/s per ring edge. 30 steps: 24 in a node (max(3.4, 3·1.0)),
    // 6 across nodes (14): 8.4 + 24·3.4 + 6·14 = 174.0 µs.
    const Cluster c = h100_cluster(4);
    std::vector<std::uint32_t> ranks;
    for (std::uint32_t node = 0; node < 4; ++node) {
      for (std::uint32_t g = 0; g < 4; ++g) ranks.push_back(node * 8 + g);
    }
    EXPECT_NEAR(closed_form_seconds(c, Collective::ALL_REDUCE, ranks, S, ring),
                ring_closed_form_seconds(Collective::ALL_REDUCE, 16, S, 0, 4 * nic) + 174.0e-6, 1e-12);
  }
  {
    // 4 nodes, 2 per leaf group, oversubscription 4: the ring over rail 0 crosses the spine
    // twice; each leaf uplink (2 NICs / 4 = half a NIC) carries one ring edge. 8.4 + 6·14 µs.
    const Cluster c = h100_cluster(4, 8, 2, 4.0);
    EXPECT_NEAR(closed_form_seconds(c, Collective::ALL_REDUCE, iota(4, 0, 8), S, ring),
                ring_closed_form_seconds(Collective::ALL_REDUCE, 4, S, 0, nic / 2) + 92.4e-6, 1e-12);
  }
}

constexpr AlgorithmChoice choice(Algorithm a, Protocol p = Protocol::SIMPLE) { return {a, p, 1, 0.0}; }

// Bytes per link, per unit of S, counted by hand for each algorithm.
TEST(CollectiveAlgorithms, TreeInOneNodeIsTwoChainsPerRail) {
  // 8 GPUs, 8 rails of S/8. Rail j's chain starts at GPU j: every chain edge carries S/8
  // each way. Over the 8 chains a GPU is the head once (sends 1/8: broadcast), the tail once
  // (1/8: reduce) and in the middle 6 times (2/8): up = (1 + 1 + 12)/8 = 14/8, as the ring.
  const Cluster c = h100_cluster(1);
  const auto p = collective_pattern(c, Collective::ALL_REDUCE, iota(8), choice(Algorithm::TREE));
  const auto k = loads_by_kind(c, p);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_DOUBLE_EQ(k.at(LinkKind::NVLINK_UP).load, 14.0 / 8);
  EXPECT_DOUBLE_EQ(k.at(LinkKind::NVLINK_DOWN).load, 14.0 / 8);
  // Latency: NCCL's tree, 8.4 + 2·(7·4.0) µs (no network step).
  EXPECT_EQ(p.latency, sim::Time::from_seconds((8.4 + 2 * 7 * 4.0) * 1e-6));
}

TEST(CollectiveAlgorithms, DoubleBinaryTreeAcrossNodes) {
  // 4 nodes × 2 GPUs, 2 rails of S/2, each tree S/4 per edge each way (u = 1/4).
  // Tree 0, in order over positions 1..4 (node r at r+1), root 4: 1→2, 3→2, 2→4, so nodes
  // 0→1, 2→1, 1→3. Tree 1, shifted (m even; node r at (r+1) mod 4 + 1: nodes 0,1,2,3 at
  // 2,3,4,1): nodes 3→0, 1→0, 0→2. NIC up per GPU:
  //   node 0: tree 0 up (u) + tree 1 up and down to 3, 1 (3u) = 4u = 1.0
  //   node 1: tree 0 up and down to 0, 2 (3u) + tree 1 up (u)   = 4u = 1.0
  //   node 2: tree 0 up (u) + tree 1 root, down to 0 (u)         = 2u = 0.5
  //   node 3: tree 0 root, down to 1 (u) + tree 1 up (u)         = 2u = 0.5
  // NVLink: in each node the two chains (g0→g1 and g1→g0) carry S/2 each way: 1 per link.
  const Cluster c = h100_cluster(4);
  std::vector<std::uint32_t> ranks;
  for (std::uint32_t n = 0; n < 4; ++n)
    for (std::uint32_t g = 0; g < 2; ++g) ranks.push_back(n * 8 + g);
  const auto p = collective_pattern(c, Collective::ALL_REDUCE, ranks, choice(Algorithm::TREE));
  const double expected_up[4] = {1.0, 1.0, 0.5, 0.5};
  int nic_up = 0, nvlink_up = 0;
  for (const auto& [link, load] : link_loads(p)) {
    const Link& l = c.links()[link];
    EXPECT_NE(l.kind, LinkKind::LEAF_UP) << "trees stay on their rails";
    if (l.kind == LinkKind::NIC_UP || l.kind == LinkKind::NIC_DOWN) {
      nic_up += l.kind == LinkKind::NIC_UP;
      EXPECT_DOUBLE_EQ(load, expected_up[c.node_of(l.owner)]) << "GPU " << l.owner;
    }
    if (l.kind == LinkKind::NVLINK_UP) {
      ++nvlink_up;
      EXPECT_DOUBLE_EQ(load, 1.0) << "GPU " << l.owner;
    }
  }
  EXPECT_EQ(nic_up, 8);
  EXPECT_EQ(nvlink_up, 8);
  // 8.4 + 2·((2−1)·4.0 + floor(log2 4)·14) = 72.4 µs: one NVLink step and two network steps each way.
  EXPECT_EQ(p.latency, sim::Time::from_seconds(72.4e-6));
  EXPECT_EQ(detail::btree_parent(2, 4, 0), 1u);
  EXPECT_EQ(detail::btree_parent(1, 4, 0), 3u);
  EXPECT_EQ(detail::btree_parent(3, 4, 0), 4u);  // the root of tree 0
  EXPECT_EQ(detail::btree_parent(3, 4, 1), 0u);
  EXPECT_EQ(detail::btree_parent(2, 4, 1), 4u);  // the root of tree 1
  // Odd m mirrors: m = 5, tree 1 places node r at 5 − r; node 4 at 1 → parent position 2 = node 3.
  EXPECT_EQ(detail::btree_parent(4, 5, 1), 3u);
}

TEST(CollectiveAlgorithms, NvlsLoadsAndEfficiency) {
  // All-reduce on 8 GPUs: up 1 + 1/8, down 1/8 + 1, at NVLS efficiency 0.85 (Hopper).
  const Cluster c = h100_cluster(1);
  auto p = collective_pattern(c, Collective::ALL_REDUCE, iota(8), choice(Algorithm::NVLS));
  auto k = loads_by_kind(c, p);
  EXPECT_NEAR(k.at(LinkKind::NVLINK_UP).load, 1.125 / 0.85, 1e-12);
  EXPECT_NEAR(k.at(LinkKind::NVLINK_DOWN).load, 1.125 / 0.85, 1e-12);
  EXPECT_EQ(p.latency, sim::Time::from_seconds(25e-6));  // NVLS: 25 µs, no base latency
  p = collective_pattern(c, Collective::ALL_GATHER, iota(8), choice(Algorithm::NVLS));
  k = loads_by_kind(c, p);
  EXPECT_NEAR(k.at(LinkKind::NVLINK_UP).load, 0.125 / 0.85, 1e-12);
  EXPECT_NEAR(k.at(LinkKind::NVLINK_DOWN).load, 1 / 0.85, 1e-12);
  p = collective_pattern(c, Collective::REDUCE_SCATTER, iota(8), choice(Algorithm::NVLS));
  k = loads_by_kind(c, p);
  EXPECT_NEAR(k.at(LinkKind::NVLINK_UP).load, 1 / 0.85, 1e-12);
  EXPECT_NEAR(k.at(LinkKind::NVLINK_DOWN).load, 0.125 / 0.85, 1e-12);
  // NVLSTree on 2 nodes × 8: NVLS in each node, and 8 rails of trees with S/16 per tree edge:
  // with two nodes each tree is one edge, so each NIC carries 2 · 1/16 = 1/8 each way.
  const Cluster c2 = h100_cluster(2);
  p = collective_pattern(c2, Collective::ALL_REDUCE, iota(16), choice(Algorithm::NVLS_TREE));
  k = loads_by_kind(c2, p);
  EXPECT_NEAR(k.at(LinkKind::NIC_UP).load, 0.125, 1e-12);
  EXPECT_NEAR(k.at(LinkKind::NVLINK_UP).load, 1.125 / 0.85, 1e-12);
  // 0 + 25 + 2·1·20.9 µs.
  EXPECT_EQ(p.latency, sim::Time::from_seconds((25 + 2 * 20.9) * 1e-6));
}

TEST(CollectiveAlgorithms, PatBlocks) {
  // 8 nodes × 1 GPU: rounds at distance 1, 2, 4 send 1, 2, 4 of 8 blocks: 7/8 per NIC.
  const Cluster c = h100_cluster(8);
  const auto p = collective_pattern(c, Collective::ALL_GATHER, iota(8, 0, 8), choice(Algorithm::PAT));
  EXPECT_EQ(p.flows.size(), 24u);
  const auto k = loads_by_kind(c, p);
  EXPECT_DOUBLE_EQ(k.at(LinkKind::NIC_UP).load, 7.0 / 8);
  EXPECT_DOUBLE_EQ(k.at(LinkKind::NIC_DOWN).load, 7.0 / 8);
  // 8 + floor(log2 8)·14/3.5 + 2.8·8 = 42.4 µs.
  EXPECT_NEAR(p.latency.seconds(), 42.4e-6, 1e-12);
}

TEST(CollectiveAlgorithms, BroadcastReduceAndAllToAll) {
  const Cluster c = h100_cluster(2);
  // Broadcast from GPU 0 over one node: the chain 0→1→…→7, S per edge.
  auto p = collective_pattern(c, Collective::BROADCAST, iota(8), choice(Algorithm::RING));
  auto loads = link_loads(p);
  EXPECT_EQ(loads.size(), 14u);  // 7 up links, 7 down links
  for (const auto& [link, load] : loads) EXPECT_DOUBLE_EQ(load, 1.0);
  EXPECT_NEAR(p.latency.seconds(), (8.4 + 4.0) * 1e-6, 1e-12);  // one step (NVLink Tree/Simple)
  // Reduce to GPU 0 over two nodes: the chain runs toward the root; one NIC each way is used.
  p = collective_pattern(c, Collective::REDUCE, iota(16), choice(Algorithm::RING, Protocol::LL));
  const auto k = loads_by_kind(c, p);
  EXPECT_EQ(k.at(LinkKind::NIC_UP).links, 1);
  EXPECT_DOUBLE_EQ(k.at(LinkKind::NIC_UP).load, 2.0);  // LL: 16-byte lines carry 8 data bytes
  EXPECT_NEAR(p.latency.seconds(), (6.6 + 2.7) * 1e-6, 1e-12);
  // All-to-all over 2 nodes × 8: each GPU sends 1/16 to each of 15 peers: 7/16 over NVLink,
  // 8/16 through its NIC.
  p = collective_pattern(c, Collective::ALL_TO_ALL, iota(16), choice(Algorithm::DIRECT));
  const auto a = loads_by_kind(c, p);
  EXPECT_DOUBLE_EQ(a.at(LinkKind::NVLINK_UP).load, 7.0 / 16);
  EXPECT_DOUBLE_EQ(a.at(LinkKind::NIC_UP).load, 0.5);
  EXPECT_EQ(p.flows.size(), 240u);
}

// Latency is charged per step on the link type the step crosses: NVLink steps never pay the
// network's 14 µs.
TEST(CollectiveAlgorithms, LatencyPerLinkType) {
  const Cluster c = h100_cluster(2);
  // Ring/Simple all-reduce over 2 nodes × 8: 30 steps, 2 of them across nodes:
  // 8.4 + 28·max(3.4, 3·1.0) + 2·14 = 131.6 µs (every step at 14 µs would be 420).
  auto p = collective_pattern(c, Collective::ALL_REDUCE, iota(16), choice(Algorithm::RING));
  EXPECT_NEAR(p.latency.seconds(), 131.6e-6, 1e-12);
  // LL: 6.6 + 28·max(0.6, 1.0) + 2·2.7 = 40.0 µs.
  p = collective_pattern(c, Collective::ALL_REDUCE, iota(16), choice(Algorithm::RING, Protocol::LL));
  EXPECT_NEAR(p.latency.seconds(), 40.0e-6, 1e-12);
  // The same ring inside one node: 8.4 + 14·3.4 = 56.0 µs.
  p = collective_pattern(c, Collective::ALL_REDUCE, iota(8), choice(Algorithm::RING));
  EXPECT_NEAR(p.latency.seconds(), 56.0e-6, 1e-12);
  // All-to-all inside one node, 4 GPUs: pairwise pays 3 rounds of 3.4 µs, direct one.
  p = collective_pattern(c, Collective::ALL_TO_ALL, iota(4), choice(Algorithm::PAIRWISE));
  EXPECT_NEAR(p.latency.seconds(), 3 * 3.4e-6, 1e-12);
  p = collective_pattern(c, Collective::ALL_TO_ALL, iota(4), choice(Algorithm::DIRECT));
  EXPECT_NEAR(p.latency.seconds(), 3.4e-6, 1e-12);
  // Across nodes every round has a network step: 3 × 14 µs.
  p = collective_pattern(c, Collective::ALL_TO_ALL, std::vector<std::uint32_t>{0, 1, 8, 9},
                         choice(Algorithm::PAIRWISE));
  EXPECT_NEAR(p.latency.seconds(), 3 * 14e-6, 1e-12);
}

TEST(CollectiveAlgorithms, AlgorithmsRefuseWhatTheyDoNotRun) {
  const Cluster a100 = [] {
    ClusterSpec spec;
    spec.gpu = "a100-80gb";
    spec.nodes = 2;
    spec.nic_gbps = 200;
    return Cluster(spec, *find_profile("a100-80gb"));
  }();
  const Cluster h100 = h100_cluster(2);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message([&] { collective_pattern(h100, Collective::ALL_GATHER, iota(8), choice(Algorithm::TREE)); }),
            "all-gather: algorithm tree runs only all-reduce");
  EXPECT_EQ(message([&] { collective_pattern(a100, Collective::ALL_REDUCE, iota(8), choice(Algorithm::NVLS)); }),
            "all-reduce: algorithm nvls needs NVLink SHARP (NVSwitch, compute capability >= 90)");
  EXPECT_EQ(message([&] { collective_pattern(h100, Collective::ALL_REDUCE, iota(16), choice(Algorithm::NVLS)); }),
            "all-reduce: algorithm nvls runs inside one node (valid across nodes: nvls-tree)");
  EXPECT_EQ(message([&] { collective_pattern(h100, Collective::ALL_GATHER, iota(16), choice(Algorithm::PAT)); }),
            "all-gather: algorithm pat needs exactly one GPU per node");
  EXPECT_EQ(message([&] {
              collective_pattern(h100, Collective::ALL_REDUCE, iota(8), choice(Algorithm::NVLS, Protocol::LL));
            }),
            "all-reduce: algorithm nvls runs only the Simple protocol, not LL");
  EXPECT_EQ(message([&] { collective_pattern(h100, Collective::ALL_TO_ALL, iota(8), choice(Algorithm::RING)); }),
            "all-to-all: algorithm ring does not run point-to-point operations (valid: direct, pairwise)");
}

// Groups of any subset of ranks: uneven nodes get one ring, and the tree's chains and trees
// still reach every member.
TEST(CollectiveAlgorithms, AnySubsetOfRanks) {
  const Cluster c = h100_cluster(3);
  const std::vector<std::uint32_t> ranks{0, 3, 5, 9, 17, 18, 19};
  for (const Algorithm a : {Algorithm::RING, Algorithm::TREE, Algorithm::NVLS_TREE}) {
    const auto p = collective_pattern(c, Collective::ALL_REDUCE, ranks, choice(a));
    std::map<std::uint32_t, int> touched;
    for (const auto& [link, load] : link_loads(p))
      if (c.links()[link].kind == LinkKind::NVLINK_UP || c.links()[link].kind == LinkKind::NIC_UP)
        ++touched[c.links()[link].owner];
    for (const std::uint32_t r : ranks) EXPECT_GT(touched[r], 0) << to_string(a) << " GPU " << r;
  }
  const AlgorithmChoice ch = choose_algorithm(c, Collective::ALL_REDUCE, ranks, 1 << 20);
  EXPECT_GT(closed_form_seconds(c, Collective::ALL_REDUCE, ranks, 1 << 20, ch), 0.0);
}

}  // namespace
}  // namespace trainsim::hardware

namespace trainsim::hardware {
namespace {

// Closed forms and slowdowns are cached per thread by (cluster, collectives, groups): the
// cache must tell clusters apart (the same groups on an oversubscribed fabric are slower)
// and groups apart, and a cached answer must equal the one computed afresh on an equal
// cluster that has never been asked.
TEST(SymmetricClosedFormCache, KeyedByClusterAndGroups) {
  const Cluster flat = h100_cluster(64, 8, 4, 1.0);
  const Cluster oversubscribed = h100_cluster(64, 8, 4, 4.0);
  // One ring per rail over 16 nodes under 4 leaves (4 nodes per leaf), visited in the order
  // 0, 4, 8, 12, 1, 5, …: every hop changes leaves, so each leaf's uplink carries 4 ring
  // flows, 4× a NIC's one — at oversubscription 4 the uplink has one NIC's bandwidth.
  std::vector<std::vector<std::uint32_t>> groups;
  for (std::uint32_t rail = 0; rail < 8; ++rail) {
    groups.emplace_back();
    for (std::uint32_t i = 0; i < 16; ++i) groups.back().push_back(((i % 4) * 4 + i / 4) * 8 + rail);
  }
  const ClosedForm a = symmetric_closed_form(flat, Collective::ALL_REDUCE, groups);
  const ClosedForm b = symmetric_closed_form(oversubscribed, Collective::ALL_REDUCE, groups);
  EXPECT_GT(b.seconds_per_byte, a.seconds_per_byte * 1.5) << "the oversubscribed fabric got the flat fabric's answer";
  const ClosedForm a_again = symmetric_closed_form(flat, Collective::ALL_REDUCE, groups);
  EXPECT_EQ(a_again.seconds_per_byte, a.seconds_per_byte);
  EXPECT_EQ(a_again.latency_s, a.latency_s);

  const Cluster flat_fresh = h100_cluster(64, 8, 4, 1.0);  // a new cluster: nothing cached for it
  const ClosedForm fresh = symmetric_closed_form(flat_fresh, Collective::ALL_REDUCE, groups);
  EXPECT_EQ(fresh.seconds_per_byte, a.seconds_per_byte);
  EXPECT_EQ(fresh.latency_s, a.latency_s);

  // Rings over the 4 nodes of one leaf never reach the spine.
  std::vector<std::vector<std::uint32_t>> local;
  for (std::uint32_t rail = 0; rail < 8; ++rail) local.push_back({rail, 8 + rail, 16 + rail, 24 + rail});
  const ClosedForm l = symmetric_closed_form(oversubscribed, Collective::ALL_REDUCE, local);
  EXPECT_LT(l.seconds_per_byte, b.seconds_per_byte / 2);
  const ClosedForm reduce_scatter = symmetric_closed_form(flat, Collective::REDUCE_SCATTER, groups);
  EXPECT_LT(reduce_scatter.seconds_per_byte, a.seconds_per_byte);  // (n-1)/n, not 2(n-1)/n

  // A bad group is refused every time, cached or not.
  const std::vector<std::vector<std::uint32_t>> bad{{0, 0}};
  EXPECT_THROW(symmetric_closed_form(flat, Collective::ALL_REDUCE, bad), std::invalid_argument);
  EXPECT_THROW(symmetric_closed_form(flat, Collective::ALL_REDUCE, bad), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::hardware
