// PAT (parallel aggregated trees, NCCL 2.23+) for all-gather and reduce-scatter at one GPU
// per node: logarithmic steps, each rank still moving (n−1)/n·S. Its flows are those of the
// Bruck-style exchange it generalises: in the round at distance d = 1, 2, 4, … < n, rank i
// sends to rank i+d (mod n) min(d, n−d) of the n blocks, (n−1) blocks in all.
#include "hardware/detail/collective_flows.hpp"

#include <algorithm>

namespace trainsim::hardware::detail {

void pat_flows(FlowBuilder& out, std::span<const std::uint32_t> ranks) {
  const std::size_t n = ranks.size();
  for (std::size_t d = 1; d < n; d *= 2) {
    const double blocks = static_cast<double>(std::min(d, n - d));
    for (std::size_t i = 0; i < n; ++i) out.route(ranks[i], ranks[(i + d) % n], blocks / static_cast<double>(n));
  }
}

}  // namespace trainsim::hardware::detail
