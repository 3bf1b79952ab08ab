#include "sim/simulate.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/plan.hpp"

namespace trainsim::sim {

// Readable failure messages; inline so that every test file may define the same one.
inline void PrintTo(const Time& t, std::ostream* os) { *os << t.ps << " ps"; }
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t MS = 1'000'000'000;  // picoseconds per millisecond

Time ps(std::int64_t v) { return Time::from_ps(v); }

PlanBuilder::TaskSpec on(std::uint32_t device, std::uint8_t stream) {
  PlanBuilder::TaskSpec s;
  s.device = device;
  s.stream = stream;
  return s;
}

PlanBuilder builder(std::uint32_t devices) { return PlanBuilder(devices, 2, {"compute", "comm"}, {"weights", "activations"}); }

// A pattern of one flow per entry: route, bytes per unit of the instance's bytes.
CommPattern pattern(const std::vector<std::pair<std::vector<std::uint32_t>, double>>& flows, Time latency) {
  CommPattern p;
  p.name = "test";
  p.latency = latency;
  for (const auto& [route, per_unit] : flows) {
    FlowTemplate ft;
    ft.route_begin = static_cast<std::uint32_t>(p.route_links.size());
    p.route_links.insert(p.route_links.end(), route.begin(), route.end());
    ft.route_end = static_cast<std::uint32_t>(p.route_links.size());
    ft.bytes_per_unit = per_unit;
    p.flows.push_back(ft);
  }
  return p;
}

CommInstance fixed_comm(Time d, std::uint32_t participants) { return {NONE, 0.0, d, participants}; }
CommInstance flow_comm(std::uint32_t pat, double bytes, std::uint32_t participants) {
  return {pat, bytes, Time::zero(), participants};
}

TEST(Simulate, StreamRunsTasksInInsertionOrder) {
  PlanBuilder b = builder(1);
  const TaskId t0 = b.add_compute(on(0, 0), ps(10));
  const TaskId t1 = b.add_compute(on(0, 0), ps(20));
  const TaskId t2 = b.add_compute(on(0, 0), ps(30));
  const Plan p = std::move(b).finish();
  const Timeline tl = simulate(p, NetworkSpec{});
  // Back to back: [0,10) [10,30) [30,60).
  EXPECT_EQ(tl.start[t0], ps(0));
  EXPECT_EQ(tl.end[t0], ps(10));
  EXPECT_EQ(tl.ready[t1], ps(10));
  EXPECT_EQ(tl.start[t1], ps(10));
  EXPECT_EQ(tl.end[t1], ps(30));
  EXPECT_EQ(tl.start[t2], ps(30));
  EXPECT_EQ(tl.end[t2], ps(60));
  EXPECT_EQ(tl.makespan, ps(60));
  EXPECT_EQ(tl.events, 3u);  // three task ends
  EXPECT_EQ(tl.flows, 0u);
}

TEST(Simulate, HeadOfLineBlockingOnAStream) {
  PlanBuilder b = builder(1);
  const TaskId a = b.add_compute(on(0, 0), ps(50));
  const TaskId waits = b.add_compute(on(0, 1), ps(10));
  const TaskId free_but_behind = b.add_compute(on(0, 1), ps(10));
  b.add_edge(a, waits);
  const Timeline tl = simulate(std::move(b).finish(), NetworkSpec{});
  // `waits` needs a (ends at 50). `free_but_behind` has no dependency but is queued behind
  // it on stream 1: it starts at 60, not 0.
  EXPECT_EQ(tl.start[waits], ps(50));
  EXPECT_EQ(tl.ready[free_but_behind], ps(60));
  EXPECT_EQ(tl.start[free_but_behind], ps(60));
  EXPECT_EQ(tl.makespan, ps(70));
}

TEST(Simulate, CrossStreamDependency) {
  PlanBuilder b = builder(1);
  const TaskId a = b.add_compute(on(0, 0), ps(100));
  const TaskId x = b.add_compute(on(0, 1), ps(10));
  const TaskId y = b.add_compute(on(0, 1), ps(20));
  const TaskId z = b.add_compute(on(0, 1), ps(5));
  b.add_edge(a, y);
  const Timeline tl = simulate(std::move(b).finish(), NetworkSpec{});
  // x runs [0,10) beside a [0,100). y is at its stream head at 10 but waits for a: ready
  // at 100, runs [100,120). z follows y: [120,125).
  EXPECT_EQ(tl.end[x], ps(10));
  EXPECT_EQ(tl.ready[y], ps(100));
  EXPECT_EQ(tl.end[y], ps(120));
  EXPECT_EQ(tl.start[z], ps(120));
  EXPECT_EQ(tl.makespan, ps(125));
}

TEST(Simulate, RendezvousWaitsForTheSlowestParticipant) {
  PlanBuilder b = builder(2);
  const std::uint32_t c = b.add_comm(fixed_comm(ps(50), 2));
  b.add_compute(on(0, 0), ps(100));
  const TaskId m0 = b.add_comm_task(on(0, 0), c);
  const TaskId after0 = b.add_compute(on(0, 0), ps(10));
  b.add_compute(on(1, 0), ps(300));
  const TaskId m1 = b.add_comm_task(on(1, 0), c);
  const Timeline tl = simulate(std::move(b).finish(), NetworkSpec{});
  // Device 0 arrives at 100, device 1 at 300: both start at 300 and last the fixed 50.
  EXPECT_EQ(tl.ready[m0], ps(100));
  EXPECT_EQ(tl.ready[m1], ps(300));
  EXPECT_EQ(tl.start[m0], ps(300));
  EXPECT_EQ(tl.start[m1], ps(300));
  EXPECT_EQ(tl.end[m0], ps(350));
  EXPECT_EQ(tl.end[m1], ps(350));
  EXPECT_EQ(tl.start[after0], ps(350));
  EXPECT_EQ(tl.makespan, ps(360));
  EXPECT_EQ(tl.flows, 0u);
}

TEST(Simulate, PatternCommTakesBytesOverCapacityPlusLatency) {
  PlanBuilder b = builder(2);
  // Two flows: 1.5 x S on link 0 and 0.5 x S on link 1, S = 2e6 B, links at 1e9 B/s.
  // Flow 0: 3e6 / 1e9 = 3 ms; flow 1: 1e6 / 1e9 = 1 ms. The instance ends when the last
  // flow ends plus the latency: 3 ms + 5000 ps.
  const std::uint32_t pat = b.add_pattern(pattern({{{0}, 1.5}, {{1}, 0.5}}, ps(5000)));
  const std::uint32_t c = b.add_comm(flow_comm(pat, 2e6, 2));
  const TaskId m0 = b.add_comm_task(on(0, 1), c);
  const TaskId m1 = b.add_comm_task(on(1, 1), c);
  const TaskId next = b.add_compute(on(1, 1), ps(7));
  const Timeline tl = simulate(std::move(b).finish(), NetworkSpec{{1e9, 1e9}});
  EXPECT_EQ(tl.start[m0], ps(0));
  EXPECT_EQ(tl.end[m0], ps(3 * MS + 5000));
  EXPECT_EQ(tl.end[m1], ps(3 * MS + 5000));
  EXPECT_EQ(tl.end[next], ps(3 * MS + 5007));
  EXPECT_EQ(tl.flows, 2u);
  // Events: 2 flow finishes, 1 instance end, 1 task end.
  EXPECT_EQ(tl.events, 4u);
}

TEST(Simulate, CommsSharingALinkSlowEachOther) {
  PlanBuilder b = builder(4);
  // X (devices 0,1) sends S_X = 1e6 B over link 0; Y (devices 2,3) sends S_Y = 3e6 B over
  // links 0 and 1. Both links 1e9 B/s. Link 0 is shared: 5e8 B/s each. X ends at
  // 1e6 / 5e8 = 2 ms. Y then has 3e6 - 1e6 = 2e6 B left at 1e9 B/s: ends at 4 ms.
  // Alone, Y would have taken 3 ms.
  const std::uint32_t px = b.add_pattern(pattern({{{0}, 1.0}}, Time::zero()));
  const std::uint32_t py = b.add_pattern(pattern({{{0, 1}, 1.0}}, Time::zero()));
  const std::uint32_t cx = b.add_comm(flow_comm(px, 1e6, 2));
  const std::uint32_t cy = b.add_comm(flow_comm(py, 3e6, 2));
  const TaskId x = b.add_comm_task(on(0, 1), cx);
  b.add_comm_task(on(1, 1), cx);
  const TaskId y = b.add_comm_task(on(2, 1), cy);
  b.add_comm_task(on(3, 1), cy);
  const TaskId after_x = b.add_compute(on(0, 1), ps(100));
  const Timeline tl = simulate(std::move(b).finish(), NetworkSpec{{1e9, 1e9}});
  EXPECT_EQ(tl.end[x], ps(2 * MS));
  EXPECT_EQ(tl.end[y], ps(4 * MS));
  EXPECT_EQ(tl.end[after_x], ps(2 * MS + 100));
  EXPECT_EQ(tl.makespan, ps(4 * MS));
}

// A ring of four (member i: up link 2i, down link 2(i+1)%4 + 1, all 1e9 B/s) runs its
// edge flows as one network variable until a send on link 0 joins it. Ring 1 (S = 2e6 B)
// starts at 0: 1e9 B/s per edge. At 1 ms the send (1e6 B over links 0 and 8) shares link
// 0 with edge 0, which has 1e6 B left: both at 5e8 B/s, both end at 3 ms. Edges 1-3 end
// at 2 ms. Ring 2 (S = 1e6 B) follows ring 1 on the same streams: 3 ms to 4 ms. The
// timeline must be the same, task for task, with the edge flows carried one by one.
TEST(Simulate, AggregatedRingEdgesGiveTheSameTimelineAsSeparateFlows) {
  const auto build = [] {
    PlanBuilder b = builder(4);
    std::vector<std::pair<std::vector<std::uint32_t>, double>> edges;
    for (std::uint32_t i = 0; i < 4; ++i) edges.push_back({{2 * i, 2 * ((i + 1) % 4) + 1}, 1.0});
    const std::uint32_t ring = b.add_pattern(pattern(edges, ps(300)));
    const std::uint32_t send = b.add_pattern(pattern({{{0, 8}, 1.0}}, Time::zero()));
    const std::uint32_t r1 = b.add_comm(flow_comm(ring, 2e6, 4));
    const std::uint32_t r2 = b.add_comm(flow_comm(ring, 1e6, 4));
    const std::uint32_t s = b.add_comm(flow_comm(send, 1e6, 2));
    for (std::uint32_t d = 0; d < 4; ++d) b.add_comm_task(on(d, 1), r1);
    for (std::uint32_t d = 0; d < 4; ++d) b.add_comm_task(on(d, 1), r2);
    b.add_compute(on(0, 0), ps(1 * MS));
    b.add_comm_task(on(0, 0), s);
    b.add_compute(on(1, 0), ps(MS / 2));
    b.add_comm_task(on(1, 0), s);
    return std::move(b).finish();
  };
  const Plan plan = build();
  const NetworkSpec net{std::vector<double>(9, 1e9)};
  SimulateOptions separate;
  separate.aggregate_flows = false;
  const Timeline a = simulate(plan, net);
  const Timeline b = simulate(plan, net, separate);
  EXPECT_EQ(a.end[0], ps(3 * MS + 300));   // ring 1
  EXPECT_EQ(a.end[4], ps(4 * MS + 600));   // ring 2: 1 ms after ring 1's end
  EXPECT_EQ(a.end[9], ps(3 * MS));         // the send
  EXPECT_EQ(a.start, b.start);
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.ready, b.ready);
  EXPECT_EQ(a.makespan, b.makespan);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.flows, b.flows);
  EXPECT_EQ(a.flows, 9u);
}

