#include "cli/detail/critical_path.hpp"

#include <algorithm>
#include <map>

namespace trainsim::cli::detail {

std::vector<sim::TaskId> critical_path(const sim::Plan& plan, const sim::Timeline& timeline) {
  const std::size_t n = plan.kind.size();
  if (n == 0 || timeline.end.size() != n) return {};
  // Predecessors: the plan keeps successors only.
  std::vector<std::vector<sim::TaskId>> preds(n);
  for (std::size_t t = 0; t < n; ++t)
    for (std::uint32_t i = plan.succ_offset[t]; i < plan.succ_offset[t + 1]; ++i)
      preds[plan.succ[i]].push_back(static_cast<sim::TaskId>(t));
  // The previous task on each task's (device, stream): streams are FIFOs in task order.
  std::vector<sim::TaskId> stream_prev(n, sim::NONE);
  std::map<std::pair<std::uint32_t, std::uint8_t>, sim::TaskId> last;
  for (std::size_t t = 0; t < n; ++t) {
    auto [it, fresh] = last.try_emplace({plan.device[t], plan.stream[t]}, static_cast<sim::TaskId>(t));
    if (!fresh) {
      stream_prev[t] = it->second;
      it->second = static_cast<sim::TaskId>(t);
    }
  }
  // Participants of each communication instance.
  std::vector<std::vector<sim::TaskId>> members(plan.comms.size());
  for (std::size_t t = 0; t < n; ++t)
    if (plan.kind[t] != sim::TaskKind::COMPUTE && plan.comm[t] != sim::NONE)
      members[plan.comm[t]].push_back(static_cast<sim::TaskId>(t));

  sim::TaskId at = 0;
  for (std::size_t t = 1; t < n; ++t)
    if (timeline.end[t] > timeline.end[at]) at = static_cast<sim::TaskId>(t);
  std::vector<sim::TaskId> path;
  std::vector<char> seen(n, 0);
  while (at != sim::NONE && !seen[at]) {
    seen[at] = 1;
    path.push_back(at);
    // A collective that started after it was ready waited for its last member.
    if (plan.kind[at] != sim::TaskKind::COMPUTE && plan.comm[at] != sim::NONE &&
        timeline.start[at] > timeline.ready[at]) {
      sim::TaskId latest = at;
      for (sim::TaskId m : members[plan.comm[at]])
        if (timeline.ready[m] > timeline.ready[latest]) latest = m;
      if (latest != at && !seen[latest]) {
        // The member that arrived last stands for the collective (all end together).
        path.pop_back();
        at = latest;
        continue;
      }
    }
    sim::TaskId cause = stream_prev[at];
    for (sim::TaskId p : preds[at])
      if (cause == sim::NONE || timeline.end[p] > timeline.end[cause]) cause = p;
    at = cause;
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<PathOp> summarize_path(const sim::Plan& plan, const sim::Timeline& timeline,
                                   const std::vector<sim::TaskId>& path) {
  std::map<std::string, PathOp> by_name;
  for (sim::TaskId t : path) {
    std::string name;
    if (!plan.op_of_task.empty() && plan.op_of_task[t] != sim::NONE) name = plan.ops[plan.op_of_task[t]].name;
    if (name.empty() && plan.label[t] < plan.label_names.size()) name = plan.label_names[plan.label[t]];
    if (plan.category[t] < plan.category_names.size()) name += " (" + plan.category_names[plan.category[t]] + ")";
    PathOp& op = by_name[name];
    op.name = name;
    ++op.tasks;
    op.seconds += (timeline.end[t] - timeline.start[t]).seconds();
  }
  std::vector<PathOp> out;
  for (auto& [name, op] : by_name) out.push_back(std::move(op));
  std::stable_sort(out.begin(), out.end(), [](const PathOp& a, const PathOp& b) { return a.seconds > b.seconds; });
  return out;
}

}  // namespace trainsim::cli::detail
