// Classic (not rail-aligned) fat tree of two or three switch levels, built port by port:
// every NIC of nodes_per_leaf consecutive nodes is cabled to one leaf (d = nodes_per_leaf ×
// rails NICs). Oversubscription o is applied at the leaf: a leaf has u = ceil(d / o)
// uplinks of one NIC's rate.
//   Two levels: u spines; every leaf has one link to every spine.
//   Three levels: pods of leaves_per_pod (P) leaves and u aggregation switches; every leaf
//   has one link to each aggregation switch of its pod; aggregation switch j of every pod
//   has P uplinks, one to each core switch of plane j (u × P core switches), so the upper
//   level is non-blocking.
// Routes go up to the lowest common level and down; which of the equal-cost paths (ECMP)
// a pair takes is a hash of the two NIC ids, as a switch's ECMP hash on the flow's
// addresses would pick one: (src + dst) mod u for the aggregation or spine switch, and
// ((src + dst) / u) mod P for the core switch.
#include <algorithm>
#include <cmath>

#include "hardware/detail/fabric_kinds.hpp"

namespace trainsim::hardware::detail {
namespace {

class FatTree final : public Fabric {
 public:
  void build(Topology& t, const FabricInput& in, const FabricSpec& spec) override {
    three_ = spec.levels == 3;
    nics_per_leaf_ = static_cast<std::uint32_t>(spec.nodes_per_leaf) * in.rails;
    uplinks_ = static_cast<std::uint32_t>(std::ceil(static_cast<double>(nics_per_leaf_) / spec.oversubscription));
    const std::uint32_t nics = in.nodes * in.rails;
    const std::uint32_t leaves = (nics + nics_per_leaf_ - 1) / nics_per_leaf_;
    leaves_per_pod_ = three_ ? static_cast<std::uint32_t>(spec.leaves_per_pod) : leaves;
    const std::uint32_t pods = (leaves + leaves_per_pod_ - 1) / leaves_per_pod_;
    const double bw = in.nic_bytes_per_s;
    const double lat = in.latency_s;  // NCCL's NET latency is end to end, charged once per step

    t.name_level(0, "leaf");
    t.name_level(1, three_ ? "agg" : "spine");
    if (three_) t.name_level(2, "core");
    const auto first_leaf = static_cast<std::uint32_t>(t.vertices().size());
    for (std::uint32_t l = 0; l < leaves; ++l) t.add_vertex(VertexKind::NET_SWITCH, 0, l);
    const auto first_mid = static_cast<std::uint32_t>(t.vertices().size());
    const std::uint32_t mids = three_ ? pods * uplinks_ : uplinks_;
    for (std::uint32_t m = 0; m < mids; ++m) t.add_vertex(VertexKind::NET_SWITCH, 1, m);
    const auto first_core = static_cast<std::uint32_t>(t.vertices().size());
    const std::uint32_t cores = three_ ? uplinks_ * leaves_per_pod_ : 0;
    for (std::uint32_t c = 0; c < cores; ++c) t.add_vertex(VertexKind::NET_SWITCH, 2, c);

    nic_link_.resize(nics);
    for (std::uint32_t k = 0; k < nics; ++k) {
      nic_link_[k] = t.add_duplex(in.first_nic_vertex + k, first_leaf + k / nics_per_leaf_, LinkKind::NIC_UP,
                                  LinkKind::NIC_DOWN, bw, lat, k);
    }
    // Leaf l's uplink j goes to spine j, or to aggregation switch j of its pod.
    leaf_link_.resize(static_cast<std::size_t>(leaves) * uplinks_);
    for (std::uint32_t l = 0; l < leaves; ++l) {
      const std::uint32_t base = three_ ? (l / leaves_per_pod_) * uplinks_ : 0;
      for (std::uint32_t j = 0; j < uplinks_; ++j) {
        leaf_link_[l * uplinks_ + j] =
            t.add_duplex(first_leaf + l, first_mid + base + j, LinkKind::LEAF_UP, LinkKind::LEAF_DOWN, bw, lat, l);
      }
    }
    // Aggregation switch (pod p, plane j) uplink m goes to core j × P + m.
    mid_link_.resize(static_cast<std::size_t>(three_ ? mids : 0) * leaves_per_pod_);
    if (three_) {
      for (std::uint32_t a = 0; a < mids; ++a) {
        const std::uint32_t plane = a % uplinks_;
        for (std::uint32_t m = 0; m < leaves_per_pod_; ++m) {
          mid_link_[a * leaves_per_pod_ + m] = t.add_duplex(first_mid + a, first_core + plane * leaves_per_pod_ + m,
                                                            LinkKind::LEAF_UP, LinkKind::LEAF_DOWN, bw, lat, a);
        }
      }
    }
  }

  void route(std::uint32_t s, std::uint32_t d, std::vector<std::uint32_t>& out) const override {
    const std::uint32_t ls = leaf_of(s);
    const std::uint32_t ld = leaf_of(d);
    out.push_back(nic_link_[s]);
    if (ls != ld) {
      const std::uint32_t j = (s + d) % uplinks_;
      out.push_back(leaf_link_[ls * uplinks_ + j]);
      const std::uint32_t ps = ls / leaves_per_pod_;
      const std::uint32_t pd = ld / leaves_per_pod_;
      if (three_ && ps != pd) {
        const std::uint32_t m = ((s + d) / uplinks_) % leaves_per_pod_;
        out.push_back(mid_link_[(ps * uplinks_ + j) * leaves_per_pod_ + m]);
        out.push_back(mid_link_[(pd * uplinks_ + j) * leaves_per_pod_ + m] + 1);
      }
      out.push_back(leaf_link_[ld * uplinks_ + j] + 1);
    }
    out.push_back(nic_link_[d] + 1);
  }

  std::uint32_t leaf_of(std::uint32_t nic) const override { return nic / nics_per_leaf_; }

 private:
  bool three_ = false;
  std::uint32_t nics_per_leaf_ = 1;
  std::uint32_t uplinks_ = 1;
  std::uint32_t leaves_per_pod_ = 1;
  std::vector<std::uint32_t> nic_link_;   // NIC -> leaf; +1 back
  std::vector<std::uint32_t> leaf_link_;  // (leaf, uplink) -> spine/aggregation; +1 back
  std::vector<std::uint32_t> mid_link_;   // (aggregation, uplink) -> core; +1 back
};

}  // namespace

std::unique_ptr<Fabric> make_fat_tree() { return std::make_unique<FatTree>(); }

}  // namespace trainsim::hardware::detail
