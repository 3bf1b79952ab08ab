#pragma once
// sim::simulate: runs a Plan to completion on a network and returns what happened.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/plan.hpp"
#include "sim/time.hpp"

namespace trainsim::sim {

struct DeviceMemory {
  std::int64_t peak_bytes = 0;
  Time peak_time;
  std::vector<std::int64_t> at_peak;  // per memory class, at the first moment of the peak
  // Memory curve: (time, total bytes) after each change, in time order. Only kept when
  // SimulateOptions::record_memory_curve is set (traces want it, sweeps do not).
  std::vector<std::pair<Time, std::int64_t>> curve;
  // The same points split by memory class, flat and row-major so that a curve of millions
  // of points is one allocation: the bytes of class k at curve[i] are
  // curve_by_class[i * plan.mem_class_names.size() + k]. Kept with `curve`.
  std::vector<std::int64_t> curve_by_class;
};

struct Timeline {
  // Per task (empty with SimulateOptions::summary_only):
  std::vector<Time> ready;  // per task: at its stream head with predecessors done
  std::vector<Time> start;  // per task: began executing (for COMM, when the rendezvous completed)
  std::vector<Time> end;
  std::vector<DeviceMemory> memory;       // per device
  std::vector<DeviceMemory> host_memory;  // per host (plans with COPY tasks to host memory)
  Time makespan;                     // last task end
  std::uint64_t events = 0;          // engine events processed (for benchmarks)
  std::uint64_t flows = 0;           // network flows started
};

struct SimulateOptions {
  bool record_memory_curve = false;
  // Keep no per-task timeline (Timeline::ready/start/end stay empty): what a sweep that
  // ranks variants by time and memory needs, at less memory and time per variant.
  bool summary_only = false;
  // Carry the identical edge flows of a collective as one network variable while they
  // share no link with other flows (the results are the same; off is for comparisons).
  bool aggregate_flows = true;
  // The plan is as PlanBuilder::finish returned it, which checked its tasks, edges and comm
  // instances; only its contention fields and routes are checked again. The lowering's
  // own plans are (a search checked each one twice: ~3 % of an evaluation).
  bool plan_from_builder = false;
};

// Throws std::runtime_error when the plan deadlocks (tasks left that can never start),
// naming the simulated time and a few stuck tasks.
Timeline simulate(const Plan& plan, const NetworkSpec& network, const SimulateOptions& options = {});

}  // namespace trainsim::sim
