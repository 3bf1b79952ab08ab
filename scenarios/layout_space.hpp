#pragma once
// The layout space `trainsim search` walks for one model, GPU count and global batch (the
// bounds it prunes with: memory_bound.hpp, time_bound.hpp). Each dimension takes only the
// values its rules allow given the dimensions before it (strategies/layout_rules.hpp), so
// every candidate is a layout Megatron-LM would accept; the few rules that need the whole
// Program (a schedule's needs) are left to building it.
#include <cstdint>
#include <string>
#include <vector>

#include "strategies/spec.hpp"

namespace trainsim::scenarios {

enum class Schedule : std::uint8_t { ONE_F_ONE_B, GPIPE, INTERLEAVED };

// The scenario's spellings: strategy.pipeline_schedule ("1f1b", "gpipe",
// "interleaved-1f1b") and strategy.recompute ("none", "selective", "full", "every-k").
const char* schedule_name(Schedule s);
const char* recompute_name(strategies::Recompute r);

struct LayoutCandidate {
  std::int32_t tensor = 1, pipeline = 1, data = 1, virtual_stages = 1;
  std::int32_t first_stage_layers = 0, last_stage_layers = 0;  // 0: even split
  std::int32_t micro_batch = 1;
  Schedule schedule = Schedule::ONE_F_ONE_B;
  std::uint8_t zero_stage = 0;
  strategies::Recompute recompute = strategies::Recompute::NONE;
  std::int32_t recompute_k = 0;  // EVERY_K: layers per recomputed segment
  bool sequence_parallel = false, overlap_grad_reduce = false, overlap_param_gather = false, overlap_tp_comm = false;
};

struct LayoutSpaceOptions {
  std::int64_t gpus_per_node = 8;     // tensor groups stay inside a node
  std::int64_t max_micro_batch = 16;  // micro-batch sizes: divisors of the batch per replica up to this
};

// Every candidate, in a fixed order (tensor, pipeline, split, micro-batch, schedule and
// virtual stages, ZeRO, recompute, sequence parallelism, overlaps — each ascending; recompute
// none, selective, full, then every-k with k ascending: for each number of segments a
// chunk of the layout can be cut into, the least k that cuts it so).
// `base` gives the model, sequence, global batch, precision and optimizer; `gpus` the size.
std::vector<LayoutCandidate> enumerate_layouts(const strategies::TrainingSpec& base, std::int64_t gpus,
                                               const LayoutSpaceOptions& options = {});

// `base` with the candidate's layout and strategies (pass pipeline derived from them).
strategies::TrainingSpec apply_layout(const strategies::TrainingSpec& base, const LayoutCandidate& c);

// "t8 p16 d32 mb1 1f1b zero1 recompute=full sp overlap=grad,param,tp" (every-k with its k:
// "recompute=every-k(4)"), for tables.
std::string describe(const LayoutCandidate& c);

}  // namespace trainsim::scenarios
