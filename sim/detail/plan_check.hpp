#pragma once
// Structural checks of a Plan, shared by PlanBuilder::finish() and simulate() (which may be
// handed a plan built by other means, e.g. read from a trace). Private to sim/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/plan.hpp"

namespace trainsim::sim::detail {

// What is wrong with a plan: the first MAX_SHOWN problems in full, and how many in all.
struct PlanProblems {
  static constexpr std::size_t MAX_SHOWN = 8;
  std::vector<std::string> shown;
  std::size_t total = 0;

  bool empty() const { return total == 0; }
  // `make` builds the message only when it will be shown, so that a plan with millions of
  // bad tasks does not build millions of strings.
  template <class MakeMessage>
  void add(MakeMessage&& make) {
    if (total++ < MAX_SHOWN) shown.push_back(make());
  }
  // "<prefix>: a; b; c (and 5 more problems)".
  std::string join(const std::string& prefix) const;
};

inline constexpr std::size_t NO_LINK_CHECK = static_cast<std::size_t>(-1);

// Checks array sizes, CSR shape, task fields (device, stream, comm, memory class, category
// and label ranges, non-negative durations and byte counts), comm instances (pattern index,
// participant count, at most one participant per (device, stream)), patterns (route
// ranges; links below num_links unless NO_LINK_CHECK) and the initial memory table.
// `task_fields_checked`: the caller (PlanBuilder::finish) saw every task's fields pass these
// rules (tasks_may_break_a_rule), and the loop that names each bad task is skipped.
PlanProblems check_plan(const Plan& plan, std::size_t num_links, bool task_fields_checked = false);

// Whether some task may break one of check_plan's per-task rules (PlanBuilder::finish asks
// before check_plan; false only when none can be broken).
bool tasks_may_break_a_rule(const Plan& plan);

// What check_plan covers that PlanBuilder::finish cannot have checked: the contention
// fields a caller may set on the finished plan, and the routes against the network.
PlanProblems check_finished_plan(const Plan& plan, std::size_t num_links);

}  // namespace trainsim::sim::detail
