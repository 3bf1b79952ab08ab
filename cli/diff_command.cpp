#include "cli/diff_command.hpp"

#include <cmath>
#include <ostream>
#include <variant>

#include <fmt/format.h>

#include "cli/detail/critical_path.hpp"
#include "cli/memory_budget.hpp"
#include "hardware/cost_model.hpp"
#include "report/run_report.hpp"
#include "scenarios/loader.hpp"
#include "sim/simulate.hpp"
#include "strategies/plan_size.hpp"
#include "strategies/registry.hpp"

namespace trainsim::cli {
namespace {

constexpr double GIB = 1024.0 * 1024.0 * 1024.0;

struct Side {
  report::RunReport report;
  std::vector<detail::PathOp> path;
  std::size_t path_tasks = 0;
};

Side simulate(const scenarios::LoadedScenario& s, strategies::Fidelity fidelity) {
  const double budget = default_memory_budget();
  const hardware::Cluster cluster(s.cluster, s.gpu);
  const hardware::CostModel cost(s.gpu);
  strategies::check_plan_size(strategies::estimate_program(s.training), nullptr, fidelity, budget);
  const strategies::Program program = strategies::build_program(s.training);
  const strategies::PlanSize fast = strategies::estimate_plan(program, strategies::Fidelity::FAST);
  strategies::check_plan_size(strategies::estimate_plan(program, fidelity), &fast, fidelity, budget);
  strategies::LowerOptions lower_options;
  lower_options.describe_ops = true;
  const strategies::Lowered lowered = strategies::lower(program, cluster, cost, fidelity, lower_options);
  const sim::Timeline timeline = sim::simulate(lowered.plan, lowered.network);
  Side side;
  side.report = report::analyze(program, lowered, timeline, cluster, cost);
  const auto path = detail::critical_path(lowered.plan, timeline);
  side.path_tasks = path.size();
  side.path = detail::summarize_path(lowered.plan, timeline, path);
  return side;
}

std::string row(const std::string& name, double a, double b, const char* unit, int precision) {
  const double rel = a != 0 ? 100 * (b - a) / std::abs(a) : 0;
  return fmt::format("  {:<32}{:>14.{}f}{:>14.{}f}{:>+14.{}f}{:>9}\n", name + (unit[0] ? fmt::format(" ({})", unit) : ""),
                     a, precision, b, precision, b - a, precision, a != 0 ? fmt::format("{:+.1f}%", rel) : "");
}

}  // namespace

int diff_command(const DiffOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<scenarios::LoadedScenario> loaded;
  bool failed = false;
  for (const std::string& path : {options.a_path, options.b_path}) {
    auto result = scenarios::load_file(path);
    if (auto* errors = std::get_if<std::vector<scenarios::Diagnostic>>(&result)) {
      for (const auto& d : *errors) err << d.str() << '\n';
      failed = true;
      continue;
    }
    loaded.push_back(std::get<scenarios::LoadedScenario>(std::move(result)));
  }
  if (failed) return 1;
  std::vector<Side> sides;
  for (std::size_t i = 0; i < 2; ++i) {
    try {
      sides.push_back(simulate(loaded[i], options.fidelity));
    } catch (const std::exception& e) {
      err << loaded[i].file << ": error: " << e.what() << '\n';
      return 1;
    }
  }
  const auto& a = sides[0].report;
  const auto& b = sides[1].report;
  out << fmt::format("diff A {}\n     B {}\n", options.a_path, options.b_path);
  out << fmt::format("  A passes {}\n  B passes {}\n\n", a.pipeline, b.pipeline);
  out << fmt::format("  {:<32}{:>14}{:>14}{:>14}{:>9}\n", "", "A", "B", "B − A", "");
  out << row("iteration", a.iteration_s, b.iteration_s, "s", 4);
  out << row("throughput", a.tokens_per_s, b.tokens_per_s, "tokens/s", 0);
  out << row("MFU", 100 * a.mfu, 100 * b.mfu, "%", 2);
  out << "time breakdown (the GPU that finishes last)\n";
  const auto& x = a.time;
  const auto& y = b.time;
  out << row("compute", x.compute_s, y.compute_s, "s", 4);
  out << row("recompute", x.recompute_s, y.recompute_s, "s", 4);
  out << row("optimizer step", x.optimizer_s, y.optimizer_s, "s", 4);
  out << row("exposed tensor-parallel comm", x.exposed_tp_s, y.exposed_tp_s, "s", 4);
  out << row("exposed data-parallel comm", x.exposed_dp_s, y.exposed_dp_s, "s", 4);
  out << row("exposed pipeline comm", x.exposed_pp_s, y.exposed_pp_s, "s", 4);
  out << row("pipeline bubble / idle", x.bubble_s, y.bubble_s, "s", 4);
  out << "memory at peak (the most loaded GPU)\n";
  for (int c = 0; c < static_cast<int>(strategies::MemClass::COUNT); ++c)
    out << row(strategies::to_string(static_cast<strategies::MemClass>(c)),
               a.memory.at_peak[static_cast<std::size_t>(c)] / GIB, b.memory.at_peak[static_cast<std::size_t>(c)] / GIB,
               "GiB", 2);
  out << row("peak", a.memory.peak_bytes / GIB, b.memory.peak_bytes / GIB, "GiB", 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const Side& s = sides[i];
    out << fmt::format("\ncritical path of {} ({} tasks), by op, longest first\n", i == 0 ? "A" : "B", s.path_tasks);
    for (std::size_t k = 0; k < s.path.size() && static_cast<int>(k) < options.path_ops; ++k)
      out << fmt::format("  {:<44}{:>6} × {:>12.4f} s\n", s.path[k].name, s.path[k].tasks, s.path[k].seconds);
    if (static_cast<int>(s.path.size()) > options.path_ops)
      out << fmt::format("  … and {} more kinds of op\n", s.path.size() - static_cast<std::size_t>(options.path_ops));
  }
  return 0;
}

}  // namespace trainsim::cli
