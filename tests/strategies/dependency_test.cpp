// The Program's one dependency mechanism (Dep) expresses what the strategies to come need,
// checked here at the Program level and then in the simulated timeline of both fidelities:
// a ZeRO-3 parameter gather prefetched d layers ahead, gradient buckets after the last
// accumulation whatever the schedule, activation copies to host with a prefetch before
// their backward, and a backward split into input-gradient (B) and weight-gradient (W)
// items. Plus the two wrong results the old per-pass flags gave.
#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "report/run_report.hpp"
#include "sim/simulate.hpp"
#include "strategies/detail/buckets.hpp"
#include "strategies/lower.hpp"
#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

// A program with layout passes applied and no schedule yet.
Program unscheduled(const TrainingSpec& spec) {
  Program p = initial_program(spec);
  // Layout passes with the spec's sizes, as pipeline_for writes them.
  for (const PassInvocation& pass : pipeline_for(spec)) {
    const auto resolved = resolve(pass);
    const ResolvedPass& r = std::get<ResolvedPass>(resolved);
    if (r.info->kind != PassKind::LAYOUT) continue;
    EXPECT_EQ(r.info->run(p, r.args), "") << pass.name;
  }
  refresh_templates(p);  // as build_program does before a pass that reads the templates
  return p;
}

// Where an item runs: its step, and its place among the step's items (a whole run's).
struct ItemPos {
  std::uint32_t step = sim::NONE, offset = 0;
  bool operator==(const ItemPos&) const = default;
};

// The item labelled `label` of `layer` in micro-batch `mb`'s `dir` run (its first or last).
ItemPos find_step(const Role& role, const std::string& label, std::int32_t layer, std::int32_t mb, Direction dir,
                  bool last = false) {
  ItemPos found;
  for (std::uint32_t s = 0; s < role.steps.size(); ++s) {
    const Step& st = role.steps[s];
    if (st.kind != Step::Kind::ITEM || st.micro_batch != mb || (mb >= 0 && st.direction != dir)) continue;
    const auto items = role.items(st);
    for (std::uint32_t j = 0; j < items.size(); ++j) {
      if (items[j].label != label || items[j].layer != layer) continue;
      if (found.step == sim::NONE || last) found = {s, j};
    }
  }
  EXPECT_NE(found.step, sim::NONE) << label << " of layer " << layer << ", micro-batch " << mb;
  return found;
}

// A dependency names a step: an item waited for to start must begin its step, one waited
// for to end must end it (a run goes in pieces between such items).
bool has_dep(const Role& role, const Step& st, ItemPos target, Dep::On on) {
  const auto size = static_cast<std::uint32_t>(role.items(role.steps[target.step]).size());
  EXPECT_EQ(target.offset, on == Dep::On::START ? 0u : size - 1) << "the item is inside its step, not at its edge";
  for (const StepDep& d : role.deps(st))
    if (d.step == target.step && d.on == on) return true;
  return false;
}

struct Simulated {
  Lowered lowered;
  sim::Timeline timeline;
};
Simulated simulate(const Program& p, Fidelity f, std::int64_t gpus) {
  const auto cluster = testing::a100_cluster(gpus);
  Simulated r{lower(p, cluster, testing::a100_cost(), f), {}};
  r.timeline = sim::simulate(r.lowered.plan, r.lowered.network);
  return r;
}

// The plan task of an item on device 0 in full fidelity: tasks are emitted in step order,
// one per item (a whole run's items one after the other), none for a receive.
sim::TaskId task_of(const Role& role, ItemPos pos) {
  sim::TaskId t = 0;
  for (std::uint32_t s = 0; s < pos.step; ++s) t += static_cast<sim::TaskId>(role.items(role.steps[s]).size());
  return t + pos.offset;
}

