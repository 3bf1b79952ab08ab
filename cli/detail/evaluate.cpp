#include "cli/detail/evaluate.hpp"

#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/memory_budget.hpp"
#include "hardware/cost_model.hpp"
#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/plan_size.hpp"
#include "strategies/registry.hpp"

namespace trainsim::cli::detail {
namespace {

const hardware::CostModel& cost_model_for(const hardware::GpuProfile& gpu) {
  // Per thread: the op-cost cache is per thread too, and the map needs no lock.
  thread_local std::map<std::string, std::unique_ptr<hardware::CostModel>> models;
  std::unique_ptr<hardware::CostModel>& slot = models[gpu.SerializeAsString()];
  if (!slot) slot = std::make_unique<hardware::CostModel>(gpu);
  return *slot;
}

// Variants of a sweep mostly share their cluster: building its topology (graph and
// connectivity check) once per thread and cluster, not once per variant.
const hardware::Cluster& cluster_for(const scenarios::LoadedScenario& s) {
  thread_local std::map<std::string, std::unique_ptr<hardware::Cluster>> clusters;
  const hardware::ClusterSpec& c = s.cluster;
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|", c.gpu, c.nodes, c.gpus_per_node, c.nic_gbps,
                                c.oversubscription, c.nodes_per_leaf, static_cast<int>(c.fabric), c.fabric_levels,
                                c.leaves_per_pod, c.node_layout);
  for (const auto& f : c.link_faults) key += fmt::format("{}|{}|{}|", f.a, f.b, f.bandwidth_fraction);
  key += s.gpu.SerializeAsString();
  if (clusters.size() >= 16) clusters.clear();  // a sweep over cluster shapes: keep the few latest
  std::unique_ptr<hardware::Cluster>& slot = clusters[key];
  if (!slot) slot = std::make_unique<hardware::Cluster>(c, s.gpu);
  return *slot;
}

}  // namespace

report::RunReport evaluate_fast(const scenarios::LoadedScenario& scenario, bool summary_only, double max_memory_bytes) {
  const double budget = max_memory_bytes > 0 ? max_memory_bytes : default_memory_budget();
  const hardware::Cluster& cluster = cluster_for(scenario);
  const hardware::CostModel& cost = cost_model_for(scenario.gpu);
  const auto fidelity = strategies::Fidelity::FAST;
  strategies::check_plan_size(strategies::estimate_program(scenario.training), nullptr, fidelity, budget);
  const strategies::Program program = strategies::build_program(scenario.training);
  strategies::check_plan_size(strategies::estimate_plan(program, fidelity), nullptr, fidelity, budget);
  const strategies::Lowered lowered = strategies::lower(program, cluster, cost, fidelity);
  sim::SimulateOptions options;
  options.summary_only = summary_only;
  const sim::Timeline timeline = sim::simulate(lowered.plan, lowered.network, options);
  report::RunReport r = report::analyze(program, lowered, timeline, cluster, cost);
  r.planning = report::plan_run(r, scenario.train_tokens, scenario.price_per_gpu_hour,
                                scenario.gpu.board_power_w().value());
  return r;
}

}  // namespace trainsim::cli::detail
