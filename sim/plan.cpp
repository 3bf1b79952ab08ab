#include "sim/plan.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/detail/plan_check.hpp"

namespace trainsim::sim {

namespace detail {

std::string PlanProblems::join(const std::string& prefix) const {
  std::string out = prefix;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    out += i == 0 ? ": " : "; ";
    out += shown[i];
  }
  if (total > shown.size()) out += " (and " + std::to_string(total - shown.size()) + " more problems)";
  return out;
}

namespace {

std::string task_name(const Plan& p, std::size_t t) {
  return "task " + std::to_string(t) + " (device " + std::to_string(p.device[t]) + ", stream " +
         std::to_string(p.stream[t]) + ")";
}

bool bad_bytes(double b) { return !(b >= 0.0) || !std::isfinite(b); }

void check_contention(const Plan& p, PlanProblems& out) {
  if (!(p.contention_slowdown >= 0) || !std::isfinite(p.contention_slowdown)) {
    out.add([&] { return "contention_slowdown must be a finite number >= 0, got " + std::to_string(p.contention_slowdown); });
  }
  if (p.contended_stream >= p.streams_per_device) {
    out.add([&] {
      return "contended_stream " + std::to_string(p.contended_stream) + " is not below streams_per_device " +
             std::to_string(p.streams_per_device);
    });
  }
}

void check_routes(const Plan& p, std::size_t num_links, PlanProblems& out) {
  if (num_links == NO_LINK_CHECK) return;
  for (std::size_t pi = 0; pi < p.patterns.size(); ++pi)
    for (const std::uint32_t l : p.patterns[pi].route_links)
      if (l >= num_links) {
        out.add([&] { return "pattern " + std::to_string(pi) + " (" + p.patterns[pi].name + ") routes over link " +
                             std::to_string(l) + " but the network has " + std::to_string(num_links) + " links"; });
        break;
      }
}

}  // namespace

// The per-task rules of check_plan's loop below, over every task at once, for
// PlanBuilder::finish to ask before that loop (a rule added to the loop belongs here too):
// the ranges as maxima and minima, the rest without a branch per rule, instead of the loop's
// branches and messages per task.
bool tasks_may_break_a_rule(const Plan& p) {
  const std::size_t n = p.size();
  if (n == 0) return false;
  const std::size_t classes = p.mem_class_names.size();
  const std::size_t comms = p.comms.size();
  std::uint32_t top_device = 0;
  std::uint8_t top_stream = 0, top_category = 0;
  std::uint16_t top_label = 0;
  std::int64_t low_bytes = 0;
  for (std::size_t t = 0; t < n; ++t) {
    top_device = std::max(top_device, p.device[t]);
    top_stream = std::max(top_stream, p.stream[t]);
    top_category = std::max(top_category, p.category[t]);
    top_label = std::max(top_label, p.label[t]);
    low_bytes = std::min(low_bytes, std::min(p.alloc_bytes[t], p.free_bytes[t]));
  }
  bool bad = top_device >= p.num_devices || top_stream >= p.streams_per_device || low_bytes < 0 ||
             (!p.category_names.empty() && top_category >= p.category_names.size()) ||
             (!p.label_names.empty() && top_label >= p.label_names.size());
  for (std::size_t t = 0; t < n; ++t) {
    const bool compute = p.kind[t] == TaskKind::COMPUTE;
    const bool comm_like = p.kind[t] == TaskKind::COMM || p.kind[t] == TaskKind::COPY;
    bad |= compute ? p.duration[t] < Time::zero() : !comm_like || p.comm[t] >= comms;
    bad |= !(p.contention_share[t] >= 0.0f && p.contention_share[t] <= 1.0f) | !(p.link_slowdown[t] >= 0.0f) |
           !std::isfinite(p.link_slowdown[t]);
    const bool changes_memory = (p.alloc_bytes[t] | p.free_bytes[t]) != 0;
    bad |= changes_memory & ((p.mem_class[t] >= classes) | (p.mem_on_host[t] != 0 && p.num_hosts == 0));
  }
  return bad;
}

PlanProblems check_plan(const Plan& p, std::size_t num_links, bool task_fields_checked) {
  PlanProblems out;
  const std::size_t n = p.size();
  const auto size_ok = [&](std::size_t got, const char* name) {
    if (got != n) {
      out.add([&] {
        return std::string("per-task array ") + name + " has " + std::to_string(got) + " entries but the plan has " +
               std::to_string(n) + " tasks";
      });
    }
  };
  size_ok(p.device.size(), "device");
  size_ok(p.stream.size(), "stream");
  size_ok(p.category.size(), "category");
  size_ok(p.label.size(), "label");
  size_ok(p.micro_batch.size(), "micro_batch");
  size_ok(p.duration.size(), "duration");
  size_ok(p.comm.size(), "comm");
  size_ok(p.mem_class.size(), "mem_class");
  size_ok(p.alloc_bytes.size(), "alloc_bytes");
  size_ok(p.free_bytes.size(), "free_bytes");
  size_ok(p.mem_on_host.size(), "mem_on_host");
  size_ok(p.contention_share.size(), "contention_share");
  size_ok(p.link_slowdown.size(), "link_slowdown");
  if (n >= NONE) {
    out.add([&] { return "the plan has " + std::to_string(n) + " tasks; task ids must stay below 2^32 - 1"; });
  }
  check_contention(p, out);
  if (p.succ_offset.size() != n + 1 || p.succ_offset.front() != 0 || p.succ_offset.back() != p.succ.size()) {
    out.add([&] {
      return "succ_offset must have tasks + 1 = " + std::to_string(n + 1) + " entries from 0 to succ.size() = " +
             std::to_string(p.succ.size()) + " (has " + std::to_string(p.succ_offset.size()) + ")";
    });
  }
  if (p.start_succ_offset.size() != n + 1 || p.start_succ_offset.front() != 0 ||
      p.start_succ_offset.back() != p.start_succ.size()) {
    out.add([&] {
      return "start_succ_offset must have tasks + 1 = " + std::to_string(n + 1) + " entries from 0 to start_succ.size() = " +
             std::to_string(p.start_succ.size()) + " (has " + std::to_string(p.start_succ_offset.size()) + ")";
    });
  }
  if (p.num_hosts > 0 && p.host_of_device.size() != p.num_devices) {
    out.add([&] { return "host_of_device has " + std::to_string(p.host_of_device.size()) + " entries for " +
                         std::to_string(p.num_devices) + " devices"; });
  }
  for (const std::uint32_t h : p.host_of_device)
    if (h >= p.num_hosts) {
      out.add([&] { return "host_of_device names host " + std::to_string(h) + " but num_hosts = " + std::to_string(p.num_hosts); });
      break;
    }
  if (!p.stream_names.empty() && p.stream_names.size() != p.streams_per_device) {
    out.add([&] { return "stream_names has " + std::to_string(p.stream_names.size()) + " names for " +
                         std::to_string(p.streams_per_device) + " streams"; });
  }
  if (!p.op_of_task.empty() && p.op_of_task.size() != n) {
    out.add([&] { return "op_of_task has " + std::to_string(p.op_of_task.size()) + " entries for " + std::to_string(n) + " tasks"; });
  }
  for (std::size_t t = 0; t < p.op_of_task.size(); ++t)
    if (p.op_of_task[t] != NONE && p.op_of_task[t] >= p.ops.size()) {
      out.add([&] { return task_name(p, t) + " names op " + std::to_string(p.op_of_task[t]) + " of " + std::to_string(p.ops.size()); });
      break;
    }
  for (std::size_t o = 0; o < p.ops.size(); ++o)
    if (p.ops[o].group != NONE && p.ops[o].group >= p.op_groups.size()) {
      out.add([&] { return "op " + std::to_string(o) + " names group " + std::to_string(p.ops[o].group) + " of " + std::to_string(p.op_groups.size()); });
      break;
    }
  if (!out.empty()) return out;  // the checks below index these arrays

  const std::size_t classes = p.mem_class_names.size();
  for (std::size_t t = task_fields_checked ? n : 0; t < n; ++t) {
    if (p.device[t] >= p.num_devices) {
      out.add([&] { return task_name(p, t) + " is on device " + std::to_string(p.device[t]) +
                           " but num_devices = " + std::to_string(p.num_devices); });
    }
    if (p.stream[t] >= p.streams_per_device) {
      out.add([&] { return task_name(p, t) + " is on stream " + std::to_string(p.stream[t]) +
                           " but streams_per_device = " + std::to_string(p.streams_per_device); });
    }
    if (p.kind[t] == TaskKind::COMPUTE) {
      if (p.duration[t] < Time::zero()) {
        out.add([&] { return task_name(p, t) + " has a negative duration (" + std::to_string(p.duration[t].ps) + " ps)"; });
      }
    } else if (p.kind[t] == TaskKind::COMM || p.kind[t] == TaskKind::COPY) {
      if (p.comm[t] >= p.comms.size()) {
        out.add([&] { return task_name(p, t) + " names comm instance " + std::to_string(p.comm[t]) +
                             " but the plan has " + std::to_string(p.comms.size()); });
      }
    } else {
      out.add([&] { return task_name(p, t) + " has an unknown kind " + std::to_string(static_cast<int>(p.kind[t])); });
    }
    if (!(p.link_slowdown[t] >= 0.0f) || !std::isfinite(p.link_slowdown[t])) {
      out.add([&] { return task_name(p, t) + " has link_slowdown " + std::to_string(p.link_slowdown[t]) + " (must be >= 0)"; });
    }
    if (!(p.contention_share[t] >= 0.0f && p.contention_share[t] <= 1.0f)) {
      out.add([&] { return task_name(p, t) + " has contention_share " + std::to_string(p.contention_share[t]) +
                           " outside [0, 1]"; });
    }
    if (p.mem_on_host[t] && p.num_hosts == 0 && (p.alloc_bytes[t] != 0 || p.free_bytes[t] != 0)) {
      out.add([&] { return task_name(p, t) + " changes host memory but the plan has no hosts"; });
    }
    if (p.alloc_bytes[t] < 0 || p.free_bytes[t] < 0) {
      out.add([&] { return task_name(p, t) + " has negative alloc_bytes or free_bytes"; });
    }
    if ((p.alloc_bytes[t] != 0 || p.free_bytes[t] != 0) && p.mem_class[t] >= classes) {
      out.add([&] { return task_name(p, t) + " uses memory class " + std::to_string(p.mem_class[t]) +
                           " but the plan names " + std::to_string(classes) + " classes"; });
    }
    if (!p.category_names.empty() && p.category[t] >= p.category_names.size()) {
      out.add([&] { return task_name(p, t) + " has category " + std::to_string(p.category[t]) +
                           " but the plan names " + std::to_string(p.category_names.size()); });
    }
    if (!p.label_names.empty() && p.label[t] >= p.label_names.size()) {
      out.add([&] { return task_name(p, t) + " has label " + std::to_string(p.label[t]) + " but the plan names " +
                           std::to_string(p.label_names.size()); });
    }
    const std::uint32_t b = p.succ_offset[t];
    const std::uint32_t e = p.succ_offset[t + 1];
    if (e < b) {
      out.add([&] { return "succ_offset decreases at task " + std::to_string(t); });
      continue;
    }
    for (std::uint32_t i = b; i < e; ++i) {
      if (p.succ[i] >= n) {
        out.add([&] { return "edge " + std::to_string(t) + " -> " + std::to_string(p.succ[i]) +
                             " ends outside the plan's " + std::to_string(n) + " tasks"; });
      } else if (p.succ[i] == t) {
        out.add([&] { return task_name(p, t) + " depends on itself"; });
      }
    }
    const std::uint32_t sb = p.start_succ_offset[t];
    const std::uint32_t se = p.start_succ_offset[t + 1];
    if (se < sb) {
      out.add([&] { return "start_succ_offset decreases at task " + std::to_string(t); });
      continue;
    }
    for (std::uint32_t i = sb; i < se; ++i) {
      if (p.start_succ[i] >= n || p.start_succ[i] == t) {
        out.add([&] { return "start edge " + std::to_string(t) + " -> " + std::to_string(p.start_succ[i]) +
                             " ends outside the plan or on itself"; });
      }
    }
  }

  // Participants per instance, grouped (counting sort) to check count and streams.
  const std::size_t nc = p.comms.size();
  std::vector<std::uint32_t> first(nc + 1, 0);
  for (std::size_t t = 0; t < n; ++t) {
    if (p.kind[t] != TaskKind::COMPUTE && p.comm[t] < nc) ++first[p.comm[t] + 1];
  }
  for (std::size_t c = 0; c < nc; ++c) first[c + 1] += first[c];
  // (device, stream) of each participant, grouped: only where two or more share an instance
  // (a fast-fidelity plan has one per instance) can two be on one stream.
  std::vector<std::uint64_t> keys(first[nc]);
  bool shared = false;
  for (std::size_t c = 0; c < nc && !shared; ++c) shared = first[c + 1] - first[c] > 1;
  if (shared) {
    std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
    for (std::size_t t = 0; t < n; ++t) {
      if (p.kind[t] != TaskKind::COMPUTE && p.comm[t] < nc) {
        keys[fill[p.comm[t]]++] = std::uint64_t{p.device[t]} << 8 | p.stream[t];
      }
    }
  }
  for (std::size_t c = 0; c < nc; ++c) {
    const CommInstance& ci = p.comms[c];
    const std::uint32_t count = first[c + 1] - first[c];
    if (count != ci.participants) {
      out.add([&] { return "comm instance " + std::to_string(c) + " has " + std::to_string(count) +
                           " COMM tasks but participants = " + std::to_string(ci.participants); });
    }
    const auto kb = keys.begin() + first[c];
    const auto ke = keys.begin() + first[c + 1];
    if (ke - kb > 1) std::sort(kb, ke);
    const auto dup = ke - kb > 1 ? std::adjacent_find(kb, ke) : ke;
    if (dup != ke) {
      out.add([&] { return "comm instance " + std::to_string(c) + " has two participants on device " +
                           std::to_string(*dup >> 8) + " stream " + std::to_string(*dup & 0xff) +
                           " (the second could never reach the rendezvous)"; });
    }
    if (ci.pattern != NONE && ci.pattern >= p.patterns.size()) {
      out.add([&] { return "comm instance " + std::to_string(c) + " names pattern " + std::to_string(ci.pattern) +
                           " but the plan has " + std::to_string(p.patterns.size()) + " patterns"; });
    }
    if (bad_bytes(ci.bytes)) {
      out.add([&] { return "comm instance " + std::to_string(c) + " has bytes = " + std::to_string(ci.bytes) +
                           " (must be finite and >= 0)"; });
    }
    if (ci.fixed_duration < Time::zero()) {
      out.add([&] { return "comm instance " + std::to_string(c) + " has a negative fixed_duration"; });
    }
  }

  for (std::size_t pi = 0; pi < p.patterns.size(); ++pi) {
    const CommPattern& pat = p.patterns[pi];
    const auto pname = [&] { return "pattern " + std::to_string(pi) + " (" + pat.name + ")"; };
    if (pat.latency < Time::zero()) out.add([&] { return pname() + " has a negative latency"; });
    for (std::size_t fi = 0; fi < pat.flows.size(); ++fi) {
      const FlowTemplate& ft = pat.flows[fi];
      if (ft.route_begin > ft.route_end || ft.route_end > pat.route_links.size()) {
        out.add([&] { return pname() + " flow " + std::to_string(fi) + " has route [" + std::to_string(ft.route_begin) +
                             ", " + std::to_string(ft.route_end) + ") outside its " +
                             std::to_string(pat.route_links.size()) + " route links"; });
      }
      if (bad_bytes(ft.bytes_per_unit)) {
        out.add([&] { return pname() + " flow " + std::to_string(fi) + " has bytes_per_unit = " +
                             std::to_string(ft.bytes_per_unit) + " (must be finite and >= 0)"; });
      }
    }
  }
  check_routes(p, num_links, out);

  if (p.initial_memory.size() != std::size_t{p.num_devices} * classes) {
    out.add([&] { return "initial_memory has " + std::to_string(p.initial_memory.size()) +
                         " entries, expected num_devices x memory classes = " +
                         std::to_string(std::size_t{p.num_devices} * classes); });
  }
  return out;
}

PlanProblems check_finished_plan(const Plan& p, std::size_t num_links) {
  PlanProblems out;
  check_contention(p, out);
  check_routes(p, num_links, out);
  return out;
}

}  // namespace detail

