#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "sim/simulate.hpp"
#include "strategies/detail/pass_functions.hpp"
#include "strategies/detail/schedule_builder.hpp"
#include "strategies/lower.hpp"
#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

// The order of (direction, micro-batch) compute work a stage's steps encode.
std::vector<std::pair<char, int>> order_of(const Role& role) {
  std::vector<std::pair<char, int>> out;
  for (const auto& s : role.steps) {
    if (s.kind != Step::Kind::ITEM || s.micro_batch < 0 || role.item(s).kind != Item::Kind::COMPUTE) continue;
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

// A hand-made program: every chunk of every stage runs one forward item of cost Tf/v and
// one backward item of cost Tb/v per micro-batch, nothing else; transfers are made free.
// Then (formulas.md) 1F1B and GPipe take the ideal m·(Tf + Tb) plus a bubble of
// (p − 1)·(Tf + Tb), and interleaving over v chunks shrinks the bubble to (p − 1)·(Tf + Tb)/v.
std::int64_t uniform_makespan(const char* schedule, int p, int m, int v) {
  const Program prog = testing::uniform_program(schedule, p, m, v);
  auto cluster = testing::a100_cluster(p);
  auto cost = testing::a100_cost();
  Lowered low = lower(prog, cluster, cost, Fidelity::FAST);
  for (auto& c : low.plan.comms) c.fixed_duration = sim::Time::zero();
  return sim::simulate(low.plan, low.network).makespan.ps;
}

std::int64_t unit_ps(int v, Direction dir) {
  models::Op f;
  f.cls = models::ComputeClass::GEMM;
  f.fwd_flops = f.bwd_input_flops = f.bwd_weight_flops = 4e12 / v;
  Segment s;
  s.ops = {f};
  return sim::Time::from_seconds(segment_seconds(s, dir, hardware::Dtype::BF16, testing::a100_cost())).ps;
}

TEST(Schedule1F1B, MakespanIsIdealPlusBubble) {
  for (auto [p, m] : {std::pair{4, 8}, std::pair{2, 2}, std::pair{8, 3}}) {
    const std::int64_t unit = unit_ps(1, Direction::FORWARD) + unit_ps(1, Direction::BACKWARD);
    EXPECT_EQ(uniform_makespan("1f1b", p, m, 1), (m + p - 1) * unit) << "p=" << p << " m=" << m;
  }
}

TEST(ScheduleGPipe, SameBubbleAsOneFOneB) {
  for (auto [p, m] : {std::pair{4, 8}, std::pair{3, 5}}) {
    const std::int64_t unit = unit_ps(1, Direction::FORWARD) + unit_ps(1, Direction::BACKWARD);
    EXPECT_EQ(uniform_makespan("gpipe", p, m, 1), (m + p - 1) * unit) << "p=" << p << " m=" << m;
  }
}

TEST(ScheduleInterleaved, BubbleShrinksByTheNumberOfChunks) {
  // (m·v + p − 1) chunk-units: ideal m·(Tf + Tb), bubble (p − 1)·(Tf + Tb)/v.
  for (auto [p, m, v] : {std::tuple{4, 8, 2}, std::tuple{2, 4, 3}, std::tuple{4, 4, 2}}) {
    const std::int64_t unit = unit_ps(v, Direction::FORWARD) + unit_ps(v, Direction::BACKWARD);
    EXPECT_EQ(uniform_makespan("interleaved-1f1b", p, m, v), (m * v + p - 1) * unit)
        << "p=" << p << " m=" << m << " v=" << v;
  }
}

TEST(ScheduleInterleaved, EveryChunkOfEveryMicroBatchRunsOnceEachWay) {
  auto spec = testing::gpt_spec(1, 4, 1, 8);
  spec.pipeline_schedule = "interleaved-1f1b";
  spec.layout.virtual_stages = 3;
  Program prog = build_program(spec);
  for (const auto& role : prog.roles) {
    std::set<std::tuple<int, int, int>> seen;
    int units = 0;
    for (const auto& s : role.steps) {
      if (s.kind != Step::Kind::ITEM || s.micro_batch < 0) continue;
      if (seen.insert({static_cast<int>(s.direction), s.micro_batch, s.chunk}).second) ++units;
    }
    EXPECT_EQ(units, 2 * 8 * 3) << "stage " << role.stage;
  }
}

TEST(ScheduleInterleaved, NeedsMicroBatchesAMultipleOfStages) {
  auto spec = testing::gpt_spec(1, 4, 1, 6);
  spec.pipeline_schedule = "interleaved-1f1b";
  spec.layout.virtual_stages = 2;
  EXPECT_THROW((void)build_program(spec), std::invalid_argument);
}

TEST(PipelinePass, UnevenFirstAndLastStage) {
  // Llama-3.1 405B style: 126 layers do not divide by 16; Megatron puts fewer on the
  // first and last stages. Here 24 layers over 4 stages: 5, 7, 7, 5.
  auto spec = testing::gpt_spec(1, 4, 1, 8);
  spec.layout.first_stage_layers = 5;
  spec.layout.last_stage_layers = 5;
  Program prog = build_program(spec);
  std::vector<std::int64_t> n;
  for (const auto& r : prog.roles) n.push_back(r.num_layers());
  EXPECT_EQ(n, (std::vector<std::int64_t>{5, 7, 7, 5}));
  spec.layout.first_stage_layers = 4;  // leaves 15 for 2 middle stages
  EXPECT_THROW((void)build_program(spec), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::strategies

namespace trainsim::strategies {
namespace {

// A run is one step when nothing needs its items one by one; a dependency on a
// once-per-iteration item keeps the first run of a template in pieces, one on every
// micro-batch's items (a gradient bucket) the last.
TEST(Schedule, WholeRunsUnlessAnItemIsNamed) {
  auto count = [](const Role& role, Direction dir, bool whole) {
    int n = 0;
    std::int32_t last_mb = -2;
    for (const Step& s : role.steps)
      if (s.kind == Step::Kind::ITEM && s.micro_batch >= 0 && s.direction == dir && s.whole_run == whole &&
          s.micro_batch != last_mb) {
        ++n;
        last_mb = s.micro_batch;
      }
    return n;
  };
  auto spec = testing::gpt_spec(2, 2, 2, 8);  // 4 micro-batches per pipeline
  const Program plain = build_program(spec);
  for (const Role& role : plain.roles) {
    EXPECT_EQ(count(role, Direction::FORWARD, true), 4);
    EXPECT_EQ(count(role, Direction::BACKWARD, true), 4);
    EXPECT_EQ(role.item_steps() - role.tail.size(),
              4 * (role.chunks[0].forward.size() + role.chunks[0].backward.size()) +
                  8u);  // with 2 stages each sends in one direction and receives in the other:
                        // one send and one receive per micro-batch
  }
  spec.zero_stage = 1;
  spec.overlap_grad_reduce = spec.overlap_param_gather = true;
  const Program overlapped = build_program(spec);
  for (const Role& role : overlapped.roles) {
    EXPECT_EQ(count(role, Direction::FORWARD, false), 1) << "the first forward waits for its parameter buckets";
    EXPECT_EQ(count(role, Direction::BACKWARD, false), 1) << "the last backward is what the gradient buckets follow";
    EXPECT_EQ(count(role, Direction::FORWARD, true), 3);
    EXPECT_EQ(count(role, Direction::BACKWARD, true), 3);
  }
}

// A run that is not one step goes in pieces, not item by item: a piece begins where an item
// waits for something outside the run (a parameter bucket: the first layer of each bucket)
// and ends where something outside waits for an item to end (a gradient bucket: its last
// layer's last "bwd"); inside a piece items wait only for each other.
TEST(Schedule, AnOpenRunGoesInPiecesCutWhereItsItemsAreNamed) {
  auto spec = testing::gpt_spec(2, 2, 2, 8);
  spec.zero_stage = 1;
  spec.overlap_grad_reduce = spec.overlap_param_gather = true;
  const Program program = build_program(spec);
  for (const Role& role : program.roles) {
    std::size_t pieces = 0, piece_items = 0;
    std::set<std::int32_t> piece_first_layers;
    std::set<std::pair<std::int32_t, std::int32_t>> piece_last;  // (layer, index) of a backward piece's last item
    for (const Step& st : role.steps) {
      if (st.kind != Step::Kind::ITEM || st.micro_batch < 0 || st.whole_run) continue;
      const auto items = role.items(st);
      ++pieces;
      piece_items += items.size();
      // Inside a piece an item waits only for the piece's items, or for what an earlier item
      // of its stream already waited for (a parameter bucket of several layers).
      const auto& run = role.list(st.list, st.chunk);
      auto met_before = [&](std::uint32_t at, const Dep& d) {
        for (std::uint32_t k = 0; k < at; ++k)
          for (const Dep& e : run[k].deps)
            if (run[k].stream == run[at].stream && e.target == Dep::Target::ITEM && e.label == d.label &&
                run[k].layer + e.layer_offset == run[at].layer + d.layer_offset && e.micro_batch == d.micro_batch &&
                (e.on == Dep::On::END || e.on == d.on))
              return true;
        return false;
      };
      for (std::uint32_t j = 1; j < items.size(); ++j)
        for (const Dep& d : items[j].deps)
          EXPECT_TRUE((d.target == Dep::Target::PREVIOUS && static_cast<std::uint32_t>(d.offset) <= j) ||
                      (d.target == Dep::Target::ITEM && met_before(st.index + j, d)))
              << "item " << st.index + j << " of a piece waits for something outside it";
      if (st.direction == Direction::FORWARD) piece_first_layers.insert(items.front().layer);
      else piece_last.insert({items.back().layer, static_cast<std::int32_t>(st.index + items.size() - 1)});
    }
    EXPECT_EQ(piece_items, role.chunks[0].forward.size() + role.chunks[0].backward.size()) << "one open run of each";
    EXPECT_LT(pieces, piece_items / 4) << "pieces, not items one by one";
    // Each parameter bucket's first layer begins a piece of the first forward.
    for (const Item& gather : role.prologue) {
      if (gather.label == "dp-param-allgather-bucket") {
        EXPECT_TRUE(piece_first_layers.count(gather.layer)) << gather.layer;
      }
    }
    // Each gradient bucket follows the last "bwd" of its layer: that item ends a piece.
    const auto& bwd = role.chunks[0].backward;
    for (const Item& bucket : role.floating) {
      std::int32_t last = -1;
      for (std::size_t i = 0; i < bwd.size(); ++i)
        if (bwd[i].label == "bwd" && bwd[i].layer == bucket.layer) last = static_cast<std::int32_t>(i);
      ASSERT_GE(last, 0);
      EXPECT_TRUE(piece_last.count({bucket.layer, last})) << "bucket of layer " << bucket.layer;
    }
  }
}

// The stages restored from one (Role::restored_from) share the schedule's analysis of their
// lists, and with it the table of which items dependencies name, found at the layers of the
// stage it was made for. A stage that cuts its runs after another stage of the restoration
// made the analysis (here stage 2, scheduled alone first and without runs) must cut them at
// its own layers: the 1F1B pass then gives the steps it gives when stage 1 makes the analysis.
TEST(Schedule, ARestoredStageCutsItsRunsAtItsOwnLayers) {
  auto spec = testing::gpt_spec(1, 4, 2, 16);
  spec.zero_stage = 1;
  spec.overlap_grad_reduce = spec.overlap_param_gather = true;
  const Program built = build_program(spec);
  ASSERT_EQ(built.roles.size(), 4u);
  ASSERT_NE(built.roles[1].restored_from, 0u);
  ASSERT_EQ(built.roles[2].restored_from, built.roles[1].restored_from);
  Program again = built;
  for (Role& role : again.roles) {
    role.steps.clear();
    role.step_deps.clear();
    if (role.restored_from != 0) role.restored_from = ~std::uint64_t{0};  // a restoration no schedule has seen
  }
  {
    detail::ScheduleBuilder stage2(again, again.roles[2]);
    stage2.prologue();
    stage2.tail();
  }
  again.roles[2].steps.clear();
  again.roles[2].step_deps.clear();
  ASSERT_EQ(detail::schedule_1f1b(again, PassArgs{}), "");

  std::size_t pieces = 0;
  for (std::size_t r = 0; r < built.roles.size(); ++r) {
    const Role& want = built.roles[r];
    const Role& got = again.roles[r];
    ASSERT_EQ(got.steps.size(), want.steps.size()) << "stage " << r;
    for (std::size_t i = 0; i < want.steps.size(); ++i) {
      const Step& a = got.steps[i];
      const Step& b = want.steps[i];
      pieces += b.kind == Step::Kind::ITEM && b.micro_batch >= 0 && !b.whole_run;
      EXPECT_TRUE(a.kind == b.kind && a.list == b.list && a.index == b.index && a.count == b.count &&
                  a.whole_run == b.whole_run && a.direction == b.direction && a.micro_batch == b.micro_batch &&
                  a.chunk == b.chunk && a.peer_stage == b.peer_stage && a.peer_chunk == b.peer_chunk)
          << "stage " << r << " step " << i;
      const auto da = got.deps(a), db = want.deps(b);
      EXPECT_TRUE(std::equal(da.begin(), da.end(), db.begin(), db.end())) << "stage " << r << " waits of step " << i;
    }
  }
  EXPECT_GT(pieces, 8u) << "each stage's first forward and last backward go in pieces";
}

}  // namespace
}  // namespace trainsim::strategies