TEST(Dependencies, Zero3GatherPrefetchedDLayersAhead) {
  // ZeRO-3: before layer l's forward (and backward), its parameters are all-gathered over
  // data parallel; with prefetch depth d the gather of layer l is issued when layer l − d
  // starts, in every micro-batch and in both directions.
  const std::int32_t d = 2;
  Program p = unscheduled(testing::gpt_spec(1, 1, 2, 4));
  const std::uint8_t dp = p.stream("dp-comm");
  for (auto& role : p.roles)
    for (auto& chunk : role.chunks)
      for (const Direction dir : {Direction::FORWARD, Direction::BACKWARD}) {
        auto& items = dir == Direction::FORWARD ? chunk.forward : chunk.backward;
        const char* compute = dir == Direction::FORWARD ? "fwd" : "bwd";
        std::vector<Item> out;
        for (Item it : items) {
          if (it.kind == Item::Kind::COMPUTE && it.layer >= 0 && it.layer < 24 &&
              (out.empty() || out.back().layer != it.layer || out.back().label == "zero3-gather")) {
            Item g;
            g.kind = Item::Kind::COLLECTIVE;
            g.collective = {Dim::DATA, hardware::Collective::ALL_GATHER, 50e6};
            g.category = Category::DP_COMM;
            g.stream = dp;
            g.layer = it.layer;
            g.label = "zero3-gather";
            // Issued when the layer d ahead in this direction's order starts.
            g.deps = {Dep::item(compute, dir, dir == Direction::FORWARD ? -d : d, Dep::On::START)};
            out.push_back(g);
            it.deps.push_back(Dep::item("zero3-gather", dir, 0, Dep::On::END));
          }
          out.push_back(it);
        }
        items = std::move(out);
      }
  ASSERT_EQ(find_pass(PassInvocation{"1f1b", {}})->run(p, PassArgs{}), "");
  const Role& role = p.roles[0];
  for (std::int32_t mb = 0; mb < 2; ++mb)
    for (std::int32_t l = 0; l < 24; ++l) {
      const ItemPos g = find_step(role, "zero3-gather", l, mb, Direction::FORWARD);
      const ItemPos f = find_step(role, "fwd", l, mb, Direction::FORWARD);
      EXPECT_TRUE(has_dep(role, role.steps[f.step], g, Dep::On::END)) << "layer " << l << " waits for its gather";
      if (l >= d) {
        EXPECT_TRUE(has_dep(role, role.steps[g.step], find_step(role, "fwd", l - d, mb, Direction::FORWARD), Dep::On::START))
            << "gather of layer " << l << " issued when layer " << l - d << " starts";
      }
      const ItemPos gb = find_step(role, "zero3-gather", l, mb, Direction::BACKWARD);
      if (l + d < 24) {
        EXPECT_TRUE(has_dep(role, role.steps[gb.step], find_step(role, "bwd", l + d, mb, Direction::BACKWARD), Dep::On::START));
      }
    }
  // In the timeline: a gather of layer l ≥ d starts no earlier than layer l − d's forward.
  const Simulated full = simulate(p, Fidelity::FULL, 2);
  for (std::int32_t l = d; l < 24; ++l) {
    const auto g = task_of(role, find_step(role, "zero3-gather", l, 1, Direction::FORWARD));
    const auto f = task_of(role, find_step(role, "fwd", l - d, 1, Direction::FORWARD));
    EXPECT_GE(full.timeline.start[g], full.timeline.start[f]) << "layer " << l;
    EXPECT_GE(full.timeline.start[task_of(role, find_step(role, "fwd", l, 1, Direction::FORWARD))], full.timeline.end[g]);
  }
  const Simulated fast = simulate(p, Fidelity::FAST, 2);
  std::printf("ZeRO-3 prefetch d=2: full %.6f s, fast %.6f s\n", full.timeline.makespan.seconds(),
              fast.timeline.makespan.seconds());
  EXPECT_NEAR(fast.timeline.makespan.seconds() / full.timeline.makespan.seconds(), 1.0, 0.01);
}