PlanBuilder::PlanBuilder(std::uint32_t num_devices, std::uint32_t streams_per_device,
                         std::vector<std::string> category_names, std::vector<std::string> mem_class_names) {
  plan_.num_devices = num_devices;
  plan_.streams_per_device = streams_per_device;
  plan_.category_names = std::move(category_names);
  plan_.mem_class_names = std::move(mem_class_names);
  plan_.initial_memory.assign(std::size_t{num_devices} * plan_.mem_class_names.size(), 0);
}

std::uint16_t PlanBuilder::label(const std::string& name) {
  const auto it = label_index_.find(name);
  if (it != label_index_.end()) return it->second;
  if (plan_.label_names.size() > 0xffff) {
    throw std::logic_error("PlanBuilder::label: more than 65536 distinct labels (adding \"" + name + "\")");
  }
  const auto id = static_cast<std::uint16_t>(plan_.label_names.size());
  plan_.label_names.push_back(name);
  label_index_.emplace(name, id);
  return id;
}

std::uint32_t PlanBuilder::add_pattern(CommPattern pattern) {
  plan_.patterns.push_back(std::move(pattern));
  return static_cast<std::uint32_t>(plan_.patterns.size() - 1);
}

TaskId PlanBuilder::add_task(const TaskSpec& spec, TaskKind k, Time duration, std::uint32_t comm) {
  const auto id = static_cast<TaskId>(plan_.kind.size());
  plan_.kind.push_back(k);
  plan_.device.push_back(spec.device);
  plan_.stream.push_back(spec.stream);
  plan_.category.push_back(spec.category);
  plan_.label.push_back(spec.label);
  plan_.micro_batch.push_back(spec.micro_batch);
  plan_.duration.push_back(duration);
  plan_.comm.push_back(comm);
  plan_.mem_class.push_back(spec.mem_class);
  plan_.alloc_bytes.push_back(spec.alloc_bytes);
  plan_.free_bytes.push_back(spec.free_bytes);
  plan_.mem_on_host.push_back(spec.mem_on_host ? 1 : 0);
  plan_.contention_share.push_back(spec.contention_share);
  plan_.link_slowdown.push_back(spec.link_slowdown);
  return id;
}