TEST(Simulate, ZeroByteCommEndsAfterItsLatency) {
  PlanBuilder b = builder(2);
  const std::uint32_t pat = b.add_pattern(pattern({{{0}, 1.0}}, ps(40)));
  const std::uint32_t c = b.add_comm(flow_comm(pat, 0.0, 2));
  b.add_compute(on(0, 0), ps(10));
  const TaskId m = b.add_comm_task(on(0, 0), c);
  b.add_comm_task(on(1, 0), c);
  const Timeline tl = simulate(std::move(b).finish(), NetworkSpec{{1e9}});
  // Rendezvous at 10, no bytes, latency 40: ends at 50.
  EXPECT_EQ(tl.start[m], ps(10));
  EXPECT_EQ(tl.end[m], ps(50));
  EXPECT_EQ(tl.flows, 1u);
}

TEST(Simulate, MemoryPeakBreakdownAndCurve) {
  PlanBuilder b = builder(2);
  b.set_initial_memory(0, 0, 1000);  // weights on device 0
  b.set_initial_memory(1, 0, 64);    // device 1 has no tasks
  const auto task = [&](std::int64_t alloc, std::int64_t free) {
    PlanBuilder::TaskSpec s = on(0, 0);
    s.mem_class = 1;  // activations
    s.alloc_bytes = alloc;
    s.free_bytes = free;
    return b.add_compute(s, ps(10));
  };
  task(500, 0);    // [0,10)
  task(300, 500);  // [10,20)
  task(0, 300);    // [20,30)
  task(800, 800);  // [30,40)
  const Plan p = std::move(b).finish();
  const Timeline tl = simulate(p, NetworkSpec{}, SimulateOptions{.record_memory_curve = true});
  // Device 0 total: 1000 at 0; +500 -> 1500 at 0; +300 -> 1800 at 10 (the first task frees
  // nothing); -500 -> 1300 at 20; -300 -> 1000 at 30; +800 -> 1800 at 30 (equals the peak,
  // so the peak stays at its first time, 10); -800 -> 1000 at 40.
  const DeviceMemory& m = tl.memory[0];
  EXPECT_EQ(m.peak_bytes, 1800);
  EXPECT_EQ(m.peak_time, ps(10));
  EXPECT_EQ(m.at_peak, (std::vector<std::int64_t>{1000, 800}));
  const std::vector<std::pair<Time, std::int64_t>> curve = {
      {ps(0), 1000}, {ps(0), 1500}, {ps(10), 1800}, {ps(20), 1300}, {ps(30), 1000}, {ps(30), 1800}, {ps(40), 1000}};
  EXPECT_EQ(m.curve, curve);
  // The same points by class (weights, activations), row by row.
  EXPECT_EQ(m.curve_by_class,
            (std::vector<std::int64_t>{1000, 0, 1000, 500, 1000, 800, 1000, 300, 1000, 0, 1000, 800, 1000, 0}));
  // Device 1: the initial memory is its peak, at time 0.
  EXPECT_EQ(tl.memory[1].peak_bytes, 64);
  EXPECT_EQ(tl.memory[1].peak_time, ps(0));
  EXPECT_EQ(tl.memory[1].at_peak, (std::vector<std::int64_t>{64, 0}));
  EXPECT_EQ(tl.memory[1].curve.size(), 1u);
  EXPECT_EQ(tl.memory[1].curve_by_class, (std::vector<std::int64_t>{64, 0}));

  // Without the option, the same peaks and no curve.
  const Timeline quiet = simulate(p, NetworkSpec{});
  EXPECT_EQ(quiet.memory[0].peak_bytes, 1800);
  EXPECT_EQ(quiet.memory[0].peak_time, ps(10));
  EXPECT_TRUE(quiet.memory[0].curve.empty());
  EXPECT_TRUE(quiet.memory[0].curve_by_class.empty());
}

