#include <gtest/gtest.h>

#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

// The order of (direction, micro-batch) compute work a stage's steps encode.
std::vector<std::pair<char, int>> order_of(const Role& role) {
  std::vector<std::pair<char, int>> out;
  for (const auto& s : role.steps) {
    if (s.kind != Step::Kind::ITEM || s.micro_batch < 0 || s.item.kind != Item::Kind::COMPUTE) continue;
    const char d = s.direction == Direction::FORWARD ? 'F' : 'B';
    if (out.empty() || out.back() != std::make_pair(d, static_cast<int>(s.micro_batch))) out.emplace_back(d, s.micro_batch);
  }
  return out;
}

TEST(Schedule1F1B, WarmupSteadyCooldownOrder) {
  // p = 4, m = 6. Stage 0 warms up with p−1 = 3 forwards, stage 3 with none.
  auto spec = testing::gpt_spec(1, 4, 1, 6);
  Program prog = build_program(spec);
  using V = std::vector<std::pair<char, int>>;
  EXPECT_EQ(order_of(prog.roles[0]), (V{{'F', 0}, {'F', 1}, {'F', 2}, {'F', 3}, {'B', 0}, {'F', 4}, {'B', 1},
                                        {'F', 5}, {'B', 2}, {'B', 3}, {'B', 4}, {'B', 5}}));
  EXPECT_EQ(order_of(prog.roles[3]), (V{{'F', 0}, {'B', 0}, {'F', 1}, {'B', 1}, {'F', 2}, {'B', 2}, {'F', 3},
                                        {'B', 3}, {'F', 4}, {'B', 4}, {'F', 5}, {'B', 5}}));
}

// A hand-made program: every stage runs one forward item of cost Tf and one backward item
// of cost Tb per micro-batch, nothing else; transfers are made free. 1F1B then takes
// exactly (m + p − 1)·(Tf + Tb): the ideal m·(Tf + Tb) plus the bubble (p − 1)·(Tf + Tb)
// (formulas.md: bubble (p−1)/m of ideal).
TEST(Schedule1F1B, MakespanIsIdealPlusBubble) {
  for (auto [p, m] : {std::pair{4, 8}, std::pair{2, 2}, std::pair{8, 3}}) {
    auto spec = testing::gpt_spec(1, p, 1, m);
    Program prog = build_program(spec);
    for (auto& role : prog.roles) {
      role.steps.clear();
      role.segments.assign(2, Segment{});
      models::Op f;
      f.cls = models::ComputeClass::GEMM;
      f.fwd_flops = 4e12;  // ~15 ms at A100 rates: far above kernel overheads
      f.bwd_input_flops = 4e12;
      f.bwd_weight_flops = 4e12;
      role.segments[0].ops = {f};
      role.segments[1].ops = {f};
      role.forward = {Item{}};
      role.forward[0].segment = 0;
      role.backward = {Item{}};
      role.backward[0].segment = 1;
      role.backward[0].cost = Direction::BACKWARD;
      role.tail.clear();
    }
    prog.passes_run.clear();
    ASSERT_EQ(find_pass("1f1b")->run(prog), "");
    auto cluster = testing::a100_cluster(p);
    auto cost = testing::a100_cost();
    Lowered low = lower(prog, cluster, cost, Fidelity::FAST);
    for (auto& c : low.plan.comms) c.fixed_duration = sim::Time::zero();
    const auto tl = sim::simulate(low.plan, low.network);
    const auto tf = sim::Time::from_seconds(segment_seconds(prog.roles[0].segments[0], Direction::FORWARD,
                                                            spec.dtype, cost));
    const auto tb = sim::Time::from_seconds(segment_seconds(prog.roles[0].segments[1], Direction::BACKWARD,
                                                            spec.dtype, cost));
    const std::int64_t expected = (m + p - 1) * (tf.ps + tb.ps);
    EXPECT_EQ(tl.makespan.ps, expected) << "p=" << p << " m=" << m;
  }
}

}  // namespace
}  // namespace trainsim::strategies
