#include "sim/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <cassert>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/detail/plan_check.hpp"
#include "sim/event_queue.hpp"
#include "sim/flow_network.hpp"

// Order of what happens at one instant t (fixed, so runs are bit-for-bit reproducible):
//  1. network flows finishing at t, in the order they started (their instances' ends are
//     scheduled as events, at t + latency);
//  2. events at t, FIFO by the sequence in which they were scheduled;
//  3. once nothing else is due at t, the network re-solves every component that a start
//     or finish touched at t, once; new flows that finish at t then go back to 1.
// An instance whose pattern's flows all carry the same bytes starts them as one group, so
// that the network may carry its symmetric edge flows as one variable.
// A task that ends frees its memory, then releases its successors in increasing id order,
// then the next task of its stream. A released COMPUTE task starts at once (its end is an
// event); a released COMM task arrives at its rendezvous, and the last arrival starts the
// instance: its participants start in increasing task id order and its flows start in
// template order. Memory peaks are taken after every single change in that order.

namespace trainsim::sim {

namespace {

enum EventKind : std::uint32_t { TASK_END = 0, COMM_END = 1 };

enum TaskState : std::uint8_t { WAITING = 0, AT_RENDEZVOUS, RUNNING, DONE };

// Streams are numbered by a uint8_t, so at most 256 per device exist whatever
// streams_per_device says.
std::size_t stream_stride(const Plan& p) { return std::min<std::size_t>(p.streams_per_device, 256); }

std::string format_time(Time t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "t=%.6f us (%lld ps)", static_cast<double>(t.ps) * 1e-6,
                static_cast<long long>(t.ps));
  return buf;
}

class Engine {
 public:
  Engine(const Plan& plan, const NetworkSpec& network, const SimulateOptions& options)
      : plan_(plan),
        options_(options),
        net_(network.capacity_bytes_per_s,
             options.aggregate_flows ? FlowNetwork::Aggregation::ON : FlowNetwork::Aggregation::OFF) {}

  Timeline run();

 private:
  void prepare();
  void make_ready(TaskId t);
  void start_comm(std::uint32_t c);
  void start_comm_flows(std::uint32_t c);
  void finish_task(TaskId t);
  void change_memory(TaskId t, std::int64_t delta);
  void release_start_successors(TaskId t);
  void handle_network_finishes();
  [[noreturn]] void report_deadlock() const;
  // Contention between a device's computation and its communication.
  bool contended(TaskId t) const {
    return tracks_contention_ && plan_.kind[t] == TaskKind::COMPUTE && plan_.stream[t] == plan_.contended_stream &&
           (plan_.contention_share[t] > 0.0f || plan_.link_slowdown[t] > 0.0f);
  }
  // The rate of contended compute task t on device d, given the communication running there.
  double rate(TaskId t, std::uint32_t d) const {
    double slowdown = 1.0;
    if (active_comm_[d] > 0) slowdown += plan_.contention_slowdown * static_cast<double>(plan_.contention_share[t]);
    if (active_link_comm_[d] > 0) slowdown += static_cast<double>(plan_.link_slowdown[t]);
    return 1.0 / slowdown;
  }
  void schedule_compute_end(std::uint32_t device);
  void change_comm_activity(TaskId comm_task, int delta);
  Time scaled_latency(std::uint32_t c) const {
    const CommInstance& ci = plan_.comms[c];
    const Time latency = plan_.patterns[ci.pattern].latency;
    if (ci.latency_scale == 1.0) return latency;
    return Time::from_seconds(latency.seconds() * ci.latency_scale);
  }

  const Plan& plan_;
  const SimulateOptions& options_;
  // Whether any compute runs slower beside communication (per-device activity is tracked).
  bool tracks_contention_ = false;
  bool spans_ = true;    // keep per-task spans (not in summary-only mode)
  Time last_end_;        // the makespan so far
  FlowNetwork net_;
  EventQueue queue_;
  Timeline tl_;
  Time now_;

