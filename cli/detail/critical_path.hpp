#pragma once
// The chain of tasks that decided a simulated iteration's length: from the task that ends
// last, back through whatever it waited for — the latest-ending predecessor or stream
// predecessor, and for a collective that waited at its rendezvous, the member that arrived
// last — to a task that waited for nothing.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/plan.hpp"
#include "sim/simulate.hpp"

namespace trainsim::cli::detail {

// Task ids, first to last. Needs a full timeline (not summary-only).
std::vector<sim::TaskId> critical_path(const sim::Plan& plan, const sim::Timeline& timeline);

struct PathOp {
  std::string name;      // the op descriptor's name, else the task label; with its category
  std::uint64_t tasks = 0;
  double seconds = 0;    // summed task time on the path
};
// The path's tasks grouped by what they are, longest total first.
std::vector<PathOp> summarize_path(const sim::Plan& plan, const sim::Timeline& timeline,
                                   const std::vector<sim::TaskId>& path);

}  // namespace trainsim::cli::detail
