#include "sim/attribution.hpp"

#include <algorithm>

namespace trainsim::sim {

namespace {

// What each task waited for: its predecessors (reverse CSR of the plan's edges) and the
// task before it on its stream.
class Blockers {
 public:
  Blockers(const Plan& plan, const Timeline& tl) : plan_(plan), tl_(tl) {
    const std::size_t n = plan.size();
    pred_offset_.assign(n + 1, 0);
    for (TaskId t = 0; t < n; ++t)
      for (TaskId s : plan.successors(t)) ++pred_offset_[s + 1];
    for (std::size_t i = 0; i < n; ++i) pred_offset_[i + 1] += pred_offset_[i];
    preds_.resize(pred_offset_[n]);
    std::vector<std::uint32_t> fill(pred_offset_.begin(), pred_offset_.end() - 1);
    for (TaskId t = 0; t < n; ++t)
      for (TaskId s : plan.successors(t)) preds_[fill[s]++] = t;
    prev_on_stream_.assign(n, NONE);
    std::vector<TaskId> last(static_cast<std::size_t>(plan.num_devices) * plan.streams_per_device, NONE);
    for (TaskId t = 0; t < n; ++t) {
      auto& l = last[static_cast<std::size_t>(plan.device[t]) * plan.streams_per_device + plan.stream[t]];
      prev_on_stream_[t] = l;
      l = t;
    }
  }

  // The task `t` waited for last.
  TaskId blocker(TaskId t) const {
    TaskId b = prev_on_stream_[t];
    for (std::uint32_t i = pred_offset_[t]; i < pred_offset_[t + 1]; ++i) {
      const TaskId p = preds_[i];
      if (b == NONE || tl_.end[p] > tl_.end[b]) b = p;
    }
    return b;
  }

  // Charges the gap [from, to) on `device` to the communication that caused it, walking
  // back from `first` (what the task after the gap waited for). Returns the time charged, in
  // whole picoseconds like the gap, so that a gap fully explained leaves exactly no idle time.
  template <typename Charge>
  Time explain_gap(TaskId first, std::uint32_t device, Time from, Time to, Charge&& charge) const {
    Time exposed = Time::zero();
    Time until = to;
    for (TaskId b = first; b != NONE && until > from && tl_.end[b] > from; b = blocker(b)) {
      // Another device's work (its own collectives included) is idle from here; a transfer
      // sent to this device is the one off-device step that still counts.
      const bool here = plan_.device[b] == device;
      if (plan_.kind[b] == TaskKind::COMM) {
        const Time lo = std::max(tl_.start[b], from);
        const Time hi = std::min(tl_.end[b], until);
        if (hi > lo) {
          charge(plan_.category[b], (hi - lo).seconds());
          exposed += hi - lo;
        }
      }
      until = std::min(until, tl_.start[b]);
      if (!here) break;
    }
    return exposed;
  }

 private:
  const Plan& plan_;
  const Timeline& tl_;
  std::vector<std::uint32_t> pred_offset_;
  std::vector<TaskId> preds_;
  std::vector<TaskId> prev_on_stream_;
};

}  // namespace

StreamAttribution attribute_stream(const Plan& plan, const Timeline& tl, std::uint32_t device,
                                   std::uint8_t stream, const FoldedParts& folded) {
  const Blockers why(plan, tl);
  const std::size_t categories = plan.category_names.size();
  StreamAttribution a;
  a.by_category_s.assign(categories, 0.0);
  auto charge = [&](std::uint8_t category, double seconds) {
    // A plan without category names (the builder does not require them) still splits.
    if (category >= a.by_category_s.size()) a.by_category_s.resize(category + 1u, 0.0);
    a.by_category_s[category] += seconds;
  };
  Time prev_end = Time::zero();
  for (TaskId t = 0; t < plan.size(); ++t) {
    if (plan.device[t] != device || plan.stream[t] != stream) continue;
    const Time start = tl.start[t];
    if (start > prev_end) {
      const Time exposed = why.explain_gap(why.blocker(t), device, prev_end, start, charge);
      a.idle_s += (start - prev_end - exposed).seconds();
    }
    if (const std::uint32_t p = folded.parts_of_task.empty() ? NONE : folded.parts_of_task[t]; p != NONE) {
      // A folded task: its categories in proportion (contention stretches them alike).
      const double actual = (tl.end[t] - start).seconds();
      const double nominal = plan.duration[t].seconds();
      for (std::size_t c = 0; c < categories; ++c)
        charge(static_cast<std::uint8_t>(c),
               nominal > 0 ? folded.parts[p * categories + c].seconds() * actual / nominal : 0.0);
    } else {
      charge(plan.category[t], (tl.end[t] - start).seconds());
    }
    prev_end = tl.end[t];
  }
  if (tl.makespan > prev_end) {
    // After its last task on the stream the device may still wait for its own
    // communication (a parameter all-gather after the optimizer step) before the end.
    TaskId last = NONE;
    for (TaskId t = 0; t < plan.size(); ++t)
      if (plan.device[t] == device && (last == NONE || tl.end[t] > tl.end[last])) last = t;
    const Time exposed = last == NONE ? Time::zero() : why.explain_gap(last, device, prev_end, tl.makespan, charge);
    a.idle_s += (tl.makespan - prev_end - exposed).seconds();
  }
  return a;
}

std::uint32_t last_finishing_device(const Plan& plan, const Timeline& tl) {
  std::vector<Time> device_end(plan.num_devices, Time::zero());
  for (TaskId t = 0; t < plan.size(); ++t) device_end[plan.device[t]] = std::max(device_end[plan.device[t]], tl.end[t]);
  std::uint32_t last = 0;
  for (std::uint32_t d = 1; d < plan.num_devices; ++d)
    if (device_end[d] > device_end[last]) last = d;
  return last;
}

}  // namespace trainsim::sim
