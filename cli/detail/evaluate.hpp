#pragma once
// One variant evaluated in process, the way sweep and search make it: fast fidelity, the
// cost model shared by every variant of the thread that runs on the same GPU profile (its
// op-cost cache is keyed by the model, so a new model per variant would price every op
// shape again).
#include <string>

#include "report/run_report.hpp"
#include "scenarios/loader.hpp"

namespace trainsim::cli::detail {

// Simulates the loaded variant in fast fidelity and computes every report figure, planning
// included. Throws what simulate_scenario throws (a layout the strategies cannot build, a
// plan too large for `max_memory_bytes`). `summary_only`: no time breakdown (faster).
report::RunReport evaluate_fast(const scenarios::LoadedScenario& scenario, bool summary_only, double max_memory_bytes);
// The same for `training` on the scenario's cluster, GPU and planning figures, with
// `gpu_key` = gpu_key_of(scenario.gpu) made once by a caller whose variants differ in their
// training only (a search): copying the scenario and serializing its GPU profile, curves and
// citations, for every variant cost 2 % of the search's instructions.
report::RunReport evaluate_fast(const scenarios::LoadedScenario& scenario, const strategies::TrainingSpec& training,
                                bool summary_only, double max_memory_bytes, const std::string& gpu_key);
// What the per-thread caches of cost models and clusters know a GPU profile by.
std::string gpu_key_of(const hardware::GpuProfile& gpu);

}  // namespace trainsim::cli::detail
