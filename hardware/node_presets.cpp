#include "hardware/node_presets.hpp"

#include <algorithm>

namespace trainsim::hardware {
namespace {

// Node types of the reference (/work/shared/reference/nccl-and-hardware.md §3.3): each has
// one compute-fabric NIC per GPU, which is what the Cluster assumes, and the PCIe tree
// of its machine (hardware/node_layout.cpp).
const std::vector<NodePreset>& presets() {
  static const std::vector<NodePreset> table = [] {
    std::vector<NodePreset> t = {
        {"dgx-a100-80gb", "a100-80gb", 8, 200,
         "DGX A100: 8x A100 SXM4 on 6 NVSwitches (NVIDIA devblog 'Introducing NVIDIA HGX A100'); compute network "
         "8x Mellanox ConnectX-6 200 Gb/s HDR, one per GPU (geektopia; AddyLaddy 'DGX-A100 ... 8x200Gbit/s IB "
         "cards', NVIDIA/nccl#812); reference §3.3",
         "dgx-a100"},
        {"dgx-h100", "h100-sxm", 8, 400,
         "DGX H100: 8x H100 SXM5 on 4 NVSwitch chips; 'four OSFP ports serving eight single-port ConnectX-7 VPI, "
         "up to 400 Gb/s', i.e. one 400 Gb/s NDR NIC per GPU (docs.nvidia.com DGX BasePOD RA 'Core Components'); "
         "reference §3.3",
         "dgx-h100"},
        {"hgx-h200", "h200", 8, 400,
         "HGX/DGX H200: 8x H200 on the DGX H100/H200 baseboard with 4 NVSwitch chips and eight single-port "
         "ConnectX-7 400 Gb/s NDR, one per GPU (docs.nvidia.com DGX BasePOD RA 'Core Components'); reference §3.3 "
         "'DGX H100 / H200'",
         "dgx-h100"},
    };
    std::sort(t.begin(), t.end(), [](const NodePreset& a, const NodePreset& b) { return a.name < b.name; });
    return t;
  }();
  return table;
}

}  // namespace

std::optional<NodePreset> find_node_preset(const std::string& name) {
  for (const auto& p : presets()) {
    if (p.name == name) return p;
  }
  return std::nullopt;
}

std::vector<std::string> node_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  return names;
}

}  // namespace trainsim::hardware
