#pragma once
// How big a run's Program and Plan get, estimated before they are built, so that a
// scenario too big for this machine is refused with a message naming what to change
// (fidelity, memory budget, batch or depth) instead of ending in std::bad_alloc.
//
// The estimates are upper-leaning: the Program's steps from the spec (micro-batches ×
// layers per stage × the most items a layer's template holds), the Plan's tasks from the
// built Program (its steps × the ranks the fidelity lowers). Bytes per step and per task
// are measured figures (see plan_size.cpp), not sizeof sums: the engine's state, the
// timeline and the network's flows come with every task.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "strategies/lower.hpp"
#include "strategies/program.hpp"
#include "strategies/spec.hpp"

namespace trainsim::strategies {

struct PlanSize {
  double steps = 0;  // Program steps over all roles
  double tasks = 0;  // Plan tasks over all lowered ranks (0 for a Program estimate)
  double bytes = 0;  // memory to hold it all while it is built and simulated
};

// A scenario that would not fit the memory budget (or the Plan's 32-bit task ids).
class PlanTooLarge : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The Program build_program(spec) would make. Needs a validated spec (sizes > 0).
PlanSize estimate_program(const TrainingSpec& spec);
// The Plan lower(program, …, fidelity) would make, and the Program it is made from.
PlanSize estimate_plan(const Program& program, Fidelity fidelity);

// Throws PlanTooLarge when the estimate exceeds `budget_bytes` (or the task ids of a
// Plan). `fast` is the fast-fidelity estimate, suggested when `size` is a full one that
// does not fit and the fast one does; pass nullptr for a Program estimate.
void check_plan_size(const PlanSize& size, const PlanSize* fast, Fidelity fidelity, double budget_bytes);

// "1.5 GiB", for messages and --max-memory's help.
std::string format_bytes(double bytes);

}  // namespace trainsim::strategies