TEST(Simulate, CommParticipantsAllocateAtRendezvousAndFreeAtEnd) {
  PlanBuilder b = builder(2);
  const std::uint32_t c = b.add_comm(fixed_comm(ps(20), 2));
  b.add_compute(on(0, 0), ps(5));
  PlanBuilder::TaskSpec s = on(0, 0);
  s.mem_class = 1;
  s.alloc_bytes = 256;
  s.free_bytes = 256;
  b.add_comm_task(s, c);
  b.add_compute(on(1, 0), ps(15));
  b.add_comm_task(on(1, 0), c);
  const Timeline tl = simulate(std::move(b).finish(), NetworkSpec{}, SimulateOptions{.record_memory_curve = true});
  // Device 0's buffer is allocated when the instance starts (15, when device 1 arrives),
  // not when device 0 arrives (5), and freed at the end (35).
  const std::vector<std::pair<Time, std::int64_t>> curve = {{ps(0), 0}, {ps(15), 256}, {ps(35), 0}};
  EXPECT_EQ(tl.memory[0].curve, curve);
  EXPECT_EQ(tl.memory[0].peak_time, ps(15));
}

TEST(Simulate, DeadlockOnACycleNamesTimeAndTasks) {
  PlanBuilder b = builder(1);
  b.add_compute(on(0, 0), ps(100));
  const TaskId a = b.add_compute(on(0, 0), ps(1));
  const TaskId c = b.add_compute(on(0, 1), ps(1));
  b.add_edge(a, c);
  b.add_edge(c, a);
  const Plan p = std::move(b).finish();
  try {
    simulate(p, NetworkSpec{});
    ADD_FAILURE() << "expected a deadlock";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    // The first task ends at 100; then nothing can happen.
    EXPECT_THAT(msg, HasSubstr("deadlock at t=0.000100 us (100 ps)"));
    EXPECT_THAT(msg, HasSubstr("2 of 3 tasks can never finish"));
    EXPECT_THAT(msg, HasSubstr("task 1 (device 0, stream 0, COMPUTE): 1 unfinished predecessor(s): 2"));
    EXPECT_THAT(msg, HasSubstr("task 2 (device 0, stream 1, COMPUTE): 1 unfinished predecessor(s): 1"));
  }
}

