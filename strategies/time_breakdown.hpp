#pragma once
// Where the time of one GPU went, in the strategies' words: compute, recompute, optimizer,
// exposed communication by parallel dimension, bubble. sim::attribute_stream does the
// accounting over plan categories; this maps them to Category.
#include <cstdint>

#include "sim/simulate.hpp"
#include "strategies/lower.hpp"

namespace trainsim::strategies {

struct TimeBreakdown {
  std::uint32_t rank = 0;  // the GPU whose time is broken down (the one that finishes last)
  // Seconds on that GPU's compute stream, summing to the iteration time:
  double compute_s = 0;     // forward and backward work
  double recompute_s = 0;   // forward work redone in backward
  double optimizer_s = 0;
  double exposed_tp_s = 0;  // tensor-parallel collectives the compute stream waits on
  double exposed_dp_s = 0;  // data-parallel gradient synchronisation not hidden
  double exposed_pp_s = 0;  // pipeline transfers in flight while the stage waits
  double bubble_s = 0;      // idle: waiting for other stages (pipeline fill/drain, imbalance)
  double total() const {
    return compute_s + recompute_s + optimizer_s + exposed_tp_s + exposed_dp_s + exposed_pp_s + bubble_s;
  }
};

// The compute stream of plan device `device`, split by category (folded fast-fidelity
// tasks by their parts); `rank` is that device's global rank.
TimeBreakdown break_down(const Lowered& lowered, const sim::Timeline& timeline, std::uint32_t device);

}  // namespace trainsim::strategies