TEST(Dependencies, GradientBucketsFollowTheLastAccumulationInGPipe) {
  // GPipe runs micro-batch m−1's backward first and micro-batch 0's last: a bucket must wait
  // for the backward of its layers in every micro-batch, i.e. micro-batch 0's. (The old
  // flag issued buckets during the first backward run, so no data-parallel time was exposed.)
  auto spec = testing::gpt_spec(2, 2, 2, 8);
  spec.pipeline_schedule = "gpipe";
  spec.overlap_grad_reduce = true;
  const Program p = build_program(spec);
  for (const Role& role : p.roles) {
    ASSERT_FALSE(role.floating.empty());
    for (std::uint32_t s = 0; s < role.steps.size(); ++s) {
      const Step& st = role.steps[s];
      if (st.list != ItemList::FLOATING) continue;
      const Item& bucket = role.item(st);
      const ItemPos last_bwd = find_step(role, "bwd", bucket.layer, 0, Direction::BACKWARD, true);
      EXPECT_GT(s, last_bwd.step) << "bucket of layer " << bucket.layer << " placed after micro-batch 0's backward";
      EXPECT_TRUE(has_dep(role, st, last_bwd, Dep::On::END));
    }
  }
  const auto cluster = testing::a100_cluster(8);
  const auto cost = testing::a100_cost();
  const Lowered low = lower(p, cluster, cost, Fidelity::FULL);
  const report::RunReport r = report::analyze(p, low, sim::simulate(low.plan, low.network), cluster, cost);
  std::printf("GPipe + overlapped grad reduce: exposed dp %.6f s of %.6f s\n", r.time.exposed_dp_s, r.iteration_s);
  EXPECT_GT(r.time.exposed_dp_s, 0.0);
}

TEST(Dependencies, EveryGradientIsReducedOnceWithTpOverlapAndSp) {
  // overlap-tp-comm cuts compute items into chunks; the old per-item bucket flag was copied
  // into every chunk, reducing a layer's gradients t times over.
  auto spec = testing::gpt_spec(4, 1, 2, 4);
  spec.layout.sequence_parallel = true;
  spec.overlap_grad_reduce = spec.overlap_tp_comm = true;
  const Program p = build_program(spec);
  const Role& role = p.roles[0];
  double reduced = 0;
  std::size_t bucket_steps = 0;
  for (const Step& st : role.steps)
    if (st.kind == Step::Kind::ITEM && role.item(st).label == "dp-grad-bucket") {
      reduced += role.item(st).collective.bytes;
      ++bucket_steps;
    }
  EXPECT_EQ(bucket_steps, role.floating.size());
  EXPECT_DOUBLE_EQ(reduced, static_cast<double>(role.params) * state_bytes_per_param(spec).gradients);
}

TEST(Dependencies, BucketsHoldMegatronsBucketSize) {
  // max(40 M, 1 M × data) parameters, a layer never split: gpt-1.7b layers hold 63.7 M
  // parameters at tensor 1, so each layer closes a bucket of its own.
  EXPECT_EQ(detail::default_bucket_params(8), 40'000'000);
  EXPECT_EQ(detail::default_bucket_params(64), 64'000'000);
  const std::map<std::int32_t, std::int64_t> params = {{0, 25'000'000}, {1, 25'000'000}, {2, 10'000'000}};
  const auto buckets = detail::make_buckets({2, 1, 0}, params, 30'000'000);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].layers, (std::vector<std::int32_t>{2, 1}));  // 35 M ≥ 30 M closes it
  EXPECT_EQ(buckets[1].params, 25'000'000);
}

