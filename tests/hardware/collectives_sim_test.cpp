// The flow patterns run on sim::simulate reproduce the closed forms: on an uncontended ring
// the ring formula of formulas.md, and on symmetric groups closed_form_seconds (which fast
// mode uses) — both within 1%.
#include "hardware/collectives.hpp"
#include "hardware/gpu_profile.hpp"
#include "sim/plan.hpp"
#include "sim/simulate.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

namespace trainsim::hardware {
namespace {

Cluster make_cluster(const std::string& gpu, std::int64_t nodes, std::int64_t gpus_per_node, double nic_gbps,
                     std::int64_t nodes_per_leaf = 32, double oversubscription = 1.0) {
  ClusterSpec spec;
  spec.gpu = gpu;
  spec.nodes = nodes;
  spec.gpus_per_node = gpus_per_node;
  spec.nic_gbps = nic_gbps;
  spec.nodes_per_leaf = nodes_per_leaf;
  spec.oversubscription = oversubscription;
  return Cluster(spec, *find_profile(gpu));
}

// A plan with one COMM task per rank, all on one communication instance of `bytes`.
double simulate_pattern(const Cluster& cluster, sim::CommPattern p, const std::vector<std::uint32_t>& ranks,
                        double bytes) {
  sim::PlanBuilder b(cluster.num_gpus(), 1, {"comm"}, {"none"});
  const std::uint32_t pattern = b.add_pattern(std::move(p));
  sim::CommInstance inst;
  inst.pattern = pattern;
  inst.bytes = bytes;
  inst.participants = static_cast<std::uint32_t>(ranks.size());
  const std::uint32_t comm = b.add_comm(inst);
  for (const std::uint32_t r : ranks) {
    sim::PlanBuilder::TaskSpec spec;
    spec.device = r;
    b.add_comm_task(spec, comm);
  }
  const sim::Plan plan = std::move(b).finish();
  const sim::Timeline t = sim::simulate(plan, cluster.network());
  return t.makespan.seconds();
}

double simulate_seconds(const Cluster& cluster, Collective c, const std::vector<std::uint32_t>& ranks, double bytes) {
  return simulate_pattern(cluster, ring_pattern(cluster, c, ranks), ranks, bytes);
}

void expect_within_1pct(const char* what, double expected, double simulated) {
  std::printf("%-58s expected %.6f ms  simulated %.6f ms  (%+.3f%%)\n", what, expected * 1e3, simulated * 1e3,
              100.0 * (simulated - expected) / expected);
  EXPECT_NEAR(simulated, expected, 0.01 * expected) << what;
}

std::vector<std::uint32_t> strided(std::uint32_t n, std::uint32_t stride) {
  std::vector<std::uint32_t> v(n);
  for (std::uint32_t i = 0; i < n; ++i) v[i] = i * stride;
  return v;
}

std::vector<std::uint32_t> block(std::uint32_t nodes, std::uint32_t per_node, std::uint32_t gpus_per_node) {
  std::vector<std::uint32_t> v;
  for (std::uint32_t n = 0; n < nodes; ++n) {
    for (std::uint32_t g = 0; g < per_node; ++g) v.push_back(n * gpus_per_node + g);
  }
  return v;
}

constexpr double GiB = 1024.0 * 1024 * 1024;

// Uncontended rings against formulas.md with β = the link bandwidth: all-reduce
// 2(n−1)/n·S/β, RS/AG (n−1)/n·S/β, plus NCCL's Ring/Simple latency: one node 8.4 + steps·3.4
// µs, one GPU per node 8.4 + steps·14 µs.
TEST(CollectivesSim, RingMatchesTheRingFormula) {
  {
    const Cluster c = make_cluster("h100-sxm", 1, 8, 400);
    const auto ranks = strided(8, 1);
    for (const Collective coll : {Collective::ALL_REDUCE, Collective::REDUCE_SCATTER, Collective::ALL_GATHER}) {
      const double steps = coll == Collective::ALL_REDUCE ? 14 : 7;
      const double expected = ring_closed_form_seconds(coll, 8, GiB, 0, 370.8e9) + (8.4 + steps * 3.4) * 1e-6;
      const std::string what = std::string("H100 8 GPUs in one node, 1 GiB ") + to_string(coll);
      expect_within_1pct(what.c_str(), expected, simulate_seconds(c, coll, ranks, GiB));
    }
  }
  {
    const Cluster c = make_cluster("a100-80gb", 8, 8, 200);
    const auto ranks = strided(8, 8);
    for (const Collective coll : {Collective::ALL_REDUCE, Collective::REDUCE_SCATTER, Collective::ALL_GATHER}) {
      const double steps = coll == Collective::ALL_REDUCE ? 14 : 7;
      const double expected = ring_closed_form_seconds(coll, 8, GiB, 0, 24e9) + (8.4 + steps * 14) * 1e-6;
      const std::string what = std::string("A100 1 GPU/node x 8 nodes, 1 GiB ") + to_string(coll);
      expect_within_1pct(what.c_str(), expected, simulate_seconds(c, coll, ranks, GiB));
    }
  }
  {
    // Small message: latency-dominated.
    const Cluster c = make_cluster("h100-sxm", 1, 8, 400);
    const double expected = ring_closed_form_seconds(Collective::ALL_REDUCE, 8, 64e3, 0, 370.8e9) + 56.0e-6;
    expect_within_1pct("H100 8 GPUs in one node, 64 kB all-reduce", expected,
                       simulate_seconds(c, Collective::ALL_REDUCE, strided(8, 1), 64e3));
  }
  {
    const Cluster c = make_cluster("h100-sxm", 2, 8, 400);
    const double expected = ring_closed_form_seconds(Collective::SEND_RECV, 2, GiB, 14e-6, 47e9);
    expect_within_1pct("H100 send-recv across nodes, 1 GiB", expected,
                       simulate_seconds(c, Collective::SEND_RECV, {3, 11}, GiB));
  }
}

// closed_form_seconds (fast mode) against the flow simulation on symmetric groups,
// including the multi-ring and the oversubscribed cases.
TEST(CollectivesSim, ClosedFormMatchesSimulationOnSymmetricGroups) {
  struct Case {
    const char* what;
    Cluster cluster;
    std::vector<std::uint32_t> ranks;
  };
  std::vector<Case> cases;
  cases.push_back({"H100 8 GPUs in one node", make_cluster("h100-sxm", 2, 8, 400), strided(8, 1)});
  cases.push_back({"H100 1 GPU/node x 8 nodes", make_cluster("h100-sxm", 8, 8, 400), strided(8, 8)});
  cases.push_back({"H100 4 GPUs/node x 4 nodes (4 rings)", make_cluster("h100-sxm", 4, 8, 400), block(4, 4, 8)});
  cases.push_back({"H200 8 GPUs/node x 4 nodes (8 rings)", make_cluster("h200", 4, 8, 400), block(4, 8, 8)});
  cases.push_back({"H100 3 GPUs/node x 3 nodes (3 rings)", make_cluster("h100-sxm", 3, 8, 400), block(3, 3, 8)});
  cases.push_back({"H100 rail 0 x 4 nodes, 2 per leaf, 4:1 oversub",
                   make_cluster("h100-sxm", 4, 8, 400, 2, 4.0), strided(4, 8)});
  cases.push_back({"A100 8 GPUs/node x 2 nodes (8 rings)", make_cluster("a100-80gb", 2, 8, 200), block(2, 8, 8)});
  for (const auto& k : cases) {
    for (const Collective coll : {Collective::ALL_REDUCE, Collective::REDUCE_SCATTER, Collective::ALL_GATHER}) {
      const std::string what = std::string(k.what) + ", 1 GiB " + to_string(coll);
      const AlgorithmChoice ring{Algorithm::RING, Protocol::SIMPLE, 1, 0.0};
      expect_within_1pct(what.c_str(), closed_form_seconds(k.cluster, coll, k.ranks, GiB, ring),
                         simulate_seconds(k.cluster, coll, k.ranks, GiB));
    }
  }
}

// Every collective with every algorithm and protocol that runs it on the group: the closed
// form (NCCL's latency + the most loaded link's bytes at its bandwidth) against the flow
// simulation of the same pattern, at 1 GiB and 1 MiB, within 1 %.
TEST(CollectivesSim, EveryAlgorithmClosedFormMatchesSimulation) {
  struct Case {
    const char* what;
    Cluster cluster;
    std::vector<std::uint32_t> ranks;
  };
  std::vector<Case> cases;
  cases.push_back({"H100 8 GPUs in one node", make_cluster("h100-sxm", 2, 8, 400), strided(8, 1)});
  cases.push_back({"H100 4 GPUs of one node", make_cluster("h100-sxm", 1, 8, 400), strided(4, 2)});
  cases.push_back({"A100 8 GPUs in one node", make_cluster("a100-80gb", 1, 8, 200), strided(8, 1)});
  cases.push_back({"H100 1 GPU/node x 8 nodes", make_cluster("h100-sxm", 8, 8, 400), strided(8, 8)});
  cases.push_back({"A100 1 GPU/node x 6 nodes", make_cluster("a100-80gb", 6, 8, 200), strided(6, 8)});
  cases.push_back({"H100 4 GPUs/node x 4 nodes", make_cluster("h100-sxm", 4, 8, 400), block(4, 4, 8)});
  cases.push_back({"H200 8 GPUs/node x 4 nodes", make_cluster("h200", 4, 8, 400), block(4, 8, 8)});
  cases.push_back({"H100 3 GPUs/node x 3 nodes", make_cluster("h100-sxm", 3, 8, 400), block(3, 3, 8)});
  cases.push_back({"H100 rail 0 x 4 nodes, 2 per leaf, 4:1 oversub", make_cluster("h100-sxm", 4, 8, 400, 2, 4.0),
                   strided(4, 8)});
  cases.push_back({"A100 8 GPUs/node x 2 nodes", make_cluster("a100-80gb", 2, 8, 200), block(2, 8, 8)});
  const Collective collectives[] = {Collective::ALL_REDUCE, Collective::REDUCE_SCATTER, Collective::ALL_GATHER,
                                    Collective::BROADCAST,  Collective::REDUCE,         Collective::ALL_TO_ALL};
  const Algorithm algorithms[] = {Algorithm::RING, Algorithm::TREE,   Algorithm::NVLS,    Algorithm::NVLS_TREE,
                                  Algorithm::PAT,  Algorithm::DIRECT, Algorithm::PAIRWISE};
  std::map<std::pair<Collective, Algorithm>, int> ran;
  for (const auto& k : cases)
    for (const Collective coll : collectives)
      for (const Algorithm a : algorithms)
        for (const Protocol p : {Protocol::LL, Protocol::LL128, Protocol::SIMPLE}) {
          const AlgorithmChoice ch{a, p, 1, 0.0};
          sim::CommPattern pattern;
          try {
            pattern = collective_pattern(k.cluster, coll, k.ranks, ch);
          } catch (const std::invalid_argument&) {
            continue;  // this algorithm does not run this collective on this group
          }
          ++ran[{coll, a}];
          for (const double bytes : {GiB, 1024.0 * 1024}) {
            const std::string what = std::string(k.what) + " " + to_string(coll) + " " + to_string(a) + "/" +
                                     to_string(p) + (bytes == GiB ? " 1 GiB" : " 1 MiB");
            expect_within_1pct(what.c_str(), closed_form_seconds(k.cluster, coll, k.ranks, bytes, ch),
                               simulate_pattern(k.cluster, pattern, k.ranks, bytes));
          }
        }
  // Every pair that NCCL (or the point-to-point schedules) runs was checked.
  for (const auto& [coll, a] : std::vector<std::pair<Collective, Algorithm>>{
           {Collective::ALL_REDUCE, Algorithm::RING},           {Collective::ALL_REDUCE, Algorithm::TREE},
           {Collective::ALL_REDUCE, Algorithm::NVLS},           {Collective::ALL_REDUCE, Algorithm::NVLS_TREE},
           {Collective::ALL_GATHER, Algorithm::RING},           {Collective::ALL_GATHER, Algorithm::NVLS},
           {Collective::ALL_GATHER, Algorithm::PAT},            {Collective::REDUCE_SCATTER, Algorithm::RING},
           {Collective::REDUCE_SCATTER, Algorithm::NVLS},       {Collective::REDUCE_SCATTER, Algorithm::PAT},
           {Collective::BROADCAST, Algorithm::RING},            {Collective::REDUCE, Algorithm::RING},
           {Collective::ALL_TO_ALL, Algorithm::DIRECT},         {Collective::ALL_TO_ALL, Algorithm::PAIRWISE}})
    EXPECT_GT(ran[std::make_pair(coll, a)], 0) << to_string(coll) << " " << to_string(a);
  // Send/recv, direct.
  const Cluster c = make_cluster("h100-sxm", 2, 8, 400);
  const AlgorithmChoice direct{Algorithm::DIRECT, Protocol::SIMPLE, 1, 0.0};
  expect_within_1pct("H100 send-recv across nodes, 1 GiB",
                     closed_form_seconds(c, Collective::SEND_RECV, std::vector<std::uint32_t>{3, 11}, GiB, direct),
                     simulate_seconds(c, Collective::SEND_RECV, {3, 11}, GiB));
}

}  // namespace
}  // namespace trainsim::hardware
