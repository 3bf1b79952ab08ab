// The identical layers of a role share their segments (program.hpp), and what a lowering
// computes from the cluster and the layout alone is kept across lowerings (lower.cpp): both
// are there for speed and must not change what any layer, item or plan is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/parallel_layout.hpp"
#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

// The segment indices of one layer's items in a template, in order (−1 for a collective).
std::vector<std::int64_t> segments_of_layer(const std::vector<Item>& items, std::int32_t layer) {
  std::vector<std::int64_t> out;
  for (const Item& it : items)
    if (it.layer == layer) out.push_back(it.kind == Item::Kind::COMPUTE ? static_cast<std::int64_t>(it.segment) : -1);
  return out;
}

TEST(SegmentSharing, EveryLayerReferencesTheFirstLayersSegments) {
  for (const Recompute r : {Recompute::NONE, Recompute::SELECTIVE}) {
    auto spec = testing::gpt_spec(2, 1, 1, 4);  // tensor 2: collectives cut each layer into segments
    spec.recompute = r;
    const Program program = build_program(spec);
    const Role& role = program.roles.at(0);
    const Chunk& chunk = role.chunks.at(0);
    const auto layers = static_cast<std::int32_t>(spec.model.layers);
    ASSERT_GT(layers, 2);
    for (const auto* items : {&chunk.forward, &chunk.backward}) {
      const auto first = segments_of_layer(*items, 0);
      ASSERT_GE(first.size(), 3u);  // segments and tensor-parallel collectives
      for (std::int32_t l = 1; l < layers; ++l) EXPECT_EQ(segments_of_layer(*items, l), first) << "layer " << l;
    }
    // Segments: the embedding's, one layer's, the head's and the optimizer's, each once —
    // not one set per layer.
    std::size_t layer_segments = 0;
    for (const auto* items : {&chunk.forward, &chunk.backward})
      for (const std::int64_t s : segments_of_layer(*items, 0)) layer_segments += s >= 0 ? 1 : 0;
    EXPECT_LT(role.segments.size(), layer_segments + 12) << "recompute " << static_cast<int>(r);
    // Each item still names its own layer.
    for (const Item& it : chunk.forward)
      if (it.kind == Item::Kind::COMPUTE && it.layer == 5) {
        EXPECT_EQ(segment_name(program, role, it).rfind("layer5.fwd", 0), 0u) << segment_name(program, role, it);
        break;
      }
    if (r == Recompute::SELECTIVE) {
      std::size_t recompute_items = 0;
      for (const Item& it : chunk.backward)
        if (it.category == Category::RECOMPUTE) {
          ++recompute_items;
          EXPECT_NE(segment_name(program, role, it).find(".recompute"), std::string::npos);
        }
      EXPECT_EQ(recompute_items, static_cast<std::size_t>(layers));  // one attention core per layer
    }
  }
}

// Every task's duration and the plan's memory of lowering `spec`.
struct PlanFigures {
  std::vector<sim::Time> durations;
  sim::Time makespan;
  double peak = 0;
  bool operator==(const PlanFigures&) const = default;
};

PlanFigures figures(const TrainingSpec& spec, const hardware::Cluster& cluster) {
  const Program program = build_program(spec);
  const Lowered low = lower(program, cluster, testing::a100_cost(), Fidelity::FAST);
  const sim::Timeline tl = sim::simulate(low.plan, low.network);
  PlanFigures f;
  for (std::size_t t = 0; t < low.plan.size(); ++t) f.durations.push_back(tl.end[t] - tl.start[t]);
  f.makespan = tl.makespan;
  f.peak = static_cast<double>(tl.memory.at(0).peak_bytes);
  return f;
}