TEST(Simulate, DeadlockOnCrossedCollectives) {
  // Device 0 enters X then Y; device 1 enters Y then X: each waits at a different rendezvous.
  PlanBuilder b = builder(2);
  const std::uint32_t x = b.add_comm(fixed_comm(ps(1), 2));
  const std::uint32_t y = b.add_comm(fixed_comm(ps(1), 2));
  b.add_comm_task(on(0, 1), x);
  b.add_comm_task(on(0, 1), y);
  b.add_comm_task(on(1, 1), y);
  b.add_comm_task(on(1, 1), x);
  try {
    simulate(std::move(b).finish(), NetworkSpec{});
    ADD_FAILURE() << "expected a deadlock";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_THAT(msg, HasSubstr("deadlock at t=0.000000 us (0 ps)"));
    EXPECT_THAT(msg, HasSubstr("2 stream(s) are blocked"));
    EXPECT_THAT(msg, HasSubstr("task 0 (device 0, stream 1, COMM instance 0, 1 of 2 participants at the rendezvous)"));
    EXPECT_THAT(msg, HasSubstr("task 2 (device 1, stream 1, COMM instance 1, 1 of 2 participants at the rendezvous)"));
    EXPECT_THAT(msg, HasSubstr("waiting for the other participants"));
  }
}

