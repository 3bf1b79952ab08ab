#include "cli/run_command.hpp"

#include <algorithm>
#include <new>
#include <optional>
#include <ostream>
#include <stdexcept>

#include "cli/detail/output_file.hpp"
#include "cli/memory_budget.hpp"
#include "cli/report.hpp"
#include "hardware/cost_model.hpp"
#include "sim/simulate.hpp"
#include "sim/time.hpp"
#include "sim/trace.hpp"
#include "strategies/plan_size.hpp"
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

// The scenario field that asks for a strategy pass, so that a pass's own error names it:
// "zero(1)" comes from strategy.zero_stage, "overlap-tp-comm" from strategy.overlap_tp_comm.
std::string field_of_pass(const std::string& invocation) {
  const std::string pass = invocation.substr(0, invocation.find('('));
  if (pass == "tensor" || pass == "pipeline" || pass == "data") return "parallel." + pass;
  if (pass == "zero") return "strategy.zero_stage";
  if (pass == "recompute") return "strategy.recompute";
  if (pass.starts_with("overlap-")) {
    std::string field = pass;
    std::replace(field.begin(), field.end(), '-', '_');
    return "strategy." + field;
  }
  const strategies::PassInfo* info = strategies::find_pass(strategies::PassInvocation{pass, {}});
  if (info != nullptr && info->kind == strategies::PassKind::SCHEDULE) return "strategy.pipeline_schedule";
  return "";
}

// `pass "NAME": …` or `strategy pass "NAME" …` (strategies/registry.cpp) → NAME.
std::string pass_named_in(const std::string& message) {
  for (const char* prefix : {"pass \"", "strategy pass \""}) {
    if (!message.starts_with(prefix)) continue;
    const std::size_t begin = std::string_view(prefix).size();
    const std::size_t end = message.find('"', begin);
    if (end != std::string::npos) return message.substr(begin, end - begin);
  }
  return "";
}

}  // namespace

RunResult simulate_scenario(const scenarios::LoadedScenario& scenario, strategies::Fidelity fidelity,
                            std::ostream* trace, double max_memory_bytes) {
  const double budget = max_memory_bytes > 0 ? max_memory_bytes : default_memory_budget();
  const hardware::Cluster cluster(scenario.cluster, scenario.gpu);
  const hardware::CostModel cost(scenario.gpu);
  // Sizes are checked before each thing is built: a run too big for this machine is a
  // message naming what to change, not std::bad_alloc halfway through.
  strategies::check_plan_size(strategies::estimate_program(scenario.training), nullptr, fidelity, budget);
  const strategies::Program program = strategies::build_program(scenario.training);
  const strategies::PlanSize fast = strategies::estimate_plan(program, strategies::Fidelity::FAST);
  strategies::check_plan_size(strategies::estimate_plan(program, fidelity), &fast, fidelity, budget);
  const strategies::Lowered lowered = strategies::lower(program, cluster, cost, fidelity);
  sim::SimulateOptions options;
  options.record_memory_curve = trace != nullptr;
  options.plan_from_builder = true;  // lower() built it
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

std::string simulation_failure(const RunOptions& options, const std::exception& e, bool trace_failed,
                               const std::map<std::string, std::pair<int, int>>& positions) {
  if (trace_failed) return options.trace_path + ": error: " + e.what();
  const std::string& where = options.scenario_path;
  if (dynamic_cast<const sim::TimeRangeError*>(&e) != nullptr) {
    return where + ": error: simulate: the iteration lasts longer than the engine's time range: " + e.what() +
           " (check the scenario's rates and sizes, e.g. cluster.fabric.fat_tree.nic_gbps)";
  }
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    return where + ": error: simulate: out of memory although the plan's estimate fitted the memory budget "
                   "(--max-memory): use --fidelity fast or a smaller --max-memory";
  }
  const std::string message = e.what();
  const std::string field = field_of_pass(pass_named_in(message));
  std::string at = where;
  if (const auto pos = positions.find(field); pos != positions.end())
    at += ":" + std::to_string(pos->second.first) + ":" + std::to_string(pos->second.second);
  return at + ": error: " + (field.empty() ? "" : field + ": ") + message;
}

int run_command(const RunOptions& options, std::ostream& out, std::ostream& err) {
  auto loaded = scenarios::load_file(options.scenario_path);
  if (auto* errors = std::get_if<std::vector<scenarios::Diagnostic>>(&loaded)) {
    for (const auto& d : *errors) err << d.str() << '\n';
    return 1;
  }
  const auto& scenario = std::get<scenarios::LoadedScenario>(loaded);
  if (auto refused = detail::refuse_overwriting_inputs({{"--json", options.json_path}, {"--trace", options.trace_path}},
                                                       scenario.inputs)) {
    err << *refused << '\n';
    return 1;
  }
  std::optional<detail::OutputFile> trace;
  if (!options.trace_path.empty()) {
    trace.emplace(options.trace_path);
    if (!trace->is_open()) {
      err << trace->error() << '\n';
      return 1;
    }
  }
  RunResult result;
  try {
    result = simulate_scenario(scenario, options.fidelity, trace ? &trace->stream() : nullptr,
                               options.max_memory_bytes);
  } catch (const std::exception& e) {
    err << simulation_failure(options, e, trace && !trace->stream(), scenario.field_positions) << '\n';
    return 1;
  }
  if (trace && !trace->commit()) {
    err << trace->error() << '\n';
    return 1;
  }
  out << result.text;
  if (!options.json_path.empty()) {
    detail::OutputFile json(options.json_path);
    json.stream() << result.json;
    if (!json.commit()) {
      err << json.error() << '\n';
      return 1;
    }
  }
  return 0;
}

}  // namespace trainsim::cli
