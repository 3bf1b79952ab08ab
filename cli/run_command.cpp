#include "cli/run_command.hpp"

#include <fstream>
#include <ostream>
#include <stdexcept>

#include "cli/report.hpp"
#include "hardware/cost_model.hpp"
#include "sim/simulate.hpp"
#include "strategies/registry.hpp"

namespace trainsim::cli {

RunResult simulate_scenario(const scenarios::LoadedScenario& scenario, strategies::Fidelity fidelity) {
  const hardware::Cluster cluster(scenario.cluster, scenario.gpu);
  const hardware::CostModel cost(scenario.gpu);
  const strategies::Program program = strategies::build_program(scenario.training);
  const strategies::Lowered lowered = strategies::lower(program, cluster, cost, fidelity);
  const sim::Timeline timeline = sim::simulate(lowered.plan, lowered.network);
  RunResult r;
  r.report = strategies::analyze(program, lowered, timeline, cluster, cost);
  r.text = report_text(scenario, r.report);
  r.json = report_json(scenario, r.report);
  return r;
}

int run_command(const RunOptions& options, std::ostream& out, std::ostream& err) {
  auto loaded = scenarios::load_file(options.scenario_path);
  if (auto* errors = std::get_if<std::vector<scenarios::Diagnostic>>(&loaded)) {
    for (const auto& d : *errors) err << d.str() << '\n';
    return 1;
  }
  const auto& scenario = std::get<scenarios::LoadedScenario>(loaded);
  RunResult result;
  try {
    result = simulate_scenario(scenario, options.fidelity);
  } catch (const std::invalid_argument& e) {
    err << options.scenario_path << ": error: " << e.what() << '\n';
    return 1;
  }
  out << result.text;
  if (!options.json_path.empty()) {
    std::ofstream f(options.json_path, std::ios::binary);
    if (!f) {
      err << options.json_path << ": error: cannot open for writing\n";
      return 1;
    }
    f << result.json;
    if (!f) {
      err << options.json_path << ": error: write failed\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace trainsim::cli