// A thread's layout memo holds only what its own layout gives: a layout lowered after others
// on one thread comes out as it does alone on a fresh thread.
TEST(LayoutMemo, ALoweringAfterOtherLayoutsMatchesOneOnAFreshThread) {
  const auto cluster = testing::a100_cluster(16);
  const std::vector<TrainingSpec> specs = {testing::gpt_spec(2, 2, 4, 16), testing::gpt_spec(4, 2, 2, 16),
                                           testing::gpt_spec(2, 4, 2, 16), testing::gpt_spec(1, 2, 8, 16)};
  std::vector<PlanFigures> after_others;
  for (const auto& s : specs) after_others.push_back(figures(s, cluster));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    PlanFigures alone;
    std::thread([&] { alone = figures(specs[i], cluster); }).join();
    EXPECT_EQ(after_others[i], alone) << "layout " << i;
  }
  // And the layouts do differ, so a memo keyed too coarsely would show.
  EXPECT_NE(after_others[0].makespan, after_others[1].makespan);
  EXPECT_NE(after_others[0].makespan, after_others[2].makespan);
}

// A fast plan has no flows, so it carries no link table; a full one carries the cluster's.
TEST(LayoutMemo, OnlyAPlanWithFlowsCarriesTheLinks) {
  const auto cluster = testing::a100_cluster(8);
  const Program program = build_program(testing::gpt_spec(2, 2, 2, 8));
  const Lowered fast = lower(program, cluster, testing::a100_cost(), Fidelity::FAST);
  const Lowered full = lower(program, cluster, testing::a100_cost(), Fidelity::FULL);
  EXPECT_TRUE(fast.plan.patterns.empty());
  EXPECT_TRUE(fast.network.capacity_bytes_per_s.empty());
  EXPECT_EQ(full.network.capacity_bytes_per_s.size(), cluster.links().size());
}


// Every field of two items, dependencies included.
void expect_same_item(const Item& p, const Item& q, const std::string& what) {
  EXPECT_EQ(p.kind, q.kind) << what;
  EXPECT_EQ(p.cost, q.cost) << what;
  EXPECT_EQ(p.category, q.category) << what;
  EXPECT_EQ(p.stream, q.stream) << what;
  EXPECT_EQ(p.segment, q.segment) << what;
  EXPECT_EQ(p.mem_class, q.mem_class) << what;
  EXPECT_EQ(p.host_memory, q.host_memory) << what;
  EXPECT_EQ(p.layer, q.layer) << what;
  EXPECT_EQ(p.fraction, q.fraction) << what;
  EXPECT_EQ(p.collective.dim, q.collective.dim) << what;
  EXPECT_EQ(p.collective.op, q.collective.op) << what;
  EXPECT_EQ(p.collective.bytes, q.collective.bytes) << what;
  EXPECT_EQ(p.collective.latency_scale, q.collective.latency_scale) << what;
  EXPECT_EQ(p.collective.occupies_sms, q.collective.occupies_sms) << what;
  EXPECT_EQ(p.copy.way, q.copy.way) << what;
  EXPECT_EQ(p.copy.bytes, q.copy.bytes) << what;
  EXPECT_EQ(p.alloc_bytes, q.alloc_bytes) << what;
  EXPECT_EQ(p.free_bytes, q.free_bytes) << what;
  EXPECT_EQ(p.label, q.label) << what;
  ASSERT_EQ(p.deps.size(), q.deps.size()) << what;
  for (std::size_t d = 0; d < p.deps.size(); ++d) {
    const Dep& a = p.deps.begin()[d];
    const Dep& b = q.deps.begin()[d];
    EXPECT_EQ(a.target, b.target) << what;
    EXPECT_EQ(a.on, b.on) << what;
    EXPECT_EQ(a.micro_batch, b.micro_batch) << what;
    EXPECT_EQ(a.direction, b.direction) << what;
    EXPECT_EQ(a.offset, b.offset) << what;
    EXPECT_EQ(a.layer_offset, b.layer_offset) << what;
    EXPECT_EQ(a.micro_batch_offset, b.micro_batch_offset) << what;
    EXPECT_EQ(a.label, b.label) << what;
  }
}

