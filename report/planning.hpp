#pragma once
// A whole training run extrapolated from one simulated iteration: time to train,
// GPU-hours, energy and cost.
namespace trainsim::report {

struct RunReport;

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

PlanningFigures plan_run(const RunReport& report, double train_tokens, double price_per_gpu_hour, double board_power_w);

}  // namespace trainsim::report
