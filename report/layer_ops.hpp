#pragma once
// Where one transformer layer's compute time goes, op by op: the forward and backward
// kernels of each op of the layer as the run shards it, priced by the run's cost model,
// most expensive first. A planner reads it to see which kernels dominate (GEMMs,
// attention, the memory-bound passes) before asking why a run is slow.
#include <cstddef>
#include <string>
#include <vector>

#include "hardware/cost_model.hpp"
#include "strategies/program.hpp"

namespace trainsim::report {

struct OpShare {
  std::string name;
  double seconds = 0;  // forward + backward of one micro-batch, launches included
  double share = 0;    // of the layer's forward + backward
};

// The `n` most expensive ops of one transformer layer (ties: the earlier op first).
std::vector<OpShare> top_layer_ops(const strategies::Program& program, const hardware::CostModel& cost,
                                   std::size_t n = 10);

}  // namespace trainsim::report
