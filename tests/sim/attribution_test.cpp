#include "sim/attribution.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/plan.hpp"
#include "sim/simulate.hpp"

namespace trainsim::sim {
namespace {

// Categories of these plans: 0 busy work, 1 and 2 two kinds of communication.
constexpr std::uint8_t WORK = 0, COMM_A = 1, COMM_B = 2;
constexpr std::uint8_t MAIN = 0, SIDE = 1;  // streams

Time ps(std::int64_t v) { return Time::from_ps(v); }
double s(std::int64_t v) { return ps(v).seconds(); }

PlanBuilder builder(std::uint32_t devices) {
  return PlanBuilder(devices, 2, {"work", "comm-a", "comm-b"}, {"activations"});
}

PlanBuilder::TaskSpec on(std::uint32_t device, std::uint8_t stream, std::uint8_t category) {
  PlanBuilder::TaskSpec t;
  t.device = device;
  t.stream = stream;
  t.category = category;
  return t;
}

CommInstance fixed_comm(Time d, std::uint32_t participants) { return {NONE, 0.0, d, participants}; }

// work [0,10) → comm [10,40) on the side stream → work [40,45): the main stream's gap is
// the communication it waited for, charged to that task's category, not idle.
TEST(Attribution, GapBehindSameDeviceCommIsThatCommsCategory) {
  PlanBuilder b = builder(1);
  const TaskId w0 = b.add_compute(on(0, MAIN, WORK), ps(10));
  const TaskId c = b.add_comm_task(on(0, SIDE, COMM_A), b.add_comm(fixed_comm(ps(30), 1)));
  const TaskId w1 = b.add_compute(on(0, MAIN, WORK), ps(5));
  b.add_edge(w0, c);
  b.add_edge(c, w1);
  const Plan plan = std::move(b).finish();
  const Timeline tl = simulate(plan, NetworkSpec{});
  ASSERT_EQ(tl.makespan, ps(45));

  const StreamAttribution a = attribute_stream(plan, tl, 0, MAIN);
  ASSERT_EQ(a.by_category_s.size(), plan.category_names.size());
  EXPECT_DOUBLE_EQ(a.by_category_s[WORK], s(15));
  EXPECT_DOUBLE_EQ(a.by_category_s[COMM_A], s(30));
  EXPECT_DOUBLE_EQ(a.by_category_s[COMM_B], 0.0);
  EXPECT_DOUBLE_EQ(a.idle_s, 0.0);
}

// A gap explained by two transfers of 3 ps and 7 ps leaves exactly no idle time: the gap and
// what explains it are both counted in whole picoseconds (in seconds, 3e-12 + 7e-12 is not
// 10e-12, and such a gap came out as −1.6e-27 s of idle time; reports showed −8e-17 s).
TEST(Attribution, FullyExplainedGapIsExactlyNoIdle) {
  PlanBuilder b = builder(1);
  const TaskId w0 = b.add_compute(on(0, MAIN, WORK), ps(10));
  const TaskId c0 = b.add_comm_task(on(0, SIDE, COMM_A), b.add_comm(fixed_comm(ps(3), 1)));
  const TaskId c1 = b.add_comm_task(on(0, SIDE, COMM_B), b.add_comm(fixed_comm(ps(7), 1)));
  const TaskId w1 = b.add_compute(on(0, MAIN, WORK), ps(5));
  b.add_edge(w0, c0);
  b.add_edge(c0, c1);
  b.add_edge(c1, w1);
  const Plan plan = std::move(b).finish();
  const Timeline tl = simulate(plan, NetworkSpec{});
  ASSERT_EQ(tl.makespan, ps(25));
  const StreamAttribution a = attribute_stream(plan, tl, 0, MAIN);
  EXPECT_EQ(a.idle_s, 0.0);
  EXPECT_DOUBLE_EQ(a.by_category_s[COMM_A], s(3));
  EXPECT_DOUBLE_EQ(a.by_category_s[COMM_B], s(7));
}

// Device 1 works [0,50) before it joins a transfer to device 0 that lasts 20 ps; device 0
// works [0,10), then waits for the transfer, then works [70,75). Of its gap [10,70), the
// transfer's 20 ps are exposed communication; the 40 ps before the rendezvous wait on
// another device's computation: idle.
TEST(Attribution, GapWaitingOnAnotherDevicesComputeIsIdle) {
  PlanBuilder b = builder(2);
  b.add_compute(on(0, MAIN, WORK), ps(10));
  const TaskId far = b.add_compute(on(1, MAIN, WORK), ps(50));
  const std::uint32_t transfer = b.add_comm(fixed_comm(ps(20), 2));
  const TaskId recv = b.add_comm_task(on(0, SIDE, COMM_B), transfer);
  const TaskId send = b.add_comm_task(on(1, SIDE, COMM_B), transfer);
  const TaskId w1 = b.add_compute(on(0, MAIN, WORK), ps(5));
  b.add_edge(far, send);
  b.add_edge(recv, w1);
  const Plan plan = std::move(b).finish();
  const Timeline tl = simulate(plan, NetworkSpec{});
  ASSERT_EQ(tl.start[w1], ps(70));

  const StreamAttribution a = attribute_stream(plan, tl, 0, MAIN);
  EXPECT_DOUBLE_EQ(a.by_category_s[WORK], s(15));
  EXPECT_DOUBLE_EQ(a.by_category_s[COMM_A], 0.0);
  EXPECT_DOUBLE_EQ(a.by_category_s[COMM_B], s(20));
  EXPECT_NEAR(a.idle_s, s(40), 1e-24);

  // Waiting directly on the other device's computation (no transfer) is idle throughout.
  PlanBuilder d = builder(2);
  d.add_compute(on(0, MAIN, WORK), ps(10));
  const TaskId far2 = d.add_compute(on(1, MAIN, WORK), ps(50));
  const TaskId after = d.add_compute(on(0, MAIN, WORK), ps(5));
  d.add_edge(far2, after);
  const Plan direct = std::move(d).finish();
  const Timeline tl2 = simulate(direct, NetworkSpec{});
  const StreamAttribution a2 = attribute_stream(direct, tl2, 0, MAIN);
  EXPECT_DOUBLE_EQ(a2.by_category_s[WORK], s(15));
  EXPECT_NEAR(a2.idle_s, s(40), 1e-24);
  EXPECT_EQ(last_finishing_device(direct, tl2), 0u);  // device 0 ends at 55, device 1 at 50
}

// After the stream's last task the device still waits for its own communication until the
// makespan: that tail is the communication's, not idle.
TEST(Attribution, TailAfterTheLastTaskIsExplainedToo) {
  PlanBuilder b = builder(1);
  const TaskId w = b.add_compute(on(0, MAIN, WORK), ps(10));
  const TaskId c = b.add_comm_task(on(0, SIDE, COMM_A), b.add_comm(fixed_comm(ps(30), 1)));
  b.add_edge(w, c);
  const Plan plan = std::move(b).finish();
  const Timeline tl = simulate(plan, NetworkSpec{});
  const StreamAttribution a = attribute_stream(plan, tl, 0, MAIN);
  EXPECT_DOUBLE_EQ(a.by_category_s[WORK], s(10));
  EXPECT_DOUBLE_EQ(a.by_category_s[COMM_A], s(30));
  EXPECT_DOUBLE_EQ(a.idle_s, 0.0);
}

// A folded task splits its span by its nominal parts: 6 ps of work and 4 ps of COMM_B.
TEST(Attribution, FoldedTaskSplitsByItsParts) {
  PlanBuilder b = builder(1);
  b.add_compute(on(0, MAIN, WORK), ps(10));
  const Plan plan = std::move(b).finish();
  const Timeline tl = simulate(plan, NetworkSpec{});
  const std::vector<std::uint32_t> parts_of_task{0};
  const std::vector<Time> parts{ps(6), ps(0), ps(4)};
  const StreamAttribution a = attribute_stream(plan, tl, 0, MAIN, {parts_of_task, parts});
  EXPECT_DOUBLE_EQ(a.by_category_s[WORK], s(6));
  EXPECT_DOUBLE_EQ(a.by_category_s[COMM_A], 0.0);
  EXPECT_DOUBLE_EQ(a.by_category_s[COMM_B], s(4));
  EXPECT_DOUBLE_EQ(a.idle_s, 0.0);
}

TEST(Attribution, LastFinishingDeviceTakesTheLowestIdOnTies) {
  PlanBuilder b = builder(3);
  b.add_compute(on(0, MAIN, WORK), ps(10));
  b.add_compute(on(1, MAIN, WORK), ps(20));
  b.add_compute(on(2, MAIN, WORK), ps(20));
  const Plan plan = std::move(b).finish();
  EXPECT_EQ(last_finishing_device(plan, simulate(plan, NetworkSpec{})), 1u);
}

}  // namespace
}  // namespace trainsim::sim
