#include "strategies/analysis.hpp"

#include <algorithm>

namespace trainsim::strategies {

namespace {

// Splits the compute stream of `device` into the categories of TimeBreakdown. Busy time
// is charged to the running task's category. An idle gap before a task is explained by
// walking back along what it waited for: the predecessor (an edge, or the previous task
// on the same stream) that ended last, then what that one waited for, and so on. Where a
// transfer or collective on that chain was moving data during the gap, the time is
// exposed communication of its kind; the rest of the gap is bubble (another GPU's work,
// a rendezvous with a slower member, pipeline fill and drain). The walk stays on this GPU
// except for the transfer that arrives from another one.
class Attribution {
 public:
  Attribution(const sim::Plan& plan, const sim::Timeline& tl) : plan_(plan), tl_(tl) {
    const std::size_t n = plan.size();
    pred_offset_.assign(n + 1, 0);
    for (sim::TaskId t = 0; t < n; ++t)
      for (sim::TaskId s : plan.successors(t)) ++pred_offset_[s + 1];
    for (std::size_t i = 0; i < n; ++i) pred_offset_[i + 1] += pred_offset_[i];
    preds_.resize(pred_offset_[n]);
    std::vector<std::uint32_t> fill(pred_offset_.begin(), pred_offset_.end() - 1);
    for (sim::TaskId t = 0; t < n; ++t)
      for (sim::TaskId s : plan.successors(t)) preds_[fill[s]++] = t;
    prev_on_stream_.assign(n, sim::NONE);
    std::vector<sim::TaskId> last(static_cast<std::size_t>(plan.num_devices) * plan.streams_per_device, sim::NONE);
    for (sim::TaskId t = 0; t < n; ++t) {
      auto& l = last[static_cast<std::size_t>(plan.device[t]) * plan.streams_per_device + plan.stream[t]];
      prev_on_stream_[t] = l;
      l = t;
    }
  }

  // The task `t` waited for last.
  sim::TaskId blocker(sim::TaskId t) const {
    sim::TaskId b = prev_on_stream_[t];
    for (std::uint32_t i = pred_offset_[t]; i < pred_offset_[t + 1]; ++i) {
      const sim::TaskId p = preds_[i];
      if (b == sim::NONE || tl_.end[p] > tl_.end[b]) b = p;
    }
    return b;
  }

  // Charges the gap [from, to) on `device` to the communication that caused it, walking
  // back from `first` (what the task after the gap waited for).
  template <typename Charge>
  double explain_gap(sim::TaskId first, std::uint32_t device, sim::Time from, sim::Time to, Charge&& charge) const {
    double exposed = 0;
    sim::Time until = to;
    for (sim::TaskId b = first; b != sim::NONE && until > from && tl_.end[b] > from; b = blocker(b)) {
      // Another GPU's work (its own collectives included) is bubble from here; a transfer
      // sent to this GPU is the one off-device step that still counts.
      const bool here = plan_.device[b] == device;
      if (plan_.kind[b] == sim::TaskKind::COMM) {
        const sim::Time lo = std::max(tl_.start[b], from);
        const sim::Time hi = std::min(tl_.end[b], until);
        if (hi > lo) {
          charge(plan_.category[b], (hi - lo).seconds());
          exposed += (hi - lo).seconds();
        }
      }
      until = std::min(until, tl_.start[b]);
      if (!here) break;
    }
    return exposed;
  }

 private:
  const sim::Plan& plan_;
  const sim::Timeline& tl_;
  std::vector<std::uint32_t> pred_offset_;
  std::vector<sim::TaskId> preds_;
  std::vector<sim::TaskId> prev_on_stream_;
};

TimeBreakdown break_down(const Lowered& lowered, const sim::Timeline& tl, std::uint32_t device) {
  const sim::Plan& plan = lowered.plan;
  const Attribution why(plan, tl);
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
  for (sim::TaskId t = 0; t < plan.size(); ++t) {
    if (plan.device[t] != device || plan.stream[t] != COMPUTE_STREAM) continue;
    const sim::Time start = tl.start[t];
    if (start > prev_end) {
      const double exposed = why.explain_gap(why.blocker(t), device, prev_end, start, charge);
      b.bubble_s += (start - prev_end).seconds() - exposed;
    }
    if (const std::uint32_t p = lowered.parts_of_task[t]; p != sim::NONE) {
      // A folded task: its categories in proportion (contention stretches them alike).
      const double actual = (tl.end[t] - start).seconds();
      const double nominal = plan.duration[t].seconds();
      for (std::size_t c = 0; c < lowered.parts[p].size(); ++c)
        charge(static_cast<std::uint8_t>(c),
               nominal > 0 ? lowered.parts[p][c].seconds() * actual / nominal : 0.0);
    } else {
      charge(plan.category[t], (tl.end[t] - start).seconds());
    }
    prev_end = tl.end[t];
  }
  if (tl.makespan > prev_end) {
    // After its last kernel the GPU may still wait for its own communication (a
    // parameter all-gather after the optimizer step) before the iteration ends.
    sim::TaskId last = sim::NONE;
    for (sim::TaskId t = 0; t < plan.size(); ++t)
      if (plan.device[t] == device && (last == sim::NONE || tl.end[t] > tl.end[last])) last = t;
    const double exposed = last == sim::NONE ? 0 : why.explain_gap(last, device, prev_end, tl.makespan, charge);
    b.bubble_s += (tl.makespan - prev_end).seconds() - exposed;
  }
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
  // Hardware FLOPs also count the forward work recompute does again.
  for (const Role& role : program.roles) {
    double per_micro_batch = 0;
    for (const Chunk& chunk : role.chunks)
      for (const Item& it : chunk.backward)
        if (it.kind == Item::Kind::COMPUTE && it.category == Category::RECOMPUTE)
          for (const auto& op : role.segments[it.segment].ops) per_micro_batch += op.fwd_flops * it.fraction;
    r.recompute_flops += per_micro_batch * static_cast<double>(program.micro_batches) *
                         static_cast<double>(spec.layout.tensor * spec.layout.data);
  }
  r.hfu = (r.model_flops + r.recompute_flops) / r.iteration_s / static_cast<double>(r.gpus) / r.peak_flops_per_gpu;
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
  r.time = break_down(lowered, tl, critical);
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

}  // namespace trainsim::strategies
