#include "report/memory_breakdown.hpp"

namespace trainsim::report {

MemoryBreakdown memory_breakdown(const strategies::Lowered& lowered, const sim::Timeline& tl,
                                 const hardware::Cluster& cluster) {
  const sim::Plan& plan = lowered.plan;
  std::uint32_t loaded = 0;
  for (std::uint32_t d = 1; d < plan.num_devices; ++d)
    if (tl.memory[d].peak_bytes > tl.memory[loaded].peak_bytes) loaded = d;
  const sim::DeviceMemory& mem = tl.memory[loaded];
  MemoryBreakdown m;
  m.rank = lowered.device_rank[loaded];
  m.peak_bytes = static_cast<double>(mem.peak_bytes);
  for (std::size_t c = 0; c < m.at_peak.size() && c < mem.at_peak.size(); ++c)
    m.at_peak[c] = static_cast<double>(mem.at_peak[c]);
  m.capacity_bytes = cluster.gpu().hbm_capacity_bytes().value();
  m.out_of_memory = m.peak_bytes > m.capacity_bytes;
  return m;
}

}  // namespace trainsim::report
