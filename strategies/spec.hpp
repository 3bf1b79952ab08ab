#pragma once
// What the strategies need to know about a run, independent of how it was written down
// (scenarios/ turns a scenario file into this; validate/ turns a table row into it).
#include <cstdint>
#include <optional>
#include <string>

#include "hardware/cost_model.hpp"
#include "models/model.hpp"
#include "strategies/pipeline.hpp"

namespace trainsim::strategies {

struct Layout {
  std::int64_t tensor = 1;
  std::int64_t pipeline = 1;
  std::int64_t data = 1;
  bool sequence_parallel = false;
  std::int64_t virtual_stages = 1;
  // Megatron's uneven split: layers on the first and last stage (0: an even share); the
  // stages between split the rest evenly.
  std::int64_t first_stage_layers = 0;
  std::int64_t last_stage_layers = 0;
  // Context and expert parallel sizes: no pass implements them yet (scenarios refuse > 1),
  // but parallel_layout.hpp places ranks for them.
  std::int64_t context = 1;
  std::int64_t expert = 1;
  // Rank order, fastest-varying dimension first (parallel_layout.hpp: parse_rank_order).
  std::string rank_order = "tp-cp-ep-dp-pp";
  std::int64_t gpus() const { return tensor * context * expert * data * pipeline; }
};

// EVERY_K: full recompute in segments of `recompute_k` consecutive layers, only each
// segment's input kept (the pass recompute(every-k); k = 1 is FULL).
enum class Recompute : std::uint8_t { NONE, SELECTIVE, FULL, EVERY_K };
enum class Optimizer : std::uint8_t { ADAM, SGD };

struct TrainingSpec {
  models::ModelConfig model;
  std::int64_t sequence = 2048;
  std::int64_t global_batch = 1;
  std::int64_t micro_batch = 1;
  hardware::Dtype dtype = hardware::Dtype::BF16;
  // Whether backward accumulates gradients into an fp32 buffer, which data parallelism then
  // reduces (Megatron-LM --accumulate-allreduce-grads-in-fp32), instead of one in the 16-bit
  // dtype of the weights; unset: as Megatron-LM does by default (fp32_gradients below).
  std::optional<bool> accumulate_grads_in_fp32;
  Optimizer optimizer = Optimizer::ADAM;
  bool flash_attention = true;  // fused attention core (models::ShardSpec::flash_attention)
  // Weight gradients added into main_grad by their GEMM (models::ShardSpec::
  // gradient_accumulation_fusion); false: by a kernel of their own.
  bool gradient_accumulation_fusion = true;
  Layout layout;
  std::string pipeline_schedule = "1f1b";
  std::int64_t zero_stage = 0;
  Recompute recompute = Recompute::NONE;
  std::int64_t recompute_k = 0;  // EVERY_K: layers per recomputed segment
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool overlap_tp_comm = false;
  // The pass pipeline to run, written out; empty: derived from the fields above
  // (registry.hpp: pipeline_for). A pass the fields do not name reaches the Program only
  // this way.
  Pipeline passes;

  std::int64_t micro_batches() const { return global_batch / (micro_batch * layout.data); }
};

// Megatron-LM's default unless the spec says: fp32 gradients with BF16 (and FP8, whose
// weights are BF16), which it forces unless --grad-reduce-in-bf16 is given; FP16 gradients
// with FP16, where --accumulate-allreduce-grads-in-fp32 is a flag left off
// (megatron/training/arguments.py).
inline bool fp32_gradients(const TrainingSpec& spec) {
  return spec.accumulate_grads_in_fp32.value_or(spec.dtype != hardware::Dtype::FP16);
}

// The dtype gradients accumulate and reduce in: fp32, or the 16-bit dtype of the weights
// (BF16 under FP8).
inline hardware::Dtype gradient_dtype(const TrainingSpec& spec) {
  if (fp32_gradients(spec)) return hardware::Dtype::FP32;
  return spec.dtype == hardware::Dtype::FP16 ? hardware::Dtype::FP16 : hardware::Dtype::BF16;
}

}  // namespace trainsim::strategies
