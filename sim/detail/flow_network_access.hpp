#pragma once
// The engine's way into FlowNetwork (private to sim/). The public API re-solves after every
// start and copies each route; the engine instead starts all flows of one instant, lets
// the network re-solve the touched components once, and borrows routes from the Plan's
// patterns, which outlive the network.
#include <cstdint>
#include <span>
#include <vector>

#include "sim/flow_network.hpp"
#include "sim/time.hpp"

namespace trainsim::sim::detail {

struct FlowNetworkAccess {
  // Starts a flow without re-solving. `route` must outlive the flow; link indices must
  // have been checked against the network. Rates and finish times are valid after flush().
  static FlowId start_borrowed(FlowNetwork& net, Time now, std::span<const std::uint32_t> route,
                               double bytes, std::uint32_t tag) {
    return net.add_flow(now, route.data(), static_cast<std::uint32_t>(route.size()), bytes, tag);
  }
  // Removes every flow finishing at or before `now` and appends its tag, in (finish, id)
  // order, without re-solving. The caller must not skip over finish times: call it with
  // now == next_finish().
  static void pop_finished(FlowNetwork& net, Time now, std::vector<std::uint32_t>& tags) {
    net.pop_finished(now, tags);
  }
  static bool dirty(const FlowNetwork& net) { return net.dirty(); }
  // Re-solves the components touched since the last flush, at `now`.
  static void flush(FlowNetwork& net, Time now) { net.flush(now); }
};

}  // namespace trainsim::sim::detail
