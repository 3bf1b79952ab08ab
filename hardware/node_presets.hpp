#pragma once
#include <optional>
#include <string>
#include <vector>

namespace trainsim::hardware {

// A node type: which GPU, how many per node, and the compute-fabric NIC per GPU.
struct NodePreset {
  std::string name;        // "dgx-a100-80gb", "dgx-h100", "hgx-h200"
  std::string gpu;         // profile name
  int gpus_per_node = 8;
  double nic_gbps = 0;     // per GPU
  std::string source;
  std::string layout;      // the PCIe tree inside (hardware/node_layout.cpp)
};

std::optional<NodePreset> find_node_preset(const std::string& name);
std::vector<std::string> node_preset_names();  // sorted

}  // namespace trainsim::hardware
