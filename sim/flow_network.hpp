#pragma once
// Flow-level network: flows cross directed links; rates follow max-min fairness
// (progressive filling: the most constrained link saturates first, its flows are fixed at
// its fair share, and the rest continues on the remaining capacity). Like SimGrid's lmm
// solver it sees only capacities and routes, never what a link is made of.
//
// Rates are recomputed only for the connected component (flows sharing links, transitively)
// that a start or finish touches.
#include <cstdint>
#include <span>
#include <vector>

#include "sim/time.hpp"

namespace trainsim::sim {

using FlowId = std::uint32_t;

namespace detail {
struct FlowNetworkAccess;
}  // namespace detail

class FlowNetwork {
 public:
  explicit FlowNetwork(std::vector<double> capacity_bytes_per_s);

  // Starts a flow of `bytes` over `route` at time `now` (now must not precede the last
  // advance). A zero-byte flow or an empty route finishes at `now`. `tag` is returned
  // when the flow finishes.
  FlowId start(Time now, std::span<const std::uint32_t> route, double bytes, std::uint32_t tag);

  // Earliest finish time among active flows, Time::max() if none.
  Time next_finish() const;

  // Moves the fluid state to `now` (>= last time) and returns the tags of flows that
  // finished at or before `now`, in a deterministic order (by finish time, then flow id).
  std::vector<std::uint32_t> advance(Time now);

  std::size_t active_flows() const;
  double rate(FlowId f) const;  // bytes/s, for tests
  std::size_t num_links() const { return capacity_.size(); }

 private:
  // The engine drives the network through sim/detail/flow_network_access.hpp: it batches
  // every start and finish of one instant and re-solves once, and it borrows the plan's
  // route spans instead of copying them.
  friend struct detail::FlowNetworkAccess;

  static constexpr std::uint32_t NOT_IN_HEAP = 0xffffffffu;

  // Remaining bytes are updated lazily: `remaining` is exact at `last_update` and the rate
  // has been constant since, so only flows whose rate changes are ever touched.
  struct Flow {
    const std::uint32_t* route = nullptr;  // borrowed, or owned_routes_[id].data()
    std::uint32_t route_len = 0;
    std::uint32_t tag = 0;
    double bytes = 0.0;      // at start; scales the "finished" epsilon
    double remaining = 0.0;  // at last_update
    double rate = 0.0;
    double new_rate = 0.0;   // solver scratch
    Time last_update;
    Time finish = Time::max();
    std::uint32_t heap_pos = NOT_IN_HEAP;  // in completion_
    std::uint32_t visit = 0;               // solver epoch stamps
    std::uint32_t fixed = 0;
    bool active = false;
    bool fresh = false;  // started since the last solve: no rate yet
  };
  struct Share {  // progressive-filling heap entry; outdated when ver != link_ver_[link]
    double share;
    std::uint32_t link;
    std::uint32_t ver;
  };

  FlowId add_flow(Time now, const std::uint32_t* route, std::uint32_t len, double bytes, std::uint32_t tag);
  void pop_finished(Time now, std::vector<std::uint32_t>& tags);
  bool dirty() const { return !dirty_links_.empty(); }
  void flush(Time now);
  void solve_component(std::uint32_t seed_link, Time now);
  void mark_dirty(std::uint32_t link);
  void next_epoch();

  bool heap_before(FlowId a, FlowId b) const;
  void heap_insert(FlowId f);
  void heap_update(FlowId f);
  void heap_remove_top();
  void sift_up(std::uint32_t pos);
  void sift_down(std::uint32_t pos);

  std::vector<double> capacity_;
  std::vector<std::vector<FlowId>> flows_on_link_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_ids_;
  std::vector<std::vector<std::uint32_t>> owned_routes_;  // for flows started by start()
  std::vector<FlowId> completion_;  // binary heap by (finish, id), positions in Flow::heap_pos
  std::size_t active_ = 0;

  // Solver state, sized once per link and reused by every solve.
  std::vector<std::uint32_t> dirty_links_;
  std::vector<std::uint8_t> link_dirty_;
  std::vector<std::uint32_t> link_visit_;
  std::vector<double> cap_left_;
  std::vector<std::uint32_t> unfixed_;
  std::vector<std::uint32_t> link_ver_;
  std::vector<std::uint32_t> comp_links_;
  std::vector<FlowId> comp_flows_;
  std::vector<Share> share_heap_;
  std::uint32_t epoch_ = 0;
  Time now_;
};

}  // namespace trainsim::sim