TEST(Simulate, RejectsRoutesOutsideTheNetwork) {
  PlanBuilder b = builder(1);
  const std::uint32_t pat = b.add_pattern(pattern({{{3}, 1.0}}, Time::zero()));
  const std::uint32_t c = b.add_comm(flow_comm(pat, 1.0, 1));
  b.add_comm_task(on(0, 0), c);
  const Plan p = std::move(b).finish();
  try {
    simulate(p, NetworkSpec{{1e9, 1e9}});
    ADD_FAILURE() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("routes over link 3 but the network has 2 links"));
  }
}

// A plan with layers of compute and collectives over shared links, random but from a fixed
// seed: enough contention and simultaneous events to expose any order dependence.
// With equal_flows, every flow of a pattern carries the same bytes (as a collective's edge
// flows do), so that the engine starts each pattern's flows as one group.
Plan random_plan(std::uint64_t seed, bool equal_flows = false) {
  struct Lcg {
    std::uint64_t s;
    std::uint32_t next() {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<std::uint32_t>(s >> 33);
    }
  } rng{seed};
  constexpr std::uint32_t DEVICES = 8;
  PlanBuilder b(DEVICES, 2, {"compute", "comm"}, {"weights", "activations"});
  std::vector<std::uint32_t> patterns;
  for (int i = 0; i < 6; ++i) {
    std::vector<std::pair<std::vector<std::uint32_t>, double>> flows;
    const std::uint32_t nf = 1 + rng.next() % 4;
    for (std::uint32_t f = 0; f < nf; ++f) flows.push_back({{rng.next() % 6, 6 + rng.next() % 3}, equal_flows ? 1.0 : 0.5 + f});
    patterns.push_back(b.add_pattern(pattern(flows, ps(rng.next() % 1000))));
  }
  std::vector<TaskId> last(DEVICES, NONE);
  for (int layer = 0; layer < 40; ++layer) {
    for (std::uint32_t d = 0; d < DEVICES; ++d) {
      PlanBuilder::TaskSpec s = on(d, 0);
      s.mem_class = 1;
      s.alloc_bytes = rng.next() % 1000;
      s.free_bytes = s.alloc_bytes;
      // Durations collide often (multiples of 1000 ps) so that many events share an instant.
      const TaskId t = b.add_compute(s, ps(1000 * (1 + rng.next() % 4)));
      if (last[d] != NONE && rng.next() % 2) b.add_edge(last[d], t);
      last[d] = t;
    }
    // Collectives over pairs of devices on stream 1, each after the pair's compute.
    for (std::uint32_t d = 0; d + 1 < DEVICES; d += 2) {
      const bool fixed = rng.next() % 4 == 0;
      const std::uint32_t c = fixed ? b.add_comm(fixed_comm(ps(500 * (rng.next() % 3)), 2))
                                    : b.add_comm(flow_comm(patterns[rng.next() % patterns.size()],
                                                           1e3 * (rng.next() % 50), 2));
      for (const std::uint32_t dev : {d, d + 1}) {
        PlanBuilder::TaskSpec s = on(dev, 1);
        s.mem_class = 1;
        s.alloc_bytes = 64;
        s.free_bytes = 64;
        const TaskId m = b.add_comm_task(s, c);
        b.add_edge(last[dev], m);
        last[dev] = m;
      }
    }
  }
  return std::move(b).finish();
}

