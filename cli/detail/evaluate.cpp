#include "cli/detail/evaluate.hpp"

#include <deque>
#include <map>
#include <memory>
#include <string>

#include "cli/memory_budget.hpp"
#include "hardware/cost_model.hpp"
#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/plan_size.hpp"
#include "strategies/registry.hpp"

namespace trainsim::cli::detail {
namespace {

const hardware::CostModel& cost_model_for(const hardware::GpuProfile& gpu, const std::string& gpu_key) {
  // Per thread: the op-cost cache is per thread too, and the map needs no lock.
  thread_local std::map<std::string, std::unique_ptr<hardware::CostModel>> models;
  std::unique_ptr<hardware::CostModel>& slot = models[gpu_key];
  if (!slot) slot = std::make_unique<hardware::CostModel>(gpu);
  return *slot;
}

// Per thread, the clusters of the last few variants: a search's candidates and most sweeps
// share one, and the collective closed forms are cached per cluster.
const hardware::Cluster& cluster_for(const hardware::ClusterSpec& spec, const hardware::GpuProfile& gpu,
                                     const std::string& gpu_key) {
  struct Entry {
    hardware::ClusterSpec spec;
    std::string gpu;
    std::unique_ptr<hardware::Cluster> cluster;
  };
  constexpr std::size_t KEEP = 16;
  thread_local std::deque<Entry> recent;
  for (const Entry& e : recent)
    if (e.spec == spec && e.gpu == gpu_key) return *e.cluster;
  auto cluster = std::make_unique<hardware::Cluster>(spec, gpu);  // throws on a bad spec: nothing kept
  if (recent.size() == KEEP) recent.pop_front();
  recent.push_back({spec, gpu_key, std::move(cluster)});
  return *recent.back().cluster;
}

}  // namespace

std::string gpu_key_of(const hardware::GpuProfile& gpu) { return gpu.SerializeAsString(); }

report::RunReport evaluate_fast(const scenarios::LoadedScenario& scenario, bool summary_only, double max_memory_bytes) {
  return evaluate_fast(scenario, scenario.training, summary_only, max_memory_bytes, gpu_key_of(scenario.gpu));
}

report::RunReport evaluate_fast(const scenarios::LoadedScenario& scenario, const strategies::TrainingSpec& training,
                                bool summary_only, double max_memory_bytes, const std::string& gpu_key) {
  const double budget = max_memory_bytes > 0 ? max_memory_bytes : default_memory_budget();
  const hardware::Cluster& cluster = cluster_for(scenario.cluster, scenario.gpu, gpu_key);
  const hardware::CostModel& cost = cost_model_for(scenario.gpu, gpu_key);
  const auto fidelity = strategies::Fidelity::FAST;
  strategies::check_plan_size(strategies::estimate_program(training), nullptr, fidelity, budget);
  const strategies::Program program = strategies::build_program(training);
  strategies::check_plan_size(strategies::estimate_plan(program, fidelity), nullptr, fidelity, budget);
  strategies::LowerOptions lower_options;
  lower_options.as_built = true;  // lowered as built, no caller in between
  const strategies::Lowered lowered = strategies::lower(program, cluster, cost, fidelity, lower_options);
  sim::SimulateOptions options;
  options.summary_only = summary_only;
  options.plan_from_builder = true;  // lower() built it
  const sim::Timeline timeline = sim::simulate(lowered.plan, lowered.network, options);
  report::RunReport r = report::analyze(program, lowered, timeline, cluster, cost);
  r.planning = report::plan_run(r, scenario.train_tokens, scenario.price_per_gpu_hour,
                                scenario.gpu.board_power_w().value());
  return r;
}

}  // namespace trainsim::cli::detail
