#pragma once
// `trainsim run`: scenario file → Program → Plan → simulated iteration → report.
#include <iosfwd>
#include <string>

#include "report/run_report.hpp"
#include "scenarios/loader.hpp"
#include "strategies/lower.hpp"

namespace trainsim::cli {

struct RunOptions {
  std::string scenario_path;
  std::string json_path;   // empty: no JSON file
  std::string trace_path;  // empty: no Chrome trace
  strategies::Fidelity fidelity = strategies::Fidelity::FULL;
};

// Everything a run produced, for callers that want more than the printed report.
struct RunResult {
  trainsim::report::RunReport report;
  std::string text;
  std::string json;
};

// Simulates one loaded scenario; writes a Chrome trace-event JSON to `trace` when given.
// Throws std::invalid_argument for scenarios the strategies cannot build (an
// unimplemented pass, a layout that does not fit).
RunResult simulate_scenario(const scenarios::LoadedScenario& scenario, strategies::Fidelity fidelity,
                            std::ostream* trace = nullptr);

// The whole command: returns the process exit code, writes the report to `out` and
// diagnostics to `err`.
int run_command(const RunOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
