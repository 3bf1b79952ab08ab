#include "hardware/node_layout.hpp"

namespace trainsim::hardware {
namespace {

// Achieved per-direction PCIe x16 rates with pinned copies (reference §4.4 and §4.6,
// "PCIe pinned: Gen4 25 GB/s; Gen5 52-55 GB/s"): the same rates the GPU profiles give a
// GPU's own link, so that a switch's uplink and a NIC's slot are the same generation's.
constexpr double GEN4_X16 = 25e9;  // A100-SXM4 host_to_device 25.13 GB/s (NVIDIA/nvbandwidth#42)
constexpr double GEN5_X16 = 55e9;  // 8x H200 nvbandwidth CE 55.43 / 55.06 GB/s (ml-engineering network/README.md:263)
// A U.2 drive is PCIe x4: a quarter of the x16 line rate, Gen4 x16 ~31.5 GB/s per
// direction (reference §3.2), i.e. 7.875 GB/s.
constexpr double GEN4_X4_LINE = 31.5e9 / 4;
// Socket interconnect as NCCL models it (reference §1.2, NCCL topo.h): AMD 16 GB/s,
// Sapphire Rapids (SRP) 22 GB/s.
constexpr double NCCL_AMD_BW = 16e9;
constexpr double NCCL_SRP_BW = 22e9;
// DRAM per socket, channels x transfer rate x 8 bytes: EPYC 7742 8 x DDR4-3200 = 204.8 GB/s
// (AMD EPYC 7742 product page); Xeon Platinum 8480C (Sapphire Rapids) 8 x DDR5-4800 =
// 307.2 GB/s (Intel ark, Xeon Platinum 8480+).
constexpr double EPYC_7742_DRAM = 8 * 3200e6 * 8;
constexpr double SPR_8480_DRAM = 8 * 4800e6 * 8;

NodeLayout dgx_a100() {
  NodeLayout l;
  l.name = "dgx-a100";
  l.sockets = 2;
  l.switches_per_socket = 2;
  l.gpus_per_switch = 2;
  l.nvme_per_socket = 2;
  l.switch_uplink_bytes_per_s = GEN4_X16;
  l.nic_pcie_bytes_per_s = GEN4_X16;
  l.nvme_bytes_per_s = GEN4_X4_LINE;
  l.memory_bytes_per_s = EPYC_7742_DRAM;
  l.cpu_link_bytes_per_s = NCCL_AMD_BW;
  l.source =
      "DGX A100: 2x EPYC 7742 (reference §3.3); GPU pairs share a PCIe switch tree with a NIC pair, GPU0/1 PXB "
      "NIC0/1, GPU2/3 PXB NIC2/3, two such pairs per NUMA node (nvidia-smi topo -m of a DGX A100, NVIDIA/nccl#1505); "
      "every level of that tree is PCIe Gen4 x16, PCI[24.0] in NCCL's topology dump (NVIDIA/nccl-tests#100); "
      "4 data drives, 4x 3.84 TB U.2 NVMe (DGX A100 datasheet; their attachment is not in our sources, so "
      "they sit at the root complex, two per socket)";
  return l;
}

NodeLayout dgx_h100() {
  NodeLayout l;
  l.name = "dgx-h100";
  l.sockets = 2;
  l.switches_per_socket = 4;
  l.gpus_per_switch = 1;
  l.nvme_per_socket = 4;
  l.switch_uplink_bytes_per_s = GEN5_X16;
  l.nic_pcie_bytes_per_s = GEN5_X16;
  l.nvme_bytes_per_s = GEN4_X4_LINE;
  l.memory_bytes_per_s = SPR_8480_DRAM;
  l.cpu_link_bytes_per_s = NCCL_SRP_BW;
  l.source =
      "DGX H100/H200: 2x Xeon Platinum 8480C, eight single-port ConnectX-7, one per GPU (reference §3.3); each "
      "GPU shares a PCIe switch with its NIC only, GPU i PIX NIC i, four GPUs per NUMA node (nvidia-smi topo -mp of "
      "an 8x Hopper node, deepseek-ai/DeepEP#60); PCIe Gen5 x16 (reference §3.1); 8 data drives, 8x 3.84 TB U.2 "
      "NVMe (DGX H100 datasheet; Gen4 x4 assumed, attached at the root complex, four per socket)";
  return l;
}

}  // namespace

std::optional<NodeLayout> find_node_layout(const std::string& name) {
  if (name == "dgx-a100") return dgx_a100();
  if (name == "dgx-h100") return dgx_h100();
  return std::nullopt;
}

NodeLayout generic_node_layout(int gpus_per_node, const GpuProfile& gpu) {
  NodeLayout l;
  l.name = "generic";
  l.sockets = 1;
  l.switches_per_socket = gpus_per_node;
  l.gpus_per_switch = 1;
  l.nvme_per_socket = 0;
  const double pcie = gpu.pcie_bytes_per_s().value();
  l.switch_uplink_bytes_per_s = pcie;
  l.nic_pcie_bytes_per_s = pcie;
  l.nvme_bytes_per_s = 0;
  // No CPU is named: DRAM is assumed to feed every GPU's link at once, so it is never the
  // bottleneck of a host copy (a modelling choice, not a hardware figure).
  l.memory_bytes_per_s = pcie * gpus_per_node;
  l.cpu_link_bytes_per_s = 0;
  l.source = "generic: no node preset named, so the PCIe tree is the simplest one (a switch per GPU and its NIC)";
  return l;
}

}  // namespace trainsim::hardware
