// Fast fidelity against full fidelity on scenarios chosen where the two could differ:
// oversubscribed leaf uplinks (1, 2, 4), rings and pipeline transfers that cross leaves
// (small leaves, and a 36-node cluster over the default 32-node leaf), GPipe, 1F1B and
// interleaved schedules, every recompute policy, every overlap option, ZeRO-1, uneven
// splits, FP16 and a Llama model. Fast simulates one rank per stage, folds each run of a
// stage's work into one task and prices collectives in closed form with the link load the
// symmetric traffic implies; full simulates every rank and every flow.
//
// Held to: iteration time within 1 %, peak memory and each memory class within 1 % (of the
// class, or of the peak for a class that is nearly empty), each line of the time breakdown
// within 2 % of the iteration time. Every case prints both sides.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include "report/run_report.hpp"
#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

struct Case {
  const char* name;
  const char* gpu;
  const char* model;
  std::int64_t t, p, d, v, global_batch;
  const char* schedule;
  Recompute recompute = Recompute::NONE;
  bool sp = false, zero1 = false, grad = false, param = false, tp_overlap = false;
  double oversubscription = 1;
  std::int64_t nodes_per_leaf = 32;
  std::int64_t first_stage_layers = 0;
  bool fp16 = false;
  const char* passes = nullptr;  // a written-out pipeline instead of the fields above
};

// gtest prints a failing parameter with this.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

struct Sides {
  report::RunReport fast, full;
};

Sides run_both(const Case& c) {
  TrainingSpec spec;
  spec.model = *models::find_preset(c.model);
  spec.sequence = 2048;
  spec.micro_batch = 1;
  spec.global_batch = c.global_batch;
  spec.layout = Layout{c.t, c.p, c.d, c.sp, c.v};
  spec.layout.first_stage_layers = c.first_stage_layers;
  spec.flash_attention = true;
  spec.pipeline_schedule = c.schedule;
  spec.recompute = c.recompute;
  spec.zero_stage = c.zero1 ? 1 : 0;
  spec.overlap_grad_reduce = c.grad;
  spec.overlap_param_gather = c.param;
  spec.overlap_tp_comm = c.tp_overlap;
  if (c.fp16) spec.dtype = hardware::Dtype::FP16;
  if (c.passes != nullptr) spec = with_pipeline(spec, std::get<Pipeline>(parse_pipeline(c.passes)));
  const Program prog = build_program(spec);

  hardware::ClusterSpec cs;
  cs.gpu = c.gpu;
  const std::int64_t gpus = c.t * c.p * c.d;
  cs.gpus_per_node = gpus < 8 ? gpus : 8;
  cs.nodes = gpus / cs.gpus_per_node;
  cs.nic_gbps = std::string(c.gpu) == "a100-80gb" ? 200 : 400;
  cs.oversubscription = c.oversubscription;
  cs.nodes_per_leaf = c.nodes_per_leaf;
  const hardware::Cluster cluster(cs, *hardware::find_profile(c.gpu));
  const hardware::CostModel cost(*hardware::find_profile(c.gpu));
  auto report = [&](Fidelity f) {
    const Lowered low = lower(prog, cluster, cost, f);
    const sim::Timeline tl = sim::simulate(low.plan, low.network);
    return report::analyze(prog, low, tl, cluster, cost);
  };
  return {report(Fidelity::FAST), report(Fidelity::FULL)};
}

void expect_agreement(const Case& c) {
  const Sides s = run_both(c);
  const report::RunReport &fast = s.fast, &full = s.full;
  const double T = full.iteration_s;
  std::printf("%-44s time fast %.5f full %.5f (%+.3f%%)\n", c.name, fast.iteration_s, T,
              100 * (fast.iteration_s / T - 1));
  EXPECT_NEAR(fast.iteration_s / T, 1.0, 0.01) << c.name;

  const std::pair<const char*, double> lines[][2] = {
      {{"compute", fast.time.compute_s}, {"", full.time.compute_s}},
      {{"recompute", fast.time.recompute_s}, {"", full.time.recompute_s}},
      {{"optimizer", fast.time.optimizer_s}, {"", full.time.optimizer_s}},
      {{"exposed tp", fast.time.exposed_tp_s}, {"", full.time.exposed_tp_s}},
      {{"exposed dp", fast.time.exposed_dp_s}, {"", full.time.exposed_dp_s}},
      {{"exposed pp", fast.time.exposed_pp_s}, {"", full.time.exposed_pp_s}},
      {{"bubble", fast.time.bubble_s}, {"", full.time.bubble_s}},
  };
  for (const auto& l : lines) {
    std::printf("    %-12s fast %.5f full %.5f (%+.2f%% of the iteration)\n", l[0].first, l[0].second, l[1].second,
                100 * (l[0].second - l[1].second) / T);
    EXPECT_NEAR(l[0].second, l[1].second, 0.02 * T) << c.name << ": " << l[0].first;
  }
  const double peak = full.memory.peak_bytes;
  std::printf("    %-12s fast %.4f GiB full %.4f GiB\n", "peak", fast.memory.peak_bytes / 1073741824.0, peak / 1073741824.0);
  EXPECT_NEAR(fast.memory.peak_bytes, peak, 0.01 * peak) << c.name << ": peak memory";
  for (std::size_t k = 0; k < fast.memory.at_peak.size(); ++k) {
    const double a = fast.memory.at_peak[k], b = full.memory.at_peak[k];
    std::printf("    %-18s fast %.4f GiB full %.4f GiB\n", to_string(static_cast<MemClass>(k)), a / 1073741824.0,
                b / 1073741824.0);
    EXPECT_NEAR(a, b, 0.01 * std::max(b, 0.01 * peak)) << c.name << ": " << to_string(static_cast<MemClass>(k));
  }
}

