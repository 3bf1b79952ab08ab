#pragma once
// A closed-form lower bound on the peak memory of the most loaded GPU, cheap enough to
// check before a variant is simulated: if even this does not fit, the variant cannot.
#include "strategies/spec.hpp"

namespace trainsim::scenarios {

// The model states (weights, gradients, optimizer states and, for FP16, the fp32 main
// gradients of the step; strategies/program.cpp's bytes per parameter) of the transformer layers on the GPU that holds the most of them. Some
// GPU holds at least ceil(layers / pipeline) layers whatever the split (even, uneven,
// virtual stages), each sharded over the tensor group; ZeRO divides the optimizer states
// (stage ≥ 1), gradients (≥ 2) and weights (3) by the data-parallel size. Embedding, head
// and activations only add to the real peak, so this never exceeds it.
double model_state_lower_bound_bytes(const strategies::TrainingSpec& spec);

}  // namespace trainsim::scenarios