// Every part of two roles: model states, segments, templates, the per-iteration lists,
// steps and their waits.
void expect_same_role(const Role& x, const Role& y, const std::string& what) {
  EXPECT_EQ(x.stage, y.stage) << what;
  EXPECT_EQ(x.params, y.params) << what;
  for (int c = 0; c < static_cast<int>(MemClass::COUNT); ++c) EXPECT_EQ(x.static_bytes[c], y.static_bytes[c]) << what;
  ASSERT_EQ(x.segments.size(), y.segments.size()) << what;
  for (std::size_t g = 0; g < x.segments.size(); ++g) {
    EXPECT_EQ(x.segments[g].name, y.segments[g].name) << what;
    EXPECT_EQ(x.segments[g].of_layer, y.segments[g].of_layer) << what;
    EXPECT_EQ(x.segments[g].ops.size(), y.segments[g].ops.size()) << what;
  }
  auto same_items = [&](const std::vector<Item>& u, const std::vector<Item>& v, const std::string& list) {
    ASSERT_EQ(u.size(), v.size()) << what << " " << list;
    for (std::size_t i = 0; i < u.size(); ++i) expect_same_item(u[i], v[i], what + " " + list + " item " + std::to_string(i));
  };
  ASSERT_EQ(x.chunks.size(), y.chunks.size()) << what;
  for (std::size_t c = 0; c < x.chunks.size(); ++c) {
    EXPECT_EQ(x.chunks[c].layers, y.chunks[c].layers) << what;
    same_items(x.chunks[c].forward, y.chunks[c].forward, "chunk " + std::to_string(c) + " forward");
    same_items(x.chunks[c].backward, y.chunks[c].backward, "chunk " + std::to_string(c) + " backward");
  }
  same_items(x.prologue, y.prologue, "prologue");
  same_items(x.floating, y.floating, "floating");
  same_items(x.tail, y.tail, "tail");
  same_items(x.transfers, y.transfers, "transfers");
  ASSERT_EQ(x.steps.size(), y.steps.size()) << what;
  for (std::size_t i = 0; i < x.steps.size(); ++i) {
    const Step& p = x.steps[i];
    const Step& q = y.steps[i];
    EXPECT_TRUE(p.kind == q.kind && p.list == q.list && p.index == q.index && p.count == q.count &&
                p.whole_run == q.whole_run && p.direction == q.direction && p.micro_batch == q.micro_batch &&
                p.chunk == q.chunk && p.peer_stage == q.peer_stage && p.peer_chunk == q.peer_chunk &&
                p.deps_begin == q.deps_begin && p.deps_end == q.deps_end)
        << what << " step " << i;
  }
  EXPECT_EQ(x.step_deps, y.step_deps) << what;
}

// A program with the tensor and pipeline passes applied and its templates built.
Program laid_out(const TrainingSpec& spec) {
  Program program = initial_program(spec, false);
  for (const PassInvocation& pass : pipeline_for(spec)) {
    const auto resolved = resolve(pass);
    const ResolvedPass& r = std::get<ResolvedPass>(resolved);
    // The passes that decide what each role holds (data parallelism adds to the tail).
    if (pass.name == "tensor" || pass.name == "pipeline") {
      EXPECT_EQ(r.info->run(program, r.args), "") << pass.name;
    }
  }
  refresh_templates(program);
  return program;
}

// build_program rebuilds the templates once, after the layout passes, instead of after
// each (registry.cpp: the tensor pass leaves them stale). Verifying after every pass makes
// them be rebuilt after each pass: both ways must give the same program.
TEST(DeferredRebuild, GivesTheProgramThatRebuildingAfterEveryPassGives) {
  std::vector<TrainingSpec> specs;
  specs.push_back(testing::gpt_spec(2, 1, 2, 8));  // no pipeline split after the tensor pass
  specs.push_back(testing::gpt_spec(2, 2, 2, 8));
  {
    auto s = testing::gpt_spec(4, 2, 1, 8);
    s.layout.sequence_parallel = true;
    s.recompute = Recompute::FULL;
    s.zero_stage = 1;
    s.overlap_tp_comm = s.overlap_grad_reduce = s.overlap_param_gather = true;
    specs.push_back(s);
  }
  {
    auto s = testing::gpt_spec(2, 2, 1, 8);
    s.layout.virtual_stages = 2;
    s.pipeline_schedule = "interleaved-1f1b";
    s.recompute = Recompute::SELECTIVE;
    specs.push_back(s);
  }
  for (const TrainingSpec& spec : specs) {
    BuildOptions deferred, every_pass;
    deferred.verify = false;
    every_pass.verify = true;
    const Program a = build_program(spec, deferred), b = build_program(spec, every_pass);
    const std::string what = a.pipeline_string();
    EXPECT_EQ(what, b.pipeline_string());
    EXPECT_FALSE(a.templates_stale);
    ASSERT_EQ(a.roles.size(), b.roles.size()) << what;
    for (std::size_t r = 0; r < a.roles.size(); ++r) expect_same_role(a.roles[r], b.roles[r], what + " stage " + std::to_string(r));
  }
}