// Offload: after each layer's forward its activations are copied to host memory (device →
// host stream) and freed on the GPU; the copy back of layer l is issued when layer l + d's
// backward starts, and layer l's backward waits for it. Returns a layer's bytes.
std::int64_t add_offload(Program& p, std::int32_t d) {
  const std::uint8_t d2h = p.stream("copy-d2h"), h2d = p.stream("copy-h2d");
  std::int64_t per_layer = 0;
  for (auto& role : p.roles)
    for (auto& chunk : role.chunks) {
      std::vector<Item> fwd;
      for (Item it : chunk.forward) {
        const bool layer = it.kind == Item::Kind::COMPUTE && it.layer >= 0 && it.layer < 24;
        if (layer) per_layer = it.alloc_bytes;
        fwd.push_back(it);
        if (!layer) continue;
        Item out;
        out.kind = Item::Kind::COPY;
        out.copy = {CopyNeed::Way::DEVICE_TO_HOST, static_cast<double>(it.alloc_bytes)};
        out.stream = d2h;
        out.layer = it.layer;
        out.label = "offload";
        out.host_memory = true;
        out.alloc_bytes = it.alloc_bytes;
        fwd.push_back(out);
      }
      chunk.forward = std::move(fwd);
      std::vector<Item> bwd;
      for (Item it : chunk.backward) {
        const bool layer = it.kind == Item::Kind::COMPUTE && it.layer >= 0 && it.layer < 24;
        if (layer) {
          Item back;
          back.kind = Item::Kind::COPY;
          back.copy = {CopyNeed::Way::HOST_TO_DEVICE, static_cast<double>(per_layer)};
          back.stream = h2d;
          back.layer = it.layer;
          back.label = "reload";
          back.host_memory = true;
          back.free_bytes = per_layer;
          back.deps = {Dep::item("bwd", Direction::BACKWARD, d, Dep::On::START)};
          bwd.push_back(back);
          it.deps.push_back(Dep::item("reload", Direction::BACKWARD, 0, Dep::On::END));
        }
        bwd.push_back(it);
      }
      chunk.backward = std::move(bwd);
    }
  return per_layer;
}

TEST(Dependencies, ActivationsCopiedToHostAndPrefetchedBeforeBackward) {
  // Offload (add_offload), reloading one layer ahead.
  const std::int32_t d = 1;
  Program p = unscheduled(testing::gpt_spec(1, 1, 1, 2));
  const std::int64_t per_layer = add_offload(p, d);
  ASSERT_EQ(find_pass(PassInvocation{"1f1b", {}})->run(p, PassArgs{}), "");
  const Role& role = p.roles[0];
  const Simulated full = simulate(p, Fidelity::FULL, 1);
  ASSERT_EQ(full.timeline.host_memory.size(), 1u);
  // The host holds every layer's activations of one micro-batch at its peak (1F1B on one
  // stage: one micro-batch in flight).
  EXPECT_EQ(full.timeline.host_memory[0].peak_bytes, 24 * per_layer);
  for (std::int32_t l = 0; l + d < 24; ++l) {
    const auto reload = task_of(role, find_step(role, "reload", l, 0, Direction::BACKWARD));
    const auto ahead = task_of(role, find_step(role, "bwd", l + d, 0, Direction::BACKWARD));
    const auto own = task_of(role, find_step(role, "bwd", l, 0, Direction::BACKWARD));
    EXPECT_GE(full.timeline.start[reload], full.timeline.start[ahead]) << l;
    EXPECT_GE(full.timeline.start[own], full.timeline.end[reload]) << l;
    EXPECT_EQ(full.lowered.plan.kind[reload], sim::TaskKind::COPY);
  }
  // A copy moves its bytes over the GPU's PCIe link at the profile's rate.
  const auto off = task_of(role, find_step(role, "offload", 3, 0, Direction::FORWARD));
  const double pcie = testing::a100_cluster(1).gpu().pcie_bytes_per_s().value();
  EXPECT_NEAR((full.timeline.end[off] - full.timeline.start[off]).seconds(), per_layer / pcie, 1e-9);
}

