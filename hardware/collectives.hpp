#pragma once
// The communication library model: collectives as NCCL runs them. For a collective over a
// group, NCCL's tuning model (hardware/nccl_tuning.hpp) picks the algorithm, protocol and
// channels; the algorithm decomposes into flows on the cluster's links (one file per
// algorithm: hardware/collective_*.cpp), and the latency is NCCL's, charged per step on the
// link type the step crosses (NVLink steps pay NVLink latency, network steps the network's).
//
// Bytes: S is the whole buffer (for all-gather and reduce-scatter n times one rank's
// shard, as NCCL's nBytes); flows carry bytes_per_unit × S. A protocol's flag bytes are
// carried too (LL moves 2 bytes per payload byte, LL128 128 per 120).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hardware/cluster.hpp"
#include "hardware/nccl_tuning.hpp"
#include "sim/plan.hpp"

namespace trainsim::hardware {

// What NCCL's model reads about `ranks` on this cluster: nodes, ranks per node, the GPU's
// compute capability, and the channels and per-channel bandwidths its topology search
// would find (see tuning_inputs in collectives.cpp for how they are derived).
TuningInputs tuning_inputs(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks, double bytes);

// The algorithm, protocol and channels NCCL's tuning model picks for `bytes` over `ranks`.
AlgorithmChoice choose_algorithm(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks, double bytes);

// Flow pattern of `c` over `ranks` (global GPU indices; ring order for rings, the root
// first for broadcast/reduce, exactly {src, dst} for SEND_RECV) with `choice`'s algorithm
// and protocol. Throws std::invalid_argument when the algorithm does not run `c` on this
// group (a tree for all-gather, NVLS before Hopper or across nodes, PAT with two GPUs in a node).
sim::CommPattern collective_pattern(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks,
                                    const AlgorithmChoice& choice);
// Ring with the Simple protocol (DIRECT for SEND_RECV / ALL_TO_ALL).
sim::CommPattern ring_pattern(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks);

// Closed-form ring time: steps·α + factor·S/β (formulas.md).
double ring_closed_form_seconds(Collective c, std::int64_t n, double bytes, double alpha_s, double beta_bytes_per_s);

// Closed-form time of `c` over `ranks`: NCCL's latency for the algorithm and the bytes of
// the group's most loaded link at that link's bandwidth. Without a choice, NCCL's.
double closed_form_seconds(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks, double bytes,
                           const AlgorithmChoice& choice);
double closed_form_seconds(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks, double bytes);

// The closed form of a collective that runs at the same time in several groups of the same
// shape (every data-parallel group of a pipeline stage, every pair of ranks sending across
// a stage boundary): each link carries the load of every group's flows, and the
// collective takes as long as its most loaded link needs — the contention that symmetric
// traffic puts on shared links (oversubscribed leaf uplinks, rings that cross leaves).
// Linear in the bytes: seconds(S) = latency_s + seconds_per_byte · S.
struct ClosedForm {
  double latency_s = 0;
  double seconds_per_byte = 0;
  double seconds(double bytes, double latency_scale = 1.0) const {
    return latency_s * latency_scale + seconds_per_byte * bytes;
  }
};
ClosedForm symmetric_closed_form(const Cluster& cluster, Collective c,
                                 std::span<const std::vector<std::uint32_t>> groups, const AlgorithmChoice& choice);
// Ring / Simple (DIRECT for send/recv).
ClosedForm symmetric_closed_form(const Cluster& cluster, Collective c,
                                 std::span<const std::vector<std::uint32_t>> groups);

// How much longer collective `a` (its symmetric groups) moves its bytes while `b` runs
// beside it on shared links (a tensor-parallel all-reduce on NVLink while a data-parallel
// ring also crosses NVLink): 0 when they share no link. Every flow of either runs at once and
// the links are shared max-min fairly between flows (progressive filling); `a` is as slow as
// its slowest flow.
double interference_slowdown(const Cluster& cluster, Collective a, std::span<const std::vector<std::uint32_t>> groups_a,
                             const AlgorithmChoice& choice_a, Collective b,
                             std::span<const std::vector<std::uint32_t>> groups_b, const AlgorithmChoice& choice_b);

}  // namespace trainsim::hardware