// refresh_templates builds one middle stage of a pipeline and copies it to the others
// (program.cpp: copy_for_stage): each role must be what rebuild_role makes of it, its
// items naming its own layers — with interleaved chunks, an uneven split and tensor-parallel
// collectives in the templates.
TEST(MiddleStages, CopiedAsRebuildingThemGives) {
  std::vector<TrainingSpec> specs;
  specs.push_back(testing::gpt_spec(1, 8, 1, 8));
  {
    auto s = testing::gpt_spec(2, 4, 1, 8);
    s.layout.sequence_parallel = true;
    s.layout.virtual_stages = 2;
    s.pipeline_schedule = "interleaved-1f1b";
    specs.push_back(s);
  }
  {
    auto s = testing::gpt_spec(2, 4, 1, 8);
    s.layout.first_stage_layers = 4;
    s.layout.last_stage_layers = 4;
    specs.push_back(s);
  }
  for (const TrainingSpec& spec : specs) {
    const Program program = laid_out(spec);
    ASSERT_GE(program.roles.size(), 4u);
    std::size_t middle = 0;
    for (const Role& role : program.roles) {
      if (!role.has_embedding() && !role.has_head()) ++middle;
      Role fresh = role;
      rebuild_role(fresh, program);
      expect_same_role(role, fresh, "spec " + std::to_string(&spec - specs.data()) + " stage " + std::to_string(role.stage));
    }
    EXPECT_GE(middle, 2u) << "spec " << &spec - specs.data();  // one built, at least one copied
  }
}

// build_program builds and transforms one middle stage of a pipeline for all of them until
// the schedule (elide_middle_stages); a pass hook turns that off, so a program built with a
// hook that does nothing has every stage built and transformed on its own. Both must be the
// same program, steps and their dependencies included.
TEST(MiddleStages, ElidedUntilTheScheduleGiveTheProgramThatBuildingEveryStageGives) {
  std::vector<TrainingSpec> specs;
  {
    auto s = testing::gpt_spec(2, 8, 2, 16);
    s.layout.sequence_parallel = true;
    s.recompute = Recompute::FULL;
    s.zero_stage = 1;
    s.overlap_tp_comm = s.overlap_grad_reduce = s.overlap_param_gather = true;
    specs.push_back(s);
  }
  {
    auto s = testing::gpt_spec(2, 4, 2, 8);
    s.layout.virtual_stages = 3;
    s.pipeline_schedule = "interleaved-1f1b";
    s.recompute = Recompute::SELECTIVE;
    s.overlap_grad_reduce = true;
    specs.push_back(s);
  }
  {
    auto s = testing::gpt_spec(1, 4, 1, 8);
    s.layout.first_stage_layers = 3;
    s.layout.last_stage_layers = 5;
    s.pipeline_schedule = "gpipe";
    specs.push_back(s);
  }
  {
    // 1F1B with 4 micro-batches on 8 stages: stages 1 to 3 warm up with all 4, so they run
    // the same runs in the same order (ScheduleBuilder::copy_previous_stage), 4 to 6 do not.
    auto s = testing::gpt_spec(1, 8, 2, 8);
    s.overlap_grad_reduce = true;
    specs.push_back(s);
  }
  for (const TrainingSpec& spec : specs) {
    BuildOptions hooked;
    hooked.after_pass = [](Program&, const PassInvocation&) {};
    const Program a = build_program(spec), b = build_program(spec, hooked);
    const std::string what = a.pipeline_string();
    EXPECT_EQ(what, b.pipeline_string());
    EXPECT_TRUE(a.elided_stages.empty()) << what;
    ASSERT_EQ(a.roles.size(), static_cast<std::size_t>(spec.layout.pipeline)) << what;
    ASSERT_EQ(a.roles.size(), b.roles.size()) << what;
    for (std::size_t r = 0; r < a.roles.size(); ++r) {
      EXPECT_EQ(a.roles[r].stage, static_cast<std::int32_t>(r)) << what;
      expect_same_role(a.roles[r], b.roles[r], what + " stage " + std::to_string(r));
    }
  }
}

