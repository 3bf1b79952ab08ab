// Whole-model sums over the ops that gpt.cpp builds, and the Layer aggregates of op.hpp.
// Both are computed from the ops rather than from closed forms, so that the closed forms
// in the tests check the ops.
#include "models/model.hpp"

#include <cstdint>

#include "models/op.hpp"

namespace trainsim::models {

double Layer::fwd_flops() const {
  double sum = 0;
  for (const Op& op : ops) sum += op.fwd_flops;
  return sum;
}

double Layer::bwd_flops() const {
  double sum = 0;
  for (const Op& op : ops) sum += op.bwd_input_flops + op.bwd_weight_flops;
  return sum;
}

double Layer::activation_bytes() const {
  double sum = 0;
  for (const Op& op : ops) sum += op.activation_bytes;
  return sum;
}

std::int64_t Layer::params() const {
  std::int64_t sum = 0;
  for (const Op& op : ops) sum += op.params;
  return sum;
}

namespace {

// Parameters do not depend on the batch or the sequence; one token with no tensor
// parallelism gives the unsharded count.
constexpr ShardSpec UNSHARDED{.micro_batch = 1, .sequence = 1, .tensor = 1, .sequence_parallel = false,
                              .bytes_per_element = 2};

}  // namespace

std::int64_t total_params(const ModelConfig& model) {
  return embedding_layer(model, UNSHARDED).params() + model.layers * transformer_layer(model, UNSHARDED).params() +
         head_layer(model, UNSHARDED).params();
}

double model_flops_per_iteration(const ModelConfig& model, std::int64_t global_batch, std::int64_t sequence) {
  // A sweep or search asks for one model's figure once per variant; building its layers to
  // count them is a sixtieth of an evaluation, so the last model's is kept per thread.
  thread_local ModelConfig last_model;
  thread_local std::int64_t last_sequence = -1;
  thread_local double last_per_sequence = 0;
  if (sequence != last_sequence || !(model == last_model)) {
    const ShardSpec one{.micro_batch = 1, .sequence = sequence, .tensor = 1, .sequence_parallel = false,
                        .bytes_per_element = 2};
    const auto both = [](const Layer& layer) { return layer.fwd_flops() + layer.bwd_flops(); };
    last_per_sequence = both(embedding_layer(model, one)) +
                        static_cast<double>(model.layers) * both(transformer_layer(model, one)) +
                        both(head_layer(model, one));
    last_model = model;
    last_sequence = sequence;
  }
  return static_cast<double>(global_batch) * last_per_sequence;
}

}  // namespace trainsim::models
