#pragma once
// The layout space `trainsim search` walks for one model, GPU count and global batch, and
// the closed-form bounds it prunes with. Each dimension takes only the values its rules
// allow given the dimensions before it (strategies/layout_rules.hpp), so every candidate is
// a layout Megatron-LM would accept; the few rules that need the whole Program (a schedule's
// needs) are left to building it.
#include <cstdint>
#include <string>
#include <vector>

#include "hardware/cost_model.hpp"
#include "strategies/spec.hpp"

namespace trainsim::scenarios {

enum class Schedule : std::uint8_t { ONE_F_ONE_B, GPIPE, INTERLEAVED };

// The scenario's spellings: strategy.pipeline_schedule ("1f1b", "gpipe",
// "interleaved-1f1b") and strategy.recompute ("none", "selective", "full").
const char* schedule_name(Schedule s);
const char* recompute_name(strategies::Recompute r);

struct LayoutCandidate {
  std::int32_t tensor = 1, pipeline = 1, data = 1, virtual_stages = 1;
  std::int32_t first_stage_layers = 0, last_stage_layers = 0;  // 0: even split
  std::int32_t micro_batch = 1;
  Schedule schedule = Schedule::ONE_F_ONE_B;
  std::uint8_t zero_stage = 0;
  strategies::Recompute recompute = strategies::Recompute::NONE;
  bool sequence_parallel = false, overlap_grad_reduce = false, overlap_param_gather = false, overlap_tp_comm = false;
};

struct LayoutSpaceOptions {
  std::int64_t gpus_per_node = 8;     // tensor groups stay inside a node
  std::int64_t max_micro_batch = 16;  // micro-batch sizes: divisors of the batch per replica up to this
};

// Every candidate, in a fixed order (tensor, pipeline, split, micro-batch, schedule and
// virtual stages, ZeRO, recompute, sequence parallelism, overlaps — each ascending).
// `base` gives the model, sequence, global batch, precision and optimizer; `gpus` the size.
std::vector<LayoutCandidate> enumerate_layouts(const strategies::TrainingSpec& base, std::int64_t gpus,
                                               const LayoutSpaceOptions& options = {});

// `base` with the candidate's layout and strategies (pass pipeline derived from them).
strategies::TrainingSpec apply_layout(const strategies::TrainingSpec& base, const LayoutCandidate& c);

// "t8 p16 d32 mb1 1f1b zero1 recompute=full sp overlap=grad,param,tp", for tables.
std::string describe(const LayoutCandidate& c);

// A lower bound on the iteration time from compute alone: every kernel of a layer and of
// the head takes at least CostModel::least_seconds (its FLOPs at the most any kernel of its
// dtype reaches on the GPU, its memory traffic and launches as priced). The GPU of the last
// stage runs all its micro-batches' forward, backward and recomputed forward work and the
// head, after the first micro-batch's forward has crossed the stages before it and before
// the last one's backward crosses them back (one chunk each with interleaving).
// Communication, the optimizer step and contention only add to it.
class ComputeBound {
 public:
  ComputeBound(const strategies::TrainingSpec& base, const hardware::CostModel& cost);
  double seconds(const LayoutCandidate& c);

 private:
  // The least seconds of a layer's forward and backward, of its forward, of the part of
  // its forward that selective recompute redoes, and of the head's forward and backward.
  struct LayerSeconds {
    double layer = 0, layer_forward = 0, selective = 0, head = 0;
  };
  const LayerSeconds& seconds_of(std::int32_t tensor, bool sequence_parallel, std::int32_t micro_batch);
  strategies::TrainingSpec base_;
  hardware::CostModel cost_;
  std::vector<std::pair<std::int64_t, LayerSeconds>> cache_;
};

}  // namespace trainsim::scenarios
