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
  struct Flow {
    std::vector<std::uint32_t> route;
    double remaining = 0.0;
    double rate = 0.0;
    Time finish = Time::max();
    std::uint32_t tag = 0;
    bool active = false;
  };
  void resolve_component(std::span<const std::uint32_t> seed_links);

  std::vector<double> capacity_;
  std::vector<std::vector<FlowId>> flows_on_link_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_ids_;
  Time now_;
};

}  // namespace trainsim::sim
