#pragma once
// NCCL's tuning model (src/graph/tuning.cc, NCCL 2.30.7) as the reference restates it
// (../shared/reference/nccl-and-hardware.md §1): for a collective of nBytes over a group
// it predicts, per (algorithm, protocol), time = latency + nBytes / algorithm bandwidth,
// and runs the pair with the least predicted time. Every constant below is cited to the
// reference section that read it from tuning.cc.
//
// What the model does not see is taken from our topology (tuning_inputs): the number of
// channels and the per-channel bandwidths NCCL's topology search would find.
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::hardware {

enum class Collective : std::uint8_t { ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, SEND_RECV, BROADCAST, REDUCE, ALL_TO_ALL };
const char* to_string(Collective c);

// NCCL's algorithms, plus the point-to-point schedules NCCL's model does not cover
// (send/recv and all-to-all are grouped point-to-point operations in NCCL).
enum class Algorithm : std::uint8_t { RING, TREE, NVLS, NVLS_TREE, PAT, DIRECT, PAIRWISE };
enum class Protocol : std::uint8_t { LL, LL128, SIMPLE };
const char* to_string(Algorithm a);
const char* to_string(Protocol p);

struct AlgorithmChoice {
  Algorithm algorithm = Algorithm::RING;
  Protocol protocol = Protocol::SIMPLE;
  int channels = 1;               // after NCCL's small-message channel reduction (§1.8)
  double predicted_s = 0;         // NCCL's own predicted time of the chosen pair
};

// What NCCL's model reads about a communicator and the machine it runs on.
struct TuningInputs {
  Collective collective = Collective::ALL_REDUCE;
  double bytes = 0;               // NCCL's nBytes: the whole buffer (for AG/RS nRanks·count)
  int ranks = 1;
  int nodes = 1;
  int ranks_per_node = 1;         // NCCL's ppn: the most local ranks of any node
  int compute_capability = 80;    // 80 Ampere, 90 Hopper, 100 Blackwell
  bool nvls = false;              // NVLink SHARP: NVSwitch and compute capability >= 90
  bool amd_host = false;          // the nodes' CPUs are AMD x86 (network overhead, LL caps)
  int channels = 1;               // the ring graph's nChannels
  double bw_intra_gbs = 0;        // per channel, GB/s
  double bw_inter_gbs = 0;        // per channel, GB/s
};

// NCCL's prediction for one pair; infinity when the model does not enable it.
double nccl_latency_us(const TuningInputs& in, Algorithm a, Protocol p);
double nccl_algorithm_bandwidth_gbs(const TuningInputs& in, Algorithm a, Protocol p);
double nccl_predicted_seconds(const TuningInputs& in, Algorithm a, Protocol p);

// Every pair the model enables for these inputs, with its predicted time (channels: the
// ring graph's), in NCCL's order: Tree, Ring, NVLS, NVLSTree, PAT, each with LL, LL128,
// Simple.
std::vector<AlgorithmChoice> nccl_enabled(const TuningInputs& in);

// The pair NCCL's model picks (least predicted time; ties go to the earlier pair in
// nccl_enabled's order), its channels cut for small messages.
// SEND_RECV and ALL_TO_ALL, which the model does not cover, get DIRECT/SIMPLE.
AlgorithmChoice nccl_choose(const TuningInputs& in);

// Protocol payload efficiency on the wire (§1.4: LL carries 8 data bytes per 16-byte
// line, LL128 120 of 128, Simple has no flags).
double protocol_efficiency(Protocol p);
// NVLS efficiency of the NVSwitch reduction, per architecture (§1.3 nvlsEfficiency).
double nvls_efficiency(int compute_capability);

}  // namespace trainsim::hardware
