#pragma once
// The memory of the most loaded GPU at its peak, by memory class, against its capacity:
// the "will it fit?" answer of a run.
#include <array>
#include <cstdint>

#include "hardware/cluster.hpp"
#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/program.hpp"

namespace trainsim::report {

struct MemoryBreakdown {
  std::uint32_t rank = 0;  // the most loaded GPU
  double peak_bytes = 0;
  std::array<double, static_cast<int>(strategies::MemClass::COUNT)> at_peak{};  // by class
  double capacity_bytes = 0;
  bool out_of_memory = false;
};

// The device with the highest peak (lowest id on ties), by class at its first peak moment.
MemoryBreakdown memory_breakdown(const strategies::Lowered& lowered, const sim::Timeline& timeline,
                                 const hardware::Cluster& cluster);

}  // namespace trainsim::report
