#include "sim/flow_network.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <vector>

namespace trainsim::sim {

// Readable failure messages; inline so that every test file may define the same one.
inline void PrintTo(const Time& t, std::ostream* os) { *os << t.ps << " ps"; }
namespace {

using Route = std::vector<std::uint32_t>;
using Tags = std::vector<std::uint32_t>;

constexpr std::int64_t MS = 1'000'000'000;  // picoseconds per millisecond

Time ps(std::int64_t v) { return Time::from_ps(v); }

TEST(FlowNetwork, SingleFlowRunsAtLinkCapacity) {
  FlowNetwork net({1e9});
  // 1e6 B over a 1e9 B/s link: 1e6 / 1e9 = 1 ms.
  const FlowId f = net.start(Time::zero(), Route{0}, 1e6, 7);
  EXPECT_DOUBLE_EQ(net.rate(f), 1e9);
  EXPECT_EQ(net.active_flows(), 1u);
  EXPECT_EQ(net.next_finish(), ps(1 * MS));
  EXPECT_TRUE(net.advance(ps(1 * MS - 1)).empty());  // never early
  EXPECT_EQ(net.advance(ps(1 * MS)), Tags{7});
  EXPECT_EQ(net.active_flows(), 0u);
  EXPECT_EQ(net.next_finish(), Time::max());
}

TEST(FlowNetwork, TwoFlowsOnOneLinkShareItAndTheSurvivorSpeedsUp) {
  FlowNetwork net({1e9});
  // A = 1e6 B, B = 3e6 B, both on link 0 (1e9 B/s): each gets 1e9 / 2 = 5e8 B/s.
  // A ends at 1e6 / 5e8 = 2 ms. B has sent 5e8 * 2 ms = 1e6 B, 2e6 B remain, now at the
  // full 1e9 B/s: 2 ms more, B ends at 4 ms (= 4e6 B total / 1e9 B/s, as it must).
  const FlowId a = net.start(Time::zero(), Route{0}, 1e6, 1);
  const FlowId b = net.start(Time::zero(), Route{0}, 3e6, 2);
  EXPECT_DOUBLE_EQ(net.rate(a), 5e8);
  EXPECT_DOUBLE_EQ(net.rate(b), 5e8);
  EXPECT_EQ(net.next_finish(), ps(2 * MS));
  EXPECT_EQ(net.advance(ps(2 * MS)), Tags{1});
  EXPECT_DOUBLE_EQ(net.rate(b), 1e9);
  EXPECT_EQ(net.next_finish(), ps(4 * MS));
  EXPECT_EQ(net.advance(ps(4 * MS)), Tags{2});
}

// Parking lot with unequal links. L0 = 1e9, L1 = 2e9, L2 = 3e9 B/s.
// A crosses L0, L1, L2; B uses L0; C uses L1; D uses L2.
// Fair shares: L0 1e9/2 = 5e8, L1 2e9/2 = 1e9, L2 3e9/2 = 1.5e9 -> L0 saturates first:
// A = B = 5e8. L1 has 2e9 - 5e8 = 1.5e9 left for C alone; L2 has 3e9 - 5e8 = 2.5e9 for D.
TEST(FlowNetwork, ParkingLotSharesDifferPerLink) {
  FlowNetwork net({1e9, 2e9, 3e9});
  const FlowId a = net.start(Time::zero(), Route{0, 1, 2}, 1e6, 0);
  const FlowId b = net.start(Time::zero(), Route{0}, 3e6, 1);
  const FlowId c = net.start(Time::zero(), Route{1}, 6e6, 2);
  const FlowId d = net.start(Time::zero(), Route{2}, 1e7, 3);
  EXPECT_DOUBLE_EQ(net.rate(a), 5e8);
  EXPECT_DOUBLE_EQ(net.rate(b), 5e8);
  EXPECT_DOUBLE_EQ(net.rate(c), 1.5e9);
  EXPECT_DOUBLE_EQ(net.rate(d), 2.5e9);

  // Finish times. A: 1e6 / 5e8 = 2 ms; C: 6e6 / 1.5e9 = 4 ms; D: 1e7 / 2.5e9 = 4 ms.
  EXPECT_EQ(net.next_finish(), ps(2 * MS));
  EXPECT_EQ(net.advance(ps(2 * MS)), Tags{0});
  // A's end frees 5e8 on every link. At 2 ms:
  //   B: 3e6 - 5e8*2ms = 2e6 left, alone on L0 at 1e9   -> 2 ms more   -> 4 ms
  //   C: 6e6 - 1.5e9*2ms = 3e6 left, alone on L1 at 2e9 -> 1.5 ms more -> 3.5 ms
  //   D: 1e7 - 2.5e9*2ms = 5e6 left, alone on L2 at 3e9 -> 5/3 ms = 1666666666.67 ps,
  //      rounded up to 1666666667 ps                  -> 3666666667 ps
  EXPECT_DOUBLE_EQ(net.rate(b), 1e9);
  EXPECT_DOUBLE_EQ(net.rate(c), 2e9);
  EXPECT_DOUBLE_EQ(net.rate(d), 3e9);
  // Jumping past several finishes still steps through them in order.
  EXPECT_EQ(net.advance(ps(10 * MS)), (Tags{2, 3, 1}));
}

TEST(FlowNetwork, AdvancingPastSeveralFinishesReplaysEachRateChange) {
  // Same parking lot, one advance to the end: C at 3.5 ms, D at 3666666667 ps, B at 4 ms
  // (derivation above). The order of the tags shows that A's finish at 2 ms was applied
  // before the later ones were computed: with the old rates C and D would end at 4 ms.
  FlowNetwork net({1e9, 2e9, 3e9});
  net.start(Time::zero(), Route{0, 1, 2}, 1e6, 0);
  net.start(Time::zero(), Route{0}, 3e6, 1);
  net.start(Time::zero(), Route{1}, 6e6, 2);
  const FlowId d = net.start(Time::zero(), Route{2}, 1e7, 3);
  EXPECT_EQ(net.advance(ps(3'600'000'000)), (Tags{0, 2}));
  EXPECT_EQ(net.next_finish(), ps(3'666'666'667));
  EXPECT_DOUBLE_EQ(net.rate(d), 3e9);
  EXPECT_EQ(net.advance(ps(3'666'666'667)), Tags{3});
  EXPECT_EQ(net.next_finish(), ps(4 * MS));
}

// The bottleneck is the link with the smallest fair share, not the smallest capacity.
// L0 = 1e9 carries X; L1 = 1.5e9 carries X, Y, Z. Shares: L0 1e9/1, L1 1.5e9/3 = 5e8 ->
// L1 first: X = Y = Z = 5e8, and L0 keeps 5e8 unused.
TEST(FlowNetwork, BottleneckIsSmallestShareNotSmallestCapacity) {
  FlowNetwork net({1e9, 1.5e9});
  const FlowId x = net.start(Time::zero(), Route{0, 1}, 1e6, 0);
  const FlowId y = net.start(Time::zero(), Route{1}, 1e6, 1);
  const FlowId z = net.start(Time::zero(), Route{1}, 1e6, 2);
  EXPECT_DOUBLE_EQ(net.rate(x), 5e8);
  EXPECT_DOUBLE_EQ(net.rate(y), 5e8);
  EXPECT_DOUBLE_EQ(net.rate(z), 5e8);
}

TEST(FlowNetwork, LateStartSlowsARunningFlow) {
  FlowNetwork net({1e9});
  // A = 3e6 B alone from 0; at 1 ms it has 2e6 B left. B = 1e6 B starts at 1 ms: both at
  // 5e8. B ends at 1 ms + 1e6/5e8 = 3 ms; A has 2e6 - 1e6 = 1e6 left, alone again at 1e9:
  // ends at 4 ms (= 4e6 B / 1e9 B/s of busy link).
  const FlowId a = net.start(Time::zero(), Route{0}, 3e6, 10);
  EXPECT_EQ(net.next_finish(), ps(3 * MS));
  EXPECT_TRUE(net.advance(ps(1 * MS)).empty());
  const FlowId b = net.start(ps(1 * MS), Route{0}, 1e6, 20);
  EXPECT_DOUBLE_EQ(net.rate(a), 5e8);
  EXPECT_DOUBLE_EQ(net.rate(b), 5e8);
  EXPECT_EQ(net.advance(ps(3 * MS)), Tags{20});
  EXPECT_EQ(net.next_finish(), ps(4 * MS));
  EXPECT_EQ(net.advance(ps(4 * MS)), Tags{10});
}

TEST(FlowNetwork, DisjointComponentsDoNotAffectEachOther) {
  FlowNetwork net({1e9, 1e9});
  const FlowId a = net.start(Time::zero(), Route{0}, 2e6, 0);
  EXPECT_EQ(net.next_finish(), ps(2 * MS));
  // A flow on the other link leaves A's rate and finish time alone.
  const FlowId b = net.start(ps(1 * MS), Route{1}, 5e6, 1);
  EXPECT_DOUBLE_EQ(net.rate(a), 1e9);
  EXPECT_DOUBLE_EQ(net.rate(b), 1e9);
  EXPECT_EQ(net.next_finish(), ps(2 * MS));
  EXPECT_EQ(net.advance(ps(6 * MS)), (Tags{0, 1}));  // b: 1 ms + 5 ms
}

TEST(FlowNetwork, ZeroByteFlowAndEmptyRouteFinishAtOnce) {
  FlowNetwork net({1e9});
  const FlowId big = net.start(Time::zero(), Route{0}, 1e6, 1);
  const FlowId zero = net.start(ps(500), Route{0}, 0.0, 2);
  net.start(ps(500), Route{}, 1e6, 3);  // crosses nothing: no constraint
  EXPECT_EQ(net.next_finish(), ps(500));
  // Neither takes a share of link 0.
  EXPECT_DOUBLE_EQ(net.rate(big), 1e9);
  EXPECT_DOUBLE_EQ(net.rate(zero), 0.0);
  EXPECT_EQ(net.advance(ps(500)), (Tags{2, 3}));
  EXPECT_EQ(net.active_flows(), 1u);
  EXPECT_EQ(net.advance(ps(1 * MS)), Tags{1});
}

TEST(FlowNetwork, SimultaneousFinishesComeInStartOrder) {
  FlowNetwork net({1e9, 1e9});
  // Equal sizes on equal links end together at 1 ms; ties go by start order,
  // not by tag.
  net.start(Time::zero(), Route{1}, 1e6, 9);
  net.start(Time::zero(), Route{0}, 1e6, 4);
  EXPECT_EQ(net.advance(ps(1 * MS)), (Tags{9, 4}));
}

TEST(FlowNetwork, SimultaneousFinishesOfAReusedSlotStillComeInStartOrder) {
  FlowNetwork net({1e9, 1e9, 1e9});
  // A (1e6 B) ends at 1 ms and frees its slot; C (1e6 B, from 1 ms) takes it and ends at
  // 2 ms together with B (2e6 B, from 0). B started first, so B comes first.
  net.start(Time::zero(), Route{0}, 1e6, 1);
  net.start(Time::zero(), Route{1}, 2e6, 2);
  EXPECT_EQ(net.advance(ps(1 * MS)), (Tags{1}));
  net.start(ps(1 * MS), Route{2}, 1e6, 3);
  EXPECT_EQ(net.advance(ps(2 * MS)), (Tags{2, 3}));
}

TEST(FlowNetwork, RejectsBadInput) {
  EXPECT_THROW(FlowNetwork({1e9, 0.0}), std::invalid_argument);
  EXPECT_THROW(FlowNetwork({-1.0}), std::invalid_argument);
  FlowNetwork net({1e9});
  EXPECT_THROW(net.start(Time::zero(), Route{1}, 1.0, 0), std::out_of_range);
  EXPECT_THROW(net.start(Time::zero(), Route{0}, -1.0, 0), std::invalid_argument);
  net.advance(ps(100));
  EXPECT_THROW(net.start(ps(99), Route{0}, 1.0, 0), std::invalid_argument);
  EXPECT_THROW(net.advance(ps(99)), std::invalid_argument);
}

// Max-min fairness characterised (Bertsekas & Gallager): rates are feasible, and every
// flow crosses a saturated link on which no other flow gets more. Checked on random
// networks after every start and every finish, until all flows have drained.
TEST(FlowNetwork, RandomNetworksStayMaxMinFair) {
  struct Lcg {
    std::uint64_t s;
    std::uint32_t next() {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<std::uint32_t>(s >> 33);
    }
  } rng{7};
  for (int round = 0; round < 20; ++round) {
    const std::uint32_t links = 3 + rng.next() % 10;
    std::vector<double> cap(links);
    for (double& c : cap) c = 1e8 * (1 + rng.next() % 20);
    FlowNetwork net(cap);
    std::vector<Route> routes;
    std::vector<FlowId> ids;
    std::vector<bool> live;
    const auto check = [&] {
      std::vector<double> load(links, 0.0);
      std::vector<double> max_rate(links, 0.0);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (!live[i]) continue;
        for (const std::uint32_t l : routes[i]) {
          load[l] += net.rate(ids[i]);
          max_rate[l] = std::max(max_rate[l], net.rate(ids[i]));
        }
      }
      for (std::uint32_t l = 0; l < links; ++l) ASSERT_LE(load[l], cap[l] * (1 + 1e-9)) << "link " << l;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (!live[i]) continue;
        const double r = net.rate(ids[i]);
        ASSERT_GT(r, 0.0);
        bool has_bottleneck = false;
        for (const std::uint32_t l : routes[i]) {
          if (load[l] >= cap[l] * (1 - 1e-9) && r >= max_rate[l] * (1 - 1e-9)) has_bottleneck = true;
        }
        ASSERT_TRUE(has_bottleneck) << "flow " << i << " at " << r << " B/s has no bottleneck link";
      }
    };
    const std::uint32_t nflows = 5 + rng.next() % 40;
    Time t = Time::zero();
    for (std::uint32_t i = 0; i < nflows; ++i) {
      Route r;
      const std::uint32_t len = 1 + rng.next() % 4;
      for (std::uint32_t j = 0; j < len; ++j) {
        const std::uint32_t l = rng.next() % links;
        if (std::find(r.begin(), r.end(), l) == r.end()) r.push_back(l);
      }
      t += ps(rng.next() % 1000);  // staggered starts, some at the same instant
      const std::vector<std::uint32_t> done = net.advance(t);
      for (const std::uint32_t tag : done) live[tag] = false;
      routes.push_back(r);
      ids.push_back(net.start(t, r, 1e3 * (1 + rng.next() % 1000), i));
      live.push_back(true);
      check();
    }
    std::size_t remaining = static_cast<std::size_t>(std::count(live.begin(), live.end(), true));
    Time last = t;
    while (net.next_finish() != Time::max()) {
      const Time next = net.next_finish();
      ASSERT_GE(next, last);
      last = next;
      const std::vector<std::uint32_t> done = net.advance(next);
      ASSERT_FALSE(done.empty());
      for (const std::uint32_t tag : done) {
        ASSERT_TRUE(live[tag]) << "tag " << tag << " reported twice";
        live[tag] = false;
        --remaining;
      }
      check();
    }
    EXPECT_EQ(remaining, 0u);
    EXPECT_EQ(net.active_flows(), 0u);
  }
}

}  // namespace
}  // namespace trainsim::sim