TaskId PlanBuilder::add_copy(const TaskSpec& spec, std::uint32_t pattern, double bytes) {
  CommInstance inst;
  inst.pattern = pattern;
  inst.bytes = bytes;
  inst.participants = 1;
  return add_task(spec, TaskKind::COPY, Time::zero(), add_comm(inst));
}


void PlanBuilder::set_hosts(std::uint32_t num_hosts, std::vector<std::uint32_t> host_of_device) {
  plan_.num_hosts = num_hosts;
  plan_.host_of_device = std::move(host_of_device);
}

void PlanBuilder::set_stream_names(std::vector<std::string> names) { plan_.stream_names = std::move(names); }

void PlanBuilder::reserve(std::size_t tasks, std::size_t comms) {
  plan_.kind.reserve(tasks);
  plan_.device.reserve(tasks);
  plan_.stream.reserve(tasks);
  plan_.category.reserve(tasks);
  plan_.label.reserve(tasks);
  plan_.micro_batch.reserve(tasks);
  plan_.duration.reserve(tasks);
  plan_.comm.reserve(tasks);
  plan_.mem_class.reserve(tasks);
  plan_.alloc_bytes.reserve(tasks);
  plan_.free_bytes.reserve(tasks);
  plan_.mem_on_host.reserve(tasks);
  plan_.contention_share.reserve(tasks);
  plan_.link_slowdown.reserve(tasks);
  plan_.comms.reserve(comms);
  edges_.reserve(tasks);
}

