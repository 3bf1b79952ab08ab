#include "hardware/collectives.hpp"

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
// factor·S; latency = steps × 3.4 µs.
TEST(Collectives, RingInOneNode) {
  const Cluster c = h100_cluster(2);
  const auto ranks = iota(8);
  struct Case {
    Collective coll;
    const char* name;
    double factor;
    int steps;
  };
  for (const Case k : {Case{Collective::ALL_REDUCE, "ring-allreduce[8]", 2.0 * 7 / 8, 14},
                       Case{Collective::REDUCE_SCATTER, "ring-reducescatter[8]", 7.0 / 8, 7},
                       Case{Collective::ALL_GATHER, "ring-allgather[8]", 7.0 / 8, 7}}) {
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
    EXPECT_EQ(p.latency, sim::Time::from_seconds(k.steps * 3.4e-6));
  }
}

// One GPU per node on 8 nodes (rail 0 of each): the ring runs NIC to NIC under one leaf.
TEST(Collectives, RingAcrossNodesOneGpuEach) {
  const Cluster c = h100_cluster(8);
  const auto ranks = iota(8, 0, 8);
  const auto p = ring_pattern(c, Collective::ALL_REDUCE, ranks);
  EXPECT_EQ(p.name, "ring-allreduce[8]");
  ASSERT_EQ(p.flows.size(), 8u);
  const auto by_kind = loads_by_kind(c, p);
  ASSERT_EQ(by_kind.size(), 2u);
  EXPECT_EQ(by_kind.at(LinkKind::NIC_UP).links, 8);
  EXPECT_DOUBLE_EQ(by_kind.at(LinkKind::NIC_UP).load, 1.75);
  EXPECT_DOUBLE_EQ(by_kind.at(LinkKind::NIC_DOWN).load, 1.75);
  EXPECT_EQ(p.latency, sim::Time::from_seconds(14 * 14e-6));

  const auto ag = ring_pattern(c, Collective::ALL_GATHER, ranks);
  EXPECT_DOUBLE_EQ(loads_by_kind(c, ag).at(LinkKind::NIC_UP).load, 7.0 / 8);
  EXPECT_EQ(ag.latency, sim::Time::from_seconds(7 * 14e-6));
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
    EXPECT_NE(p.name.find("[16]x4"), std::string::npos) << p.name;
    ASSERT_EQ(p.flows.size(), 64u);
    std::map<std::uint32_t, int> sends;
    for (const auto& f : p.flows) {
      EXPECT_DOUBLE_EQ(f.bytes_per_unit, factor / 4);
      ++sends[c.links()[p.route_links[f.route_begin]].owner];
    }
    ASSERT_EQ(sends.size(), 16u);
    for (const auto& [gpu, n] : sends) EXPECT_EQ(n, 4) << gpu;
    const auto by_kind = loads_by_kind(c, p);
    ASSERT_EQ(by_kind.size(), 4u) << "no LEAF links: rings stay on their rails";
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
  EXPECT_EQ(p.name, "ring-allreduce[1]");
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

// closed_form_seconds picks α from the slowest edge and β from the bottleneck link given
// the pattern's own flows.
TEST(Collectives, ClosedFormUsesThePatternsBottleneck) {
  const double nic = 47e9;
  const double S = 1 << 30;
  {
    const Cluster c = h100_cluster(2);
    EXPECT_DOUBLE_EQ(closed_form_seconds(c, Collective::ALL_REDUCE, iota(8), S),
                     ring_closed_form_seconds(Collective::ALL_REDUCE, 8, S, 3.4e-6, 370.8e9));
  }
  {
    const Cluster c = h100_cluster(8);
    EXPECT_DOUBLE_EQ(closed_form_seconds(c, Collective::ALL_GATHER, iota(8, 0, 8), S),
                     ring_closed_form_seconds(Collective::ALL_GATHER, 8, S, 14e-6, nic));
  }
  {
    // 4 rings: each NIC carries a quarter, NVLink three quarters at 370.8 GB/s: the NIC
    // still limits, at 4 × 47 GB/s per ring edge.
    const Cluster c = h100_cluster(4);
    std::vector<std::uint32_t> ranks;
    for (std::uint32_t node = 0; node < 4; ++node) {
      for (std::uint32_t g = 0; g < 4; ++g) ranks.push_back(node * 8 + g);
    }
    EXPECT_NEAR(closed_form_seconds(c, Collective::ALL_REDUCE, ranks, S),
                ring_closed_form_seconds(Collective::ALL_REDUCE, 16, S, 14e-6, 4 * nic), 1e-12);
  }
  {
    // 4 nodes, 2 per leaf group, oversubscription 4: the ring over rail 0 crosses the spine
    // twice; each leaf uplink (2 NICs / 4 = half a NIC) carries one ring edge.
    const Cluster c = h100_cluster(4, 8, 2, 4.0);
    EXPECT_NEAR(closed_form_seconds(c, Collective::ALL_REDUCE, iota(4, 0, 8), S),
                ring_closed_form_seconds(Collective::ALL_REDUCE, 4, S, 14e-6, nic / 2), 1e-12);
  }
}

}  // namespace
}  // namespace trainsim::hardware
