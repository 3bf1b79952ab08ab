#include "report/planning.hpp"

#include <gtest/gtest.h>

#include "report/run_report.hpp"

namespace trainsim::report {
namespace {

// A run of 8 GPUs at 1000 tokens/s, 2 s per iteration, busy 75 % of the time on its
// compute stream (1 s compute, 0.25 s recompute, 0.25 s exposed TP; the rest waits).
RunReport small_run() {
  RunReport r;
  r.gpus = 8;
  r.iteration_s = 2.0;
  r.tokens_per_s = 1000.0;
  r.time.compute_s = 1.0;
  r.time.recompute_s = 0.25;
  r.time.exposed_tp_s = 0.25;
  r.time.exposed_dp_s = 0.3;
  r.time.bubble_s = 0.2;
  return r;
}

TEST(Planning, ClosedForms) {
  const PlanningFigures p = plan_run(small_run(), 3.6e6, 2.0, 700.0);
  EXPECT_DOUBLE_EQ(p.train_tokens, 3.6e6);
  EXPECT_DOUBLE_EQ(p.time_s, 3600.0);           // 3.6e6 tokens / 1000 tokens/s
  EXPECT_DOUBLE_EQ(p.iterations, 1800.0);       // 2000 tokens per iteration
  EXPECT_DOUBLE_EQ(p.gpu_hours, 8.0);           // 8 GPUs × 1 h
  EXPECT_DOUBLE_EQ(p.utilization, 0.75);        // exposed DP and bubble are not busy
  EXPECT_DOUBLE_EQ(p.energy_kwh, 8 * 0.7 * 0.75);  // 8 × 700 W × 75 % × 1 h
  EXPECT_DOUBLE_EQ(p.price_per_gpu_hour, 2.0);
  EXPECT_DOUBLE_EQ(p.cost, 16.0);
}

TEST(Planning, NoPriceNoCost) {
  const PlanningFigures p = plan_run(small_run(), 1e6, 0.0, 700.0);
  EXPECT_EQ(p.cost, 0.0);
  EXPECT_EQ(p.price_per_gpu_hour, 0.0);
}

}  // namespace
}  // namespace trainsim::report