// A chunk's template cuts its first transformer layer op by op and copies that layer's items
// for the others (program.cpp build_template). A stage holding one layer cuts it op by op:
// each layer of a one-stage program must have the items of the stage that holds only it.
TEST(LayerBlocks, EachLayerHasTheItemsOfAStageHoldingOnlyIt) {
  auto one = testing::gpt_spec(2, 1, 1, 8);
  one.layout.sequence_parallel = true;
  const auto layers = static_cast<std::int32_t>(one.model.layers);
  auto per_layer = one;
  per_layer.layout.pipeline = layers;
  const Program whole = laid_out(one), split = laid_out(per_layer);
  ASSERT_EQ(split.roles.size(), static_cast<std::size_t>(layers));
  const Role& all = whole.roles.at(0);
  for (std::int32_t l = 1; l + 1 < layers; ++l) {
    const Role& own = split.roles[static_cast<std::size_t>(l)];
    for (const Direction dir : {Direction::FORWARD, Direction::BACKWARD}) {
      const auto& mine = dir == Direction::FORWARD ? own.chunks.at(0).forward : own.chunks.at(0).backward;
      std::vector<Item> theirs;
      for (const Item& it : dir == Direction::FORWARD ? all.chunks.at(0).forward : all.chunks.at(0).backward)
        if (it.layer == l) theirs.push_back(it);
      const std::string what = "layer " + std::to_string(l) + (dir == Direction::FORWARD ? " forward" : " backward");
      ASSERT_EQ(mine.size(), theirs.size()) << what;
      ASSERT_GE(mine.size(), 4u) << what;  // segments and tensor-parallel collectives
      for (std::size_t i = 0; i < mine.size(); ++i) {
        // Segment numbers differ between the programs; what they hold must not.
        const Segment& a = own.segments[mine[i].segment];
        const Segment& b = all.segments[theirs[i].segment];
        EXPECT_EQ(a.name, b.name) << what << " item " << i;
        EXPECT_EQ(a.ops.size(), b.ops.size()) << what << " item " << i;
        Item x = mine[i];
        x.segment = theirs[i].segment;
        expect_same_item(x, theirs[i], what + " item " + std::to_string(i));
      }
    }
  }
}

// A fold's memo key records a layer alike to an earlier kind of layer as a repetition of it
// (lower.cpp, add_run_records): a run that differs from one folded before in one layer only
// must fold anew, not come out as the run it resembles. A thread's memo outlives a lowering,
// so the second lowering below would find the first's fold under a key too coarse.
TEST(FoldMemo, ARunUnlikeOneFoldedBeforeInOneLayerFoldsAnew) {
  const auto cluster = testing::a100_cluster(2);
  const auto cost = testing::a100_cost();
  for (const Recompute r : {Recompute::NONE, Recompute::EVERY_K}) {
    SCOPED_TRACE(static_cast<int>(r));
    auto spec = testing::gpt_spec(2, 1, 1, 4);
    spec.recompute = r;
    spec.recompute_k = r == Recompute::EVERY_K ? 3 : 0;
    Program program = build_program(spec);
    auto makespan = [&] { return sim::simulate(lower(program, cluster, cost, Fidelity::FAST).plan, {}).makespan; };
    const sim::Time before = makespan();
    // One compute item of one middle layer (neither a segment's first nor its last under
    // every-k) at half its cost, in each template.
    for (auto* items : {&program.roles.at(0).chunks.at(0).forward, &program.roles.at(0).chunks.at(0).backward}) {
      const auto it = std::find_if(items->begin(), items->end(), [](const Item& x) {
        return x.layer == 10 && x.kind == Item::Kind::COMPUTE && x.category == Category::COMPUTE;
      });
      ASSERT_NE(it, items->end());
      it->fraction = 0.5;
    }
    const sim::Time after = makespan();
    EXPECT_LT(after, before);
    // And lowered on a fresh thread (an empty memo), the same.
    sim::Time fresh;
    std::thread([&] { fresh = makespan(); }).join();
    EXPECT_EQ(after, fresh);
  }
}

