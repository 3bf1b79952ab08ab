#include "report/run_report.hpp"

#include "report/flops.hpp"
#include "sim/attribution.hpp"

namespace trainsim::report {

RunReport analyze(const strategies::Program& program, const strategies::Lowered& lowered, const sim::Timeline& tl,
                  const hardware::Cluster& cluster, const hardware::CostModel& cost) {
  const sim::Plan& plan = lowered.plan;
  const strategies::TrainingSpec& spec = program.spec;
  RunReport r;
  r.pipeline = program.pipeline_string();
  r.fidelity = strategies::to_string(lowered.fidelity);
  r.gpus = spec.layout.gpus();
  r.micro_batches = program.micro_batches;
  r.iteration_s = tl.makespan.seconds();
  r.samples_per_s = static_cast<double>(spec.global_batch) / r.iteration_s;
  r.tokens_per_s = r.samples_per_s * static_cast<double>(spec.sequence);
  r.model_flops = models::model_flops_per_iteration(spec.model, spec.global_batch, spec.sequence);
  r.model_tflops_per_gpu = r.model_flops / r.iteration_s / static_cast<double>(r.gpus) / 1e12;
  r.peak_flops_per_gpu = cost.peak_flops(spec.dtype);
  r.mfu = r.model_tflops_per_gpu * 1e12 / r.peak_flops_per_gpu;
  // Hardware FLOPs also count the forward work recompute does again.
  r.recompute_flops = recompute_flops(program);
  r.hfu = (r.model_flops + r.recompute_flops) / r.iteration_s / static_cast<double>(r.gpus) / r.peak_flops_per_gpu;
  r.tasks = plan.size();
  r.events = tl.events;
  r.flows = tl.flows;
  r.collectives = lowered.collectives;
  // The GPU that finishes last carries the breakdown: its time is the iteration time.
  // A summary-only simulation keeps no spans to attribute: no breakdown.
  r.has_breakdown = !tl.end.empty();
  if (r.has_breakdown) {
    const std::uint32_t device = sim::last_finishing_device(plan, tl);
    r.time = strategies::break_down(lowered, tl, device);
    const std::int32_t stage = device < lowered.device_stage.size() ? lowered.device_stage[device] : 0;
    r.compute_classes = compute_by_class(program, stage, cost, r.time.compute_s + r.time.recompute_s);
  }
  r.memory = memory_breakdown(lowered, tl, cluster);
  // With the breakdown, which a sweep or search asks for only for the variants it explains.
  if (r.has_breakdown) r.layer_ops = top_layer_ops(program, cost);
  return r;
}

}  // namespace trainsim::report
