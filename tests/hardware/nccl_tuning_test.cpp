// The algorithm and protocol NCCL's tuning model picks (reference §1, NCCL 2.30.7), for 25
// (collective, bytes, ranks, ranks per node, GPU) cases, each derived by hand below.
//
// Topology inputs (collectives.cpp tuning_inputs, reference §1.2):
//   A100: NVLink 12 × 20 = 240 GB/s → one node: speed 40 (first SM80 intra speed <= 240),
//         240/40 = 6 channels, doubled (40 >= 25) → 12 channels × 20 GB/s.
//         NIC HDR 200 Gb/s = 25 GB/s → across nodes: speed 24 (first SM80 inter <= 25),
//         one channel per local rank, not doubled (24 < 25). Host AMD (DGX A100).
//   H100/H200: NVLink 18 × 20.6 = 370.8 → 60, 6 channels, doubled (60 >= 50) → 12 × 30.
//         NIC NDR 400 Gb/s = 50 GB/s → 48, one channel per local rank; doubled when at
//         most 4 channels → 2·ppn × 24. Host Intel.
// Times are NCCL's: latency (µs) + bytes / (1000 · algorithm bandwidth in GB/s).
// Notation below: "RL" = Ring/LL, "R128" Ring/LL128, "RS" Ring/Simple, "TL" Tree/LL …,
// "NV" NVLS/Simple, "NVT" NVLSTree/Simple, "PAT" PAT/Simple; lat + bytes/bw.
#include "hardware/collectives.hpp"
#include "hardware/gpu_profile.hpp"
#include "hardware/nccl_tuning.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace trainsim::hardware {
namespace {

constexpr double KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

struct Case {
  const char* gpu;
  Collective coll;
  double bytes;
  int nodes;
  int ranks_per_node;
  Algorithm algorithm;
  Protocol protocol;
};

Cluster cluster_for(const Case& c) {
  ClusterSpec spec;
  spec.gpu = c.gpu;
  spec.nodes = c.nodes;
  spec.gpus_per_node = 8;
  spec.nic_gbps = std::string(c.gpu) == "a100-80gb" ? 200 : 400;
  return Cluster(spec, *find_profile(c.gpu));
}

std::vector<std::uint32_t> group_of(const Case& c) {
  std::vector<std::uint32_t> ranks;
  for (int n = 0; n < c.nodes; ++n)
    for (int g = 0; g < c.ranks_per_node; ++g) ranks.push_back(static_cast<std::uint32_t>(n * 8 + g));
  return ranks;
}

constexpr Algorithm RING = Algorithm::RING, TREE = Algorithm::TREE, NVLS = Algorithm::NVLS,
                    NVLS_TREE = Algorithm::NVLS_TREE, PAT = Algorithm::PAT;
constexpr Protocol LL = Protocol::LL, LL128 = Protocol::LL128, SIMPLE = Protocol::SIMPLE;
constexpr Collective AR = Collective::ALL_REDUCE, AG = Collective::ALL_GATHER, RS = Collective::REDUCE_SCATTER,
                     BC = Collective::BROADCAST, RED = Collective::REDUCE;

const Case CASES[] = {
    // 1. A100, AR, 8 ranks in 1 node, 1 KiB. nsteps 14. RL: 6.6 + 14·0.6 = 15.0 µs,
    //    bus min(87.7, 0.5·240) = 87.7, alg 87.7·8/14 = 50.1 → 15.02. TL: 6.8 + 2·7·0.6 = 15.2 → 15.24.
    {"a100-80gb", AR, 1 * KiB, 1, 8, RING, LL},
    // 2. same, 1 MiB: RL 15.0 + 1048576/50110 = 35.9; R128: 14 + 14·1.9 = 40.6, bus
    //    min(0.92·240, 12·20) = 220.8, alg 126.2 → 48.9; TL128 31.5 + … = 51.9.
    {"a100-80gb", AR, 1 * MiB, 1, 8, RING, LL},
    // 3. same, 64 MiB: RS 8.4 + 14·3.4 = 56.0, alg 240·8/14 = 137.1 → 56 + 489.3 = 545.3;
    //    R128 40.6 + 531.9 = 572.5; TS 64.4 + 67108864/(1000 · 0.5·min(220.8, 12·24) = 110.4,
    //    × tree correction 0.8 at index log2(64 MiB/64) = 20) = 824.
    {"a100-80gb", AR, 64 * MiB, 1, 8, RING, SIMPLE},
    // 4. same, 1 GiB: RS 56 + 7829 = 7885 < R128 40.6 + 8510 = 8551.
    {"a100-80gb", AR, 1 * GiB, 1, 8, RING, SIMPLE},
    // 5. H100, AR, 8 in 1 node, 1 KiB: RL 15.0 + 1024/80570 (bus min(141, 0.5·360) = 141,
    //    alg 80.6) = 15.01; TL 15.2; NV 25 (NVLS replaces the base latency).
    {"h100-sxm", AR, 1 * KiB, 1, 8, RING, LL},
    // 6. same, 256 KiB: RL 15.0 + 262144/80570 = 18.25; NV: intra 30·0.85·11/12·2 = 46.75
    //    per channel, bus 561, alg 561·8/14 = 320.6 → 25 + 0.82 = 25.8.
    {"h100-sxm", AR, 256 * KiB, 1, 8, RING, LL},
    // 7. same, 16 MiB: NV 25 + 16777216/320570 = 77.3; R128 40.6 + 88.6 = 129.3 (alg
    //    min(0.92·360, 12·36.7)·8/14 = 189.3); RS 56 + 81.6 = 137.6.
    {"h100-sxm", AR, 16 * MiB, 1, 8, NVLS, SIMPLE},
    // 8. same, 1 GiB: NV 25 + 3349 = 3374 < RS 56 + 5220 = 5276.
    {"h100-sxm", AR, 1 * GiB, 1, 8, NVLS, SIMPLE},
    // 9. H100, AR, 2 nodes × 8, 64 KiB: 8 channels × 48 (ppn 8: no doubling), nodes <= 2 →
    //    bwIntra. TL: 6.8 + 2·(7·0.6 + 1·5.0) = 25.2, bus min(0.92·384, 8·41.4)/3.8 → min(87.2,
    //    llMax 39.0 (Intel, 2 nodes)) = 39.0, alg 19.5, × correction 0.6 (LL, index
    //    log2(65536/64) = 10) → 25.2 + 65536/11700 = 30.8. RL: 6.6 + 28·max(0.6, 1.0) + 2·2.7 = 40.0 → 43.2.
    {"h100-sxm", AR, 64 * KiB, 2, 8, TREE, LL},
    // 10. same, 1 GiB: NVT: base 0 + 25 + 2·1·20.9 = 66.8; per channel min(48·0.85·7/8·2 =
    //    71.4, 2·48 = 96, 57.7) = 57.7, bus 461.6, alg 461.6·16/30 = 246.2 → 66.8 + 4361 =
    //    4428. RS: 8.4 + 28·max(3.4, 3·1.0) + 2·14 = 131.6, ×1.4 ring plateau = 184.2, alg
    //    384·16/30 = 204.8 → 5427.
    {"h100-sxm", AR, 1 * GiB, 2, 8, NVLS_TREE, SIMPLE},
    // 11. A100, AR, 128 nodes × 8, 1 MiB: 8 ch × 24, bwInter. T128: 14 + 2·(7·1.25 + 7·8.5)
    //    = 150.5, bus min(min(0.92·192, 8·17.8 = 142.4)·120/128 = 133.5, 8·20 = 160) = 133.5,
    //    alg 66.75, ×0.6 (index 14) → 150.5 + 26.2 = 176.7; TS 260.4 + … = 289.9; rings pay
    //    2046 steps: RL 6.6 + 1792·2 + 254·2.7 = 4276.
    {"a100-80gb", AR, 1 * MiB, 128, 8, TREE, LL128},
    // 12. same, 128 MiB: T128 150.5 + 134217728/66750 = 2161 (index 21: ×1.0);
    //    TS 260.4 + 134217728/(71.2·0.9 → 64.1 GB/s) = 2355; R128 4614 + 1676 = 6290.
    {"a100-80gb", AR, 128 * MiB, 128, 8, TREE, LL128},
    // 13. A100, AR, 1024 nodes × 1 GPU (data parallel 1,024), 128 MiB: 1 channel × 24.
    //    T128: 14 + 2·(0 + 10·8.5) = 184, bus min(min(22.08, 17.8)·120/128 = 16.7, 20) →
    //    alg 8.34 → 184 + 16086 = 16270; TS 8.4 + 2·10·14 = 288.4, alg 8.9·0.9 → 17045;
    //    R128: 14 + 2046·… = 17405 + 13409 = 30814.
    {"a100-80gb", AR, 128 * MiB, 1024, 1, TREE, LL128},
    // 14. H100, AG, 8 in 1 node, 1 MiB: nsteps 7. RL: 6.6 + 7·0.6 = 10.8, alg
    //    141·8/7 = 161.1 → 17.3; NV 25 + 1048576/245440 (per channel 30·0.85·11/12·7/8
    //    = 20.45, bus 245.4, no bus-to-algorithm conversion for AG) = 29.3.
    {"h100-sxm", AG, 1 * MiB, 1, 8, RING, LL},
    // 15. same, 1 GiB: RS 8.4 + 7·3.4 = 32.2, alg 360·8/7 = 411.4 → 2642; R128 2864; NV 4400.
    {"h100-sxm", AG, 1 * GiB, 1, 8, RING, SIMPLE},
    // 16. H100, RS, 8 in 1 node, 1 GiB: the same numbers as case 15.
    {"h100-sxm", RS, 1 * GiB, 1, 8, RING, SIMPLE},
    // 17. A100, AG, 16 nodes × 1 GPU, 64 MiB: 1 × 24 (no doubling on SM80). RS: 8.4 +
    //    15·14 (ppn 1: NET Tree/Simple latency) = 218.4, alg 24·16/15 = 25.6 → 2840;
    //    PAT 8 + 4·14/3.5 + 2.8·16 = 68.8, alg 0.75·24 = 18 → 3797.
    {"a100-80gb", AG, 64 * MiB, 16, 1, RING, SIMPLE},
    // 18. A100, RS, 16 × 1, 64 KiB: PAT 68.8 + 65536/18000 = 72.4; RL 6.6 + 15·5.0 = 81.6,
    //    alg min(19.0, 12)·16/15 = 12.8 → 86.7.
    {"a100-80gb", RS, 64 * KiB, 16, 1, PAT, SIMPLE},
    // 19. H100, AG, 4 nodes × 8, 256 MiB: 8 × 48, bwInter. RS 8.4 + (31 − 3)·max(3.4, 3.0) +
    //    3·14 = 145.6, alg 384·32/31 = 396.4 → 822.8; R128 79.2 + … = 964.9.
    {"h100-sxm", AG, 256 * MiB, 4, 8, RING, SIMPLE},
    // 20. A100, broadcast, 8 in 1 node, 1 MiB: ring only; one step (sameChannels). RS:
    //    8.4 + 4.0 (NVLink Tree/Simple) = 12.4, alg 240·8/8 = 240 → 16.8; RL 7.2 + 1048576/87700
    //    = 19.2; R128 15.9 + 4.7 = 20.7.
    {"a100-80gb", BC, 1 * MiB, 1, 8, RING, SIMPLE},
    // 21. H100, reduce, 2 nodes × 8, 64 KiB: RL 6.6 + 2.7 = 9.3, alg min(39.0, 192) = 39 →
    //    11.0; R128 14 + 4.0 = 18 → 18.2.
    {"h100-sxm", RED, 64 * KiB, 2, 8, RING, LL},
    // 22. H100, AR, 4 GPUs of one node, 32 MiB: 12 × 30. NV: per channel 46.75, bus 561,
    //    alg 561·4/6 = 374 → 25 + 89.7 = 114.7; RS 8.4 + 6·3.4 = 28.8, alg 360·4/6 = 240 → 168.6.
    {"h100-sxm", AR, 32 * MiB, 1, 4, NVLS, SIMPLE},
    // 23. H200, AR, 64 nodes × 8, 256 MiB: NVT 25 + 2·6·20.9 = 275.8, per channel min(71.4,
    //    48, 45.5) = 45.5, bus 364, alg 364·512/1022 = 182.4 → 1748; TS 8.4 + 2·(28 + 6·14) =
    //    232.4, alg 0.5·min(353.3, 288) = 144 → 2304.
    {"h200", AR, 256 * MiB, 64, 8, NVLS_TREE, SIMPLE},
    // 24. H200, AG, 64 nodes × 1, 4 MiB: 1 channel, doubled (<= 4) → 2 × 24. PAT 8 +
    //    6·14/3.5 + 2.8·64 = 211.2, alg 0.75·48 = 36 → 327.7; RL 6.6 + 63·5.0 = 321.6 →
    //    alg min(20.4, 24)·64/63 = 20.7 → 524.
    {"h200", AG, 4 * MiB, 64, 1, PAT, SIMPLE},
    // 25. A100, RS, 4 GPUs of one node, 512 MiB: RS 8.4 + 3·3.4 = 18.6, alg 240·4/3 = 320
    //    → 1696; R128 19.7 + 1824 = 1843.
    {"a100-80gb", RS, 512 * MiB, 1, 4, RING, SIMPLE},
};

TEST(NcclTuning, ChoosesAsNcclsModel) {
  int index = 0;
  for (const Case& c : CASES) {
    ++index;
    const Cluster cluster = cluster_for(c);
    const auto ranks = group_of(c);
    const AlgorithmChoice ch = choose_algorithm(cluster, c.coll, ranks, c.bytes);
    std::printf("case %2d %-9s %-14s %10.0f B %4d x %d -> %s/%s, %d channels, %.2f us\n", index, c.gpu,
                to_string(c.coll), c.bytes, c.nodes, c.ranks_per_node, to_string(ch.algorithm), to_string(ch.protocol),
                ch.channels, ch.predicted_s * 1e6);
    EXPECT_EQ(ch.algorithm, c.algorithm) << "case " << index;
    EXPECT_EQ(ch.protocol, c.protocol) << "case " << index;
  }
}

// The predicted times behind some of the derivations above, to 0.1 %.
TEST(NcclTuning, PredictedTimesMatchTheDerivations) {
  auto predicted_us = [](const Case& c) {
    const Cluster cluster = cluster_for(c);
    return choose_algorithm(cluster, c.coll, group_of(c), c.bytes).predicted_s * 1e6;
  };
  EXPECT_NEAR(predicted_us(CASES[0]), 15.0 + 1024 / (87.7 * 8 / 14 * 1000), 0.001 * 15);
  EXPECT_NEAR(predicted_us(CASES[3]), 56.0 + GiB / (240.0 * 8 / 14 * 1000), 0.001 * 7885);
  EXPECT_NEAR(predicted_us(CASES[7]), 25.0 + GiB / (30 * 0.85 * 11 / 12 * 2 * 12 * 8 / 14 * 1000), 0.001 * 3374);
  EXPECT_NEAR(predicted_us(CASES[11]), 150.5 + 128 * MiB / (0.5 * 8 * 17.8 * 120 / 128 * 1000), 0.001 * 2161);
  EXPECT_NEAR(predicted_us(CASES[17]), 68.8 + 64 * KiB / (0.75 * 24 * 1000), 0.001 * 72.4);
}

// Inputs as derived in the header comment.
TEST(NcclTuning, TopologyInputs) {
  const Case a100{"a100-80gb", AR, 1, 1, 8, RING, SIMPLE};
  TuningInputs in = tuning_inputs(cluster_for(a100), AR, group_of(a100), 1);
  EXPECT_EQ(in.channels, 12);
  EXPECT_DOUBLE_EQ(in.bw_intra_gbs, 20);
  EXPECT_TRUE(in.amd_host);
  EXPECT_FALSE(in.nvls);
  const Case a100_multi{"a100-80gb", AR, 1, 4, 8, RING, SIMPLE};
  in = tuning_inputs(cluster_for(a100_multi), AR, group_of(a100_multi), 1);
  EXPECT_EQ(in.channels, 8);
  EXPECT_DOUBLE_EQ(in.bw_inter_gbs, 24);
  EXPECT_EQ(in.nodes, 4);
  EXPECT_EQ(in.ranks_per_node, 8);
  const Case h100{"h100-sxm", AR, 1, 1, 8, RING, SIMPLE};
  in = tuning_inputs(cluster_for(h100), AR, group_of(h100), 1);
  EXPECT_EQ(in.channels, 12);
  EXPECT_DOUBLE_EQ(in.bw_intra_gbs, 30);
  EXPECT_TRUE(in.nvls);
  const Case h100_dp{"h100-sxm", AR, 1, 4, 2, RING, SIMPLE};
  in = tuning_inputs(cluster_for(h100_dp), AR, group_of(h100_dp), 1);
  EXPECT_EQ(in.channels, 4);  // 2 per node, doubled (<= 4 channels on Hopper)
  EXPECT_DOUBLE_EQ(in.bw_inter_gbs, 24);
}

// The latency formulas of reference §1.5 and its worked examples (§1.10).
TEST(NcclTuning, LatencyFormulas) {
  TuningInputs in;
  in.collective = AR;
  in.ranks = 8;
  in.nodes = 1;
  in.ranks_per_node = 8;
  in.compute_capability = 90;
  in.nvls = true;
  in.channels = 12;
  in.bw_intra_gbs = in.bw_inter_gbs = 30;
  EXPECT_NEAR(nccl_latency_us(in, RING, LL), 15.0, 1e-9);
  EXPECT_NEAR(nccl_latency_us(in, RING, LL128), 40.6, 1e-9);
  EXPECT_NEAR(nccl_latency_us(in, RING, SIMPLE), 56.0, 1e-9);
  EXPECT_NEAR(nccl_latency_us(in, TREE, LL), 15.2, 1e-9);
  EXPECT_NEAR(nccl_latency_us(in, TREE, LL128), 31.5, 1e-9);
  EXPECT_NEAR(nccl_latency_us(in, TREE, SIMPLE), 64.4, 1e-9);
  EXPECT_NEAR(nccl_latency_us(in, NVLS, SIMPLE), 25.0, 1e-9);
  EXPECT_TRUE(std::isinf(nccl_latency_us(in, NVLS, LL)));  // NVLS is Simple only
  // 16 nodes × 8, Intel host: ring 8.4 + 224·max(3.4, 3·1.0) + 30·14 = 1190; tree 176.4.
  in.ranks = 128;
  in.nodes = 16;
  EXPECT_NEAR(nccl_latency_us(in, RING, SIMPLE), 1190.0, 1e-9);
  EXPECT_NEAR(nccl_latency_us(in, TREE, SIMPLE), 176.4, 1e-9);
  EXPECT_TRUE(std::isinf(nccl_latency_us(in, NVLS, SIMPLE)));  // NVLS across nodes needs CollNet
}

TEST(NcclTuning, OneRankAndPointToPoint) {
  TuningInputs in;
  in.ranks = 1;
  EXPECT_EQ(nccl_choose(in).predicted_s, 0.0);
  in.collective = Collective::ALL_TO_ALL;
  in.ranks = 8;
  EXPECT_EQ(nccl_choose(in).algorithm, Algorithm::DIRECT);
}

}  // namespace
}  // namespace trainsim::hardware
