#pragma once
#include <optional>
#include <string>
#include <vector>

#include "models/model.hpp"

namespace trainsim::models {

// Named model shapes, e.g. "gpt3-175b", "gpt-1.7b". nullopt for an unknown name.
std::optional<ModelConfig> find_preset(const std::string& name);
std::vector<std::string> preset_names();  // sorted

}  // namespace trainsim::models
