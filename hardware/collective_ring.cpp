// Ring all-reduce, reduce-scatter and all-gather as NCCL runs them in steady state: the
// buffer is cut into chunks that circulate, so all n ring edges are busy at once. Each edge
// carries factor·S, factor = 2(n−1)/n for all-reduce and (n−1)/n for reduce-scatter and
// all-gather (S = the whole buffer). When a group has k > 1 GPUs in each of several nodes,
// NCCL runs k rings (channels) that leave each node through different NICs; we do the
// same, each ring carrying S/k.
#include "hardware/detail/collective_flows.hpp"

namespace trainsim::hardware::detail {
namespace {

// The rings a group runs, each as the rank order around it.
//
// One ring in the given order, unless the group spans m > 1 nodes with the same k > 1
// members on each: then k rings, each leaving every node through a different member's NIC.
// With members numbered 0..k-1 on each node (in the order given), ring j enters node i at
// member e_i = (j + c_i) mod k and leaves it at the member where it enters node i+1,
// visiting the other members in between. The offsets alternate c = 0, 1, 0, 1, ... so that
// a ring leaves one node and enters the next through members at the same position: the
// same rail when the group is rail-aligned, so that ring traffic stays under one leaf as
// NCCL's does. An odd m closes the cycle with c_{m-1} = 2 (k >= 3); with k = 2 and odd m
// one hop per ring has to change rails. Over the k rings every member sends and receives
// through its NIC exactly once, so each NIC carries 1/k of the traffic.
std::vector<std::vector<std::uint32_t>> build_rings(const GroupShape& g, std::span<const std::uint32_t> ranks) {
  const std::size_t m = g.members.size();
  const std::size_t k = g.ranks_per_node;
  if (m == 1 || k == 1 || !g.uniform) return {std::vector<std::uint32_t>(ranks.begin(), ranks.end())};

  std::vector<std::size_t> offset(m);
  for (std::size_t i = 0; i < m; ++i) offset[i] = i % 2;
  if (m % 2 == 1 && k >= 3) offset[m - 1] = 2;

  std::vector<std::vector<std::uint32_t>> rings(k);
  for (std::size_t j = 0; j < k; ++j) {
    auto& ring = rings[j];
    ring.reserve(m * k);
    for (std::size_t i = 0; i < m; ++i) {
      const std::size_t entry = (j + offset[i]) % k;
      std::size_t exit = (j + offset[(i + 1) % m]) % k;
      if (exit == entry) exit = (entry + 1) % k;  // only k = 2 with odd m
      ring.push_back(g.members[i][entry]);
      for (std::size_t t = 1; t < k; ++t) {
        const std::size_t p = (entry + t) % k;
        if (p != exit) ring.push_back(g.members[i][p]);
      }
      ring.push_back(g.members[i][exit]);
    }
  }
  return rings;
}

}  // namespace

void ring_flows(FlowBuilder& out, Collective c, std::span<const std::uint32_t> ranks) {
  const auto n = static_cast<double>(ranks.size());
  if (ranks.size() < 2) return;
  const double factor = c == Collective::ALL_REDUCE ? 2 * (n - 1) / n : (n - 1) / n;
  const auto rings = build_rings(group_shape(out.cluster(), ranks), ranks);
  const double per_ring = factor / static_cast<double>(rings.size());
  for (const auto& ring : rings)
    for (std::size_t i = 0; i < ring.size(); ++i) out.route(ring[i], ring[(i + 1) % ring.size()], per_ring);
}

}  // namespace trainsim::hardware::detail
