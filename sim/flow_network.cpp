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

FlowNetwork::FlowNetwork(std::vector<double> capacity_bytes_per_s, Aggregation aggregation)
    : capacity_(std::move(capacity_bytes_per_s)), aggregation_(aggregation) {
  for (std::size_t l = 0; l < capacity_.size(); ++l) {
    const double c = capacity_[l];
    if (!(c > 0.0) || !std::isfinite(c)) {
      throw std::invalid_argument("FlowNetwork: link " + std::to_string(l) + " has capacity " + std::to_string(c) +
                                  " bytes/s; every link needs a positive, finite capacity");
    }
  }
}

// A plan without flows (fast fidelity's) never pays for the per-link state of a large
// cluster: it is made when the first route reaches the network.
void FlowNetwork::allocate_links() {
  const std::size_t n = capacity_.size();
  if (uses_of_link_.size() == n) return;
  uses_of_link_.resize(n);
  link_dirty_.assign(n, 0);
  link_visit_.assign(n, 0);
  cap_left_.assign(n, 0.0);
  unfixed_.assign(n, 0);
  link_ver_.assign(n, 0);
}

FlowNetwork::~FlowNetwork() = default;
FlowNetwork::FlowNetwork(FlowNetwork&&) noexcept = default;
FlowNetwork& FlowNetwork::operator=(FlowNetwork&&) noexcept = default;

void FlowNetwork::check_now(Time now, const char* what) const {
  if (now < now_) {
    throw std::invalid_argument(std::string("FlowNetwork::") + what + " at " + std::to_string(now.ps) +
                                " ps, before the network's time (" + std::to_string(now_.ps) + " ps)");
  }
}

RouteSetId FlowNetwork::add_route_set(std::span<const std::vector<std::uint32_t>> routes) {
  allocate_links();
  RouteSet rs;
  rs.begin.reserve(routes.size() + 1);
  for (std::size_t i = 0; i < routes.size(); ++i) {
    rs.begin.push_back(static_cast<std::uint32_t>(rs.links.size()));
    for (const std::uint32_t l : routes[i]) {
      if (l >= capacity_.size()) {
        throw std::out_of_range("FlowNetwork::add_route_set: route " + std::to_string(i) + " names link " +
                                std::to_string(l) + " but the network has " + std::to_string(capacity_.size()) +
                                " links");
      }
      rs.links.push_back(l);
    }
  }
  rs.begin.push_back(static_cast<std::uint32_t>(rs.links.size()));
  rs.distinct = rs.links;
  std::sort(rs.distinct.begin(), rs.distinct.end());
  rs.distinct.erase(std::unique(rs.distinct.begin(), rs.distinct.end()), rs.distinct.end());
  if (aggregation_ == Aggregation::ON) compute_alone_rate(rs);
  route_sets_.push_back(std::move(rs));
  return static_cast<RouteSetId>(route_sets_.size() - 1);
}

// A set's members may share one variable only if, alone on the network, this very solver
// gives each of them the same rate, bit for bit: that is then the rate each member would
// have whenever no other flow shares a link with the set.
void FlowNetwork::compute_alone_rate(RouteSet& rs) {
  const std::size_t n = rs.begin.size() - 1;
  rs.symmetric = false;
  if (n < 2) return;
  for (std::size_t i = 0; i < n; ++i) {
    if (rs.begin[i] == rs.begin[i + 1]) return;  // an empty route finishes at once, alone
  }
  if (!scratch_) scratch_ = std::make_unique<FlowNetwork>(capacity_, Aggregation::OFF);
  std::vector<FlowId> ids(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::span<const std::uint32_t> route(rs.links.data() + rs.begin[i], rs.begin[i + 1] - rs.begin[i]);
    ids[i] = scratch_->add_flow(Time::zero(), route, 1.0, static_cast<std::uint32_t>(i));
  }
  scratch_->solve(Time::zero());
  const double r = scratch_->rate(ids[0]);
  bool equal = r > 0.0;
  for (std::size_t i = 1; i < n && equal; ++i) equal = scratch_->rate(ids[i]) == r;
  for (const FlowId f : ids) scratch_->remove_flow(f);
  rs.symmetric = equal;
  rs.alone_rate = r;
}

