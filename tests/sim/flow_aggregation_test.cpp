// Aggregated groups (a collective's identical edge flows as one variable) against the same
// flows carried one by one, and removal of flows in any order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <vector>

#include "sim/flow_network.hpp"

namespace trainsim::sim {

inline void PrintTo(const Time& t, std::ostream* os) { *os << t.ps << " ps"; }
namespace {

using Route = std::vector<std::uint32_t>;
using Tags = std::vector<std::uint32_t>;
using Aggregation = FlowNetwork::Aggregation;

constexpr std::int64_t MS = 1'000'000'000;  // picoseconds per millisecond

Time ps(std::int64_t v) { return Time::from_ps(v); }

struct Lcg {
  std::uint64_t s;
  std::uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(s >> 33);
  }
};

// A ring of four over private links 0..7 (member i: up link 2i, down link 2(i+1)%8 + 1),
// every link 1e9 B/s: each edge has its links to itself, so each runs at 1e9 B/s.
std::vector<Route> ring_of_four() {
  std::vector<Route> routes;
  for (std::uint32_t i = 0; i < 4; ++i) routes.push_back({2 * i, 2 * ((i + 1) % 4) + 1});
  return routes;
}

TEST(FlowAggregation, SymmetricGroupAloneIsOneVariableAndRunsAsItsMembers) {
  for (const Aggregation mode : {Aggregation::ON, Aggregation::OFF}) {
    FlowNetwork net(std::vector<double>(8, 1e9), mode);
    const RouteSetId set = net.add_route_set(ring_of_four());
    const GroupId g = net.add_flows(Time::zero(), set, 1e6, 5);
    net.solve(Time::zero());
    EXPECT_EQ(net.aggregated(g), mode == Aggregation::ON);
    EXPECT_EQ(net.active_flows(), 4u);
    for (std::uint32_t i = 0; i < 4; ++i) EXPECT_EQ(net.rate(g, i), 1e9);
    // 1e6 B at 1e9 B/s: 1 ms; the four members finish together, each reported.
    EXPECT_EQ(net.next_finish(), ps(1 * MS));
    EXPECT_EQ(net.advance(ps(1 * MS)), (Tags{5, 5, 5, 5}));
    EXPECT_EQ(net.active_flows(), 0u);
  }
}

TEST(FlowAggregation, ASetWhoseMembersWouldGetDifferentRatesIsNeverAggregated) {
  // Member 1's down link is half as fast: alone, member 1 gets 5e8 B/s, the others 1e9.
  std::vector<double> cap(8, 1e9);
  cap[5] = 5e8;
  FlowNetwork net(cap);
  const GroupId g = net.add_flows(Time::zero(), net.add_route_set(ring_of_four()), 1e6, 0);
  net.solve(Time::zero());
  EXPECT_FALSE(net.aggregated(g));
  EXPECT_EQ(net.rate(g, 0), 1e9);
  EXPECT_EQ(net.rate(g, 1), 5e8);
  // Member 1 ends at 2 ms, the others at 1 ms.
  EXPECT_EQ(net.advance(ps(1 * MS)), (Tags{0, 0, 0}));
  EXPECT_EQ(net.advance(ps(2 * MS)), (Tags{0}));
}

TEST(FlowAggregation, AFlowOnOneOfItsLinksSplitsTheGroup) {
  FlowNetwork net(std::vector<double>(8, 1e9));
  const GroupId g = net.add_flows(Time::zero(), net.add_route_set(ring_of_four()), 2e6, 1);
  net.solve(Time::zero());
  ASSERT_TRUE(net.aggregated(g));
  // At 1 ms every member has 1e6 B left; a flow of 1e6 B joins member 0's up link 0:
  // both get 5e8 B/s there and end at 1 ms + 1e6 / 5e8 = 3 ms; the other members keep
  // 1e9 B/s and end at 2 ms.
  net.advance(ps(1 * MS));
  const FlowId f = net.add_flow(ps(1 * MS), Route{0}, 1e6, 2);
  net.solve(ps(1 * MS));
  EXPECT_FALSE(net.aggregated(g));
  EXPECT_EQ(net.rate(f), 5e8);
  EXPECT_EQ(net.rate(g, 0), 5e8);
  EXPECT_EQ(net.rate(g, 1), 1e9);
  EXPECT_EQ(net.advance(ps(2 * MS)), (Tags{1, 1, 1}));
  EXPECT_EQ(net.advance(ps(3 * MS)), (Tags{1, 2}));
}

// One random scenario played on two networks, aggregated and not: groups on rings of
// private links (some symmetric, some not) and single flows over any link, so that groups
// do share links with other flows at times. After every start and every finish the two
// must agree exactly: the same rates per member, the same next finish, the same finishes
// in the same order.
struct Counts {
  int aggregated = 0;  // groups that ran as one variable at some point
  int split = 0;       // of those, groups split later by a flow joining their links
};

Counts play_both(std::uint32_t seed) {
  Lcg rng{seed};
  const std::uint32_t ring_links = 8 + 2 * (rng.next() % 8);  // private links of the rings
  const std::uint32_t shared_links = 2 + rng.next() % 4;       // spines every route may use
  const std::uint32_t links = ring_links + shared_links;
  std::vector<double> cap(links);
  // Few distinct capacities, so that many sets are symmetric and many are not.
  for (std::uint32_t l = 0; l < links; ++l) cap[l] = 1e9 * (1 + (rng.next() % 4 == 0 ? 1 : 0) + (l >= ring_links ? 1 : 0));
  FlowNetwork on(cap, Aggregation::ON), off(cap, Aggregation::OFF);

  const std::uint32_t num_sets = 2 + rng.next() % 4;
  std::vector<std::uint32_t> set_size;
  for (std::uint32_t s = 0; s < num_sets; ++s) {
    const std::uint32_t n = 2 + rng.next() % 6;
    const std::uint32_t base = rng.next() % ring_links;
    const bool via_spine = rng.next() % 3 == 0;
    std::vector<Route> routes;
    for (std::uint32_t i = 0; i < n; ++i) {
      Route r{(base + 2 * i) % ring_links, (base + 2 * i + 3) % ring_links};
      if (r[0] == r[1]) r.pop_back();
      if (via_spine) r.push_back(ring_links + (i % shared_links));
      routes.push_back(r);
    }
    const RouteSetId a = on.add_route_set(routes), b = off.add_route_set(routes);
    EXPECT_EQ(a, b);
    set_size.push_back(n);
  }

  struct Started {
    bool group;
    std::uint32_t id;      // GroupId or FlowId on the aggregated network
    std::uint32_t id_off;  // and on the other
    std::uint32_t members;
    std::uint32_t left;    // members not finished (ids are reused after that)
  };
  std::vector<Started> started;
  std::vector<std::uint8_t> was_aggregated;
  Counts counts;
  const auto compare = [&] {
    EXPECT_EQ(on.active_flows(), off.active_flows());
    EXPECT_EQ(on.next_finish(), off.next_finish());
    for (std::size_t k = 0; k < started.size(); ++k) {
      const Started& s = started[k];
      if (s.left == 0) continue;
      if (!s.group) {
        EXPECT_EQ(on.rate(s.id), off.rate(s.id_off)) << "seed " << seed << " flow " << k;
        continue;
      }
      const bool agg = on.aggregated(s.id);
      if (agg && !was_aggregated[k]) ++counts.aggregated;
      if (!agg && was_aggregated[k] == 1) {
        ++counts.split;
        was_aggregated[k] = 2;
      }
      if (agg) was_aggregated[k] = 1;
      for (std::uint32_t i = 0; i < s.members; ++i)
        EXPECT_EQ(on.rate(s.id, i), off.rate(s.id_off, i)) << "seed " << seed << " group " << k << " member " << i;
    }
  };

  // Finishes everything due at `next` on both networks and checks they agree.
  const auto finish_at = [&](Time next) {
    std::vector<FlowNetwork::Finished> a, b;
    on.remove_finished(next, a);
    off.remove_finished(next, b);
    Tags ta, tb;
    for (const auto& f : a) ta.insert(ta.end(), f.flows, f.tag);
    for (const auto& f : b) tb.insert(tb.end(), f.flows, f.tag);
    EXPECT_EQ(ta, tb) << "seed " << seed;
    for (const std::uint32_t tag : tb) --started[tag].left;
    on.solve(next);
    off.solve(next);
    compare();
  };

  Time t = Time::zero();
  const std::uint32_t starts = 10 + rng.next() % 30;
  for (std::uint32_t k = 0; k < starts; ++k) {
    t += ps(rng.next() % 3'000'000'000);  // staggered, about as long as flows last
    // Finish everything due before t on both, one finish time after another.
    while (on.next_finish() <= t) finish_at(on.next_finish());
    const auto tag = static_cast<std::uint32_t>(started.size());
    if (rng.next() % 3 != 0) {
      const RouteSetId set = rng.next() % num_sets;
      const double bytes = 1e5 * (1 + rng.next() % 50);
      started.push_back({true, on.add_flows(t, set, bytes, tag), off.add_flows(t, set, bytes, tag), set_size[set],
                         set_size[set]});
    } else {
      Route r;
      const std::uint32_t len = 1 + rng.next() % 3;
      for (std::uint32_t j = 0; j < len; ++j) {
        const std::uint32_t l = rng.next() % links;
        if (std::find(r.begin(), r.end(), l) == r.end()) r.push_back(l);
      }
      const double bytes = 1e5 * (1 + rng.next() % 50);
      started.push_back({false, on.add_flow(t, r, bytes, tag), off.add_flow(t, r, bytes, tag), 1, 1});
    }
    was_aggregated.push_back(0);
    if (rng.next() % 3 != 0) {  // sometimes several starts share one solve
      on.solve(t);
      off.solve(t);
      compare();
    }
  }
  on.solve(t);
  off.solve(t);
  compare();
  while (on.next_finish() != Time::max()) finish_at(on.next_finish());
  EXPECT_EQ(off.next_finish(), Time::max());
  EXPECT_EQ(on.active_flows(), 0u);
  return counts;
}

TEST(FlowAggregation, RandomFlowSetsGetTheSameRatesAggregatedOrNot) {
  Counts total;
  for (std::uint32_t seed = 1; seed <= 60; ++seed) {
    const Counts c = play_both(seed);
    total.aggregated += c.aggregated;
    total.split += c.split;
    if (testing::Test::HasFailure()) return;
  }
  // The comparison means something only if both paths were taken: groups that ran as one
  // variable, and aggregated groups that other flows split.
  std::printf("groups aggregated %d, of which split %d\n", total.aggregated, total.split);
  EXPECT_GT(total.aggregated, 20);
  EXPECT_GT(total.split, 10);
}

// Rates depend on which flows are on the network, not on the order in which the others
// left: removing the same flows in two orders, solving after each or once at the end,
// gives exactly the rates of a network that only ever had the survivors.
TEST(FlowAggregation, RemovalOrderDoesNotChangeRates) {
  Lcg rng{11};
  for (int round = 0; round < 30; ++round) {
    const std::uint32_t links = 3 + rng.next() % 10;
    std::vector<double> cap(links);
    for (double& c : cap) c = 1e8 * (1 + rng.next() % 20);
    const std::uint32_t n = 4 + rng.next() % 40;
    std::vector<Route> routes(n);
    for (Route& r : routes) {
      const std::uint32_t len = 1 + rng.next() % 4;
      for (std::uint32_t j = 0; j < len; ++j) {
        const std::uint32_t l = rng.next() % links;
        if (std::find(r.begin(), r.end(), l) == r.end()) r.push_back(l);
      }
    }
    std::vector<std::uint8_t> removed(n, 0);
    std::vector<std::uint32_t> order;
    for (std::uint32_t i = 0; i < n; ++i) {
      if (rng.next() % 2 == 0) {
        removed[i] = 1;
        order.push_back(i);
      }
    }
    FlowNetwork forward(cap), backward(cap), fresh(cap);
    std::vector<FlowId> fid(n), bid(n), sid(n, 0);
    for (std::uint32_t i = 0; i < n; ++i) {
      fid[i] = forward.add_flow(Time::zero(), routes[i], 1e6, i);
      bid[i] = backward.add_flow(Time::zero(), routes[i], 1e6, i);
      if (!removed[i]) sid[i] = fresh.add_flow(Time::zero(), routes[i], 1e6, i);
    }
    forward.solve(Time::zero());
    backward.solve(Time::zero());
    fresh.solve(Time::zero());
    for (const std::uint32_t i : order) {
      forward.remove_flow(fid[i]);
      forward.solve(Time::zero());
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) backward.remove_flow(bid[*it]);
    backward.solve(Time::zero());
    ASSERT_EQ(forward.active_flows(), fresh.active_flows());
    ASSERT_EQ(backward.active_flows(), fresh.active_flows());
    for (std::uint32_t i = 0; i < n; ++i) {
      if (removed[i]) continue;
      EXPECT_EQ(forward.rate(fid[i]), fresh.rate(sid[i])) << "round " << round << " flow " << i;
      EXPECT_EQ(backward.rate(bid[i]), fresh.rate(sid[i])) << "round " << round << " flow " << i;
    }
  }
}

TEST(FlowAggregation, RejectsBadInput) {
  FlowNetwork net(std::vector<double>(2, 1e9));
  const std::vector<Route> bad{{0}, {2}};
  EXPECT_THROW(net.add_route_set(bad), std::out_of_range);
  EXPECT_THROW(net.add_flows(Time::zero(), 0, 1.0, 0), std::out_of_range);  // no set yet
  const std::vector<Route> good{{0}, {1}};
  const RouteSetId set = net.add_route_set(good);
  EXPECT_THROW(net.add_flows(Time::zero(), set, -1.0, 0), std::invalid_argument);
  const FlowId f = net.add_flow(Time::zero(), Route{0}, 1.0, 0);
  net.remove_flow(f);
  EXPECT_THROW(net.remove_flow(f), std::invalid_argument);  // not active any more
  EXPECT_THROW(net.remove_flow(12), std::invalid_argument);
  net.solve(ps(10));
  EXPECT_THROW(net.add_flows(ps(9), set, 1.0, 0), std::invalid_argument);  // before the network's time
  EXPECT_THROW(net.solve(ps(9)), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::sim