NetworkSpec random_network() { return NetworkSpec{{1e9, 2e9, 1e9, 3e9, 1e9, 5e8, 4e9, 4e9, 2e9}}; }

TEST(Simulate, AggregatedAndSeparateFlowsGiveIdenticalTimelines) {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const Plan p = random_plan(seed, true);
    SimulateOptions separate{.record_memory_curve = true};
    separate.aggregate_flows = false;
    const Timeline a = simulate(p, random_network(), SimulateOptions{.record_memory_curve = true});
    const Timeline b = simulate(p, random_network(), separate);
    ASSERT_GT(a.flows, 100u);
    EXPECT_EQ(a.start, b.start) << "seed " << seed;
    EXPECT_EQ(a.end, b.end) << "seed " << seed;
    EXPECT_EQ(a.makespan, b.makespan) << "seed " << seed;
    EXPECT_EQ(a.events, b.events) << "seed " << seed;
    for (std::size_t d = 0; d < a.memory.size(); ++d) EXPECT_EQ(a.memory[d].curve, b.memory[d].curve) << "seed " << seed;
  }
}

TEST(Simulate, IdenticalPlansGiveIdenticalTimelines) {
  const Plan p = random_plan(1234);
  const Timeline a = simulate(p, random_network(), SimulateOptions{.record_memory_curve = true});
  const Timeline b = simulate(p, random_network(), SimulateOptions{.record_memory_curve = true});
  ASSERT_GT(a.flows, 100u);
  EXPECT_EQ(a.ready, b.ready);
  EXPECT_EQ(a.start, b.start);
  EXPECT_EQ(a.end, b.end);
  EXPECT_EQ(a.makespan, b.makespan);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.flows, b.flows);
  for (std::size_t d = 0; d < a.memory.size(); ++d) {
    EXPECT_EQ(a.memory[d].peak_bytes, b.memory[d].peak_bytes);
    EXPECT_EQ(a.memory[d].peak_time, b.memory[d].peak_time);
    EXPECT_EQ(a.memory[d].at_peak, b.memory[d].at_peak);
    EXPECT_EQ(a.memory[d].curve, b.memory[d].curve);
    EXPECT_EQ(a.memory[d].curve_by_class, b.memory[d].curve_by_class);
  }
  // A different seed really is a different plan (the comparison above is not vacuous).
  EXPECT_NE(simulate(random_plan(99), random_network()).makespan, a.makespan);
}

