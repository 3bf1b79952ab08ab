#include "hardware/node_topology.hpp"

#include <stdexcept>
#include <string>

namespace trainsim::hardware {

void NodeTopology::build(Topology& t, std::uint32_t nodes, std::uint32_t gpus_per_node, const NodeLayout& layout,
                         const NodeLinkRates& rates) {
  if (!t.vertices().empty()) throw std::logic_error("NodeTopology::build: the topology must start empty");
  const auto per_node = static_cast<std::uint32_t>(layout.sockets * layout.switches_per_socket * layout.gpus_per_switch);
  if (per_node != gpus_per_node) {
    throw std::invalid_argument("node layout " + layout.name + " holds " + std::to_string(per_node) +
                                " GPUs per node, not " + std::to_string(gpus_per_node));
  }
  num_gpus_ = nodes * gpus_per_node;
  gpus_per_node_ = gpus_per_node;
  gpus_per_switch_ = static_cast<std::uint32_t>(layout.gpus_per_switch);
  switches_per_socket_ = static_cast<std::uint32_t>(layout.switches_per_socket);
  const auto sockets = static_cast<std::uint32_t>(layout.sockets);
  for (std::uint32_t g = 0; g < num_gpus_; ++g) t.add_vertex(VertexKind::GPU, g / gpus_per_node, g);
  for (std::uint32_t k = 0; k < num_gpus_; ++k) t.add_vertex(VertexKind::NIC, k / gpus_per_node, k);

  nvlink_.resize(num_gpus_);
  gpu_pcie_.resize(num_gpus_);
  nic_pcie_.resize(num_gpus_);
  const std::uint32_t switches_per_node = sockets * switches_per_socket_;
  uplink_.resize(static_cast<std::size_t>(nodes) * switches_per_node);
  memory_.resize(static_cast<std::size_t>(nodes) * sockets);
  memory_vertex_.resize(memory_.size());
  for (std::uint32_t n = 0; n < nodes; ++n) {
    const std::uint32_t nvswitch = t.add_vertex(VertexKind::NVSWITCH, n, 0);
    for (std::uint32_t i = 0; i < gpus_per_node; ++i) {
      const std::uint32_t g = n * gpus_per_node + i;
      nvlink_[g] = t.add_duplex(g, nvswitch, LinkKind::NVLINK_UP, LinkKind::NVLINK_DOWN, rates.nvlink_bytes_per_s,
                                rates.nvlink_latency_s, g);
    }
    std::vector<std::uint32_t> cpu(sockets);
    for (std::uint32_t s = 0; s < sockets; ++s) {
      const std::uint32_t socket = n * sockets + s;
      cpu[s] = t.add_vertex(VertexKind::CPU_ROOT, n, s);
      memory_vertex_[socket] = t.add_vertex(VertexKind::HOST_MEMORY, n, s);
      memory_[socket] = t.add_duplex(cpu[s], memory_vertex_[socket], LinkKind::MEMORY, LinkKind::MEMORY,
                                     layout.memory_bytes_per_s, 0.0, socket);
      for (std::uint32_t w = 0; w < switches_per_socket_; ++w) {
        const std::uint32_t local = s * switches_per_socket_ + w;
        const std::uint32_t sw = t.add_vertex(VertexKind::PCIE_SWITCH, n, local);
        const std::uint32_t global = n * switches_per_node + local;
        uplink_[global] = t.add_duplex(sw, cpu[s], LinkKind::PCIE_UP, LinkKind::PCIE_DOWN,
                                       layout.switch_uplink_bytes_per_s, 0.0, global);
        for (std::uint32_t j = 0; j < gpus_per_switch_; ++j) {
          const std::uint32_t g = n * gpus_per_node + local * gpus_per_switch_ + j;
          gpu_pcie_[g] = t.add_duplex(g, sw, LinkKind::PCIE_D2H, LinkKind::PCIE_H2D, rates.gpu_pcie_bytes_per_s, 0.0, g);
          nic_pcie_[g] = t.add_duplex(nic_vertex(g), sw, LinkKind::PCIE_UP, LinkKind::PCIE_DOWN,
                                      layout.nic_pcie_bytes_per_s, 0.0, g);
        }
      }
      for (int d = 0; d < layout.nvme_per_socket; ++d) {
        const auto index = static_cast<std::uint32_t>(s * static_cast<std::uint32_t>(layout.nvme_per_socket) + d);
        const std::uint32_t nvme = t.add_vertex(VertexKind::NVME, n, index);
        t.add_duplex(nvme, cpu[s], LinkKind::PCIE_UP, LinkKind::PCIE_DOWN, layout.nvme_bytes_per_s, 0.0, index);
      }
    }
    for (std::uint32_t s = 1; s < sockets; ++s) {
      t.add_duplex(cpu[s - 1], cpu[s], LinkKind::CPU_LINK, LinkKind::CPU_LINK, layout.cpu_link_bytes_per_s, 0.0, n);
    }
  }
}

std::uint32_t NodeTopology::switch_of(std::uint32_t gpu) const {
  const std::uint32_t node = gpu / gpus_per_node_;
  const std::uint32_t switches_per_node = gpus_per_node_ / gpus_per_switch_;
  return node * switches_per_node + (gpu % gpus_per_node_) / gpus_per_switch_;
}

std::vector<std::uint32_t> NodeTopology::host_route(std::uint32_t g, bool to_host) const {
  const std::uint32_t sw = switch_of(g);
  const std::uint32_t socket = socket_of(g);
  if (to_host) return {gpu_pcie_[g], uplink_[sw], memory_[socket]};
  return {memory_[socket] + 1, uplink_[sw] + 1, gpu_pcie_[g] + 1};
}

std::vector<std::uint32_t> NodeTopology::nic_host_route(std::uint32_t k, bool to_host) const {
  const std::uint32_t sw = switch_of(k);
  const std::uint32_t socket = socket_of(k);
  if (to_host) return {nic_pcie_[k], uplink_[sw], memory_[socket]};
  return {memory_[socket] + 1, uplink_[sw] + 1, nic_pcie_[k] + 1};
}

}  // namespace trainsim::hardware
