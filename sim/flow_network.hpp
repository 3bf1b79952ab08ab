#pragma once
// Flow-level network: flows cross directed links; rates follow max-min fairness
// (progressive filling: the most constrained link saturates first, its flows are fixed at
// its fair share, and the rest continues on the remaining capacity). Like SimGrid's lmm
// solver it sees only capacities and routes, never what a link is made of.
//
// The API has SimGrid's lmm::System shape: adding and removing flows only records what
// changed; solve() then recomputes the rates of the connected components (flows sharing
// links, transitively) that a change touched, once, however many changes there were.
//
// Flows that start together with the same size on a registered route set (a collective's
// edge flows) are one variable of weight "number of members" while no other flow shares
// a link with them, provided their rates alone on the network are all equal (checked once
// per route set, by this solver): such a group then runs, and finishes, as its members
// would. As soon as another flow touches one of its links the group is split into its
// members, each with the group's state, so rates stay those of the member flows.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sim/time.hpp"

namespace trainsim::sim {

using FlowId = std::uint32_t;       // a single flow (add_flow)
using GroupId = std::uint32_t;      // the flows of one add_flows call
using RouteSetId = std::uint32_t;   // routes registered with add_route_set

class FlowNetwork {
 public:
  // OFF: a group is always carried as its member flows (for comparisons and tests).
  enum class Aggregation : std::uint8_t { ON, OFF };

  explicit FlowNetwork(std::vector<double> capacity_bytes_per_s, Aggregation aggregation = Aggregation::ON);
  ~FlowNetwork();
  FlowNetwork(FlowNetwork&&) noexcept;
  FlowNetwork& operator=(FlowNetwork&&) noexcept;

  // Registers the routes of flows that will start together (a route set), copied into the
  // network. Throws std::out_of_range for a link the network does not have.
  RouteSetId add_route_set(std::span<const std::vector<std::uint32_t>> routes);

  // Records a flow of `bytes` over `route` (copied) starting at `now` (not before the last
  // solve or removal). A zero-byte flow or an empty route finishes at `now`. `tag` is
  // returned when the flow finishes. Rates and finish times are valid after solve().
  FlowId add_flow(Time now, std::span<const std::uint32_t> route, double bytes, std::uint32_t tag);
  // Records one flow of `bytes_each` over every route of `set`, all with `tag`, in the
  // set's order (as if add_flow were called for each route).
  GroupId add_flows(Time now, RouteSetId set, double bytes_each, std::uint32_t tag);
  // Removes an active single flow before it finishes (its tag is never returned).
  void remove_flow(FlowId f);

  // Whether an addition or removal since the last solve() left rates to recompute.
  bool needs_solve() const { return !dirty_links_.empty(); }
  // Recomputes the rates of every component touched since the last solve, at `now`.
  void solve(Time now);

  // Earliest finish time among active flows, Time::max() if none.
  Time next_finish() const;
  struct Finished {
    std::uint32_t tag;
    std::uint32_t flows;  // member flows with this tag that finished (a group counts all)
  };
  // Removes every flow finishing at or before `now` and appends it to `out` in the order
  // (finish time, start order); it does not solve. Call it with now == next_finish() so
  // that no finish is skipped, then solve().
  void remove_finished(Time now, std::vector<Finished>& out);

  // Convenience for callers with one change at a time: add_flow then solve().
  FlowId start(Time now, std::span<const std::uint32_t> route, double bytes, std::uint32_t tag);
  // Moves the fluid state to `now` (>= last time), finishing and solving one finish time
  // after another, and returns the tags of finished flows (one per member flow) in the
  // order of remove_finished.
  std::vector<std::uint32_t> advance(Time now);

  std::size_t active_flows() const { return active_; }  // member flows, aggregated or not
  double rate(FlowId f) const;                           // bytes/s of a single flow
  double rate(GroupId g, std::uint32_t member) const;    // bytes/s of one member of a group
  bool aggregated(GroupId g) const;                      // carried as one variable now
  std::size_t num_links() const { return capacity_.size(); }

 private:
  static constexpr std::uint32_t NO_INDEX = 0xffffffffu;

