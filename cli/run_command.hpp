#pragma once
// `trainsim run`: scenario file → Program → Plan → simulated iteration → report.
#include <exception>
#include <iosfwd>
#include <map>
#include <string>
#include <utility>

#include "report/run_report.hpp"
#include "scenarios/loader.hpp"
#include "strategies/lower.hpp"

namespace trainsim::cli {

struct RunOptions {
  std::string scenario_path;
  std::string json_path;   // empty: no JSON file
  std::string trace_path;  // empty: no Chrome trace
  strategies::Fidelity fidelity = strategies::Fidelity::FULL;
  double max_memory_bytes = 0;  // --max-memory; 0: default_memory_budget()
};

// Everything a run produced, for callers that want more than the printed report.
struct RunResult {
  trainsim::report::RunReport report;
  std::string text;
  std::string json;
};

// Simulates one loaded scenario; writes a Chrome trace-event JSON to `trace` when given.
// Throws std::invalid_argument for scenarios the strategies cannot build (an
// unimplemented pass, a layout that does not fit) and strategies::PlanTooLarge (one too)
// when the estimated Program or Plan needs more than `max_memory_bytes` (0: the default
// budget); sim::TimeRangeError when the iteration outlasts the engine's time range.
RunResult simulate_scenario(const scenarios::LoadedScenario& scenario, strategies::Fidelity fidelity,
                            std::ostream* trace = nullptr, double max_memory_bytes = 0);

// The error line for what the simulation of `options.scenario_path` threw. Whatever the
// engine finds (a deadlock, a time beyond its range, a plan too large) is about the
// scenario, so the line names the scenario file — the trace file only when writing the
// trace is what failed (`trace_failed`). A pass's error names the field that asked for the
// pass, at the line and column where the scenario wrote it when `positions` knows them.
std::string simulation_failure(const RunOptions& options, const std::exception& e, bool trace_failed,
                               const std::map<std::string, std::pair<int, int>>& positions = {});

// The whole command: returns the process exit code, writes the report to `out` and
// diagnostics to `err`. Every failure is a line "PATH: error: …" naming the file it is
// about (the scenario for anything the simulation finds, an output for a failed write);
// outputs are written whole or not at all, and never over an input.
int run_command(const RunOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
