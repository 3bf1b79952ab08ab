#pragma once
// Turning a training job as a framework describes it — Megatron-LM / NeMo command-line
// arguments, or a DeepSpeed config JSON — into a scenario. Every argument is either mapped
// to a scenario field, listed as not affecting an iteration's time (learning rate, data
// paths, logging: noted, not errors), or an error naming it and saying why it cannot be
// mapped; nothing is dropped silently.
#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/scenario.pb.h"

namespace trainsim::scenarios {

struct ImportResult {
  Scenario scenario;
  std::vector<std::string> errors;  // one per argument that cannot be mapped
  std::vector<std::string> notes;   // arguments accepted without effect on the simulation
};

// Megatron-LM arguments ("--tensor-model-parallel-size 8 --bf16 …", as separate words) or
// NeMo overrides ("model.tensor_model_parallel_size=8", "trainer.num_nodes=4"); both may mix.
// `base` holds what the arguments do not say (the cluster, a model preset).
ImportResult import_megatron(const std::vector<std::string>& args, const Scenario& base);

// A DeepSpeed config JSON (batch sizes, ZeRO stage, precision, optimizer, activation
// checkpointing); the model, sequence and cluster come from `base`.
ImportResult import_deepspeed(const std::string& json_text, const Scenario& base);

}  // namespace trainsim::scenarios
