#include "strategies/analysis.hpp"

#include <algorithm>

namespace trainsim::strategies {

namespace {

// Splits the compute stream of `device` into the categories of TimeBreakdown. Busy time
// is charged to the running task's category; an idle gap before a task is charged to
// the predecessor it waited for: the part of the gap during which that predecessor (a
// transfer or collective) was moving data is exposed communication of its kind, the rest
// is bubble.
TimeBreakdown break_down(const sim::Plan& plan, const sim::Timeline& tl, std::uint32_t device) {
  std::vector<std::vector<sim::TaskId>> preds_of;  // only for this device's compute stream
  std::vector<sim::TaskId> stream_tasks;
  for (sim::TaskId t = 0; t < plan.size(); ++t)
    if (plan.device[t] == device && plan.stream[t] == static_cast<std::uint8_t>(Stream::COMPUTE))
      stream_tasks.push_back(t);
  std::vector<std::int64_t> local(plan.size(), -1);
  for (std::size_t i = 0; i < stream_tasks.size(); ++i) local[stream_tasks[i]] = static_cast<std::int64_t>(i);
  preds_of.resize(stream_tasks.size());
  for (sim::TaskId t = 0; t < plan.size(); ++t)
    for (sim::TaskId s : plan.successors(t))
      if (local[s] >= 0) preds_of[static_cast<std::size_t>(local[s])].push_back(t);

  TimeBreakdown b;
  auto charge = [&](std::uint8_t category, double seconds) {
    switch (static_cast<Category>(category)) {
      case Category::COMPUTE: b.compute_s += seconds; break;
      case Category::RECOMPUTE: b.recompute_s += seconds; break;
      case Category::OPTIMIZER: b.optimizer_s += seconds; break;
      case Category::TP_COMM: b.exposed_tp_s += seconds; break;
      case Category::DP_COMM: b.exposed_dp_s += seconds; break;
      case Category::PP_COMM: b.exposed_pp_s += seconds; break;
      case Category::COUNT: break;
    }
  };
  sim::Time prev_end = sim::Time::zero();
  for (std::size_t i = 0; i < stream_tasks.size(); ++i) {
    const sim::TaskId t = stream_tasks[i];
    // A collective's own wait for its slowest member is idle time, not communication.
    const sim::Time start = tl.start[t];
    if (start > prev_end) {
      const sim::Time gap_begin = prev_end;
      sim::TaskId blocker = sim::NONE;
      for (sim::TaskId p : preds_of[i])
        if (blocker == sim::NONE || tl.end[p] > tl.end[blocker]) blocker = p;
      double exposed = 0;
      if (blocker != sim::NONE && plan.kind[blocker] == sim::TaskKind::COMM && tl.end[blocker] > gap_begin) {
        const sim::Time from = std::max(tl.start[blocker], gap_begin);
        const sim::Time to = std::min(tl.end[blocker], start);
        if (to > from) exposed = (to - from).seconds();
        charge(plan.category[blocker], exposed);
      }
      b.bubble_s += (start - gap_begin).seconds() - exposed;
    }
    charge(plan.category[t], (tl.end[t] - start).seconds());
    prev_end = tl.end[t];
  }
  if (tl.makespan > prev_end) b.bubble_s += (tl.makespan - prev_end).seconds();
  return b;
}

}  // namespace

RunReport analyze(const Program& program, const Lowered& lowered, const sim::Timeline& tl,
                  const hardware::Cluster& cluster, const hardware::CostModel& cost) {
  const sim::Plan& plan = lowered.plan;
  const TrainingSpec& spec = program.spec;
  RunReport r;
  r.pipeline = program.pipeline_string();
  r.fidelity = to_string(lowered.fidelity);
  r.gpus = spec.layout.gpus();
  r.micro_batches = program.micro_batches;
  r.iteration_s = tl.makespan.seconds();
  r.samples_per_s = static_cast<double>(spec.global_batch) / r.iteration_s;
  r.tokens_per_s = r.samples_per_s * static_cast<double>(spec.sequence);
  r.model_flops = models::model_flops_per_iteration(spec.model, spec.global_batch, spec.sequence);
  r.model_tflops_per_gpu = r.model_flops / r.iteration_s / static_cast<double>(r.gpus) / 1e12;
  r.peak_flops_per_gpu = cost.peak_flops(spec.dtype);
  r.mfu = r.model_tflops_per_gpu * 1e12 / r.peak_flops_per_gpu;
  r.tasks = plan.size();
  r.events = tl.events;
  r.flows = tl.flows;

  // The GPU that finishes last (lowest id on ties) carries the breakdown.
  std::vector<sim::Time> device_end(plan.num_devices, sim::Time::zero());
  for (sim::TaskId t = 0; t < plan.size(); ++t)
    device_end[plan.device[t]] = std::max(device_end[plan.device[t]], tl.end[t]);
  std::uint32_t critical = 0;
  for (std::uint32_t d = 1; d < plan.num_devices; ++d)
    if (device_end[d] > device_end[critical]) critical = d;
  r.time = break_down(plan, tl, critical);
  r.time.rank = lowered.device_rank[critical];

  std::uint32_t loaded = 0;
  for (std::uint32_t d = 1; d < plan.num_devices; ++d)
    if (tl.memory[d].peak_bytes > tl.memory[loaded].peak_bytes) loaded = d;
  const sim::DeviceMemory& mem = tl.memory[loaded];
  r.memory.rank = lowered.device_rank[loaded];
  r.memory.peak_bytes = static_cast<double>(mem.peak_bytes);
  for (std::size_t c = 0; c < r.memory.at_peak.size() && c < mem.at_peak.size(); ++c)
    r.memory.at_peak[c] = static_cast<double>(mem.at_peak[c]);
  r.memory.capacity_bytes = cluster.gpu().hbm_capacity_bytes().value();
  r.memory.out_of_memory = r.memory.peak_bytes > r.memory.capacity_bytes;
  return r;
}

}  // namespace trainsim::strategies