std::uint32_t FlowNetwork::new_var(Time now, const std::uint32_t* route, std::uint32_t len, double bytes,
                                   std::uint32_t tag, std::uint32_t weight, std::uint64_t order) {
  std::uint32_t v;
  if (free_vars_.empty()) {
    v = static_cast<std::uint32_t>(vars_.size());
    vars_.emplace_back();
    owned_routes_.emplace_back();
    link_pos_.emplace_back();
  } else {
    v = free_vars_.back();
    free_vars_.pop_back();
  }
  Var& x = vars_[v];
  x = Var{};
  x.route = route;
  x.route_len = len;
  x.tag = tag;
  x.weight = weight;
  x.order = order;
  x.bytes = bytes;
  x.remaining = bytes;
  x.last_update = now;
  x.active = true;
  return v;
}

void FlowNetwork::link_var(std::uint32_t v) {
  const Var& x = vars_[v];
  std::vector<std::uint32_t>& pos = link_pos_[v];
  pos.resize(x.route_len);
  for (std::uint32_t j = 0; j < x.route_len; ++j) {
    std::vector<Use>& uses = uses_of_link_[x.route[j]];
    pos[j] = static_cast<std::uint32_t>(uses.size());
    uses.push_back({v, j});
  }
}

// Swap-remove from each link's list: the use moved into the hole learns its new position.
void FlowNetwork::unlink_var(std::uint32_t v) {
  const Var& x = vars_[v];
  const std::vector<std::uint32_t>& pos = link_pos_[v];
  for (std::uint32_t j = 0; j < x.route_len; ++j) {
    std::vector<Use>& uses = uses_of_link_[x.route[j]];
    const std::uint32_t p = pos[j];
    assert(p < uses.size() && uses[p].var == v && uses[p].hop == j && "FlowNetwork: link use out of step");
    const Use last = uses.back();
    uses[p] = last;
    link_pos_[last.var][last.hop] = p;
    uses.pop_back();
  }
}

void FlowNetwork::free_var(std::uint32_t v) {
  Var& x = vars_[v];
  x.active = false;
  x.route = nullptr;
  x.route_len = 0;
  free_vars_.push_back(v);
}

// A variable with nothing to carry or nothing to cross is done at once, without touching
// any link; otherwise it joins its links and its component is solved at the next solve().
FlowId FlowNetwork::add_flow(Time now, std::span<const std::uint32_t> route, double bytes, std::uint32_t tag) {
  check_now(now, "add_flow");
  allocate_links();
  if (!(bytes >= 0.0) || !std::isfinite(bytes)) {
    throw std::invalid_argument("FlowNetwork::add_flow: bytes must be finite and >= 0, got " + std::to_string(bytes));
  }
  for (const std::uint32_t l : route) {
    if (l >= capacity_.size()) {
      throw std::out_of_range("FlowNetwork::add_flow: route names link " + std::to_string(l) + " but the network has " +
                              std::to_string(capacity_.size()) + " links");
    }
  }
  const std::uint32_t v = new_var(now, nullptr, 0, bytes, tag, 1, next_order_++);
  // The slot keeps its route storage when it is reused, so steady state does not allocate.
  std::vector<std::uint32_t>& own = owned_routes_[v];
  own.assign(route.begin(), route.end());
  ++active_;
  Var& x = vars_[v];
  if (own.empty() || !(bytes > 0.0)) {
    x.finish = now;
    heap_insert(v);
    return v;
  }
  x.route = own.data();
  x.route_len = static_cast<std::uint32_t>(own.size());
  x.fresh = true;
  link_var(v);
  // One link reaches the whole component: the new flow is on every link of its route.
  mark_dirty(x.route[0]);
  return v;
}

