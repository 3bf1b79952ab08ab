#include "sim/flow_network.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace trainsim::sim {

namespace {

// A flow whose remaining bytes fall to this (relative to its size, or absolutely) when its
// rate changes is treated as done: it keeps the finish time it already has instead of
// being rescheduled for a sliver of bytes that only floating-point error left over.
constexpr double FINISHED_RELATIVE = 1e-9;
constexpr double FINISHED_ABSOLUTE_BYTES = 1e-6;

// Beyond about 104 days a duration no longer fits Time; such a flow never finishes and the
// engine reports what is stuck.
constexpr double MAX_FLOW_SECONDS = 9.0e6;

Time finish_time(Time now, double remaining, double rate) {
  if (!(rate > 0.0)) return Time::max();
  const double secs = remaining > 0.0 ? remaining / rate : 0.0;
  if (!(secs < MAX_FLOW_SECONDS)) return Time::max();
  const Time d = Time::ceil_seconds(secs);
  if (d.ps > Time::max().ps - now.ps) return Time::max();
  return now + d;
}

// Min-heap order of progressive filling: smallest fair share first, then lowest link index,
// so that ties are broken the same way on every run.
struct ShareAfter {
  template <class S>
  bool operator()(const S& a, const S& b) const {
    return a.share != b.share ? a.share > b.share : a.link > b.link;
  }
};

}  // namespace

FlowNetwork::FlowNetwork(std::vector<double> capacity_bytes_per_s) : capacity_(std::move(capacity_bytes_per_s)) {
  for (std::size_t l = 0; l < capacity_.size(); ++l) {
    const double c = capacity_[l];
    if (!(c > 0.0) || !std::isfinite(c)) {
      throw std::invalid_argument("FlowNetwork: link " + std::to_string(l) + " has capacity " + std::to_string(c) +
                                  " bytes/s; every link needs a positive, finite capacity");
    }
  }
  const std::size_t n = capacity_.size();
  flows_on_link_.resize(n);
  link_dirty_.assign(n, 0);
  link_visit_.assign(n, 0);
  cap_left_.assign(n, 0.0);
  unfixed_.assign(n, 0);
  link_ver_.assign(n, 0);
}

FlowId FlowNetwork::start(Time now, std::span<const std::uint32_t> route, double bytes, std::uint32_t tag) {
  if (now < now_) {
    throw std::invalid_argument("FlowNetwork::start at " + std::to_string(now.ps) + " ps, before the last advance (" +
                                std::to_string(now_.ps) + " ps)");
  }
  if (!(bytes >= 0.0) || !std::isfinite(bytes)) {
    throw std::invalid_argument("FlowNetwork::start: bytes must be finite and >= 0, got " + std::to_string(bytes));
  }
  for (const std::uint32_t l : route) {
    if (l >= capacity_.size()) {
      throw std::out_of_range("FlowNetwork::start: route names link " + std::to_string(l) + " but the network has " +
                              std::to_string(capacity_.size()) + " links");
    }
  }
  // The caller's span may not outlive this call: copy it into storage owned by the flow's
  // slot (reused when the id is, so steady state does not allocate).
  const FlowId id = free_ids_.empty() ? static_cast<FlowId>(flows_.size()) : free_ids_.back();
  if (owned_routes_.size() <= id) owned_routes_.resize(id + std::size_t{1});
  owned_routes_[id].assign(route.begin(), route.end());
  const FlowId f = add_flow(now, owned_routes_[id].data(), static_cast<std::uint32_t>(route.size()), bytes, tag);
  flush(now);
  return f;
}

Time FlowNetwork::next_finish() const {
  return completion_.empty() ? Time::max() : flows_[completion_.front()].finish;
}

std::vector<std::uint32_t> FlowNetwork::advance(Time now) {
  if (now < now_) {
    throw std::invalid_argument("FlowNetwork::advance to " + std::to_string(now.ps) + " ps, before " +
                                std::to_string(now_.ps) + " ps");
  }
  std::vector<std::uint32_t> tags;
  if (dirty()) flush(now_);
  // Step from one finish time to the next: each finish frees capacity that changes the
  // finish times of the flows after it.
  for (;;) {
    const Time t = next_finish();
    if (t > now) break;
    pop_finished(t, tags);
    flush(t);
  }
  now_ = now;
  return tags;
}

std::size_t FlowNetwork::active_flows() const { return active_; }

double FlowNetwork::rate(FlowId f) const {
  return f < flows_.size() && flows_[f].active ? flows_[f].rate : 0.0;
}

