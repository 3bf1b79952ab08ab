#include "report/planning.hpp"

#include "report/run_report.hpp"

namespace trainsim::report {

PlanningFigures plan_run(const RunReport& r, double train_tokens, double price_per_gpu_hour, double board_power_w) {
  PlanningFigures p;
  p.train_tokens = train_tokens;
  p.iterations = train_tokens / (r.tokens_per_s * r.iteration_s);
  p.time_s = train_tokens / r.tokens_per_s;
  p.gpu_hours = static_cast<double>(r.gpus) * p.time_s / 3600.0;
  // The compute stream is busy with kernels during compute, recompute, the optimizer step
  // and the tensor-parallel collectives it runs itself.
  const auto& t = r.time;
  p.utilization = (t.compute_s + t.recompute_s + t.optimizer_s + t.exposed_tp_s) / r.iteration_s;
  p.energy_kwh = static_cast<double>(r.gpus) * board_power_w * p.utilization * p.time_s / 3.6e6;
  p.price_per_gpu_hour = price_per_gpu_hour;
  p.cost = p.gpu_hours * price_per_gpu_hour;
  return p;
}

}  // namespace trainsim::report
