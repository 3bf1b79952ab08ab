#pragma once
// What a simulated iteration means: throughput, MFU, where the time of the critical GPU
// went, and the memory of the most loaded GPU.
#include <array>
#include <cstdint>
#include <string>

#include "hardware/cluster.hpp"
#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/program.hpp"

namespace trainsim::strategies {

struct TimeBreakdown {
  std::uint32_t rank = 0;  // the GPU whose time is broken down (the one that finishes last)
  // Seconds on that GPU's compute stream, summing to the iteration time:
  double compute_s = 0;     // forward and backward work
  double recompute_s = 0;   // forward work redone in backward
  double optimizer_s = 0;
  double exposed_tp_s = 0;  // tensor-parallel collectives the compute stream waits on
  double exposed_dp_s = 0;  // data-parallel gradient synchronisation not hidden
  double exposed_pp_s = 0;  // pipeline transfers in flight while the stage waits
  double bubble_s = 0;      // idle: waiting for other stages (pipeline fill/drain, imbalance)
  double total() const {
    return compute_s + recompute_s + optimizer_s + exposed_tp_s + exposed_dp_s + exposed_pp_s + bubble_s;
  }
};

struct MemoryBreakdown {
  std::uint32_t rank = 0;  // the most loaded GPU
  double peak_bytes = 0;
  std::array<double, static_cast<int>(MemClass::COUNT)> at_peak{};  // by class
  double capacity_bytes = 0;
  bool out_of_memory = false;
};

// A whole training run extrapolated from one iteration.
struct PlanningFigures {
  double train_tokens = 0;
  double iterations = 0;
  double time_s = 0;
  double gpu_hours = 0;
  double utilization = 0;  // busy share of the critical GPU's compute stream
  double energy_kwh = 0;   // board power × utilization over the run (idle draw not modelled)
  double price_per_gpu_hour = 0;  // 0: not given
  double cost = 0;                // gpu_hours × price
};

struct RunReport {
  std::string pipeline;        // the pass pipeline, as run
  std::string fidelity;
  std::int64_t gpus = 0;
  std::int64_t micro_batches = 0;
  double iteration_s = 0;
  double tokens_per_s = 0;
  double samples_per_s = 0;
  double model_flops = 0;              // per iteration, no recompute (MFU numerator)
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double recompute_flops = 0;          // per iteration, all GPUs: forward work redone in backward
  double hfu = 0;                      // (model + recompute FLOPs) / (time · GPUs · peak)
  double peak_flops_per_gpu = 0;
  TimeBreakdown time;
  MemoryBreakdown memory;
  std::uint64_t tasks = 0, events = 0, flows = 0;
  PlanningFigures planning;
};

PlanningFigures plan_run(const RunReport& report, double train_tokens, double price_per_gpu_hour, double board_power_w);

RunReport analyze(const Program& program, const Lowered& lowered, const sim::Timeline& timeline,
                  const hardware::Cluster& cluster, const hardware::CostModel& cost);

}  // namespace trainsim::strategies
