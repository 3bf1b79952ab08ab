#pragma once
// The inside of every node of a cluster: an NVSwitch domain joining its GPUs, and the PCIe
// tree of hardware/node_layout.hpp (GPUs and NICs on PCIe switches, switch uplinks to the
// sockets' root complexes, host memory and NVMe drives at the sockets). Routes inside a
// node follow from the layout by formula.
#include <cstdint>
#include <vector>

#include "hardware/node_layout.hpp"
#include "hardware/topology.hpp"

namespace trainsim::hardware {

struct NodeLinkRates {
  double nvlink_bytes_per_s = 0;
  double nvlink_latency_s = 0;
  double gpu_pcie_bytes_per_s = 0;  // a GPU's own PCIe link, per direction
};

class NodeTopology {
 public:
  // Adds, to an empty topology, GPUs as vertices 0 … G−1 and their NICs as G … 2G−1 (GPU g's
  // NIC is NIC g), then every node's NVSwitch domain and PCIe tree.
  void build(Topology& t, std::uint32_t nodes, std::uint32_t gpus_per_node, const NodeLayout& layout,
             const NodeLinkRates& rates);

  std::uint32_t gpu_vertex(std::uint32_t gpu) const { return gpu; }
  std::uint32_t nic_vertex(std::uint32_t nic) const { return num_gpus_ + nic; }
  std::uint32_t memory_vertex(std::uint32_t gpu) const { return memory_vertex_[socket_of(gpu)]; }

  // GPU g's NVLink to the NVSwitch, and back (NVLS reduces in the switch).
  std::uint32_t nvlink_up(std::uint32_t g) const { return nvlink_[g]; }
  std::uint32_t nvlink_down(std::uint32_t g) const { return nvlink_[g] + 1; }
  // GPU to GPU in one node: up to the NVSwitch and down.
  void nvlink_route(std::uint32_t src, std::uint32_t dst, std::vector<std::uint32_t>& out) const {
    out.push_back(nvlink_[src]);
    out.push_back(nvlink_[dst] + 1);
  }
  // GPU g to its NIC through their PCIe switch (GPUDirect RDMA), and back.
  void to_nic(std::uint32_t g, std::vector<std::uint32_t>& out) const {
    out.push_back(gpu_pcie_[g]);
    out.push_back(nic_pcie_[g] + 1);
  }
  void from_nic(std::uint32_t g, std::vector<std::uint32_t>& out) const {
    out.push_back(nic_pcie_[g]);
    out.push_back(gpu_pcie_[g] + 1);
  }
  // GPU g to its socket's memory (its PCIe link, its switch's uplink, the DRAM), or back.
  std::vector<std::uint32_t> host_route(std::uint32_t g, bool to_host) const;
  // NIC k to its socket's memory (a NIC reading or writing host buffers), or back.
  std::vector<std::uint32_t> nic_host_route(std::uint32_t k, bool to_host) const;

 private:
  std::uint32_t switch_of(std::uint32_t gpu) const;  // global PCIe switch index
  std::uint32_t socket_of(std::uint32_t gpu) const { return switch_of(gpu) / switches_per_socket_; }

  std::uint32_t num_gpus_ = 0;
  std::uint32_t gpus_per_node_ = 1;
  std::uint32_t gpus_per_switch_ = 1;
  std::uint32_t switches_per_socket_ = 1;
  std::vector<std::uint32_t> nvlink_;    // GPU -> NVSwitch; +1 back
  std::vector<std::uint32_t> gpu_pcie_;  // GPU -> its PCIe switch; +1 back
  std::vector<std::uint32_t> nic_pcie_;  // NIC -> its PCIe switch; +1 back
  std::vector<std::uint32_t> uplink_;    // PCIe switch -> root complex; +1 back
  std::vector<std::uint32_t> memory_;    // root complex -> DRAM, per socket; +1 back
  std::vector<std::uint32_t> memory_vertex_;
};

}  // namespace trainsim::hardware