// alike_but_layer decides which layers a pass cuts once and a fold digests once: it must tell
// apart items that differ in any field but the layer, and the bytes between fields (which a
// copy keeps and a fresh item may not) must not matter.
TEST(LayerBlocks, AlikeButLayerTellsApartEveryFieldButTheLayer) {
  Item base;
  base.kind = Item::Kind::COLLECTIVE;
  base.collective = {Dim::TENSOR, hardware::Collective::ALL_GATHER, 1e6};
  base.deps = {Dep::previous(), Dep::item(Label("bwd"), Direction::BACKWARD, 1)};
  const std::vector<std::pair<std::string, std::function<void(Item&)>>> changes = {
      {"kind", [](Item& x) { x.kind = Item::Kind::COPY; }},
      {"cost", [](Item& x) { x.cost = Cost::BACKWARD; }},
      {"category", [](Item& x) { x.category = Category::DP_COMM; }},
      {"stream", [](Item& x) { x.stream = 3; }},
      {"segment", [](Item& x) { x.segment = 7; }},
      {"mem_class", [](Item& x) { x.mem_class = MemClass::WEIGHTS; }},
      {"host_memory", [](Item& x) { x.host_memory = true; }},
      {"label", [](Item& x) { x.label = Label("other"); }},
      {"fraction", [](Item& x) { x.fraction = 0.5; }},
      {"collective dim", [](Item& x) { x.collective.dim = Dim::DATA; }},
      {"collective op", [](Item& x) { x.collective.op = hardware::Collective::REDUCE_SCATTER; }},
      {"occupies_sms", [](Item& x) { x.collective.occupies_sms = false; }},
      {"collective bytes", [](Item& x) { x.collective.bytes = 2e6; }},
      {"latency_scale", [](Item& x) { x.collective.latency_scale = 0.25; }},
      {"copy way", [](Item& x) { x.copy.way = CopyNeed::Way::HOST_TO_DEVICE; }},
      {"copy bytes", [](Item& x) { x.copy.bytes = 5; }},
      {"alloc_bytes", [](Item& x) { x.alloc_bytes = 64; }},
      {"free_bytes", [](Item& x) { x.free_bytes = 64; }},
      {"wait count", [](Item& x) { x.deps = {Dep::previous()}; }},
      {"wait offset", [](Item& x) { x.deps = {Dep::previous(2), Dep::item(Label("bwd"), Direction::BACKWARD, 1)}; }},
      {"wait on",
       [](Item& x) { x.deps = {Dep::previous(1, Dep::On::START), Dep::item(Label("bwd"), Direction::BACKWARD, 1)}; }},
      {"wait label", [](Item& x) { x.deps = {Dep::previous(), Dep::item(Label("fwd"), Direction::BACKWARD, 1)}; }},
      {"wait layer", [](Item& x) { x.deps = {Dep::previous(), Dep::item(Label("bwd"), Direction::BACKWARD, 2)}; }},
  };
  const std::vector<Item> list = {Item{}, base};
  for (const auto& [field, change] : changes) {
    std::vector<Item> other = list;
    change(other[1]);
    EXPECT_FALSE(alike_but_layer(list, other)) << field;
  }
  // Another layer, and other bytes between the fields: alike. (Written into storage filled
  // with other bytes first, field by field, as a fresh item may be.)
  alignas(Item) unsigned char storage[2 * sizeof(Item)];
  std::memset(storage, 0xA5, sizeof storage);
  auto* fresh = reinterpret_cast<Item*>(storage);
  for (std::size_t i = 0; i < 2; ++i) {
    Item& x = fresh[i];
    const Item& y = list[i];
    x.kind = y.kind;
    x.cost = y.cost;
    x.category = y.category;
    x.stream = y.stream;
    x.segment = y.segment;
    x.mem_class = y.mem_class;
    x.host_memory = y.host_memory;
    x.label = y.label;
    x.layer = y.layer + 5;
    x.fraction = y.fraction;
    x.collective.dim = y.collective.dim;
    x.collective.op = y.collective.op;
    x.collective.occupies_sms = y.collective.occupies_sms;
    x.collective.bytes = y.collective.bytes;
    x.collective.latency_scale = y.collective.latency_scale;
    x.copy.way = y.copy.way;
    x.copy.bytes = y.copy.bytes;
    x.alloc_bytes = y.alloc_bytes;
    x.free_bytes = y.free_bytes;
    x.deps.clear();
    for (const Dep& d : y.deps) x.deps.push_back(d);
  }
  EXPECT_TRUE(alike_but_layer(list, std::span<const Item>(fresh, 2)));
  EXPECT_FALSE(alike_but_layer(list, std::span<const Item>(fresh, 1)));  // lengths differ
}