  // A solver variable: a single flow, a member of a split group, or a whole group while it
  // is aggregated (weight = members, route = the set's distinct links). Remaining bytes
  // are updated lazily: `remaining` is exact at `last_update` and the rate has been
  // constant since, so only variables whose rate changes are ever touched.
  struct Var {
    const std::uint32_t* route = nullptr;  // owned_routes_[id], a route set, or its links
    std::uint32_t route_len = 0;
    std::uint32_t tag = 0;
    std::uint32_t weight = 1;
    std::uint32_t group = NO_INDEX;  // the group this variable carries or belongs to
    std::uint32_t member = 0;        // which member of its group (a split group's member)
    std::uint64_t order = 0;         // start order, the tie-break of equal finish times
    double bytes = 0.0;      // per member at start; scales the "finished" epsilon
    double remaining = 0.0;  // per member, at last_update
    double rate = 0.0;       // per member
    double new_rate = 0.0;   // solver scratch
    Time last_update;
    Time finish = Time::max();
    std::uint32_t heap_pos = NO_INDEX;  // in completion_
    std::uint32_t visit = 0;            // solver epoch stamps
    std::uint32_t fixed = 0;
    bool active = false;
    bool fresh = false;  // added since the last solve: no rate yet
  };
  // One use of a link by a variable: the variable and the position of the link in its
  // route, so that each side can find the other without a scan.
  struct Use {
    std::uint32_t var;
    std::uint32_t hop;
  };
  struct RouteSet {
    std::vector<std::uint32_t> links;   // the routes, one after the other
    std::vector<std::uint32_t> begin;   // route i is links[begin[i] .. begin[i+1])
    std::vector<std::uint32_t> distinct;  // the links of every route, once each
    bool symmetric = false;  // every route gets the same rate alone on the network
    double alone_rate = 0.0;  // that rate
  };
  struct Group {
    RouteSetId set = 0;
    std::uint32_t var = NO_INDEX;      // while aggregated
    std::vector<std::uint32_t> members;  // once split: member variables (NO_INDEX when done)
    std::uint32_t left = 0;            // members not finished
  };
  struct Share {  // progressive-filling heap entry; outdated when ver != link_ver_[link]
    double share;
    std::uint32_t link;
    std::uint32_t ver;
  };

  void check_now(Time now, const char* what) const;
  std::uint32_t new_var(Time now, const std::uint32_t* route, std::uint32_t len, double bytes, std::uint32_t tag,
                        std::uint32_t weight, std::uint64_t order);
  void link_var(std::uint32_t v);
  void unlink_var(std::uint32_t v);
  void free_var(std::uint32_t v);
  void split_group(std::uint32_t g);
  void member_done(std::uint32_t g);
  void solve_component(std::uint32_t seed_link, Time now);
  void collect_component(std::uint32_t seed_link);
  void mark_dirty(std::uint32_t link);
  void next_epoch();
  void compute_alone_rate(RouteSet& rs);
  void allocate_links();

  bool heap_before(std::uint32_t a, std::uint32_t b) const;
  void heap_insert(std::uint32_t v);
  void heap_update(std::uint32_t v);
  void heap_erase(std::uint32_t v);
  void sift_up(std::uint32_t pos);
  void sift_down(std::uint32_t pos);

  std::vector<double> capacity_;
  Aggregation aggregation_;
  std::vector<std::vector<Use>> uses_of_link_;
  std::vector<Var> vars_;
  std::vector<std::uint32_t> free_vars_;
  std::vector<std::vector<std::uint32_t>> owned_routes_;  // per variable slot, for add_flow
  std::vector<std::vector<std::uint32_t>> link_pos_;      // per variable slot: index in uses_of_link_ per hop
  std::vector<RouteSet> route_sets_;
  std::vector<Group> groups_;
  std::vector<std::uint32_t> free_groups_;
  std::vector<std::uint32_t> completion_;  // binary heap by (finish, order), positions in Var::heap_pos
  std::size_t active_ = 0;
  std::uint64_t next_order_ = 0;
  // Solves each route set alone once, to decide whether its members may be aggregated.
  std::unique_ptr<FlowNetwork> scratch_;

  // Solver state, sized once per link and reused by every solve.
  std::vector<std::uint32_t> dirty_links_;
  std::vector<std::uint8_t> link_dirty_;
  std::vector<std::uint32_t> link_visit_;
  std::vector<double> cap_left_;
  std::vector<std::uint32_t> unfixed_;
  std::vector<std::uint32_t> link_ver_;
  std::vector<std::uint32_t> comp_links_;
  std::vector<std::uint32_t> comp_vars_;
  std::vector<Share> share_heap_;
  std::uint32_t epoch_ = 0;
  Time now_;
};

}  // namespace trainsim::sim
