#pragma once
// One variant evaluated in process, the way sweep and search make it: fast fidelity, the
// cost model shared by every variant of the thread that runs on the same GPU profile (its
// op-cost cache is keyed by the model, so a new model per variant would price every op
// shape again).
#include "report/run_report.hpp"
#include "scenarios/loader.hpp"

namespace trainsim::cli::detail {

// Simulates the loaded variant in fast fidelity and computes every report figure, planning
// included. Throws what simulate_scenario throws (a layout the strategies cannot build, a
// plan too large for `max_memory_bytes`). `summary_only`: no time breakdown (faster).
report::RunReport evaluate_fast(const scenarios::LoadedScenario& scenario, bool summary_only, double max_memory_bytes);

}  // namespace trainsim::cli::detail
