#include "sim/event_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace trainsim::sim {
namespace {

// Conformance suite for the engine's pending-event set, typed over implementations so a
// second queue (a 4-ary heap, a calendar queue) gets the same checks by adding it here.
template <class Q>
class EventQueueConformance : public ::testing::Test {};

using Implementations = ::testing::Types<EventQueue>;
TYPED_TEST_SUITE(EventQueueConformance, Implementations);

// A fixed-seed generator, so failures reproduce.
struct Lcg {
  std::uint64_t s;
  std::uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(s >> 33);
  }
};


TYPED_TEST(EventQueueConformance, StartsEmpty) {
  TypeParam q;
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), 0u);
}

TYPED_TEST(EventQueueConformance, PopsInTimeOrder) {
  TypeParam q;
  const std::int64_t times[] = {50, 10, 40, 20, 30, 0, 60};
  for (std::uint32_t i = 0; i < 7; ++i) q.push(Time::from_ps(times[i]), 0, i);
  EXPECT_EQ(q.size(), 7u);
  std::vector<std::int64_t> popped;
  while (!q.empty()) popped.push_back(q.pop().time.ps);
  EXPECT_EQ(popped, (std::vector<std::int64_t>{0, 10, 20, 30, 40, 50, 60}));
}

TYPED_TEST(EventQueueConformance, EqualTimesPopInPushOrder) {
  TypeParam q;
  // 100 events at one instant, pushed with payloads 0..99: FIFO means they come back 0..99
  // with increasing sequence numbers, whatever the heap does internally.
  for (std::uint32_t i = 0; i < 100; ++i) q.push(Time::from_ps(7), i % 3, i);
  std::uint64_t last_seq = 0;
  for (std::uint32_t i = 0; i < 100; ++i) {
    const Event e = q.pop();
    EXPECT_EQ(e.payload, i);
    EXPECT_EQ(e.kind, i % 3);
    EXPECT_EQ(e.time, Time::from_ps(7));
    if (i > 0) {
      EXPECT_GT(e.seq, last_seq);
    }
    last_seq = e.seq;
  }
}

TYPED_TEST(EventQueueConformance, TopIsWhatPopReturns) {
  TypeParam q;
  q.push(Time::from_ps(5), 1, 11);
  q.push(Time::from_ps(3), 2, 22);
  q.push(Time::from_ps(3), 3, 33);
  const Event t = q.top();
  const Event p = q.pop();
  EXPECT_EQ(t.payload, 22u);
  EXPECT_EQ(p.payload, 22u);
  EXPECT_EQ(p.kind, 2u);
  EXPECT_EQ(q.pop().payload, 33u);  // same time as 22, pushed after it
  EXPECT_EQ(q.pop().payload, 11u);
  EXPECT_TRUE(q.empty());
}

// Interleaved pushes and pops with many equal times, against a reference: a stable sort by
// time of everything pushed so far, which is exactly the (time, push order) contract.
TYPED_TEST(EventQueueConformance, MatchesStableReferenceUnderInterleaving) {
  TypeParam q;
  struct Ref {
    std::int64_t time;
    std::uint32_t payload;
  };
  std::vector<Ref> pending;  // kept sorted by (time, push order)
  Lcg rng{42};
  Time now = Time::zero();
  std::uint32_t next_payload = 0;
  for (int step = 0; step < 20000; ++step) {
    if (pending.empty() || rng.next() % 3 != 0) {
      // Times are never in the past (as in the engine) and collide often (range of 8).
      const std::int64_t t = now.ps + static_cast<std::int64_t>(rng.next() % 8);
      q.push(Time::from_ps(t), 0, next_payload);
      const Ref r{t, next_payload++};
      const auto it = std::upper_bound(pending.begin(), pending.end(), r,
                                       [](const Ref& a, const Ref& b) { return a.time < b.time; });
      pending.insert(it, r);
    } else {
      const Event e = q.pop();
      ASSERT_EQ(e.time.ps, pending.front().time);
      ASSERT_EQ(e.payload, pending.front().payload);
      pending.erase(pending.begin());
      now = e.time;
    }
    ASSERT_EQ(q.size(), pending.size());
  }
  while (!q.empty()) {
    const Event e = q.pop();
    ASSERT_EQ(e.payload, pending.front().payload);
    pending.erase(pending.begin());
  }
}

}  // namespace
}  // namespace trainsim::sim
