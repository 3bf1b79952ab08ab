#pragma once
// The run report as text (for people) and JSON (for tools; carries a schema version).
#include <string>
#include <vector>

#include "scenarios/loader.hpp"
#include "strategies/analysis.hpp"

namespace trainsim::cli {

inline constexpr int REPORT_SCHEMA_VERSION = 1;

std::string report_text(const scenarios::LoadedScenario& scenario, const strategies::RunReport& report);
std::string report_json(const scenarios::LoadedScenario& scenario, const strategies::RunReport& report);

}  // namespace trainsim::cli