TEST(Simulate, TimelineObeysTheExecutionRules) {
  const Plan p = random_plan(77);
  const Timeline tl = simulate(p, random_network());
  const std::size_t n = p.size();
  Time latest = Time::zero();
  // A task is ready exactly when the last of its predecessors and its stream predecessor
  // has ended (time 0 if it has none).
  std::vector<Time> expected_ready(n, Time::zero());
  for (TaskId t = 0; t < n; ++t) {
    for (const TaskId s : p.successors(t)) expected_ready[s] = std::max(expected_ready[s], tl.end[t]);
  }
  std::vector<TaskId> prev_on_stream(std::size_t{p.num_devices} * p.streams_per_device, NONE);
  for (TaskId t = 0; t < n; ++t) {
    ASSERT_LE(tl.ready[t], tl.start[t]) << "task " << t;
    ASSERT_LE(tl.start[t], tl.end[t]) << "task " << t;
    if (p.kind[t] == TaskKind::COMPUTE) {
      ASSERT_EQ(tl.end[t] - tl.start[t], p.duration[t]) << "task " << t;
    }
    const std::size_t key = std::size_t{p.device[t]} * p.streams_per_device + p.stream[t];
    if (prev_on_stream[key] != NONE) {
      expected_ready[t] = std::max(expected_ready[t], tl.end[prev_on_stream[key]]);
    }
    ASSERT_EQ(tl.ready[t], expected_ready[t]) << "task " << t;
    prev_on_stream[key] = t;
    latest = std::max(latest, tl.end[t]);
  }
  EXPECT_EQ(tl.makespan, latest);
  // Participants of one instance start and end together, at the last arrival.
  for (std::uint32_t c = 0; c < p.comms.size(); ++c) {
    Time start = Time::max();
    Time end = Time::max();
    Time last_ready = Time::zero();
    for (TaskId t = 0; t < n; ++t) {
      if (p.kind[t] != TaskKind::COMM || p.comm[t] != c) continue;
      if (start == Time::max()) {
        start = tl.start[t];
        end = tl.end[t];
      }
      ASSERT_EQ(tl.start[t], start);
      ASSERT_EQ(tl.end[t], end);
      last_ready = std::max(last_ready, tl.ready[t]);
    }
    ASSERT_EQ(start, last_ready) << "comm " << c;
    if (p.comms[c].pattern == NONE) {
      ASSERT_EQ(end - start, p.comms[c].fixed_duration);
    }
  }
}

// Contention: compute on stream 0 runs 1/(1 + 0.25) = 0.8 as fast while a COMM task of
// its device runs on stream 1. Compute of 10 µs; a 4 µs transfer starts at 2 µs (after a
// 2 µs compute on stream 1). Work done: 2 µs at full speed, 4 µs × 0.8 = 3.2 µs slowed,
// then 10 − 2 − 3.2 = 4.8 µs at full speed: the compute ends at 2 + 4 + 4.8 = 10.8 µs.
TEST(Simulate, ComputeSlowsWhileItsDeviceCommunicates) {
  constexpr std::int64_t US = 1'000'000;
  for (double slowdown : {0.0, 0.25}) {
    PlanBuilder b = builder(1);
    const TaskId compute = b.add_compute(on(0, 0), ps(10 * US));
    const TaskId before = b.add_compute(on(0, 1), ps(2 * US));
    const TaskId comm = b.add_comm_task(on(0, 1), b.add_comm(fixed_comm(ps(4 * US), 1)));
    b.add_edge(before, comm);
    Plan plan = std::move(b).finish();
    plan.contention_slowdown = slowdown;
    plan.contended_stream = 0;
    const Timeline tl = simulate(plan, NetworkSpec{});
    EXPECT_EQ(tl.end[comm].ps, 6 * US);
    EXPECT_EQ(tl.end[compute].ps, slowdown == 0 ? 10 * US : 10'800'000) << "slowdown " << slowdown;
  }
}