TEST(Dependencies, OffloadCopiesOfTwoGpusOnOnePcieSwitchShareItsUplink) {
  // Data parallel 8 on one DGX A100 (hardware/node_layout.cpp): GPUs 0 and 1 sit on one PCIe
  // switch whose Gen4 x16 uplink (25 GB/s) is their only way to host memory, and every GPU
  // offloads at the same time, so each copy runs at 12.5 GB/s: twice as long as alone.
  Program p = unscheduled(testing::gpt_spec(1, 1, 8, 8));
  const std::int64_t per_layer = add_offload(p, 1);
  ASSERT_EQ(find_pass(PassInvocation{"1f1b", {}})->run(p, PassArgs{}), "");
  hardware::ClusterSpec spec = testing::a100_cluster(8).spec();
  spec.node_layout = "dgx-a100";
  const hardware::Cluster dgx(spec, *hardware::find_profile("a100-80gb"));
  const Lowered full = lower(p, dgx, testing::a100_cost(), Fidelity::FULL);
  const sim::Timeline t = sim::simulate(full.plan, full.network);
  const Role& role = p.roles[0];
  const auto off = task_of(role, find_step(role, "offload", 3, 0, Direction::FORWARD));
  EXPECT_NEAR((t.end[off] - t.start[off]).seconds(), 2 * per_layer / 25e9, 1e-9);
  // Fast fidelity lowers one rank and charges its copies the same share: the iteration
  // agrees with the full simulation (within the 1 % of the fidelity agreement tests).
  const Lowered fast = lower(p, dgx, testing::a100_cost(), Fidelity::FAST);
  const double fast_s = sim::simulate(fast.plan, fast.network).makespan.seconds();
  EXPECT_NEAR(fast_s, t.makespan.seconds(), 0.01 * t.makespan.seconds());
  // On the generic layout (a switch per GPU) the same copies run at the full 25 GB/s.
  const hardware::Cluster generic = testing::a100_cluster(8);
  const Lowered apart = lower(p, generic, testing::a100_cost(), Fidelity::FULL);
  const sim::Timeline ta = sim::simulate(apart.plan, apart.network);
  EXPECT_NEAR((ta.end[off] - ta.start[off]).seconds(), per_layer / 25e9, 1e-9);
}

TEST(Dependencies, BackwardSplitIntoInputAndWeightGradients) {
  // Zero-bubble schedules run a layer's weight-gradient GEMMs (W) apart from its
  // input-gradient ones (B): split every backward item in two, B freeing the activations
  // only W does not need (here: all but the layer's input, 2·s·b·h), W the rest, and defer
  // every W to the end of the micro-batch's backward.
  Program p = unscheduled(testing::gpt_spec(1, 1, 1, 1));
  const std::int64_t kept = 2 * 2048 * p.spec.model.hidden;
  std::int64_t freed_by_b = 0, freed_by_w = 0;
  for (auto& role : p.roles)
    for (auto& chunk : role.chunks) {
      std::vector<Item> b_items, w_items;
      for (Item it : chunk.backward) {
        if (it.kind != Item::Kind::COMPUTE || it.layer < 0 || it.layer >= 24) {
          b_items.push_back(it);
          continue;
        }
        Item w = it;
        it.cost = Cost::BACKWARD_INPUT;
        it.label = "bwd-input";
        const std::int64_t w_part = std::min(kept, it.free_bytes);
        it.free_bytes -= w_part;
        w.cost = Cost::BACKWARD_WEIGHT;
        w.label = "bwd-weight";
        w.free_bytes = w_part;
        w.deps = {Dep::item("bwd-input", Direction::BACKWARD, 0, Dep::On::END)};
        freed_by_b += it.free_bytes;
        freed_by_w += w.free_bytes;
        b_items.push_back(it);
        w_items.push_back(w);
      }
      b_items.insert(b_items.end(), w_items.begin(), w_items.end());
      chunk.backward = std::move(b_items);
    }
  ASSERT_EQ(find_pass(PassInvocation{"1f1b", {}})->run(p, PassArgs{}), "");
  EXPECT_GT(freed_by_b, 0);
  EXPECT_GT(freed_by_w, 0);
  const Role& role = p.roles[0];
  const Simulated full = simulate(p, Fidelity::FULL, 1);
  // B of every layer runs before any W; each W after its own B.
  const auto first_w = task_of(role, find_step(role, "bwd-weight", 23, 0, Direction::BACKWARD));
  const auto last_b = task_of(role, find_step(role, "bwd-input", 0, 0, Direction::BACKWARD, true));
  EXPECT_GE(full.timeline.start[first_w], full.timeline.end[last_b]);
  // B + W cost what the whole backward costs (the ops split the FLOPs).
  const auto cost = testing::a100_cost();
  for (const Segment& seg : role.segments) {
    const double whole = segment_seconds(seg, Cost::BACKWARD, hardware::Dtype::BF16, cost);
    const double split = segment_seconds(seg, Cost::BACKWARD_INPUT, hardware::Dtype::BF16, cost) +
                         segment_seconds(seg, Cost::BACKWARD_WEIGHT, hardware::Dtype::BF16, cost);
    EXPECT_NEAR(split, whole, 1e-12 + 1e-9 * whole) << seg.name;
  }
  // Memory balances over the iteration, and the fast fidelity agrees on time and memory.
  const Simulated fast = simulate(p, Fidelity::FAST, 1);
  EXPECT_NEAR(fast.timeline.makespan.seconds() / full.timeline.makespan.seconds(), 1.0, 1e-3);
  EXPECT_EQ(fast.timeline.memory[0].peak_bytes, full.timeline.memory[0].peak_bytes);
}