// The middle stages restored from stage 1 share its segments (Segments) until one of them
// changes them: then only that stage's change, and the others keep what they had.
TEST(RestoredStages, ShareStageOnesSegmentsUntilOneChangesThem) {
  auto spec = testing::gpt_spec(2, 6, 1, 12);
  spec.layout.sequence_parallel = true;
  Program program = build_program(spec);
  ASSERT_EQ(program.roles.size(), 6u);
  const Program& view = program;
  for (std::size_t r = 2; r + 1 < view.roles.size(); ++r)
    EXPECT_TRUE(view.roles[r].segments.same_as(view.roles[1].segments)) << "stage " << r;
  EXPECT_FALSE(view.roles[0].segments.same_as(view.roles[1].segments));
  const double before = view.roles[1].segments[0].ops.at(0).fwd_flops;
  program.roles[3].segments[0].ops.at(0).fwd_flops = 2 * before;  // non-const: stage 3's own now
  EXPECT_FALSE(view.roles[3].segments.same_as(view.roles[1].segments));
  EXPECT_TRUE(view.roles[2].segments.same_as(view.roles[1].segments));
  EXPECT_TRUE(view.roles[4].segments.same_as(view.roles[1].segments));
  EXPECT_EQ(view.roles[1].segments[0].ops.at(0).fwd_flops, before);
  EXPECT_EQ(view.roles[2].segments[0].ops.at(0).fwd_flops, before);
  EXPECT_EQ(view.roles[3].segments[0].ops.at(0).fwd_flops, 2 * before);
  EXPECT_EQ(view.roles[3].segments.size(), view.roles[1].segments.size());
}

// Fast fidelity folds a middle stage's template as the stage before it folds it when both
// hold the same items at the same prices (lower.cpp: like_previous_stage). A stage whose
// layers compute twice as much must not take its neighbour's fold: its compute stream is
// as busy as when every stage computes twice as much, and the others as busy as when none
// does.
TEST(LikePreviousStage, AStageWithSlowerSegmentsFoldsAtItsOwnPrices) {
  auto spec = testing::gpt_spec(2, 4, 1, 8);
  spec.layout.sequence_parallel = true;
  spec.overlap_tp_comm = true;
  const ParallelLayout layout = parallel_layout(spec.layout);
  // Compute-stream seconds per stage with the stages in `doubled` computing twice as much.
  const auto busy_with = [&](const std::vector<std::size_t>& doubled) {
    Program program = build_program(spec);
    for (const std::size_t stage : doubled)
      for (Segment& seg : program.roles.at(stage).segments)
        for (models::Op& op : seg.ops) {
          op.fwd_flops *= 2;
          op.bwd_input_flops *= 2;
          op.bwd_weight_flops *= 2;
        }
    const Lowered low = lower(program, testing::a100_cluster(8), testing::a100_cost(), Fidelity::FAST);
    const sim::Timeline tl = sim::simulate(low.plan, low.network);
    EXPECT_EQ(low.device_rank.size(), program.roles.size());  // one rank per stage
    std::vector<double> busy(program.roles.size(), 0.0);
    for (std::size_t t = 0; t < low.plan.size(); ++t) {
      if (low.plan.stream[t] != COMPUTE_STREAM) continue;
      const auto stage = static_cast<std::size_t>(layout.coords(low.device_rank[low.plan.device[t]]).stage);
      busy.at(stage) += (tl.end[t] - tl.start[t]).seconds();
    }
    return busy;
  };
  const std::vector<double> busy = busy_with({2});
  const std::vector<double> all_doubled = busy_with({0, 1, 2, 3});
  const std::vector<double> none_doubled = busy_with({});
  ASSERT_EQ(busy.size(), 4u);
  // Bigger GEMMs run nearer the plateau, and the memory-bound kernels do not double: about
  // 1.5 times as long; taking stage 1's fold would leave it as busy as stage 1.
  EXPECT_GT(busy[2], 1.3 * busy[1]);
  EXPECT_NEAR(busy[2], all_doubled[2], 0.01 * all_doubled[2]);
  for (const std::size_t stage : {0u, 1u, 3u})
    EXPECT_NEAR(busy[stage], none_doubled[stage], 0.01 * none_doubled[stage]) << "stage " << stage;
}

