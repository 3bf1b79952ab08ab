#pragma once
// What a simulated iteration means for the run: throughput, MFU and HFU, where the time of
// the GPU that finishes last went, and the memory of the most loaded GPU. This layer reads
// the Program, its lowered Plan and the Timeline together, which no layer below may.
#include <cstdint>
#include <string>
#include <vector>

#include "hardware/cluster.hpp"
#include "hardware/cost_model.hpp"
#include "report/compute_classes.hpp"
#include "report/layer_ops.hpp"
#include "report/memory_breakdown.hpp"
#include "report/planning.hpp"
#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/program.hpp"
#include "strategies/time_breakdown.hpp"

namespace trainsim::report {

struct RunReport {
  std::string pipeline;        // the pass pipeline, as run
  std::string fidelity;
  std::int64_t gpus = 0;
  std::int64_t micro_batches = 0;
  double iteration_s = 0;
  double tokens_per_s = 0;
  double samples_per_s = 0;
  double model_flops = 0;              // per iteration, no recompute (MFU numerator)
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double recompute_flops = 0;          // per iteration, all GPUs: forward work redone in backward
  double hfu = 0;                      // (model + recompute FLOPs) / (time · GPUs · peak)
  double peak_flops_per_gpu = 0;
  strategies::TimeBreakdown time;
  ComputeByClass compute_classes;  // time.compute_s + time.recompute_s by kernel class
  bool has_breakdown = true;  // false after a summary-only simulation (time is then all zero)
  MemoryBreakdown memory;
  std::vector<OpShare> layer_ops;  // the ten most expensive ops of one transformer layer (with the breakdown)
  std::uint64_t tasks = 0, events = 0, flows = 0;
  std::vector<strategies::Lowered::CollectiveUse> collectives;  // NCCL's choice per kind and size
  PlanningFigures planning;  // filled by plan_run, which needs the run's token budget
};

RunReport analyze(const strategies::Program& program, const strategies::Lowered& lowered,
                  const sim::Timeline& timeline, const hardware::Cluster& cluster, const hardware::CostModel& cost);

}  // namespace trainsim::report
