#include "hardware/nccl_tuning.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace trainsim::hardware {
namespace {

constexpr double INF = std::numeric_limits<double>::infinity();
constexpr int LL = 0, LL128 = 1, SIMPLE = 2;

// Rows of NCCL's per-architecture tables: Volta, Ampere, Hopper, Blackwell (reference §1.3).
int arch_row(int cc) {
  if (cc >= 100) return 3;
  if (cc >= 90) return 2;
  if (cc >= 80) return 1;
  return 0;
}
// NCCL's tuning scale: 1 node, 2 nodes, more (reference §1.3 "index2").
int scale_column(int nodes) { return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2; }

// Reference §1.3, NCCL 2.30.7 ncclTunerConstantsDefaults (tuning.cc:138-212), µs, per
// protocol (LL, LL128, Simple). "–" cells of the reference are Simple-only algorithms.
struct PerProtocol {
  double v[3];
};
constexpr PerProtocol TREE_BASE{{6.8, 14.0, 8.4}}, RING_BASE{{6.6, 14.0, 8.4}}, PAT_BASE{{8.0, 8.0, 8.0}};
constexpr PerProtocol TREE_NVLINK{{0.6, 1.25, 4.0}}, RING_NVLINK{{0.6, 1.9, 3.4}};
constexpr PerProtocol TREE_NET{{5.0, 8.5, 14.0}}, RING_NET{{2.7, 4.0, 14.0}};

double base_latency(Algorithm a, int p) {
  switch (a) {
    case Algorithm::TREE: return TREE_BASE.v[p];
    case Algorithm::RING: return RING_BASE.v[p];
    case Algorithm::PAT: return PAT_BASE.v[p];
    default: return 0.0;  // NVLS, NVLSTree
  }
}
// hwLatencies[NVLINK][algo][proto] and [NET][algo][proto].
double nvlink_latency(Algorithm a, int p) {
  switch (a) {
    case Algorithm::TREE: return TREE_NVLINK.v[p];
    case Algorithm::RING: return RING_NVLINK.v[p];
    case Algorithm::NVLS: return 25.0;
    case Algorithm::NVLS_TREE: return 25.0;
    case Algorithm::PAT: return 4.0;
    default: return 0.0;
  }
}
double net_latency(Algorithm a, int p) {
  switch (a) {
    case Algorithm::TREE: return TREE_NET.v[p];
    case Algorithm::RING: return RING_NET.v[p];
    case Algorithm::NVLS: return 18.0;
    case Algorithm::NVLS_TREE: return 20.9;
    case Algorithm::PAT: return 14.0;
    default: return 0.0;
  }
}
// getNetOverhead (tuning.cc:225-233, reference §1.3): 2.0 µs on AMD x86 hosts, else 1.0.
double net_overhead_us(const TuningInputs& in) { return in.amd_host ? 2.0 : 1.0; }

// Bandwidth caps, GB/s, [arch row][scale column] (reference §1.3).
constexpr double LL_MAX_BW_SINGLE_NODE[4] = {39.0, 87.7, 141.0, 282.0};
// Multi-node: the row is the CPU vendor, 0 Intel (39.0 / 20.4), 1 AMD (22.5 / 19.0).
double ll_max_bw(const TuningInputs& in) {
  if (in.nodes <= 1) return LL_MAX_BW_SINGLE_NODE[arch_row(in.compute_capability)];
  if (in.amd_host) return in.nodes == 2 ? 22.5 : 19.0;
  return in.nodes == 2 ? 39.0 : 20.4;
}
constexpr double PER_CH_MAX_RING_LL128_BW[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40, 40, 40}};
constexpr double PER_CH_MAX_TREE_LL128_BW[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double PER_CH_MAX_TREE_BW[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double PER_CH_MAX_NVLS_TREE_BW[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0, 57.7, 45.5}, {0, 96.0, 80.0}};
constexpr double NVLS_EFFICIENCY[4] = {0, 0, 0.85, 0.74};

// treeCorrectionFactor[proto][log2(nBytes/64)] (reference §1.6).
constexpr double TREE_CORRECTION[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

bool ring_family(Collective c) {
  return c == Collective::ALL_REDUCE || c == Collective::ALL_GATHER || c == Collective::REDUCE_SCATTER;
}

// nsteps (reference §1.4): 2(n−1) all-reduce, n−1 AG/RS, n broadcast/reduce.
double nsteps(const TuningInputs& in) {
  const double n = in.ranks;
  switch (in.collective) {
    case Collective::ALL_REDUCE: return 2 * (n - 1);
    case Collective::ALL_GATHER:
    case Collective::REDUCE_SCATTER: return n - 1;
    default: return n;
  }
}

// Which (algorithm, protocol) pairs the model enables (reference §1.4, §1.7).
bool enabled(const TuningInputs& in, Algorithm a, int p) {
  const Collective c = in.collective;
  const bool simple_only = a == Algorithm::NVLS || a == Algorithm::NVLS_TREE || a == Algorithm::PAT;
  if (simple_only && p != SIMPLE) return false;
  switch (a) {
    case Algorithm::RING: return ring_family(c) || c == Collective::BROADCAST || c == Collective::REDUCE;
    case Algorithm::TREE: return c == Collective::ALL_REDUCE;
    // NVLS across nodes needs CollNet, which is off by default; for AG/RS at most 32 local ranks.
    case Algorithm::NVLS:
      return in.nvls && in.channels >= 2 && in.nodes == 1 && ring_family(c) &&
             (c == Collective::ALL_REDUCE || in.ranks_per_node <= 32);
    // NVLSTree is disabled on one node.
    case Algorithm::NVLS_TREE: return in.nvls && in.channels >= 2 && in.nodes > 1 && c == Collective::ALL_REDUCE;
    // PAT (NCCL_PAT_ENABLE=2): compute capability >= 60, exactly one GPU per node.
    case Algorithm::PAT:
      return (c == Collective::ALL_GATHER || c == Collective::REDUCE_SCATTER) && in.ranks_per_node == 1 &&
             in.compute_capability >= 60;
    default: return false;
  }
}

}  // namespace

const char* to_string(Collective c) {
  switch (c) {
    case Collective::ALL_REDUCE: return "all-reduce";
    case Collective::REDUCE_SCATTER: return "reduce-scatter";
    case Collective::ALL_GATHER: return "all-gather";
    case Collective::SEND_RECV: return "send-recv";
    case Collective::BROADCAST: return "broadcast";
    case Collective::REDUCE: return "reduce";
    case Collective::ALL_TO_ALL: return "all-to-all";
  }
  return "unknown";
}

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::RING: return "ring";
    case Algorithm::TREE: return "tree";
    case Algorithm::NVLS: return "nvls";
    case Algorithm::NVLS_TREE: return "nvls-tree";
    case Algorithm::PAT: return "pat";
    case Algorithm::DIRECT: return "direct";
    case Algorithm::PAIRWISE: return "pairwise";
  }
  return "unknown";
}

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::LL: return "LL";
    case Protocol::LL128: return "LL128";
    case Protocol::SIMPLE: return "Simple";
  }
  return "unknown";
}