GroupId FlowNetwork::add_flows(Time now, RouteSetId set, double bytes_each, std::uint32_t tag) {
  check_now(now, "add_flows");
  if (set >= route_sets_.size()) {
    throw std::out_of_range("FlowNetwork::add_flows: route set " + std::to_string(set) + " does not exist (" +
                            std::to_string(route_sets_.size()) + " registered)");
  }
  if (!(bytes_each >= 0.0) || !std::isfinite(bytes_each)) {
    throw std::invalid_argument("FlowNetwork::add_flows: bytes must be finite and >= 0, got " +
                                std::to_string(bytes_each));
  }
  const RouteSet& rs = route_sets_[set];
  const auto n = static_cast<std::uint32_t>(rs.begin.size() - 1);
  GroupId g;
  if (free_groups_.empty()) {
    g = static_cast<GroupId>(groups_.size());
    groups_.emplace_back();
  } else {
    g = free_groups_.back();
    free_groups_.pop_back();
  }
  Group& grp = groups_[g];
  grp.set = set;
  grp.var = NO_INDEX;
  grp.members.clear();
  grp.left = n;
  active_ += n;
  const std::uint64_t first = next_order_;
  next_order_ += n;
  if (n == 0) {
    free_groups_.push_back(g);
    return g;
  }
  // A group that would be split at the next solve anyway, because another flow already
  // uses one of its links, starts as its members.
  const bool alone = rs.symmetric && std::all_of(rs.distinct.begin(), rs.distinct.end(),
                                                 [&](std::uint32_t l) { return uses_of_link_[l].empty(); });
  if (alone) {
    // Ordered as its last member, the one whose finish completes the group.
    const std::uint32_t v = new_var(now, rs.distinct.data(), static_cast<std::uint32_t>(rs.distinct.size()),
                                    bytes_each, tag, n, first + n - 1);
    vars_[v].group = g;
    grp.var = v;
    if (!(bytes_each > 0.0)) {
      vars_[v].route = nullptr;
      vars_[v].route_len = 0;
      vars_[v].finish = now;
      heap_insert(v);
      return g;
    }
    vars_[v].fresh = true;
    link_var(v);
    mark_dirty(rs.distinct[0]);
    return g;
  }
  grp.members.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t len = rs.begin[i + 1] - rs.begin[i];
    const std::uint32_t v = new_var(now, rs.links.data() + rs.begin[i], len, bytes_each, tag, 1, first + i);
    Var& x = vars_[v];
    x.group = g;
    x.member = i;
    grp.members[i] = v;
    if (len == 0 || !(bytes_each > 0.0)) {
      x.route = nullptr;
      x.route_len = 0;
      x.finish = now;
      heap_insert(v);
      continue;
    }
    x.fresh = true;
    link_var(v);
    mark_dirty(x.route[0]);
  }
  return g;
}

void FlowNetwork::remove_flow(FlowId f) {
  if (f >= vars_.size() || !vars_[f].active || vars_[f].group != NO_INDEX) {
    throw std::invalid_argument("FlowNetwork::remove_flow: " + std::to_string(f) +
                                " is not an active flow added with add_flow");
  }
  Var& x = vars_[f];
  for (std::uint32_t j = 0; j < x.route_len; ++j) mark_dirty(x.route[j]);
  unlink_var(f);
  if (x.heap_pos != NO_INDEX) heap_erase(f);
  --active_;
  free_var(f);
}

