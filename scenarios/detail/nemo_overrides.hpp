#pragma once
// NeMo's Hydra overrides ("model.tensor_model_parallel_size=8", "trainer.num_nodes=4") as
// the Megatron-LM arguments that mean the same: NeMo's Megatron models pass most of their
// config through to Megatron-Core under another name, and sometimes another spelling of
// the value (True/False, rmsnorm, distributed_fused_adam).
#include <string>
#include <utility>
#include <vector>

namespace trainsim::scenarios::detail {

struct NemoOverride {
  // The Megatron-LM arguments (name without "--", value) the override stands for; empty
  // when it stands for none.
  std::vector<std::pair<std::string, std::string>> arguments;
  std::string note;   // accepted without an argument: why it changes nothing trainsim models
  std::string error;  // refused: why, and what would map (without the override's own text)
};

NemoOverride translate_nemo(const std::string& key, const std::string& value);

}  // namespace trainsim::scenarios::detail
