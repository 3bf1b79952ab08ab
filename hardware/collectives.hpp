#pragma once
// The communication library model: NCCL-like ring collectives and point-to-point sends
// decomposed into flows on the cluster's routes, each with its closed-form α–β time.
//
// A ring collective is modelled as NCCL runs it in steady state: the buffer is cut into
// chunks that circulate, so all n ring edges are busy at once. It becomes n concurrent
// flows (rank i → rank i+1) each carrying factor·S bytes, factor = 2(n−1)/n for
// all-reduce and (n−1)/n for reduce-scatter / all-gather (S = the whole buffer), plus
// nsteps·α latency (nsteps = 2(n−1) or n−1). On an uncontended ring this is exactly the
// closed form. When a group has k > 1 GPUs in each of several nodes, NCCL runs k rings
// (channels) that leave each node through different NICs; we do the same, each ring
// carrying S/k.
#include <cstdint>
#include <span>
#include <string>

#include "hardware/cluster.hpp"
#include "sim/plan.hpp"

namespace trainsim::hardware {

enum class Collective : std::uint8_t { ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, SEND_RECV };
const char* to_string(Collective c);

// Flow pattern of `c` over `ranks` (global GPU indices in ring order; for SEND_RECV
// exactly {src, dst}). Flows carry bytes_per_unit × S where S is the instance's bytes.
sim::CommPattern ring_pattern(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks);

// Closed-form ring time: steps·α + factor·S/β (formulas.md).
double ring_closed_form_seconds(Collective c, std::int64_t n, double bytes, double alpha_s, double beta_bytes_per_s);

// Closed-form time of `c` over `ranks` on this cluster: the α of the slowest ring edge and
// the β of the ring's bottleneck link, given the rings that run in parallel.
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
                                 std::span<const std::vector<std::uint32_t>> groups);

// How much longer collective `a` (its symmetric groups) moves its bytes while `b` runs
// beside it on shared links (a tensor-parallel all-reduce on NVLink while a data-parallel
// ring also crosses NVLink): 0 when they share no link. Every flow of either runs at once and
// the links are shared max-min fairly between flows (progressive filling); `a` is as slow as
// its slowest flow.
double interference_slowdown(const Cluster& cluster, Collective a, std::span<const std::vector<std::uint32_t>> groups_a,
                             Collective b, std::span<const std::vector<std::uint32_t>> groups_b);

}  // namespace trainsim::hardware
