#pragma once
// What is inside a node besides its GPUs' NVSwitch domain: the PCIe tree. GPUs and their
// NICs (one NIC per GPU, the rail) sit on PCIe switches, each switch has one uplink to its
// CPU socket's root complex, each socket has its DRAM and its local NVMe drives, and the
// sockets are joined by the CPU interconnect.
#include <optional>
#include <string>

#include "hardware/profile.pb.h"

namespace trainsim::hardware {

struct NodeLayout {
  std::string name;               // "dgx-a100", "dgx-h100", or "generic"
  int sockets = 1;
  int switches_per_socket = 8;
  int gpus_per_switch = 1;        // and as many NICs: NIC i is GPU i's rail
  int nvme_per_socket = 0;
  double switch_uplink_bytes_per_s = 0;  // PCIe switch -> root complex, per direction
  double nic_pcie_bytes_per_s = 0;       // a NIC's PCIe slot, per direction
  double nvme_bytes_per_s = 0;           // a drive's PCIe link, per direction
  double memory_bytes_per_s = 0;         // a socket's DRAM
  double cpu_link_bytes_per_s = 0;       // socket to socket
  std::string source;
};

// The layout of a node preset's machine (hardware/node_presets.cpp names it), if known.
std::optional<NodeLayout> find_node_layout(const std::string& name);
// Without a known machine: every GPU on its own PCIe switch with its NIC, one socket, every
// PCIe link at the GPU profile's host-copy rate, and DRAM that feeds all of them at once.
NodeLayout generic_node_layout(int gpus_per_node, const GpuProfile& gpu);

}  // namespace trainsim::hardware