FlowId FlowNetwork::add_flow(Time now, const std::uint32_t* route, std::uint32_t len, double bytes,
                             std::uint32_t tag) {
  FlowId f;
  if (free_ids_.empty()) {
    f = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
  } else {
    f = free_ids_.back();
    free_ids_.pop_back();
  }
  Flow& fl = flows_[f];
  fl = Flow{};
  fl.route = route;
  fl.route_len = len;
  fl.tag = tag;
  fl.bytes = bytes;
  fl.remaining = bytes;
  fl.last_update = now;
  fl.active = true;
  ++active_;
  if (len == 0 || !(bytes > 0.0)) {
    // Nothing to carry or nothing to cross: done at once, without touching any link.
    fl.route = nullptr;
    fl.route_len = 0;
    fl.finish = now;
    heap_insert(f);
    return f;
  }
  fl.fresh = true;
  for (std::uint32_t i = 0; i < len; ++i) flows_on_link_[route[i]].push_back(f);
  // One link reaches the whole component: the new flow is on every link of its route.
  mark_dirty(route[0]);
  return f;
}

void FlowNetwork::pop_finished(Time now, std::vector<std::uint32_t>& tags) {
  while (!completion_.empty() && flows_[completion_.front()].finish <= now) {
    const FlowId f = completion_.front();
    heap_remove_top();
    Flow& fl = flows_[f];
    tags.push_back(fl.tag);
    for (std::uint32_t i = 0; i < fl.route_len; ++i) {
      const std::uint32_t l = fl.route[i];
      std::vector<FlowId>& on = flows_on_link_[l];
      const auto it = std::find(on.begin(), on.end(), f);
      assert(it != on.end() && "FlowNetwork: a finished flow is missing from its link");
      *it = on.back();
      on.pop_back();
      // The remaining flows of this link may now form several components; each is
      // re-solved once, whichever of its links is reached first.
      mark_dirty(l);
    }
    fl.active = false;
    fl.route = nullptr;
    --active_;
    free_ids_.push_back(f);
  }
}

void FlowNetwork::mark_dirty(std::uint32_t link) {
  if (link_dirty_[link]) return;
  link_dirty_[link] = 1;
  dirty_links_.push_back(link);
}

void FlowNetwork::next_epoch() {
  if (++epoch_ != 0) return;
  // Stamps wrapped: clear them so an old stamp cannot look current.
  for (Flow& fl : flows_) fl.visit = fl.fixed = 0;
  std::fill(link_visit_.begin(), link_visit_.end(), 0u);
  epoch_ = 1;
}

void FlowNetwork::flush(Time now) {
  if (dirty_links_.empty()) return;
  next_epoch();
  for (const std::uint32_t l : dirty_links_) {
    link_dirty_[l] = 0;
    if (link_visit_[l] != epoch_ && !flows_on_link_[l].empty()) solve_component(l, now);
  }
  dirty_links_.clear();
}

