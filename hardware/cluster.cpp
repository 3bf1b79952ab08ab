#include "hardware/cluster.hpp"

#include "hardware/detail/profile_check.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace trainsim::hardware {
namespace {

// Link ids are 32-bit (sim::FlowTemplate routes) and every GPU owns some twenty links with
// its NIC and its share of the PCIe tree; 2^24 GPUs is far beyond any cluster we model
// while keeping every id and count exact.
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
  if (spec.fabric == FabricKind::RAIL_OPTIMIZED && spec.fabric_levels != 2) {
    fail("fabric_levels must be 2 for a rail-optimized fabric, got " + std::to_string(spec.fabric_levels));
  }
  if (spec.fabric == FabricKind::FAT_TREE && spec.fabric_levels != 2 && spec.fabric_levels != 3) {
    fail("fabric_levels must be 2 or 3 for a fat tree, got " + std::to_string(spec.fabric_levels));
  }
  if (spec.leaves_per_pod < 1) fail("leaves_per_pod must be >= 1, got " + std::to_string(spec.leaves_per_pod));
  if (!spec.node_layout.empty() && !find_node_layout(spec.node_layout)) {
    fail("node_layout '" + spec.node_layout + "' is unknown (known: dgx-a100, dgx-h100, or empty for generic)");
  }
  detail::require_valid_profile(gpu, detail::ProfilePart::NETWORK, "Cluster");
}

}  // namespace

Cluster::Cluster(ClusterSpec spec, GpuProfile gpu) : spec_(std::move(spec)), gpu_(std::move(gpu)) {
  static std::atomic<std::uint64_t> next_id{1};
  id_ = next_id.fetch_add(1, std::memory_order_relaxed);
  validate(spec_, gpu_);
  const auto nodes = static_cast<std::uint32_t>(spec_.nodes);
  const auto gpn = static_cast<std::uint32_t>(spec_.gpus_per_node);
  const NodeLayout layout = spec_.node_layout.empty() ? generic_node_layout(static_cast<int>(gpn), gpu_)
                                                      : *find_node_layout(spec_.node_layout);
  topology_ = std::make_shared<Topology>();
  // Enough for the layouts and fabrics we have (per GPU: 4 duplex links of its own and its
  // NIC's, its share of uplinks, drives, DRAM and fabric): one allocation, not a doubling
  // series, since a sweep builds a cluster per variant.
  const std::size_t gpus = num_gpus();
  topology_->reserve(4 * gpus + 64, 16 * gpus + 64);
  nodes_ = std::make_shared<NodeTopology>();
  try {
    nodes_->build(*topology_, nodes, gpn, layout,
                  {gpu_.nvlink_bytes_per_s().value(), gpu_.nvlink_latency_s().value(), gpu_.pcie_bytes_per_s().value()});
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("cluster spec: ") + e.what());
  }
  FabricInput in;
  in.nodes = nodes;
  in.rails = gpn;
  in.first_nic_vertex = nodes_->nic_vertex(0);
  // What NCCL gets out of a NIC, not its line rate (reference §2.4).
  in.nic_bytes_per_s = spec_.nic_gbps * 1e9 / 8.0 * gpu_.nic_efficiency().value();
  in.latency_s = gpu_.network_latency_s().value();
  FabricSpec fs;
  fs.kind = spec_.fabric;
  fs.levels = spec_.fabric_levels;
  fs.oversubscription = spec_.oversubscription;
  fs.nodes_per_leaf = spec_.nodes_per_leaf;
  fs.leaves_per_pod = spec_.leaves_per_pod;
  fabric_ = make_fabric(spec_.fabric);
  fabric_->build(*topology_, in, fs);
  try {
    topology_->apply_faults(spec_.link_faults);
    topology_->finish();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("cluster spec: ") + e.what());
  }
  host_sharers_ = std::make_shared<std::vector<std::uint32_t>>(links().size(), 0);
  for (std::uint32_t g = 0; g < num_gpus(); ++g) {
    for (const bool to_host : {true, false}) {
      for (const std::uint32_t l : nodes_->host_route(g, to_host)) ++(*host_sharers_)[l];
    }
  }
}

std::uint32_t Cluster::check_gpu(std::uint32_t gpu, const char* what) const {
  const std::uint32_t n = num_gpus();
  if (gpu >= n) {
    throw std::out_of_range(std::string("Cluster::") + what + ": GPU " + std::to_string(gpu) + " out of range (" +
                            std::to_string(n) + " GPUs)");
  }
  return gpu;
}

std::vector<std::uint32_t> Cluster::host_route(std::uint32_t gpu, bool to_host) const {
  check_gpu(gpu, "host_route");
  const std::uint32_t memory = nodes_->memory_vertex(gpu);
  const std::uint32_t src = to_host ? nodes_->gpu_vertex(gpu) : memory;
  const std::uint32_t dst = to_host ? memory : nodes_->gpu_vertex(gpu);
  return topology_->checked(nodes_->host_route(gpu, to_host), src, dst);
}

double Cluster::host_copy_seconds(std::uint32_t gpu, bool to_host, double bytes) const {
  double seconds = 0;
  const auto& sharers = *host_sharers_;
  for (const std::uint32_t l : host_route(gpu, to_host)) {
    // A link off the GPU's own tree (a reroute) is counted as carrying this copy alone.
    const double share = std::max<std::uint32_t>(1, sharers[l]);
    seconds = std::max(seconds, bytes * share / links()[l].bytes_per_s);
  }
  return seconds;
}

std::vector<std::uint32_t> Cluster::route(std::uint32_t src, std::uint32_t dst) const {
  check_gpu(src, "route");
  check_gpu(dst, "route");
  std::vector<std::uint32_t> r;
  if (src == dst) return r;
  if (node_of(src) == node_of(dst)) {
    r.reserve(2);
    nodes_->nvlink_route(src, dst, r);
  } else {
    r.reserve(8);
    nodes_->to_nic(src, r);
    fabric_->route(src, dst, r);
    nodes_->from_nic(dst, r);
  }
  return topology_->checked(std::move(r), nodes_->gpu_vertex(src), nodes_->gpu_vertex(dst));
}

std::vector<std::vector<std::uint32_t>> Cluster::routes(std::uint32_t src, std::uint32_t dst) const {
  check_gpu(src, "routes");
  check_gpu(dst, "routes");
  return topology_->graph_routes(nodes_->gpu_vertex(src), nodes_->gpu_vertex(dst));
}

sim::NetworkSpec Cluster::network() const {
  sim::NetworkSpec net;
  net.capacity_bytes_per_s.reserve(links().size());
  for (const auto& l : links()) net.capacity_bytes_per_s.push_back(l.bytes_per_s);
  return net;
}

}  // namespace trainsim::hardware
