#pragma once
// What the compute stream's work is made of, by kernel class: the GEMMs of the linear
// layers, the attention core (the fused kernel, or the unfused path's batched matmuls), the
// memory-bound kernels (norms, activations, softmax, dropout, residual adds, embedding,
// cross-entropy), and the forward work that recompute redoes. A reader of a prediction
// that is off sees from it which kind of kernel carries the time.
#include <cstdint>

#include "hardware/cost_model.hpp"
#include "strategies/program.hpp"

namespace trainsim::report {

// Seconds over the whole iteration on one rank's compute stream. gemm_s, attention_s and
// memory_bound_s are the forward and backward work (the time breakdown's compute_s),
// recompute_s the recomputed forwards (its recompute_s), each priced by the cost model as
// the Plan prices it. slowdown_s is what the simulated compute and recompute took beyond
// that: kernels slowed by communication they share the GPU with (the profile's
// comm_overlap_slowdown); it is zero, up to the engine's picosecond rounding, when nothing
// overlaps. The five add up to compute_s + recompute_s.
struct ComputeByClass {
  double gemm_s = 0;
  double attention_s = 0;
  double memory_bound_s = 0;
  double recompute_s = 0;
  double slowdown_s = 0;
  double total() const { return gemm_s + attention_s + memory_bound_s + recompute_s + slowdown_s; }
};

// The split of the compute and recompute steps of the role of pipeline stage `stage` over
// one iteration (every micro-batch), with slowdown_s taken against `simulated_s`, the
// simulated compute + recompute seconds of a rank of that stage.
ComputeByClass compute_by_class(const strategies::Program& program, std::int32_t stage,
                                const hardware::CostModel& cost, double simulated_s);

}  // namespace trainsim::report
