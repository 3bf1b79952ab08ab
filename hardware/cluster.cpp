#include "hardware/cluster.hpp"

#include "hardware/detail/fabric_layout.hpp"
#include "hardware/detail/profile_check.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace trainsim::hardware {
namespace {

// Link ids are 32-bit (sim::FlowTemplate routes) and every GPU owns four links; 2^24 GPUs
// is far beyond any cluster we model while keeping every id and count exact.
constexpr std::int64_t MAX_GPUS = std::int64_t{1} << 24;

void validate(const ClusterSpec& spec, const GpuProfile& gpu) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("cluster spec: " + what); };
  if (spec.gpu.empty()) fail("gpu is empty (name a GPU profile, e.g. \"h100-sxm\")");
  if (spec.gpu != gpu.name()) {
    fail("gpu is '" + spec.gpu + "' but the profile given is '" + gpu.name() + "'");
  }
  if (spec.nodes < 1) fail("nodes must be >= 1, got " + std::to_string(spec.nodes));
  if (spec.gpus_per_node < 1) fail("gpus_per_node must be >= 1, got " + std::to_string(spec.gpus_per_node));
  if (spec.nodes > MAX_GPUS / spec.gpus_per_node) {
    fail("nodes * gpus_per_node = " + std::to_string(spec.nodes) + " * " + std::to_string(spec.gpus_per_node) +
         " exceeds the supported " + std::to_string(MAX_GPUS) + " GPUs");
  }
  if (!(std::isfinite(spec.nic_gbps) && spec.nic_gbps > 0)) {
    fail("nic_gbps must be > 0 (line rate of each GPU's NIC in Gb/s, e.g. 400 for NDR), got " +
         std::to_string(spec.nic_gbps));
  }
  if (!(std::isfinite(spec.oversubscription) && spec.oversubscription >= 1)) {
    fail("oversubscription must be >= 1 (leaf down/up bandwidth; 1 = non-blocking), got " +
         std::to_string(spec.oversubscription));
  }
  if (spec.nodes_per_leaf < 1) fail("nodes_per_leaf must be >= 1, got " + std::to_string(spec.nodes_per_leaf));
  detail::require_valid_profile(gpu, detail::ProfilePart::NETWORK, "Cluster");
}

}  // namespace

Cluster::Cluster(ClusterSpec spec, GpuProfile gpu) : spec_(std::move(spec)), gpu_(std::move(gpu)) {
  static std::atomic<std::uint64_t> next_id{1};
  id_ = next_id.fetch_add(1, std::memory_order_relaxed);
  validate(spec_, gpu_);
  const std::uint32_t g_count = num_gpus();
  num_leaves_ = static_cast<std::uint32_t>(detail::num_leaves(spec_));

  const double nvlink_bw = gpu_.nvlink_bytes_per_s().value();
  const double nvlink_lat = gpu_.nvlink_latency_s().value();
  // What NCCL gets out of a NIC, not its line rate (reference §2.4).
  const double nic_bw = spec_.nic_gbps * 1e9 / 8.0 * gpu_.nic_efficiency().value();
  const double net_lat = gpu_.network_latency_s().value();

  links_.reserve(6 * static_cast<std::size_t>(g_count) + 2 * static_cast<std::size_t>(num_leaves_));
  for (std::uint32_t g = 0; g < g_count; ++g) {
    links_.push_back({LinkKind::NVLINK_UP, nvlink_bw, nvlink_lat, g});
    links_.push_back({LinkKind::NVLINK_DOWN, nvlink_bw, nvlink_lat, g});
    links_.push_back({LinkKind::NIC_UP, nic_bw, net_lat, g});
    links_.push_back({LinkKind::NIC_DOWN, nic_bw, net_lat, g});
  }
  const auto gpn = static_cast<std::uint32_t>(spec_.gpus_per_node);
  const auto npl = static_cast<std::uint32_t>(spec_.nodes_per_leaf);
  const auto nodes = static_cast<std::uint32_t>(spec_.nodes);
  for (std::uint32_t leaf = 0; leaf < num_leaves_; ++leaf) {
    // One NIC per node of the leaf's group sits under it; the last group may be partial.
    const std::uint32_t group = leaf / gpn;
    const std::uint32_t first_node = group * npl;
    const std::uint32_t nics = std::min(npl, nodes - first_node);
    const double up_bw = static_cast<double>(nics) * nic_bw / spec_.oversubscription;
    // NCCL's NET latency is per step, end to end; the max-latency rule of the collectives
    // therefore gives the same alpha whether or not a step crosses the spine.
    links_.push_back({LinkKind::LEAF_UP, up_bw, net_lat, leaf});
    links_.push_back({LinkKind::LEAF_DOWN, up_bw, net_lat, leaf});
  }
  // Host copies: after every network link, so that network link ids do not depend on them.
  const double pcie_bw = gpu_.pcie_bytes_per_s().value();
  for (std::uint32_t g = 0; g < g_count; ++g) {
    links_.push_back({LinkKind::PCIE_D2H, pcie_bw, 0.0, g});
    links_.push_back({LinkKind::PCIE_H2D, pcie_bw, 0.0, g});
  }
}

std::vector<std::uint32_t> Cluster::host_route(std::uint32_t gpu, bool to_host) const {
  const std::uint32_t n = num_gpus();
  if (gpu >= n) throw std::out_of_range("Cluster::host_route: GPU " + std::to_string(gpu) + " out of range");
  const std::uint32_t base = 4 * n + 2 * num_leaves_;
  return {base + 2 * gpu + (to_host ? 0u : 1u)};
}

std::uint32_t Cluster::leaf_of(std::uint32_t gpu) const {
  const auto gpn = static_cast<std::uint32_t>(spec_.gpus_per_node);
  const std::uint32_t group = node_of(gpu) / static_cast<std::uint32_t>(spec_.nodes_per_leaf);
  return group * gpn + gpu % gpn;
}

std::vector<std::uint32_t> Cluster::route(std::uint32_t src, std::uint32_t dst) const {
  const std::uint32_t n = num_gpus();
  if (src >= n || dst >= n) {
    throw std::out_of_range("Cluster::route: GPU " + std::to_string(src >= n ? src : dst) + " out of range (" +
                            std::to_string(n) + " GPUs)");
  }
  if (src == dst) return {};
  if (node_of(src) == node_of(dst)) return {detail::nvlink_up_link(src), detail::nvlink_down_link(dst)};
  const std::uint32_t src_leaf = leaf_of(src);
  const std::uint32_t dst_leaf = leaf_of(dst);
  if (src_leaf == dst_leaf) return {detail::nic_up_link(src), detail::nic_down_link(dst)};
  return {detail::nic_up_link(src), detail::leaf_up_link(n, src_leaf), detail::leaf_down_link(n, dst_leaf),
          detail::nic_down_link(dst)};
}

sim::NetworkSpec Cluster::network() const {
  sim::NetworkSpec net;
  net.capacity_bytes_per_s.reserve(links_.size());
  for (const auto& l : links_) net.capacity_bytes_per_s.push_back(l.bytes_per_s);
  return net;
}

}  // namespace trainsim::hardware