// Names the case in the test's parameter so that a failure says which scenario broke.
class FastVsFull : public ::testing::TestWithParam<Case> {};

TEST_P(FastVsFull, AgreeOnTimeBreakdownAndMemory) { expect_agreement(GetParam()); }


INSTANTIATE_TEST_SUITE_P(
    Scenarios, FastVsFull,
    ::testing::Values(
        Case{"8 GPUs tensor 8", "a100-80gb", "gpt-1.7b", 8, 1, 1, 1, 4, "1f1b"},
        Case{"16 GPUs 2x2x4 1F1B", "a100-80gb", "gpt-1.7b", 2, 2, 4, 1, 16, "1f1b"},
        Case{"16 GPUs GPipe", "a100-80gb", "gpt-1.7b", 2, 2, 4, 1, 16, "gpipe"},
        Case{"16 GPUs GPipe + grad-reduce overlap", "a100-80gb", "gpt-1.7b", 2, 2, 4, 1, 16, "gpipe",
             Recompute::NONE, false, false, true},
        Case{"32 GPUs data 32, full recompute, FP16", "a100-80gb", "gpt-1.7b", 1, 1, 32, 1, 64, "1f1b",
             Recompute::FULL, false, false, false, false, false, 1, 32, 0, true},
        Case{"64 GPUs interleaved v2, SP", "h100-sxm", "gpt-1.7b", 4, 4, 4, 2, 32, "interleaved-1f1b",
             Recompute::NONE, true},
        Case{"64 GPUs interleaved v3, selective, overlaps", "h100-sxm", "gpt-1.7b", 4, 2, 8, 3, 32,
             "interleaved-1f1b", Recompute::SELECTIVE, true, true, true, true},
        Case{"64 GPUs selective recompute", "a100-80gb", "gpt-1.7b", 2, 4, 8, 1, 32, "1f1b", Recompute::SELECTIVE},
        Case{"64 GPUs full recompute, TP overlap", "h100-sxm", "gpt-1.7b", 4, 4, 4, 1, 16, "1f1b", Recompute::FULL,
             true, false, false, false, true},
        Case{"64 GPUs SP + TP overlap + grad overlap", "h100-sxm", "gpt-1.7b", 4, 2, 8, 1, 32, "1f1b",
             Recompute::NONE, true, false, true, false, true},
        Case{"64 GPUs ZeRO-1 + param gather", "h100-sxm", "gpt-1.7b", 2, 2, 16, 1, 32, "1f1b", Recompute::NONE,
             false, true, true, true},
        Case{"64 GPUs oversubscription 2, leaves of 2 nodes", "a100-80gb", "gpt-1.7b", 2, 2, 16, 1, 32, "1f1b",
             Recompute::NONE, false, false, false, false, false, 2, 2},
        Case{"64 GPUs oversubscription 4, leaves of 2 nodes", "a100-80gb", "gpt-1.7b", 2, 2, 16, 1, 32, "1f1b",
             Recompute::NONE, false, false, false, false, false, 4, 2},
        Case{"64 GPUs oversub 4, grad overlap, ZeRO-1", "a100-80gb", "gpt-1.7b", 2, 2, 16, 1, 32, "1f1b",
             Recompute::NONE, false, true, true, true, false, 4, 2},
        Case{"128 GPUs pipeline 16 across leaves, oversub 2", "a100-80gb", "gpt-1.7b", 1, 8, 16, 1, 32, "1f1b",
             Recompute::NONE, false, false, false, false, false, 2, 1},
        Case{"64 GPUs GPipe oversub 2, full recompute", "a100-80gb", "gpt-1.7b", 2, 4, 8, 1, 16, "gpipe",
             Recompute::FULL, false, false, false, false, false, 2, 2},
        Case{"288 GPUs (36 nodes) t8 p4 d9, oversub 2", "h100-sxm", "gpt-1.7b", 8, 4, 9, 1, 18, "1f1b",
             Recompute::SELECTIVE, true, true, true, true, false, 2},
        Case{"288 GPUs (36 nodes) data 36 x t8, oversub 4", "h100-sxm", "gpt-1.7b", 8, 1, 36, 1, 72, "1f1b",
             Recompute::NONE, true, false, true, false, false, 4},
        Case{"32 GPUs uneven first stage (4 of 24 layers)", "a100-80gb", "gpt-1.7b", 2, 4, 4, 1, 16, "1f1b",
             Recompute::NONE, false, false, false, false, false, 1, 32, 4},
        Case{"64 GPUs Llama-2 7B, GQA/SwiGLU, overlaps", "h100-sxm", "llama2-7b", 4, 4, 4, 1, 16, "1f1b",
             Recompute::SELECTIVE, true, true, true, true, true},
        Case{"64 GPUs every-3 recompute, ZeRO-1, overlaps", "h100-sxm", "gpt-1.7b", 2, 4, 8, 1, 16, "1f1b",
             Recompute::NONE, false, false, false, false, false, 2, 2, 0, false,
             "tensor(2),pipeline(4),data(8),zero(1),recompute(every-k,k=3),overlap-grad-reduce,overlap-param-gather,1f1b"},
        Case{"128 GPUs Llama-2 7B interleaved oversub 2", "h100-sxm", "llama2-7b", 8, 4, 4, 2, 16,
             "interleaved-1f1b", Recompute::NONE, true, true, true, true, true, 2, 4}),
    [](const ::testing::TestParamInfo<Case>& param) { return "case" + std::to_string(param.index); });

}  // namespace
}  // namespace trainsim::strategies