  std::vector<std::uint32_t> pending_;         // unfinished predecessors + unfinished stream predecessor
  std::vector<TaskId> next_in_stream_;
  std::vector<std::uint8_t> state_;
  std::vector<std::uint32_t> part_offset_;     // CSR: the COMM tasks of each instance, by id
  std::vector<TaskId> part_tasks_;
  std::vector<std::uint32_t> arrived_;         // per instance
  std::vector<std::uint32_t> flows_left_;      // per instance
  std::vector<FlowNetwork::Finished> finished_;  // reused for every batch of network finishes
  // Per pattern: its route set when all its flows carry the same bytes, else NONE.
  std::vector<RouteSetId> pattern_set_;
  std::vector<std::int64_t> mem_;              // [pool * classes + class]; pools: devices, then hosts
  std::vector<std::int64_t> mem_total_;        // per pool
  std::size_t classes_ = 0;
  std::size_t tasks_done_ = 0;
  // Per device, only when the plan models contention: communication tasks running on other
  // streams than the contended one, the contended compute task running (NONE if none), its
  // uncontended work left (ps) as of `since_`.
  std::vector<std::uint32_t> active_comm_;
  std::vector<std::uint32_t> active_link_comm_;  // of those, instances with shares_links
  std::vector<TaskId> running_compute_;
  std::vector<double> work_left_ps_;
  std::vector<Time> since_;
  std::vector<Time> expected_end_;  // per task: the end its live TASK_END event carries
};

void Engine::schedule_compute_end(std::uint32_t d) {
  const TaskId t = running_compute_[d];
  const Time end = now_ + Time::from_ps(static_cast<std::int64_t>(std::ceil(work_left_ps_[d] / rate(t, d))));
  expected_end_[t] = end;
  queue_.push(end, TASK_END, t);  // an earlier event for t is now stale
}

void Engine::change_comm_activity(TaskId c, int delta) {
  const std::uint32_t d = plan_.device[c];
  if (!tracks_contention_ || plan_.stream[c] == plan_.contended_stream ||
      plan_.kind[c] != TaskKind::COMM)
    return;
  const CommInstance& inst = plan_.comms[plan_.comm[c]];
  if (!inst.occupies_sms && !inst.shares_links) return;
  const TaskId running = running_compute_[d];
  const double old_rate = running != NONE ? rate(running, d) : 1.0;
  const std::uint32_t before = active_comm_[d], before_link = active_link_comm_[d];
  if (inst.occupies_sms) active_comm_[d] = static_cast<std::uint32_t>(static_cast<int>(before) + delta);
  if (inst.shares_links)
    active_link_comm_[d] = static_cast<std::uint32_t>(static_cast<int>(before_link) + delta);
  const bool changed = (before == 0) != (active_comm_[d] == 0) || (before_link == 0) != (active_link_comm_[d] == 0);
  if (!changed || running == NONE) return;
  // The running computation changes speed: book what it did at the old rate.
  work_left_ps_[d] = std::max(0.0, work_left_ps_[d] - static_cast<double>((now_ - since_[d]).ps) * old_rate);
  since_[d] = now_;
  schedule_compute_end(d);
}

void Engine::prepare() {
  const std::size_t n = plan_.size();
  tracks_contention_ = plan_.contention_slowdown > 0 ||
                       std::any_of(plan_.link_slowdown.begin(), plan_.link_slowdown.end(), [](float s) { return s > 0; });
  pending_.assign(n, 0);
  for (const TaskId s : plan_.succ) ++pending_[s];
  for (const TaskId s : plan_.start_succ) ++pending_[s];
  next_in_stream_.assign(n, NONE);
  {
    std::vector<TaskId> last(std::size_t{plan_.num_devices} * stream_stride(plan_), NONE);
    for (std::size_t t = 0; t < n; ++t) {
      const std::size_t key = std::size_t{plan_.device[t]} * stream_stride(plan_) + plan_.stream[t];
      if (last[key] != NONE) {
        next_in_stream_[last[key]] = static_cast<TaskId>(t);
        ++pending_[t];
      }
      last[key] = static_cast<TaskId>(t);
    }
  }
  state_.assign(n, WAITING);

  const std::size_t nc = plan_.comms.size();
  part_offset_.assign(nc + 1, 0);
  for (std::size_t t = 0; t < n; ++t) {
    if (plan_.kind[t] != TaskKind::COMPUTE) ++part_offset_[plan_.comm[t] + 1];
  }
  for (std::size_t c = 0; c < nc; ++c) part_offset_[c + 1] += part_offset_[c];
  part_tasks_.resize(part_offset_[nc]);
  {
    std::vector<std::uint32_t> fill(part_offset_.begin(), part_offset_.end() - 1);
    for (std::size_t t = 0; t < n; ++t) {
      if (plan_.kind[t] != TaskKind::COMPUTE) part_tasks_[fill[plan_.comm[t]]++] = static_cast<TaskId>(t);
    }
  }
  arrived_.assign(nc, 0);
  flows_left_.assign(nc, 0);

  pattern_set_.assign(plan_.patterns.size(), NONE);
  std::vector<std::vector<std::uint32_t>> routes;
  for (std::size_t p = 0; p < plan_.patterns.size(); ++p) {
    const CommPattern& pat = plan_.patterns[p];
    if (pat.flows.size() < 2) continue;
    const double bytes = pat.flows.front().bytes_per_unit;
    if (!std::all_of(pat.flows.begin(), pat.flows.end(), [&](const FlowTemplate& f) { return f.bytes_per_unit == bytes; }))
      continue;
    routes.resize(pat.flows.size());
    for (std::size_t i = 0; i < pat.flows.size(); ++i) {
      const FlowTemplate& ft = pat.flows[i];
      routes[i].assign(pat.route_links.begin() + ft.route_begin, pat.route_links.begin() + ft.route_end);
    }
    pattern_set_[p] = net_.add_route_set(routes);
  }

  if (tracks_contention_) {
    active_comm_.assign(plan_.num_devices, 0);
    active_link_comm_.assign(plan_.num_devices, 0);
    running_compute_.assign(plan_.num_devices, NONE);
    work_left_ps_.assign(plan_.num_devices, 0.0);
    since_.assign(plan_.num_devices, Time::zero());
    expected_end_.assign(n, Time::max());
  }

  classes_ = plan_.mem_class_names.size();
  mem_ = plan_.initial_memory;
  mem_.resize((std::size_t{plan_.num_devices} + plan_.num_hosts) * classes_, 0);
  mem_total_.assign(std::size_t{plan_.num_devices} + plan_.num_hosts, 0);
  tl_.memory.resize(plan_.num_devices);
  tl_.host_memory.resize(plan_.num_hosts);
  for (DeviceMemory& hm : tl_.host_memory) {
    hm.at_peak.assign(classes_, 0);
    if (options_.record_memory_curve) {
      hm.curve.emplace_back(Time::zero(), 0);
      hm.curve_by_class.assign(classes_, 0);
    }
  }
  for (std::uint32_t d = 0; d < plan_.num_devices; ++d) {
    std::int64_t total = 0;
    for (std::size_t k = 0; k < classes_; ++k) total += mem_[d * classes_ + k];
    mem_total_[d] = total;
    DeviceMemory& dm = tl_.memory[d];
    dm.peak_bytes = total;
    dm.peak_time = Time::zero();
    dm.at_peak.assign(mem_.begin() + static_cast<std::ptrdiff_t>(d * classes_),
                      mem_.begin() + static_cast<std::ptrdiff_t>((d + 1) * classes_));
    // The curve starts with the memory held before the first task.
    if (options_.record_memory_curve) {
      dm.curve.emplace_back(Time::zero(), total);
      dm.curve_by_class.insert(dm.curve_by_class.end(), dm.at_peak.begin(), dm.at_peak.end());
    }
  }

  spans_ = !options_.summary_only;
  if (spans_) {
    tl_.ready.assign(n, Time::zero());
    tl_.start.assign(n, Time::zero());
    tl_.end.assign(n, Time::zero());
  }
}

void Engine::change_memory(TaskId t, std::int64_t delta) {
  const std::uint32_t device = plan_.device[t];
  const bool host = plan_.mem_on_host[t] != 0;
  const std::size_t pool = host ? std::size_t{plan_.num_devices} + plan_.host_of_device[device] : device;
  const std::size_t base = pool * classes_;
  mem_[base + plan_.mem_class[t]] += delta;
  const std::int64_t total = mem_total_[pool] += delta;
  DeviceMemory& dm = host ? tl_.host_memory[plan_.host_of_device[device]] : tl_.memory[device];
  if (total > dm.peak_bytes) {
    dm.peak_bytes = total;
    dm.peak_time = now_;
    std::copy_n(mem_.begin() + static_cast<std::ptrdiff_t>(base), classes_, dm.at_peak.begin());
  }
  if (options_.record_memory_curve) {
    dm.curve.emplace_back(now_, total);
    const auto row = mem_.begin() + static_cast<std::ptrdiff_t>(base);
    dm.curve_by_class.insert(dm.curve_by_class.end(), row, row + static_cast<std::ptrdiff_t>(classes_));
  }
}

void Engine::make_ready(TaskId t) {
  if (spans_) tl_.ready[t] = now_;
  if (plan_.kind[t] == TaskKind::COMPUTE) {
    state_[t] = RUNNING;
    if (spans_) tl_.start[t] = now_;
    if (plan_.alloc_bytes[t] != 0) change_memory(t, plan_.alloc_bytes[t]);
    if (contended(t)) {
      const std::uint32_t d = plan_.device[t];
      running_compute_[d] = t;
      work_left_ps_[d] = static_cast<double>(plan_.duration[t].ps);
      since_[d] = now_;
      schedule_compute_end(d);
    } else {
      queue_.push(now_ + plan_.duration[t], TASK_END, t);
    }
    release_start_successors(t);
    return;
  }
  state_[t] = AT_RENDEZVOUS;
  const std::uint32_t c = plan_.comm[t];
  if (++arrived_[c] == plan_.comms[c].participants) start_comm(c);
}

void Engine::release_start_successors(TaskId t) {
  const std::uint32_t b = plan_.start_succ_offset[t];
  const std::uint32_t e = plan_.start_succ_offset[t + 1];
  for (std::uint32_t i = b; i < e; ++i) {
    const TaskId s = plan_.start_succ[i];
    if (--pending_[s] == 0) make_ready(s);
  }
}

void Engine::start_comm(std::uint32_t c) {
  start_comm_flows(c);
  // Only now that the instance runs: a prefetch it releases may start another instance.
  for (std::uint32_t i = part_offset_[c]; i < part_offset_[c + 1]; ++i) release_start_successors(part_tasks_[i]);
}

void Engine::start_comm_flows(std::uint32_t c) {
  for (std::uint32_t i = part_offset_[c]; i < part_offset_[c + 1]; ++i) {
    const TaskId t = part_tasks_[i];
    state_[t] = RUNNING;
    if (spans_) tl_.start[t] = now_;
    if (plan_.alloc_bytes[t] != 0) change_memory(t, plan_.alloc_bytes[t]);
    change_comm_activity(t, +1);
  }
  const CommInstance& ci = plan_.comms[c];
  if (ci.pattern == NONE) {
    queue_.push(now_ + ci.fixed_duration, COMM_END, c);
    return;
  }
  const CommPattern& pat = plan_.patterns[ci.pattern];
  if (pat.flows.empty()) {
    queue_.push(now_ + scaled_latency(c), COMM_END, c);
    return;
  }
  flows_left_[c] = static_cast<std::uint32_t>(pat.flows.size());
  if (pattern_set_[ci.pattern] != NONE) {
    net_.add_flows(now_, pattern_set_[ci.pattern], pat.flows.front().bytes_per_unit * ci.bytes, c);
  } else {
    for (const FlowTemplate& ft : pat.flows) {
      const std::span<const std::uint32_t> route(pat.route_links.data() + ft.route_begin, ft.route_end - ft.route_begin);
      net_.add_flow(now_, route, ft.bytes_per_unit * ci.bytes, c);
    }
  }
  tl_.flows += pat.flows.size();
}

void Engine::finish_task(TaskId t) {
  state_[t] = DONE;
  if (spans_) tl_.end[t] = now_;
  last_end_ = std::max(last_end_, now_);
  ++tasks_done_;
  if (tracks_contention_) {
    if (plan_.kind[t] == TaskKind::COMM) change_comm_activity(t, -1);
    else if (contended(t)) running_compute_[plan_.device[t]] = NONE;
  }
  if (plan_.free_bytes[t] != 0) change_memory(t, -plan_.free_bytes[t]);
  const std::uint32_t b = plan_.succ_offset[t];
  const std::uint32_t e = plan_.succ_offset[t + 1];
  for (std::uint32_t i = b; i < e; ++i) {
    const TaskId s = plan_.succ[i];
    if (--pending_[s] == 0) make_ready(s);
  }
  const TaskId next = next_in_stream_[t];
  if (next != NONE && --pending_[next] == 0) make_ready(next);
}

void Engine::handle_network_finishes() {
  finished_.clear();
  net_.remove_finished(now_, finished_);
  for (const FlowNetwork::Finished& f : finished_) {
    tl_.events += f.flows;  // one event per member flow, aggregated or not
    const std::uint32_t c = f.tag;
    flows_left_[c] -= f.flows;
    if (flows_left_[c] == 0) queue_.push(now_ + scaled_latency(c), COMM_END, c);
  }
}

Timeline Engine::run() {
  prepare();
  const std::size_t n = plan_.size();
  queue_.reserve(1024);
  now_ = Time::zero();
  for (std::size_t t = 0; t < n; ++t) {
    if (pending_[t] == 0) make_ready(static_cast<TaskId>(t));
  }

  for (;;) {
    const Time net_next = net_.next_finish();
    if (net_next <= now_) {
      handle_network_finishes();
      continue;
    }
    if (!queue_.empty() && queue_.top().time <= now_) {
      const Event ev = queue_.pop();
      ++tl_.events;
      if (ev.kind == TASK_END) {
        // A computation whose speed changed left its earlier end event behind.
        // (An end rescheduled to the same instant leaves two live events: finish once.)
        if (!expected_end_.empty() && contended(ev.payload) &&
            (expected_end_[ev.payload] != ev.time || state_[ev.payload] == DONE))
          continue;
        finish_task(ev.payload);
      } else {
        for (std::uint32_t i = part_offset_[ev.payload]; i < part_offset_[ev.payload + 1]; ++i) {
          finish_task(part_tasks_[i]);
        }
      }
      continue;
    }
    // Nothing else is due now: settle the rates of everything that started or finished.
    if (net_.needs_solve()) {
      net_.solve(now_);
      continue;
    }
    const Time next = std::min(net_next, queue_.empty() ? Time::max() : queue_.top().time);
    if (next == Time::max()) break;
    assert(next > now_ && "simulate: time must move forward");
    now_ = next;
  }

  if (tasks_done_ != n) report_deadlock();
  tl_.makespan = last_end_;
  return std::move(tl_);
}

void Engine::report_deadlock() const {
  const std::size_t n = plan_.size();
  // The tasks worth naming are the heads of the streams that still have work: everything
  // else is queued behind one of them.
  constexpr std::size_t MAX_NAMED = 5;
  std::vector<TaskId> stuck;
  std::size_t streams_stuck = 0;
  std::vector<std::uint8_t> seen(std::size_t{plan_.num_devices} * stream_stride(plan_), 0);
  for (std::size_t t = 0; t < n; ++t) {
    const std::size_t key = std::size_t{plan_.device[t]} * stream_stride(plan_) + plan_.stream[t];
    if (state_[t] == DONE || seen[key]) continue;
    seen[key] = 1;  // streams run in id order: the first unfinished task is the head
    ++streams_stuck;
    if (stuck.size() < MAX_NAMED) stuck.push_back(static_cast<TaskId>(t));
  }
  // Unfinished predecessors of the named tasks (one pass over the edges; this is the error path).
  std::vector<std::vector<TaskId>> waits_on(stuck.size());
  for (std::size_t u = 0; u < n; ++u) {
    if (state_[u] == DONE) continue;
    for (const TaskId s : plan_.successors(static_cast<TaskId>(u))) {
      const auto it = std::find(stuck.begin(), stuck.end(), s);
      if (it != stuck.end()) waits_on[static_cast<std::size_t>(it - stuck.begin())].push_back(static_cast<TaskId>(u));
    }
  }

  std::string msg = "simulate: deadlock at " + format_time(now_) + ": " + std::to_string(n - tasks_done_) + " of " +
                    std::to_string(n) + " tasks can never finish; " + std::to_string(streams_stuck) +
                    " stream(s) are blocked at:";
  for (std::size_t i = 0; i < stuck.size(); ++i) {
    const TaskId t = stuck[i];
    msg += "\n  task " + std::to_string(t) + " (device " + std::to_string(plan_.device[t]) + ", stream " +
           std::to_string(plan_.stream[t]) + ", ";
    if (plan_.kind[t] == TaskKind::COMPUTE) {
      msg += "COMPUTE";
    } else {
      const std::uint32_t c = plan_.comm[t];
      msg += "COMM instance " + std::to_string(c) + ", " + std::to_string(arrived_[c]) + " of " +
             std::to_string(plan_.comms[c].participants) + " participants at the rendezvous";
    }
    const std::vector<TaskId>& w = waits_on[i];
    msg += "): " + std::to_string(w.size()) + " unfinished predecessor(s)";
    for (std::size_t j = 0; j < w.size() && j < 3; ++j) msg += (j == 0 ? ": " : ", ") + std::to_string(w[j]);
    if (w.size() > 3) msg += ", ...";
    if (state_[t] == AT_RENDEZVOUS) msg += ", waiting for the other participants";
  }
  if (net_.active_flows() > 0) {
    msg += "\n  " + std::to_string(net_.active_flows()) +
           " network flow(s) can never finish (a rate of zero or a duration beyond the time range)";
  }
  throw std::runtime_error(msg);
}

}  // namespace

Timeline simulate(const Plan& plan, const NetworkSpec& network, const SimulateOptions& options) {
  const std::size_t links = network.capacity_bytes_per_s.size();
  const detail::PlanProblems problems =
      options.plan_from_builder ? detail::check_finished_plan(plan, links) : detail::check_plan(plan, links);
  if (!problems.empty()) throw std::invalid_argument(problems.join("simulate: invalid plan"));
  Engine engine(plan, network, options);
  return engine.run();
}

}  // namespace trainsim::sim