void FlowNetwork::solve_component(std::uint32_t seed_link, Time now) {
  // 1. The component: links and flows reachable from the seed through shared links.
  comp_links_.clear();
  comp_flows_.clear();
  link_visit_[seed_link] = epoch_;
  comp_links_.push_back(seed_link);
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    for (const FlowId f : flows_on_link_[comp_links_[i]]) {
      Flow& fl = flows_[f];
      if (fl.visit == epoch_) continue;
      fl.visit = epoch_;
      comp_flows_.push_back(f);
      for (std::uint32_t j = 0; j < fl.route_len; ++j) {
        const std::uint32_t k = fl.route[j];
        if (link_visit_[k] == epoch_) continue;
        link_visit_[k] = epoch_;
        comp_links_.push_back(k);
      }
    }
  }

  // 2. Progressive filling. A link's fair share (capacity left / unfixed flows) only grows
  // as flows are fixed below it, so a heap entry is a lower bound of its link's share. An
  // entry whose link changed since it was pushed is re-pushed with the current share when
  // it reaches the top; an entry that is still current at the top is the next bottleneck
  // (smallest share, then lowest link index), exactly as an eager heap would find it.
  share_heap_.clear();
  for (const std::uint32_t l : comp_links_) {
    cap_left_[l] = capacity_[l];
    unfixed_[l] = static_cast<std::uint32_t>(flows_on_link_[l].size());
    link_ver_[l] = 0;
    share_heap_.push_back({cap_left_[l] / unfixed_[l], l, 0});
  }
  std::make_heap(share_heap_.begin(), share_heap_.end(), ShareAfter{});
  // Most links of a large component are never a bottleneck: stop as soon as every flow has
  // its rate instead of draining their entries.
  std::size_t unfixed_flows = comp_flows_.size();
  while (unfixed_flows > 0 && !share_heap_.empty()) {
    std::pop_heap(share_heap_.begin(), share_heap_.end(), ShareAfter{});
    const Share e = share_heap_.back();
    share_heap_.pop_back();
    const std::uint32_t l = e.link;
    if (unfixed_[l] == 0) continue;
    if (e.ver != link_ver_[l]) {
      // Rounding may leave a hair below zero on a link that is exactly saturated.
      const double left = cap_left_[l] > 0.0 ? cap_left_[l] : 0.0;
      share_heap_.push_back({left / unfixed_[l], l, link_ver_[l]});
      std::push_heap(share_heap_.begin(), share_heap_.end(), ShareAfter{});
      continue;
    }
    const double s = e.share;
    for (const FlowId f : flows_on_link_[l]) {
      Flow& fl = flows_[f];
      if (fl.fixed == epoch_) continue;
      fl.fixed = epoch_;
      fl.new_rate = s;
      --unfixed_flows;
      for (std::uint32_t j = 0; j < fl.route_len; ++j) {
        const std::uint32_t k = fl.route[j];
        cap_left_[k] -= s;
        --unfixed_[k];
        ++link_ver_[k];
      }
    }
  }

  // 3. New rates. Only a flow whose rate changed gets a new finish time; the others keep
  // theirs, so an unrelated start elsewhere in the component does not jitter them.
  for (const FlowId f : comp_flows_) {
    Flow& fl = flows_[f];
    if (fl.fresh) {
      fl.fresh = false;
      fl.rate = fl.new_rate;
      fl.last_update = now;
      fl.finish = finish_time(now, fl.remaining, fl.rate);
      heap_insert(f);
      continue;
    }
    if (fl.new_rate == fl.rate) continue;
    double rem = fl.remaining;
    if (fl.rate > 0.0 && now > fl.last_update) rem -= fl.rate * (now - fl.last_update).seconds();
    fl.rate = fl.new_rate;
    fl.last_update = now;
    const double eps = std::max(FINISHED_RELATIVE * fl.bytes, FINISHED_ABSOLUTE_BYTES);
    if (rem <= eps) {
      fl.remaining = rem > 0.0 ? rem : 0.0;
      continue;
    }
    fl.remaining = rem;
    fl.finish = finish_time(now, rem, fl.rate);
    heap_update(f);
  }
}

// Completion heap: a binary heap of flow ids keyed by (finish, id), with each flow's
// position kept in the flow so that a re-solve can move it in O(log n).

bool FlowNetwork::heap_before(FlowId a, FlowId b) const {
  const Time fa = flows_[a].finish;
  const Time fb = flows_[b].finish;
  return fa != fb ? fa < fb : a < b;
}

void FlowNetwork::heap_insert(FlowId f) {
  flows_[f].heap_pos = static_cast<std::uint32_t>(completion_.size());
  completion_.push_back(f);
  sift_up(flows_[f].heap_pos);
}

void FlowNetwork::heap_update(FlowId f) {
  const std::uint32_t pos = flows_[f].heap_pos;
  sift_up(pos);
  sift_down(flows_[f].heap_pos);
}

void FlowNetwork::heap_remove_top() {
  const FlowId top = completion_.front();
  flows_[top].heap_pos = NOT_IN_HEAP;
  const FlowId last = completion_.back();
  completion_.pop_back();
  if (completion_.empty()) return;
  completion_[0] = last;
  flows_[last].heap_pos = 0;
  sift_down(0);
}

void FlowNetwork::sift_up(std::uint32_t pos) {
  const FlowId f = completion_[pos];
  while (pos > 0) {
    const std::uint32_t parent = (pos - 1) / 2;
    const FlowId p = completion_[parent];
    if (!heap_before(f, p)) break;
    completion_[pos] = p;
    flows_[p].heap_pos = pos;
    pos = parent;
  }
  completion_[pos] = f;
  flows_[f].heap_pos = pos;
}

void FlowNetwork::sift_down(std::uint32_t pos) {
  const FlowId f = completion_[pos];
  const std::size_t n = completion_.size();
  for (;;) {
    std::size_t child = 2 * std::size_t{pos} + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_before(completion_[child + 1], completion_[child])) ++child;
    const FlowId c = completion_[child];
    if (!heap_before(c, f)) break;
    completion_[pos] = c;
    flows_[c].heap_pos = pos;
    pos = static_cast<std::uint32_t>(child);
  }
  completion_[pos] = f;
  flows_[f].heap_pos = pos;
}

}  // namespace trainsim::sim
