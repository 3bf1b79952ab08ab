#pragma once
// Small specs and clusters shared by the strategies tests.
#include "hardware/cluster.hpp"
#include "hardware/cost_model.hpp"
#include "hardware/gpu_profile.hpp"
#include "models/presets.hpp"
#include "strategies/program.hpp"
#include "strategies/registry.hpp"
#include "strategies/spec.hpp"

#include <gtest/gtest.h>

namespace trainsim::strategies::testing {

inline TrainingSpec gpt_spec(std::int64_t t, std::int64_t p, std::int64_t d, std::int64_t global_batch) {
  TrainingSpec s;
  s.model = *models::find_preset("gpt-1.7b");
  s.sequence = 2048;
  s.micro_batch = 1;
  s.global_batch = global_batch;
  s.layout = Layout{t, p, d, false, 1};
  s.flash_attention = false;  // Korthikanti's formulas describe the unfused attention core
  return s;
}

inline hardware::Cluster a100_cluster(std::int64_t gpus) {
  hardware::ClusterSpec c;
  c.gpu = "a100-80gb";
  c.gpus_per_node = gpus < 8 ? gpus : 8;
  c.nodes = gpus / c.gpus_per_node;
  c.nic_gbps = 200;
  return hardware::Cluster(c, *hardware::find_profile("a100-80gb"));
}

inline hardware::CostModel a100_cost() { return hardware::CostModel(*hardware::find_profile("a100-80gb")); }

// A hand-made program scheduled by `schedule`: every chunk of every stage runs one forward
// item ("f", 4·10¹²/v FLOPs, times `stage1_slowdown` on stage 1) and one backward item ("b",
// input and weight gradients of 4·10¹²/v FLOPs each) per micro-batch, nothing else —
// about 15 ms / v per item at A100 rates, far above kernel overheads.
inline Program uniform_program(const char* schedule, int p, int m, int v, double stage1_slowdown = 1.0) {
  auto spec = gpt_spec(1, p, 1, m);
  spec.pipeline_schedule = schedule;
  spec.layout.virtual_stages = v;
  Program prog = build_program(spec);
  for (auto& role : prog.roles) {
    role.steps.clear();
    role.segments.assign(2, Segment{});
    models::Op f;
    f.cls = models::ComputeClass::GEMM;
    f.fwd_flops = 4e12 / v * (role.stage == 1 ? stage1_slowdown : 1.0);
    f.bwd_input_flops = f.bwd_weight_flops = 4e12 / v;
    role.segments[0].ops = {f};
    role.segments[1].ops = {f};
    for (Chunk& chunk : role.chunks) {
      chunk.forward = {Item{}};
      chunk.forward[0].segment = 0;
      chunk.forward[0].label = "f";
      chunk.backward = {Item{}};
      chunk.backward[0].segment = 1;
      chunk.backward[0].cost = Cost::BACKWARD;
      chunk.backward[0].label = "b";
    }
    role.tail.clear();
    role.prologue.clear();
  }
  prog.passes_run.clear();
  EXPECT_EQ(find_pass(PassInvocation{schedule, {}})->run(prog, PassArgs{}), "");
  return prog;
}

}  // namespace trainsim::strategies::testing