// The group's members take over its state (they would have had exactly that state on
// their own, since they had its rate all along) and its place in the links' lists.
void FlowNetwork::split_group(std::uint32_t g) {
  Group& grp = groups_[g];
  const std::uint32_t agg = grp.var;
  const RouteSet& rs = route_sets_[grp.set];
  const Var whole = vars_[agg];
  unlink_var(agg);
  if (whole.heap_pos != NO_INDEX) heap_erase(agg);
  free_var(agg);
  grp.var = NO_INDEX;
  const std::uint32_t n = whole.weight;
  const std::uint64_t first = whole.order - (n - 1);
  grp.members.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t v = new_var(whole.last_update, rs.links.data() + rs.begin[i], rs.begin[i + 1] - rs.begin[i],
                                    whole.bytes, whole.tag, 1, first + i);
    Var& x = vars_[v];
    x.group = g;
    x.member = i;
    x.remaining = whole.remaining;
    x.rate = whole.rate;
    x.finish = whole.finish;
    x.fresh = whole.fresh;
    grp.members[i] = v;
    link_var(v);
    if (!x.fresh) heap_insert(v);
  }
}

void FlowNetwork::member_done(std::uint32_t g) {
  if (--groups_[g].left == 0) free_groups_.push_back(g);
}

Time FlowNetwork::next_finish() const {
  return completion_.empty() ? Time::max() : vars_[completion_.front()].finish;
}

void FlowNetwork::remove_finished(Time now, std::vector<Finished>& out) {
  check_now(now, "remove_finished");
  while (!completion_.empty() && vars_[completion_.front()].finish <= now) {
    const std::uint32_t v = completion_.front();
    heap_erase(v);
    Var& x = vars_[v];
    out.push_back({x.tag, x.weight});
    // The remaining uses of each link may now form several components; each is re-solved
    // once, whichever of its links is reached first.
    for (std::uint32_t j = 0; j < x.route_len; ++j) mark_dirty(x.route[j]);
    unlink_var(v);
    active_ -= x.weight;
    if (x.group != NO_INDEX) {
      Group& grp = groups_[x.group];
      if (grp.var == v) {  // the whole group ends here
        grp.var = NO_INDEX;
        grp.left = 0;
        free_groups_.push_back(x.group);
      } else {
        grp.members[x.member] = NO_INDEX;
        member_done(x.group);
      }
    }
    free_var(v);
  }
  now_ = now;
}

void FlowNetwork::mark_dirty(std::uint32_t link) {
  if (link_dirty_[link]) return;
  link_dirty_[link] = 1;
  dirty_links_.push_back(link);
}

void FlowNetwork::next_epoch() {
  if (++epoch_ != 0) return;
  // Stamps wrapped: clear them so an old stamp cannot look current.
  for (Var& x : vars_) x.visit = x.fixed = 0;
  std::fill(link_visit_.begin(), link_visit_.end(), 0u);
  epoch_ = 1;
}

void FlowNetwork::solve(Time now) {
  check_now(now, "solve");
  now_ = now;
  if (dirty_links_.empty()) return;
  next_epoch();
  for (const std::uint32_t l : dirty_links_) {
    link_dirty_[l] = 0;
    if (link_visit_[l] != epoch_ && !uses_of_link_[l].empty()) solve_component(l, now);
  }
  dirty_links_.clear();
}

// The links and variables reachable from the seed through shared links.
void FlowNetwork::collect_component(std::uint32_t seed_link) {
  comp_links_.clear();
  comp_vars_.clear();
  link_visit_[seed_link] = epoch_;
  comp_links_.push_back(seed_link);
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    for (const Use u : uses_of_link_[comp_links_[i]]) {
      Var& x = vars_[u.var];
      if (x.visit == epoch_) continue;
      x.visit = epoch_;
      comp_vars_.push_back(u.var);
      for (std::uint32_t j = 0; j < x.route_len; ++j) {
        const std::uint32_t k = x.route[j];
        if (link_visit_[k] == epoch_) continue;
        link_visit_[k] = epoch_;
        comp_links_.push_back(k);
      }
    }
  }
}

