#pragma once
// Placeholder for the calibration harness (CUDA/NCCL microbenchmarks and fits into the
// hardware profile schema). Nothing here is used yet.
namespace trainsim::calibration {
const char* status();
}