std::uint32_t PlanBuilder::add_op(OpDescriptor op) {
  plan_.ops.push_back(std::move(op));
  return static_cast<std::uint32_t>(plan_.ops.size() - 1);
}

std::uint32_t PlanBuilder::add_op_group(std::vector<std::uint32_t> ranks) {
  plan_.op_groups.push_back(std::move(ranks));
  return static_cast<std::uint32_t>(plan_.op_groups.size() - 1);
}

void PlanBuilder::describe(TaskId t, std::uint32_t op) {
  if (plan_.op_of_task.size() <= t) plan_.op_of_task.resize(std::size_t{t} + 1, NONE);
  plan_.op_of_task[t] = op;
}

namespace {

// CSR by counting sort on the source, then each row sorted and deduplicated, so that the
// engine's predecessor counts need no special case for a repeated edge.
void to_csr(std::size_t n, std::vector<std::pair<TaskId, TaskId>>& edges, std::vector<std::uint32_t>& offset,
            std::vector<TaskId>& succ) {
  // Counted one row ahead (row t's count at t + 2), so that the scatter can advance row t's
  // start at offset[t + 1] and leave it at row t + 1's, without a copy of the offsets.
  offset.assign(n + 2, 0);
  for (const auto& e : edges) ++offset[e.first + 2];
  for (std::size_t t = 2; t <= n; ++t) offset[t] += offset[t - 1];
  succ.resize(edges.size());
  for (const auto& e : edges) succ[offset[e.first + 1]++] = e.second;
  offset.pop_back();
  edges.clear();
  edges.shrink_to_fit();
  // Most tasks have one or two successors, mostly added in order: sorted and distinct, nothing
  // to do. Rows move down only from the first that loses a repeated successor.
  bool compacting = false;
  std::uint32_t out = 0;
  for (std::size_t t = 0; t < n; ++t) {
    const auto b = succ.begin() + offset[t];
    const auto e = succ.begin() + offset[t + 1];
    auto last = e;
    if (e - b > 1 && !std::is_sorted(b, e, std::less_equal<TaskId>())) {
      std::sort(b, e);
      last = std::unique(b, e);
    }
    if (!compacting) {
      if (last == e) continue;
      compacting = true;
      out = offset[t];
    }
    offset[t] = out;
    for (auto it = b; it != last; ++it) succ[out++] = *it;
  }
  if (!compacting) return;
  offset[n] = out;
  succ.resize(out);
}

}  // namespace