// The other way round: ops that differ in what does not price them (their names) are priced
// and found alike, so the stage folds as its neighbour does and the plan is the same.
TEST(LikePreviousStage, SegmentsThatDifferButPriceAlikeFoldAlike) {
  auto spec = testing::gpt_spec(2, 4, 1, 8);
  spec.layout.sequence_parallel = true;
  spec.overlap_tp_comm = true;
  const Program program = build_program(spec);
  Program renamed = program;
  for (Segment& seg : renamed.roles.at(2).segments)
    for (models::Op& op : seg.ops) op.name += ".renamed";
  const Lowered a = lower(program, testing::a100_cluster(8), testing::a100_cost(), Fidelity::FAST);
  const Lowered b = lower(renamed, testing::a100_cluster(8), testing::a100_cost(), Fidelity::FAST);
  ASSERT_EQ(a.plan.size(), b.plan.size());
  for (std::size_t t = 0; t < a.plan.size(); ++t) {
    EXPECT_EQ(a.plan.duration[t], b.plan.duration[t]) << "task " << t;
    EXPECT_EQ(a.plan.device[t], b.plan.device[t]) << "task " << t;
  }
  EXPECT_EQ(sim::simulate(a.plan, a.network).makespan, sim::simulate(b.plan, b.network).makespan);
}

// A middle stage takes what the stage before found of a template (which of its items fold)
// only when the two are alike: one whose template has an item that is not rank-local (its
// memory on the host) lowers the runs holding it item by item, unlike its neighbours.
TEST(LikePreviousStage, AStageWithAnItemThatDoesNotFoldLowersItsRunsItemByItem) {
  auto spec = testing::gpt_spec(2, 4, 1, 8);
  const Program program = build_program(spec);
  Program changed = program;
  std::vector<Item>& forward = changed.roles.at(2).chunks.at(0).forward;
  ASSERT_GT(forward.size(), 2u);
  forward[1].host_memory = true;  // rank_local: false
  const auto tasks_per_stage = [&](const Program& p) {
    const Lowered low = lower(p, testing::a100_cluster(8), testing::a100_cost(), Fidelity::FAST);
    const ParallelLayout layout = parallel_layout(spec.layout);
    std::vector<int> n(p.roles.size(), 0);
    for (std::size_t t = 0; t < low.plan.size(); ++t)
      ++n.at(static_cast<std::size_t>(layout.coords(low.device_rank[low.plan.device[t]]).stage));
    return n;
  };
  const std::vector<int> before = tasks_per_stage(program);
  const std::vector<int> after = tasks_per_stage(changed);
  EXPECT_EQ(before[1], before[2]);  // the middle stages fold alike
  EXPECT_EQ(after[1], before[1]);
  EXPECT_EQ(after[3], before[3]);
  // Each of the stage's micro-batch forwards is now its items, not one task.
  EXPECT_GE(after[2], before[2] + static_cast<int>(program.micro_batches) * (static_cast<int>(forward.size()) - 1));
}

}  // namespace
}  // namespace trainsim::strategies
