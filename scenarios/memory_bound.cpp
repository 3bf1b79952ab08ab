#include "scenarios/memory_bound.hpp"

#include <algorithm>

#include "models/model.hpp"
#include "strategies/program.hpp"

namespace trainsim::scenarios {

double model_state_lower_bound_bytes(const strategies::TrainingSpec& spec) {
  const auto& layout = spec.layout;
  models::ShardSpec shard;
  shard.micro_batch = spec.micro_batch;
  shard.sequence = spec.sequence;
  shard.tensor = layout.tensor;
  shard.sequence_parallel = layout.sequence_parallel;
  shard.flash_attention = spec.flash_attention;
  const double layer_params = static_cast<double>(models::shared_layers(spec.model, shard)->transformer.params());
  const std::int64_t p = std::max<std::int64_t>(layout.pipeline, 1);
  const double layers = static_cast<double>((spec.model.layers + p - 1) / p);
  const strategies::StateBytes sb = strategies::state_bytes_per_param(spec);
  const double d = static_cast<double>(std::max<std::int64_t>(layout.data, 1));
  const double per_param = sb.weights / (spec.zero_stage >= 3 ? d : 1.0) +
                           sb.gradients / (spec.zero_stage >= 2 ? d : 1.0) +
                           sb.optimizer / (spec.zero_stage >= 1 ? d : 1.0) +
                           // FP16's fp32 main gradients live beside the states during the
                           // step; sharded like the optimizer states (dividing by d is safe).
                           sb.main_gradients / (spec.zero_stage >= 1 ? d : 1.0);
  return layers * layer_params * per_param;
}

}  // namespace trainsim::scenarios