void PlanBuilder::set_initial_memory(std::uint32_t device, std::uint8_t mem_class, std::int64_t bytes) {
  const std::size_t classes = plan_.mem_class_names.size();
  if (device >= plan_.num_devices || mem_class >= classes) {
    throw std::out_of_range("PlanBuilder::set_initial_memory: device " + std::to_string(device) + ", memory class " +
                            std::to_string(mem_class) + " is outside " + std::to_string(plan_.num_devices) +
                            " devices x " + std::to_string(classes) + " classes");
  }
  plan_.initial_memory[std::size_t{device} * classes + mem_class] = bytes;
}

// Duplicate edges are merged: a successor appears once in its predecessor's list, so the
// engine's predecessor counts need no special case.
Plan PlanBuilder::finish() && {
  const std::size_t n = plan_.size();
  detail::PlanProblems problems;
  if (edges_.size() >= NONE) {
    problems.add([&] { return std::to_string(edges_.size()) + " edges; the CSR needs fewer than 2^32 - 1"; });
  }
  // Named edge by edge only when some edge is out of range or on itself.
  TaskId top = 0;
  bool on_itself = false;
  for (const auto& [a, b] : edges_) {
    top = std::max(top, std::max(a, b));
    on_itself |= a == b;
  }
  const bool edges_suspect = !edges_.empty() && (top >= n || on_itself);
  for (std::size_t i = 0; edges_suspect && i < edges_.size(); ++i) {
    // Plain variables: clang before 16 cannot capture a structured binding in a lambda.
    const TaskId a = edges_[i].first;
    const TaskId b = edges_[i].second;
    if (a >= n || b >= n) {
      problems.add([&] { return "edge " + std::to_string(i) + " (" + std::to_string(a) + " -> " + std::to_string(b) +
                                ") names task " + std::to_string(a >= n ? a : b) + " but the plan has " +
                                std::to_string(n) + " tasks"; });
    } else if (a == b) {
      problems.add([&] { return "task " + std::to_string(a) + " depends on itself (edge " + std::to_string(i) + ")"; });
    }
  }
  if (!problems.empty()) throw std::logic_error(problems.join("PlanBuilder::finish"));

  for (const auto& [a, b] : start_edges_)
    if (a >= n || b >= n || a == b)
      throw std::logic_error("PlanBuilder::finish: start edge " + std::to_string(a) + " -> " + std::to_string(b) +
                             " is outside the plan's " + std::to_string(n) + " tasks or on itself");
  to_csr(n, edges_, plan_.succ_offset, plan_.succ);
  to_csr(n, start_edges_, plan_.start_succ_offset, plan_.start_succ);

  if (!plan_.ops.empty()) plan_.op_of_task.resize(n, NONE);
  // The edges were checked above, so the CSR's successors are in range and not the task itself.
  problems = detail::check_plan(plan_, detail::NO_LINK_CHECK, /*task_fields_checked=*/!detail::tasks_may_break_a_rule(plan_));
  if (!problems.empty()) throw std::logic_error(problems.join("PlanBuilder::finish"));
  return std::move(plan_);
}

}  // namespace trainsim::sim
