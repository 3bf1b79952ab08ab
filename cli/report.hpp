#pragma once
// The run report as text (for people) and JSON (for tools; carries a schema version).
#include <string>
#include <vector>

#include "report/run_report.hpp"
#include "scenarios/loader.hpp"

namespace trainsim::cli {

inline constexpr int REPORT_SCHEMA_VERSION = 1;

std::string report_text(const scenarios::LoadedScenario& scenario, const report::RunReport& report);
std::string report_json(const scenarios::LoadedScenario& scenario, const report::RunReport& report);

// `trainsim passes`: every registered pass as a pipeline string writes it, its kind, what it
// requires and provides, its description, and each parameter with its type, range and default.
std::string passes_text();

}  // namespace trainsim::cli