double protocol_efficiency(Protocol p) {
  switch (p) {
    case Protocol::LL: return 0.5;             // 8 of 16 bytes (device.h ncclLLFifoLine, reference §1.4)
    case Protocol::LL128: return 120.0 / 128;  // 15 of 16 8-byte elements (NCCL_LL128_DATAELEMS, reference §1.4)
    case Protocol::SIMPLE: return 1.0;
  }
  return 1.0;
}

double nvls_efficiency(int compute_capability) { return NVLS_EFFICIENCY[arch_row(compute_capability)]; }

double nccl_latency_us(const TuningInputs& in, Algorithm a, Protocol proto) {
  const int p = static_cast<int>(proto);
  if (in.ranks <= 1 || !enabled(in, a, p)) return INF;
  const double base = base_latency(a, p);
  const double intra = nvlink_latency(a, p);  // every node we model has its GPUs on NVLink
  // One GPU per node: the tree's network latency stands for every algorithm (§1.5).
  const double inter = in.ranks_per_node == 1 ? net_latency(Algorithm::TREE, p) : net_latency(a, p);
  const double log_nodes = std::floor(std::log2(static_cast<double>(in.nodes)));
  switch (a) {
    case Algorithm::RING: {
      if (!ring_family(in.collective)) {
        // Broadcast / reduce: one pipelined pass; we take the ring graph's channels to be the
        // same on every rank (sameChannels), so one step's latency (§1.5).
        const bool one_node = in.nodes == 1;
        const double lat = proto == Protocol::SIMPLE ? (one_node ? nvlink_latency(Algorithm::TREE, p)
                                                                 : net_latency(Algorithm::TREE, p))
                                                     : (one_node ? nvlink_latency(a, p) : net_latency(a, p));
        return base + lat;
      }
      const double steps = nsteps(in);
      const double n_inter = in.nodes == 1 ? 0.0
                             : in.collective == Collective::ALL_REDUCE ? 2.0 * (in.nodes - 1)
                                                                       : static_cast<double>(in.nodes - 1);
      const double ovh = in.nodes == 1 ? 0.0 : net_overhead_us(in) * (proto == Protocol::SIMPLE ? 3 : 1);
      return base + (steps - n_inter) * std::max(intra, ovh) + n_inter * inter;
    }
    case Algorithm::TREE: return base + 2 * ((in.ranks_per_node - 1) * intra + log_nodes * inter);
    case Algorithm::NVLS: return intra + (in.nodes > 1 ? inter : 0.0);  // replaces the base latency
    case Algorithm::NVLS_TREE: return base + intra + 2 * log_nodes * inter;
    case Algorithm::PAT: return base + log_nodes * inter / 3.5 + 2.8 * in.ranks;
    default: return INF;
  }
}

