#pragma once
// FLOPs of an iteration beyond the model's own: what hardware utilization (HFU) counts and
// model FLOPs utilization (MFU) does not.
#include "strategies/program.hpp"

namespace trainsim::report {

// Forward work that recompute does again in backward, per iteration, summed over all GPUs
// (every micro-batch of every role, times its tensor- and data-parallel copies).
double recompute_flops(const strategies::Program& program);

}  // namespace trainsim::report