// An item's dependencies are kept in place (an Item is copied as plain memory): up to
// DepList::MAX_DEPS of them, in the order given; one more is an error that names the limit,
// not a dependency silently dropped.
TEST(Dependencies, AnItemHoldsAtMostMaxDepsDependencies) {
  DepList deps = Dep::previous();
  for (std::size_t k = 1; k < DepList::MAX_DEPS; ++k) deps.push_back(Dep::previous(static_cast<std::int32_t>(k + 1)));
  ASSERT_EQ(deps.size(), DepList::MAX_DEPS);
  std::int32_t expected = 1;
  for (const Dep& d : deps) EXPECT_EQ(d.offset, expected++);
  try {
    deps.push_back(Dep::every_stream());
    FAIL() << "a dependency beyond DepList::MAX_DEPS was accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("at most " + std::to_string(DepList::MAX_DEPS)), std::string::npos) << e.what();
  }
  EXPECT_EQ(deps.size(), DepList::MAX_DEPS);
  deps = {Dep::every_stream()};
  ASSERT_EQ(deps.size(), 1u);
  EXPECT_EQ(deps.begin()->target, Dep::Target::EVERY_STREAM);
}

// A Dep keeps its layer and micro-batch offsets in two bytes each: the widest are kept as
// given, and one beyond is an error naming the range, not an offset that wraps around.
TEST(Dependencies, OffsetsBeyondTwoBytesAreAnError) {
  const Dep far = Dep::item("bwd", Direction::BACKWARD, -32768, Dep::On::END, Dep::MicroBatch::SAME, 32767);
  EXPECT_EQ(far.layer_offset, -32768);
  EXPECT_EQ(far.micro_batch_offset, 32767);
  for (const auto& [layer_offset, micro_batch_offset] : {std::pair{40000, 0}, std::pair{0, -40000}}) {
    try {
      Dep::item("bwd", Direction::BACKWARD, layer_offset, Dep::On::END, Dep::MicroBatch::SAME, micro_batch_offset);
      FAIL() << "offsets " << layer_offset << ", " << micro_batch_offset << " were accepted";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("offsets in [-32768, 32767]"), std::string::npos) << e.what();
    }
  }
  // The item a dependency counts back to, likewise.
  EXPECT_EQ(Dep::previous(32767).offset, 32767);
  try {
    Dep::previous(40000);
    FAIL() << "an item 40000 places back was accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("40000 items, layers or micro-batches away"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trainsim::strategies