double nccl_algorithm_bandwidth_gbs(const TuningInputs& in, Algorithm a, Protocol proto) {
  const int p = static_cast<int>(proto);
  if (in.ranks <= 1 || !enabled(in, a, p)) return 0.0;
  const int row = arch_row(in.compute_capability), col = scale_column(in.nodes);
  const double nch = in.channels;
  const double bw = in.nodes <= 2 ? in.bw_intra_gbs : in.bw_inter_gbs;
  double bus = nch * bw;
  const double ll_max = ll_max_bw(in);
  if (a == Algorithm::NVLS || a == Algorithm::NVLS_TREE) {
    double intra = in.bw_intra_gbs * NVLS_EFFICIENCY[row] * (nch - 1) / nch;
    if (in.collective == Collective::ALL_REDUCE) intra *= 2;
    else intra *= static_cast<double>(in.ranks_per_node - 1) / in.ranks_per_node;
    double per_ch = intra;
    // Across nodes the network bounds each channel (NVLSTree on two nodes counts both directions).
    if (in.nodes > 1) per_ch = std::min(per_ch, in.bw_inter_gbs * (a == Algorithm::NVLS_TREE && in.nodes <= 2 ? 2 : 1));
    if (a == Algorithm::NVLS_TREE) per_ch = std::min(per_ch, PER_CH_MAX_NVLS_TREE_BW[row][col]);
    bus = nch * per_ch;
  }
  if (a == Algorithm::RING && p == LL) bus = std::min(ll_max, 0.5 * bus);
  if (a == Algorithm::RING && p == LL128) bus = std::min(0.92 * bus, nch * PER_CH_MAX_RING_LL128_BW[row][col]);
  if (a == Algorithm::TREE && in.collective == Collective::ALL_REDUCE) bus = std::min(0.92 * bus, nch * PER_CH_MAX_TREE_BW[row][col]);
  if (a == Algorithm::TREE && p == LL) bus = std::min(bus / 3.8, ll_max);
  if (a == Algorithm::TREE && p == LL128)
    bus = std::min(bus * (in.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nch * PER_CH_MAX_TREE_LL128_BW[row][col]);
  // The tree graph we assume is NCCL's balanced tree, so the TREE-pattern ×0.85 does not apply.
  if (a == Algorithm::PAT) bus *= 0.75;
  // Bus to algorithm bandwidth (§1.4, tuning.cc:376-383).
  const bool ag_rs = in.collective == Collective::ALL_GATHER || in.collective == Collective::REDUCE_SCATTER;
  if (a == Algorithm::RING || ((a == Algorithm::NVLS || a == Algorithm::NVLS_TREE) && !ag_rs))
    return bus * in.ranks / nsteps(in);
  if (a == Algorithm::TREE) return 0.5 * bus;
  return bus;  // PAT and NVLS for AG/RS: no conversion
}

double nccl_predicted_seconds(const TuningInputs& in, Algorithm a, Protocol proto) {
  const double lat_us = nccl_latency_us(in, a, proto);
  double bw = nccl_algorithm_bandwidth_gbs(in, a, proto);
  if (!std::isfinite(lat_us) || !(bw > 0)) return INF;
  if (a == Algorithm::TREE && in.collective == Collective::ALL_REDUCE && in.bytes >= 64) {
    const int index = static_cast<int>(std::floor(std::log2(in.bytes / 64)));
    if (index >= 0 && index < 23) bw *= TREE_CORRECTION[static_cast<int>(proto)][index];
  }
  double lat = lat_us;
  // "Plateau effect of ring" (tuning.cc:630-655, reference §1.1).
  if (a == Algorithm::RING && proto == Protocol::SIMPLE && in.collective == Collective::ALL_REDUCE && in.nodes > 1 &&
      in.bytes / (in.channels * in.ranks) >= 64)
    lat *= in.compute_capability < 80 ? 1.9 : 1.4;
  return (lat + in.bytes / (1000.0 * bw)) * 1e-6;
}

std::vector<AlgorithmChoice> nccl_enabled(const TuningInputs& in) {
  std::vector<AlgorithmChoice> out;
  for (const Algorithm a : {Algorithm::TREE, Algorithm::RING, Algorithm::NVLS, Algorithm::NVLS_TREE, Algorithm::PAT})
    for (const Protocol p : {Protocol::LL, Protocol::LL128, Protocol::SIMPLE}) {
      const double t = nccl_predicted_seconds(in, a, p);
      if (std::isfinite(t)) out.push_back({a, p, in.channels, t});
    }
  return out;
}

AlgorithmChoice nccl_choose(const TuningInputs& in) {
  if (in.collective == Collective::SEND_RECV || in.collective == Collective::ALL_TO_ALL)
    return {Algorithm::DIRECT, Protocol::SIMPLE, in.channels, 0.0};
  if (in.ranks <= 1) return {Algorithm::RING, Protocol::SIMPLE, 1, 0.0};  // one rank: a local copy (§1.1)
  AlgorithmChoice best;
  best.predicted_s = INF;
  for (const AlgorithmChoice& c : nccl_enabled(in))
    if (c.predicted_s < best.predicted_s) best = c;  // strictly less: the earlier of a tie
  if (!std::isfinite(best.predicted_s))
    throw std::logic_error(std::string("nccl_choose: no algorithm enabled for ") + to_string(in.collective));
  // Fewer channels for small messages (§1.8): threads per channel and bytes per thread.
  const bool nvls = best.algorithm == Algorithm::NVLS || best.algorithm == Algorithm::NVLS_TREE;
  const double threads = nvls || best.protocol == Protocol::LL128 ? 640 : 512;
  double threshold = best.protocol == Protocol::SIMPLE ? 64 : 8;
  if (best.protocol == Protocol::LL && best.algorithm == Algorithm::RING) threshold *= in.ranks;
  while (best.channels > 1 && in.bytes < best.channels * threads * threshold) --best.channels;
  return best;
}

}  // namespace trainsim::hardware
