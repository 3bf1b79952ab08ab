#pragma once
// Closed-form lower bounds on the peak memory of the most loaded GPU, cheap enough to check
// before a variant is simulated: if even a bound does not fit, the variant cannot.
#include <string>

#include "hardware/profile.pb.h"
#include "strategies/spec.hpp"

namespace trainsim::scenarios {

// The model states (weights, gradients, optimizer states and, for FP16, the fp32 main
// gradients of the step; strategies/program.cpp's bytes per parameter) of the stage that
// holds the most of them: its transformer layers (pipeline_parallel's split: even, or the
// explicit first/last-stage counts and the rest even), the embedding on the first stage, the
// head on the last (and there, in a pipeline, the copy of a tied word embedding), each sharded
// over the tensor group; ZeRO divides the optimizer states (stage ≥ 1), gradients (≥ 2) and
// weights (3) by the data-parallel size; under FP8, with each linear weight's FP8 cast and its
// transpose (strategies::fp8_weight_copy_bytes). Activations and buffers only add to the real
// peak, so this never exceeds it.
double model_state_lower_bound_bytes(const strategies::TrainingSpec& spec);

// The most any stage holds when its first backward starts: its states as above (all
// iteration; the fp32 main gradients of FP16 exist only during the step, after every
// activation is freed) and the activations its transformer layers keep for backward of
// every forward run before that backward. A layer keeps per micro-batch what its forward
// allocates (strategies/program.cpp: every op's saved activations; selective recompute drops
// the attention core's; full recompute keeps the layer's input, 2·b·s·h bytes, /t with
// sequence parallelism; every-k keeps it once per segment of k layers of a chunk). Forwards
// before stage i's first backward: all m under GPipe; min(p − i, m) under 1F1B (its p − i − 1
// warm-up forwards and one more); under the interleaved schedule
// min((p − i − 1)·2 + (v − 1)·p + 1, m·v) chunk-forwards of layers/v each; one under any
// other schedule. The embedding's chunk (first stage) and the head's (last stage) keep what
// their ops save for backward for as many forwards (at least one under interleaving). Under
// full and every-k recompute, the first backward then recomputes the chunk's last layer, or
// its last segment, allocating all their activations for one micro-batch while every input
// is still kept (but the head's of that micro-batch, freed by then): that too; under every-k,
// or the k layers of the segment before it, with the last segment's input freed. Under
// selective recompute, the rerun of the last layer's attention core, less all that layer
// keeps (what its backward may have freed before the rerun). Zero for a
// spec whose pass pipeline, written out, is not the one its fields say (its passes may be
// ones this closed form does not know).
double stage_activation_lower_bound_bytes(const strategies::TrainingSpec& spec);

// The bounds of one variant: the runtime's share (the profile's CUDA context, the GEMM
// stream's cuBLAS workspace and NCCL's buffers for the communicators of the variant's
// layout, strategies::comm_buffer_bytes) and the two tensor bounds above. Each of
// runtime + states and bytes() is a lower bound.
struct MemoryLowerBound {
  double runtime = 0, states = 0, with_activations = 0;
  double bytes() const { return runtime + (with_activations > states ? with_activations : states); }
  // What bytes() counts, for messages.
  const char* what() const {
    return with_activations > states ? "model states, activations, the CUDA runtime and NCCL's buffers"
                                     : "model states, the CUDA runtime and NCCL's buffers";
  }
};
MemoryLowerBound memory_lower_bound(const strategies::TrainingSpec& spec, const hardware::GpuProfile& gpu);

}  // namespace trainsim::scenarios
