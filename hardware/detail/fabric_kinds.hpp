#pragma once
// One factory per fabric file.
#include <memory>

#include "hardware/fabric.hpp"

namespace trainsim::hardware::detail {

std::unique_ptr<Fabric> make_rail_optimized();
std::unique_ptr<Fabric> make_fat_tree();

}  // namespace trainsim::hardware::detail
