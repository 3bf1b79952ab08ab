#include "cli/run_command.hpp"

#include <fstream>
#include <ostream>
#include <stdexcept>

#include "cli/report.hpp"
#include "hardware/cost_model.hpp"
#include "sim/simulate.hpp"
#include "sim/trace.hpp"
#include "strategies/registry.hpp"

namespace trainsim::cli {

namespace {

void write_trace(std::ostream& out, const strategies::Lowered& lowered, const sim::Timeline& timeline) {
  sim::TraceOptions names;
  for (std::size_t d = 0; d < lowered.device_rank.size(); ++d)
    names.device_names.push_back("rank " + std::to_string(lowered.device_rank[d]) + " (stage " +
                                 std::to_string(lowered.device_stage[d]) + ")");
  names.stream_names = lowered.plan.stream_names;
  sim::write_chrome_trace(out, lowered.plan, timeline, names);
}

}  // namespace

RunResult simulate_scenario(const scenarios::LoadedScenario& scenario, strategies::Fidelity fidelity,
                            std::ostream* trace) {
  const hardware::Cluster cluster(scenario.cluster, scenario.gpu);
  const hardware::CostModel cost(scenario.gpu);
  const strategies::Program program = strategies::build_program(scenario.training);
  const strategies::Lowered lowered = strategies::lower(program, cluster, cost, fidelity);
  sim::SimulateOptions options;
  options.record_memory_curve = trace != nullptr;
  const sim::Timeline timeline = sim::simulate(lowered.plan, lowered.network, options);
  if (trace != nullptr) write_trace(*trace, lowered, timeline);
  RunResult r;
  r.report = report::analyze(program, lowered, timeline, cluster, cost);
  r.report.planning = report::plan_run(r.report, scenario.train_tokens, scenario.price_per_gpu_hour,
                                       scenario.gpu.board_power_w().value());
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
  std::ofstream trace;
  if (!options.trace_path.empty()) {
    trace.open(options.trace_path, std::ios::binary);
    if (!trace) {
      err << options.trace_path << ": error: cannot open for writing\n";
      return 1;
    }
  }
  try {
    result = simulate_scenario(scenario, options.fidelity, options.trace_path.empty() ? nullptr : &trace);
  } catch (const std::invalid_argument& e) {
    err << options.scenario_path << ": error: " << e.what() << '\n';
    return 1;
  } catch (const std::runtime_error& e) {
    err << options.trace_path << ": error: " << e.what() << '\n';
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
