// Rail-optimized two-level fat tree, as in a DGX SuperPOD scalable unit (reference §3.3):
// every NIC of rail r in a group of nodes_per_leaf nodes is cabled to that group's leaf for
// rail r; leaves join through the spine layer, drawn as one vertex whose link to each leaf
// carries that leaf's whole up-bandwidth (NICs under it × NIC rate / oversubscription).
// Same rail, same group: one hop; otherwise through the spine.
#include <algorithm>

#include "hardware/detail/fabric_kinds.hpp"

namespace trainsim::hardware::detail {
namespace {

class RailOptimized final : public Fabric {
 public:
  void build(Topology& t, const FabricInput& in, const FabricSpec& spec) override {
    rails_ = in.rails;
    nodes_per_leaf_ = static_cast<std::uint32_t>(spec.nodes_per_leaf);
    const std::uint32_t groups = (in.nodes + nodes_per_leaf_ - 1) / nodes_per_leaf_;
    const std::uint32_t leaves = groups * rails_;
    t.name_level(0, "leaf");
    t.name_level(1, "spine");
    const std::uint32_t first_leaf = static_cast<std::uint32_t>(t.vertices().size());
    for (std::uint32_t l = 0; l < leaves; ++l) t.add_vertex(VertexKind::NET_SWITCH, 0, l);
    const std::uint32_t spine = t.add_vertex(VertexKind::NET_SWITCH, 1, 0);
    const std::uint32_t nics = in.nodes * rails_;
    nic_link_.resize(nics);
    for (std::uint32_t k = 0; k < nics; ++k) {
      nic_link_[k] = t.add_duplex(in.first_nic_vertex + k, first_leaf + leaf_of(k), LinkKind::NIC_UP, LinkKind::NIC_DOWN,
                                  in.nic_bytes_per_s, in.latency_s, k);
    }
    leaf_link_.resize(leaves);
    for (std::uint32_t l = 0; l < leaves; ++l) {
      // One NIC per node of the leaf's group sits under it; the last group may be partial.
      const std::uint32_t first_node = (l / rails_) * nodes_per_leaf_;
      const std::uint32_t under = std::min(nodes_per_leaf_, in.nodes - first_node);
      const double up = static_cast<double>(under) * in.nic_bytes_per_s / spec.oversubscription;
      // NCCL's NET latency is per step, end to end: crossing the spine costs no more.
      leaf_link_[l] = t.add_duplex(first_leaf + l, spine, LinkKind::LEAF_UP, LinkKind::LEAF_DOWN, up, in.latency_s, l);
    }
  }

  void route(std::uint32_t s, std::uint32_t d, std::vector<std::uint32_t>& out) const override {
    const std::uint32_t ls = leaf_of(s);
    const std::uint32_t ld = leaf_of(d);
    out.push_back(nic_link_[s]);
    if (ls != ld) {
      out.push_back(leaf_link_[ls]);
      out.push_back(leaf_link_[ld] + 1);
    }
    out.push_back(nic_link_[d] + 1);
  }

  std::uint32_t leaf_of(std::uint32_t nic) const override {
    const std::uint32_t node = nic / rails_;
    return (node / nodes_per_leaf_) * rails_ + nic % rails_;
  }

 private:
  std::uint32_t rails_ = 1;
  std::uint32_t nodes_per_leaf_ = 1;
  std::vector<std::uint32_t> nic_link_;   // NIC k -> its leaf; +1 the way back
  std::vector<std::uint32_t> leaf_link_;  // leaf l -> spine; +1 the way back
};

}  // namespace

std::unique_ptr<Fabric> make_rail_optimized() { return std::make_unique<RailOptimized>(); }

}  // namespace trainsim::hardware::detail