// One rule for contention in both fidelities: a task slows only by the share of it that
// computes (a fast-fidelity task that folds its own tensor-parallel transfers has a share
// below 1), and by its link slowdown only while an instance that shares its links runs.
TEST(Simulate, ContentionSlowsTheComputingShareAndSharedLinks) {
  constexpr std::int64_t US = 1'000'000;
  // 4 µs of communication beside a 10 µs task from t = 2 µs: those 4 µs run at
  // 1/(1 + f·share + link), f = 0.25, and the task ends at 10 + 4·(1 − rate) µs.
  // A transfer the copy engines make (occupies_sms false) takes no SMs: only its shared
  // links, if any, slow the task.
  struct Case {
    float share, link;
    bool shares_links;
    bool occupies_sms = true;
  } cases[] = {{1.0f, 0.0f, false},       {0.5f, 0.0f, false},        {0.5f, 0.5f, false},
               {0.5f, 0.5f, true},        {0.0f, 0.0f, false},        {1.0f, 0.0f, false, false},
               {1.0f, 0.5f, true, false}, {1.0f, 0.5f, false, false}};
  for (const Case& c : cases) {
    PlanBuilder b = builder(1);
    PlanBuilder::TaskSpec spec = on(0, 0);
    spec.contention_share = c.share;
    spec.link_slowdown = c.link;
    const TaskId compute = b.add_compute(spec, ps(10 * US));
    const TaskId before = b.add_compute(on(0, 1), ps(2 * US));
    CommInstance inst = fixed_comm(ps(4 * US), 1);
    inst.shares_links = c.shares_links;
    inst.occupies_sms = c.occupies_sms;
    const TaskId comm = b.add_comm_task(on(0, 1), b.add_comm(inst));
    b.add_edge(before, comm);
    Plan plan = std::move(b).finish();
    plan.contention_slowdown = 0.25;
    plan.contended_stream = 0;
    const Timeline tl = simulate(plan, NetworkSpec{});
    const double rate = 1.0 / (1.0 + (c.occupies_sms ? 0.25 * c.share : 0.0) + (c.shares_links ? c.link : 0.0f));
    const auto expected = static_cast<std::int64_t>(10 * US + 4 * US * (1 - rate));
    EXPECT_NEAR(static_cast<double>(tl.end[compute].ps), static_cast<double>(expected), 2.0)
        << "share " << c.share << " link " << c.link << " shares_links " << c.shares_links << " occupies_sms "
        << c.occupies_sms;
  }
}

TEST(Simulate, ContentionFactorIsValidated) {
  PlanBuilder b = builder(1);
  b.add_compute(on(0, 0), ps(10));
  Plan plan = std::move(b).finish();
  plan.contention_slowdown = -1;
  EXPECT_THROW((void)simulate(plan, NetworkSpec{}), std::invalid_argument);
}

// A plan the caller says PlanBuilder::finish built skips the task checks finish made, but
// not what may be set after finish (the contention fields) or what finish cannot know (the
// network's links).
TEST(Simulate, APlanFromTheBuilderIsCheckedForWhatFinishCouldNotCheck) {
  SimulateOptions trusted;
  trusted.plan_from_builder = true;
  {
    PlanBuilder b = builder(1);
    b.add_compute(on(0, 0), ps(10));
    Plan plan = std::move(b).finish();
    plan.contention_slowdown = -1;
    EXPECT_THROW((void)simulate(plan, NetworkSpec{}, trusted), std::invalid_argument);
    plan.contention_slowdown = 0;
    plan.contended_stream = 7;
    EXPECT_THROW((void)simulate(plan, NetworkSpec{}, trusted), std::invalid_argument);
  }
  {
    PlanBuilder b = builder(1);
    const std::uint32_t pat = b.add_pattern(pattern({{{3}, 1.0}}, Time::zero()));
    b.add_comm_task(on(0, 0), b.add_comm(flow_comm(pat, 1.0, 1)));
    const Plan p = std::move(b).finish();
    try {
      (void)simulate(p, NetworkSpec{{1e9, 1e9}}, trusted);
      ADD_FAILURE() << "expected an error";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("routes over link 3 but the network has 2 links"));
    }
  }
  {
    // What it does skip: finish checked this plan, and simulate runs it as it would have.
    PlanBuilder b = builder(1);
    const TaskId a = b.add_compute(on(0, 0), ps(10));
    const TaskId c = b.add_compute(on(0, 1), ps(5));
    b.add_edge(a, c);
    const Plan p = std::move(b).finish();
    EXPECT_EQ(simulate(p, NetworkSpec{}, trusted).makespan, simulate(p, NetworkSpec{}).makespan);
    EXPECT_EQ(simulate(p, NetworkSpec{}, trusted).makespan, ps(15));
  }
}

}  // namespace
}  // namespace trainsim::sim