void FlowNetwork::solve_component(std::uint32_t seed_link, Time now) {
  collect_component(seed_link);
  const auto is_aggregate = [&](std::uint32_t v) {
    const Var& x = vars_[v];
    return x.group != NO_INDEX && groups_[x.group].var == v;
  };
  if (comp_vars_.size() == 1 && is_aggregate(comp_vars_[0])) {
    // A group alone on its links: its members' rate, found when its set was registered.
    Var& x = vars_[comp_vars_[0]];
    x.new_rate = route_sets_[groups_[x.group].set].alone_rate;
  } else {
    bool split = false;
    for (const std::uint32_t v : comp_vars_) {
      if (!is_aggregate(v)) continue;
      split_group(vars_[v].group);
      split = true;
    }
    if (split) {
      // The members are new variables on the same links, and without the group that tied
      // them together they may form several components: solve each (none of them holds an
      // aggregated group any more, so this goes one level deep).
      const std::vector<std::uint32_t> links = comp_links_;
      for (const std::uint32_t v : comp_vars_) vars_[v].visit = 0;
      for (const std::uint32_t l : links) link_visit_[l] = 0;
      for (const std::uint32_t l : links) {
        if (link_visit_[l] != epoch_ && !uses_of_link_[l].empty()) solve_component(l, now);
      }
      return;
    }

    // Progressive filling. A link's fair share (capacity left / unfixed flows) only grows
    // as flows are fixed below it, so a heap entry is a lower bound of its link's share. An
    // entry whose link changed since it was pushed is re-pushed with the current share when
    // it reaches the top; an entry that is still current at the top is the next bottleneck
    // (smallest share, then lowest link index), exactly as an eager heap would find it.
    share_heap_.clear();
    for (const std::uint32_t l : comp_links_) {
      cap_left_[l] = capacity_[l];
      unfixed_[l] = static_cast<std::uint32_t>(uses_of_link_[l].size());
      link_ver_[l] = 0;
      share_heap_.push_back({cap_left_[l] / unfixed_[l], l, 0});
    }
    std::make_heap(share_heap_.begin(), share_heap_.end(), ShareAfter{});
    // Most links of a large component are never a bottleneck: stop as soon as every flow
    // has its rate instead of draining their entries.
    std::size_t unfixed_vars = comp_vars_.size();
    while (unfixed_vars > 0 && !share_heap_.empty()) {
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
      for (const Use u : uses_of_link_[l]) {
        Var& x = vars_[u.var];
        if (x.fixed == epoch_) continue;
        x.fixed = epoch_;
        x.new_rate = s;
        --unfixed_vars;
        for (std::uint32_t j = 0; j < x.route_len; ++j) {
          const std::uint32_t k = x.route[j];
          cap_left_[k] -= s;
          --unfixed_[k];
          ++link_ver_[k];
        }
      }
    }
  }

  // New rates. Only a variable whose rate changed gets a new finish time; the others keep
  // theirs, so an unrelated start elsewhere in the component does not jitter them.
  for (const std::uint32_t v : comp_vars_) {
    Var& x = vars_[v];
    if (x.fresh) {
      x.fresh = false;
      x.rate = x.new_rate;
      x.last_update = now;
      x.finish = finish_time(now, x.remaining, x.rate);
      heap_insert(v);
      continue;
    }
    if (x.new_rate == x.rate) continue;
    double rem = x.remaining;
    if (x.rate > 0.0 && now > x.last_update) rem -= x.rate * (now - x.last_update).seconds();
    x.rate = x.new_rate;
    x.last_update = now;
    const double eps = std::max(FINISHED_RELATIVE * x.bytes, FINISHED_ABSOLUTE_BYTES);
    if (rem <= eps) {
      x.remaining = rem > 0.0 ? rem : 0.0;
      continue;
    }
    x.remaining = rem;
    x.finish = finish_time(now, rem, x.rate);
    heap_update(v);
  }
}

FlowId FlowNetwork::start(Time now, std::span<const std::uint32_t> route, double bytes, std::uint32_t tag) {
  const FlowId f = add_flow(now, route, bytes, tag);
  solve(now);
  return f;
}

