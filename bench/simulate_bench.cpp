// End to end: load a scenario, build its Program, lower it and simulate one iteration, in
// each fidelity. The README quotes these figures.
#include <benchmark/benchmark.h>

#include <string>

#include "cli/run_command.hpp"

namespace {

using trainsim::strategies::Fidelity;

trainsim::scenarios::LoadedScenario load(const char* name) {
  auto r = trainsim::scenarios::load_file(std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/examples/" + name);
  return std::get<trainsim::scenarios::LoadedScenario>(r);
}

void run_example(benchmark::State& state, const char* name, Fidelity fidelity) {
  const auto scenario = load(name);
  for (auto _ : state) {
    auto result = trainsim::cli::simulate_scenario(scenario, fidelity);
    benchmark::DoNotOptimize(result.report.iteration_s);
    state.counters["tasks"] = static_cast<double>(result.report.tasks);
    state.counters["events"] = static_cast<double>(result.report.events);
    state.counters["flows"] = static_cast<double>(result.report.flows);
  }
}

BENCHMARK_CAPTURE(run_example, gpt3_175b_1024_fast, "gpt3-175b-a100-1024.textproto", Fidelity::FAST)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run_example, gpt3_175b_1024_full, "gpt3-175b-a100-1024.textproto", Fidelity::FULL)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(run_example, llama3_70b_512_fast, "llama3-70b-h100-512.textproto", Fidelity::FAST)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(run_example, llama3_70b_512_full, "llama3-70b-h100-512.textproto", Fidelity::FULL)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace
