#include "sim/plan.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim::sim {
namespace {

using ::testing::HasSubstr;
using Ids = std::vector<TaskId>;

PlanBuilder make_builder() { return PlanBuilder(2, 2, {"compute", "comm"}, {"weights", "activations"}); }

PlanBuilder::TaskSpec on(std::uint32_t device, std::uint8_t stream) {
  PlanBuilder::TaskSpec s;
  s.device = device;
  s.stream = stream;
  return s;
}

Ids succ_of(const Plan& p, TaskId t) {
  const auto s = p.successors(t);
  return Ids(s.begin(), s.end());
}

// finish() must throw std::logic_error whose message contains `what`.
void expect_finish_error(PlanBuilder b, const std::string& what) {
  try {
    std::move(b).finish();
    ADD_FAILURE() << "finish() accepted the plan; expected an error containing \"" << what << "\"";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(what));
  }
}

TEST(PlanBuilder, LabelsAreInterned) {
  PlanBuilder b = make_builder();
  const std::uint16_t fwd = b.label("fwd");
  const std::uint16_t bwd = b.label("bwd");
  EXPECT_NE(fwd, bwd);
  EXPECT_EQ(b.label("fwd"), fwd);
  const Plan p = std::move(b).finish();
  ASSERT_EQ(p.label_names.size(), 2u);
  EXPECT_EQ(p.label_names[fwd], "fwd");
  EXPECT_EQ(p.label_names[bwd], "bwd");
}

TEST(PlanBuilder, TasksFillEveryPerTaskArray) {
  PlanBuilder b = make_builder();
  PlanBuilder::TaskSpec s = on(1, 1);
  s.category = 1;
  s.micro_batch = 3;
  s.mem_class = 1;
  s.alloc_bytes = 100;
  s.free_bytes = 40;
  s.label = b.label("x");
  const TaskId c = b.add_compute(s, Time::from_ps(123));
  const std::uint32_t inst = b.add_comm({NONE, 0.0, Time::from_ps(5), 1});
  const TaskId m = b.add_comm_task(on(0, 0), inst);
  const Plan p = std::move(b).finish();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(c, 0u);
  EXPECT_EQ(m, 1u);
  EXPECT_EQ(p.kind[c], TaskKind::COMPUTE);
  EXPECT_EQ(p.device[c], 1u);
  EXPECT_EQ(p.stream[c], 1u);
  EXPECT_EQ(p.category[c], 1u);
  EXPECT_EQ(p.micro_batch[c], 3);
  EXPECT_EQ(p.duration[c], Time::from_ps(123));
  EXPECT_EQ(p.comm[c], NONE);
  EXPECT_EQ(p.mem_class[c], 1u);
  EXPECT_EQ(p.alloc_bytes[c], 100);
  EXPECT_EQ(p.free_bytes[c], 40);
  EXPECT_EQ(p.kind[m], TaskKind::COMM);
  EXPECT_EQ(p.comm[m], inst);
  EXPECT_EQ(p.micro_batch[m], -1);
  // Every per-task array has one entry per task.
  for (const std::size_t n : {p.device.size(), p.stream.size(), p.category.size(), p.label.size(),
                              p.micro_batch.size(), p.duration.size(), p.comm.size(), p.mem_class.size(),
                              p.alloc_bytes.size(), p.free_bytes.size()}) {
    EXPECT_EQ(n, 2u);
  }
}

TEST(PlanBuilder, EdgesBecomeSortedDeduplicatedCsr) {
  PlanBuilder b = make_builder();
  for (int i = 0; i < 5; ++i) b.add_compute(on(0, 0), Time::from_ps(1));
  // Added out of order, with 0 -> 3 twice.
  b.add_edge(0, 3);
  b.add_edge(2, 4);
  b.add_edge(0, 1);
  b.add_edge(0, 3);
  b.add_edge(0, 2);
  const Plan p = std::move(b).finish();
  ASSERT_EQ(p.succ_offset.size(), 6u);
  EXPECT_EQ(succ_of(p, 0), (Ids{1, 2, 3}));
  EXPECT_EQ(succ_of(p, 1), Ids{});
  EXPECT_EQ(succ_of(p, 2), Ids{4});
  EXPECT_EQ(succ_of(p, 3), Ids{});
  EXPECT_EQ(succ_of(p, 4), Ids{});
  EXPECT_EQ(p.succ.size(), 4u);  // 5 edges, one duplicate merged
  EXPECT_EQ(p.succ_offset.back(), 4u);
}

TEST(PlanBuilder, InitialMemoryIsDevicesByClasses) {
  PlanBuilder b = make_builder();
  b.set_initial_memory(1, 0, 500);
  b.set_initial_memory(0, 1, 7);
  EXPECT_THROW(b.set_initial_memory(2, 0, 1), std::logic_error);
  EXPECT_THROW(b.set_initial_memory(0, 2, 1), std::logic_error);
  const Plan p = std::move(b).finish();
  // [device * 2 + class]
  EXPECT_EQ(p.initial_memory, (std::vector<std::int64_t>{0, 7, 500, 0}));
}

TEST(PlanBuilder, EmptyPlanIsValid) {
  const Plan p = make_builder().finish();
  EXPECT_EQ(p.size(), 0u);
  EXPECT_EQ(p.succ_offset, std::vector<std::uint32_t>{0});
}

TEST(PlanBuilderErrors, EdgeEndOutOfRange) {
  PlanBuilder b = make_builder();
  b.add_compute(on(0, 0), Time::from_ps(1));
  b.add_edge(0, 5);
  expect_finish_error(std::move(b), "edge 0 (0 -> 5) names task 5 but the plan has 1 tasks");
}

TEST(PlanBuilderErrors, SelfEdge) {
  PlanBuilder b = make_builder();
  b.add_compute(on(0, 0), Time::from_ps(1));
  b.add_edge(0, 0);
  expect_finish_error(std::move(b), "task 0 depends on itself");
}

TEST(PlanBuilderErrors, CommWithTooFewParticipants) {
  PlanBuilder b = make_builder();
  const std::uint32_t c = b.add_comm({NONE, 0.0, Time::from_ps(5), 2});
  b.add_comm_task(on(0, 0), c);
  expect_finish_error(std::move(b), "comm instance 0 has 1 COMM tasks but participants = 2");
}

TEST(PlanBuilderErrors, CommWithTooManyParticipants) {
  PlanBuilder b = make_builder();
  const std::uint32_t c = b.add_comm({NONE, 0.0, Time::from_ps(5), 1});
  b.add_comm_task(on(0, 0), c);
  b.add_comm_task(on(1, 0), c);
  expect_finish_error(std::move(b), "comm instance 0 has 2 COMM tasks but participants = 1");
}

TEST(PlanBuilderErrors, TwoParticipantsOnOneStream) {
  PlanBuilder b = make_builder();
  const std::uint32_t c = b.add_comm({NONE, 0.0, Time::from_ps(5), 2});
  b.add_comm_task(on(1, 1), c);
  b.add_comm_task(on(1, 1), c);
  expect_finish_error(std::move(b), "comm instance 0 has two participants on device 1 stream 1");
}

TEST(PlanBuilderErrors, CommTaskNamesMissingInstance) {
  PlanBuilder b = make_builder();
  b.add_comm_task(on(0, 0), 3);
  expect_finish_error(std::move(b), "task 0 (device 0, stream 0) names comm instance 3 but the plan has 0");
}

TEST(PlanBuilderErrors, PatternIndexOutOfRange) {
  PlanBuilder b = make_builder();
  const std::uint32_t c = b.add_comm({4, 1.0, Time::zero(), 1});
  b.add_comm_task(on(0, 0), c);
  expect_finish_error(std::move(b), "comm instance 0 names pattern 4 but the plan has 0 patterns");
}

TEST(PlanBuilderErrors, PatternRouteOutsideItsLinks) {
  PlanBuilder b = make_builder();
  CommPattern pat;
  pat.name = "ring[2]";
  pat.route_links = {0, 1};
  pat.flows = {{0, 3, 1.0}};
  b.add_pattern(pat);
  expect_finish_error(std::move(b), "pattern 0 (ring[2]) flow 0 has route [0, 3) outside its 2 route links");
}

TEST(PlanBuilderErrors, DeviceOutOfRange) {
  PlanBuilder b = make_builder();
  b.add_compute(on(2, 0), Time::from_ps(1));
  expect_finish_error(std::move(b), "task 0 (device 2, stream 0) is on device 2 but num_devices = 2");
}

TEST(PlanBuilderErrors, StreamOutOfRange) {
  PlanBuilder b = make_builder();
  b.add_compute(on(0, 2), Time::from_ps(1));
  expect_finish_error(std::move(b), "is on stream 2 but streams_per_device = 2");
}

TEST(PlanBuilderErrors, NegativeDuration) {
  PlanBuilder b = make_builder();
  b.add_compute(on(0, 0), Time::from_ps(-1));
  expect_finish_error(std::move(b), "negative duration (-1 ps)");
}

TEST(PlanBuilderErrors, MemoryClassOutOfRange) {
  PlanBuilder b = make_builder();
  PlanBuilder::TaskSpec s = on(0, 0);
  s.mem_class = 2;
  s.alloc_bytes = 10;
  b.add_compute(s, Time::from_ps(1));
  expect_finish_error(std::move(b), "uses memory class 2 but the plan names 2 classes");
}

TEST(PlanBuilderErrors, CollectsSeveralProblems) {
  PlanBuilder b = make_builder();
  b.add_compute(on(5, 0), Time::from_ps(1));
  b.add_compute(on(0, 9), Time::from_ps(1));
  try {
    std::move(b).finish();
    ADD_FAILURE() << "expected an error";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("is on device 5"));
    EXPECT_THAT(e.what(), HasSubstr("is on stream 9"));
  }
}

// finish() names a task's problems only when add_task saw one may be there; every rule of
// check_plan must therefore be seen as the task is added, also after good tasks.
TEST(PlanBuilderErrors, EachTaskRuleIsReportedAfterGoodTasks) {
  using Spec = PlanBuilder::TaskSpec;
  struct Case {
    const char* what;
    std::function<void(Spec&)> spoil;  // applied to a task on device 0, stream 0
    std::int64_t duration_ps = 1;
    bool comm = false;  // added as a COMM task of instance 7 (there is none)
  };
  const std::vector<Case> cases = {
      {"has negative alloc_bytes or free_bytes", [](Spec& s) { s.free_bytes = -4; }},
      {"has contention_share 1.5", [](Spec& s) { s.contention_share = 1.5f; }},
      {"has link_slowdown", [](Spec& s) { s.link_slowdown = std::numeric_limits<float>::quiet_NaN(); }},
      {"has category 2 but the plan names 2", [](Spec& s) { s.category = 2; }},
      {"has label 3 but the plan names 1", [](Spec& s) { s.label = 3; }},
      {"changes host memory but the plan has no hosts",
       [](Spec& s) {
         s.mem_on_host = true;
         s.alloc_bytes = 8;
       }},
      {"names comm instance 7", [](Spec& s) { s.stream = 1; }, 1, true},
      {"negative duration", [](Spec&) {}, -2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    PlanBuilder b = make_builder();
    Spec good = on(0, 0);
    good.label = b.label("fwd");
    for (int i = 0; i < 3; ++i) b.add_compute(good, Time::from_ps(10));
    Spec bad = on(0, 0);
    bad.label = good.label;
    c.spoil(bad);
    if (c.comm) b.add_comm_task(bad, 7);
    else b.add_compute(bad, Time::from_ps(c.duration_ps));
    b.add_compute(good, Time::from_ps(10));
    expect_finish_error(std::move(b), c.what);
  }
}

// What a task names may be added after it (its label, its host): the plan is as valid as
// with the names first.
TEST(PlanBuilder, NamesAddedAfterTheirTasksAreAccepted) {
  PlanBuilder b = make_builder();
  PlanBuilder::TaskSpec s = on(1, 1);
  s.label = 0;  // "bwd", named below
  s.mem_on_host = true;
  s.alloc_bytes = 64;
  const TaskId t = b.add_compute(s, Time::from_ps(5));
  EXPECT_EQ(b.label("bwd"), 0);
  b.set_hosts(1, {0, 0});
  const Plan p = std::move(b).finish();
  EXPECT_EQ(p.label_names.at(p.label[t]), "bwd");
  EXPECT_EQ(p.mem_on_host[t], 1);
}

}  // namespace
}  // namespace trainsim::sim
