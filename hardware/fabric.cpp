#include "hardware/fabric.hpp"

#include "hardware/detail/fabric_kinds.hpp"

namespace trainsim::hardware {

std::unique_ptr<Fabric> make_fabric(FabricKind kind) {
  switch (kind) {
    case FabricKind::RAIL_OPTIMIZED: return detail::make_rail_optimized();
    case FabricKind::FAT_TREE: return detail::make_fat_tree();
  }
  return nullptr;
}

std::string fabric_kind_name(FabricKind kind) {
  switch (kind) {
    case FabricKind::RAIL_OPTIMIZED: return "rail-optimized";
    case FabricKind::FAT_TREE: return "fat-tree";
  }
  return "?";
}

}  // namespace trainsim::hardware