std::vector<std::uint32_t> FlowNetwork::advance(Time now) {
  check_now(now, "advance");
  std::vector<std::uint32_t> tags;
  std::vector<Finished> done;
  if (needs_solve()) solve(now_);
  // Step from one finish time to the next: each finish frees capacity that changes the
  // finish times of the flows after it.
  for (;;) {
    const Time t = next_finish();
    if (t > now) break;
    done.clear();
    remove_finished(t, done);
    for (const Finished& f : done) tags.insert(tags.end(), f.flows, f.tag);
    solve(t);
  }
  now_ = now;
  return tags;
}

double FlowNetwork::rate(FlowId f) const {
  return f < vars_.size() && vars_[f].active && vars_[f].group == NO_INDEX ? vars_[f].rate : 0.0;
}

double FlowNetwork::rate(GroupId g, std::uint32_t member) const {
  if (g >= groups_.size() || groups_[g].left == 0) return 0.0;
  const Group& grp = groups_[g];
  if (grp.var != NO_INDEX) return member < vars_[grp.var].weight ? vars_[grp.var].rate : 0.0;
  if (member >= grp.members.size() || grp.members[member] == NO_INDEX) return 0.0;
  return vars_[grp.members[member]].rate;
}

bool FlowNetwork::aggregated(GroupId g) const {
  return g < groups_.size() && groups_[g].left > 0 && groups_[g].var != NO_INDEX;
}

// Completion heap: a binary heap of variables keyed by (finish, start order), with each
// variable's position kept in it so that a re-solve can move it in O(log n).

bool FlowNetwork::heap_before(std::uint32_t a, std::uint32_t b) const {
  const Time fa = vars_[a].finish;
  const Time fb = vars_[b].finish;
  return fa != fb ? fa < fb : vars_[a].order < vars_[b].order;
}

void FlowNetwork::heap_insert(std::uint32_t v) {
  vars_[v].heap_pos = static_cast<std::uint32_t>(completion_.size());
  completion_.push_back(v);
  sift_up(vars_[v].heap_pos);
}

void FlowNetwork::heap_update(std::uint32_t v) {
  const std::uint32_t pos = vars_[v].heap_pos;
  sift_up(pos);
  sift_down(vars_[v].heap_pos);
}

void FlowNetwork::heap_erase(std::uint32_t v) {
  const std::uint32_t pos = vars_[v].heap_pos;
  vars_[v].heap_pos = NO_INDEX;
  const std::uint32_t last = completion_.back();
  completion_.pop_back();
  if (last == v) return;
  completion_[pos] = last;
  vars_[last].heap_pos = pos;
  sift_up(pos);
  sift_down(vars_[last].heap_pos);
}

void FlowNetwork::sift_up(std::uint32_t pos) {
  const std::uint32_t v = completion_[pos];
  while (pos > 0) {
    const std::uint32_t parent = (pos - 1) / 2;
    const std::uint32_t p = completion_[parent];
    if (!heap_before(v, p)) break;
    completion_[pos] = p;
    vars_[p].heap_pos = pos;
    pos = parent;
  }
  completion_[pos] = v;
  vars_[v].heap_pos = pos;
}

void FlowNetwork::sift_down(std::uint32_t pos) {
  const std::uint32_t v = completion_[pos];
  const std::size_t n = completion_.size();
  for (;;) {
    std::size_t child = 2 * std::size_t{pos} + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_before(completion_[child + 1], completion_[child])) ++child;
    const std::uint32_t c = completion_[child];
    if (!heap_before(c, v)) break;
    completion_[pos] = c;
    vars_[c].heap_pos = pos;
    pos = static_cast<std::uint32_t>(child);
  }
  completion_[pos] = v;
  vars_[v].heap_pos = pos;
}

}  // namespace trainsim::sim
