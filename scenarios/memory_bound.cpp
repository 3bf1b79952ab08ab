#include "scenarios/memory_bound.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "models/model.hpp"
#include "strategies/lower.hpp"
#include "strategies/program.hpp"
#include "strategies/registry.hpp"

namespace trainsim::scenarios {

namespace {

// Per parameter, what a GPU holds of its layers' states; with_step: and the fp32 main
// gradients of the step.
double state_bytes_per_param(const strategies::TrainingSpec& spec, bool with_step) {
  const strategies::StateBytes sb = strategies::state_bytes_per_param(spec);
  const double d = static_cast<double>(std::max<std::int64_t>(spec.layout.data, 1));
  return sb.weights / (spec.zero_stage >= 3 ? d : 1.0) + sb.gradients / (spec.zero_stage >= 2 ? d : 1.0) +
         sb.optimizer / (spec.zero_stage >= 1 ? d : 1.0) +
         // 16-bit gradients' fp32 main gradients live beside the states during the step; sharded like
         // the optimizer states (dividing by d is safe).
         (with_step ? sb.main_gradients / (spec.zero_stage >= 1 ? d : 1.0) : 0.0);
}

// Transformer layers per stage, as strategies/pipeline_parallel.cpp splits them (a split it
// refuses fails the build, whatever the bound says).
std::vector<std::int64_t> stage_layers(const strategies::TrainingSpec& spec) {
  const auto& l = spec.layout;
  const std::int64_t p = std::max<std::int64_t>(l.pipeline, 1), layers = spec.model.layers;
  if (p == 1) return {layers};
  if (l.first_stage_layers <= 0 && l.last_stage_layers <= 0) return std::vector<std::int64_t>(static_cast<std::size_t>(p), layers / p);
  const std::int64_t even = layers / p;
  const std::int64_t first = l.first_stage_layers > 0 ? l.first_stage_layers : even;
  const std::int64_t last = l.last_stage_layers > 0 ? l.last_stage_layers : even;
  std::vector<std::int64_t> out{first};
  for (std::int64_t i = 0; i < p - 2; ++i) out.push_back((layers - first - last) / (p - 2));
  out.push_back(last);
  return out;
}

std::shared_ptr<const models::LayerSet> layer_set(const strategies::TrainingSpec& spec) {
  return models::shared_layers(spec.model,
                               strategies::layer_shard(spec, spec.layout.tensor, spec.layout.sequence_parallel));
}

// A layer's states on one GPU, and what its weights hold besides them (FP8's weight casts).
double layer_state_bytes(const strategies::TrainingSpec& spec, const models::Layer& layer, bool with_step) {
  double bytes = static_cast<double>(layer.params()) * state_bytes_per_param(spec, with_step);
  for (const models::Op& op : layer.ops) bytes += strategies::fp8_weight_copy_bytes(spec, op);
  return bytes;
}

// Per stage, the states of its transformer layers and, on the first stage, the embedding's
// and, on the last, the head's (with, in a pipeline, the copy of a tied word embedding that
// Megatron-LM keeps there: strategies/program.cpp's rebuild_role).
std::vector<double> stage_state_bytes(const strategies::TrainingSpec& spec, const models::LayerSet& set,
                                      bool with_step) {
  const std::vector<std::int64_t> layers = stage_layers(spec);
  const double per_layer = layer_state_bytes(spec, set.transformer, with_step);
  std::vector<double> bytes(layers.size());
  for (std::size_t i = 0; i < layers.size(); ++i) bytes[i] = static_cast<double>(layers[i]) * per_layer;
  bytes.front() += layer_state_bytes(spec, set.embedding, with_step);
  bytes.back() += layer_state_bytes(spec, set.head, with_step);
  if (layers.size() > 1 && spec.model.tied_embedding) {
    const std::int64_t t = std::max<std::int64_t>(spec.layout.tensor, 1);
    bytes.back() += static_cast<double>(strategies::word_embedding_shard_params(spec.model, t)) *
                    state_bytes_per_param(spec, with_step);
  }
  return bytes;
}

// What a layer's forward allocates for its backward, per micro-batch: every op's saved
// activations (but those selective recompute redoes, when asked), rounded per op as the
// program allocates them.
double saved_bytes(const models::Layer& layer, bool drop_selective) {
  double bytes = 0;
  for (const models::Op& op : layer.ops)
    if (!drop_selective || !op.selective_recompute) bytes += static_cast<double>(std::llround(op.activation_bytes));
  return bytes;
}

}  // namespace

double model_state_lower_bound_bytes(const strategies::TrainingSpec& spec) {
  const std::vector<double> stages = stage_state_bytes(spec, *layer_set(spec), true);
  return *std::max_element(stages.begin(), stages.end());
}

double stage_activation_lower_bound_bytes(const strategies::TrainingSpec& spec) {
  if (!spec.passes.empty()) {
    strategies::TrainingSpec fields = spec;
    fields.passes.clear();
    if (strategies::canonical(strategies::pipeline_for(fields)) != spec.passes) return 0;
  }
  const auto& layout = spec.layout;
  const std::int64_t p = std::max<std::int64_t>(layout.pipeline, 1);
  const std::int64_t v = std::max<std::int64_t>(layout.virtual_stages, 1);
  const std::int64_t m = spec.micro_batches();
  if (m < 1) return 0;
  const models::ShardSpec shard = strategies::layer_shard(spec, layout.tensor, layout.sequence_parallel);
  const std::shared_ptr<const models::LayerSet> set = models::shared_layers(spec.model, shard);
  const models::Layer& layer = set->transformer;
  const bool selective = spec.recompute == strategies::Recompute::SELECTIVE;
  // The embedding's and the head's, which no other recompute pass redoes.
  const double embedding_kept = saved_bytes(set->embedding, selective), head_kept = saved_bytes(set->head, selective);
  double kept = 0;  // per layer and micro-batch
  switch (spec.recompute) {
    case strategies::Recompute::NONE:
    case strategies::Recompute::SELECTIVE:
      kept = saved_bytes(layer, selective);
      break;
    case strategies::Recompute::FULL:
    case strategies::Recompute::EVERY_K:
      kept = static_cast<double>(2 * spec.micro_batch * spec.sequence * spec.model.hidden /
                                 (shard.sequence_parallel ? layout.tensor : 1));  // as the program rounds it
      break;
  }
  // What a layer's forward allocates in full: a recompute allocates it again in backward.
  const double whole = saved_bytes(layer, false);
  const std::vector<double> states = stage_state_bytes(spec, *set, false);
  const std::vector<std::int64_t> layers = stage_layers(spec);
  double most = 0;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(layers.size()); ++i) {
    const auto n = static_cast<double>(layers[static_cast<std::size_t>(i)]);
    // Every-k keeps one input per segment of k layers of a chunk (the last may be shorter).
    // The first backward opens by recomputing the segment it meets first, the chunk's last:
    // its layers' activations of one micro-batch on top of every kept input (full recompute:
    // one layer's).
    double kept_per_layer = kept, recomputed = 0;
    const std::int64_t chunk = layers[static_cast<std::size_t>(i)] / v;
    if (spec.recompute == strategies::Recompute::FULL && chunk > 0) recomputed = whole;
    // Selective recompute reruns the last layer's attention core inside its backward: what
    // the rerun allocates, less what the layer's backward may have freed before it (at most
    // all the layer keeps).
    if (spec.recompute == strategies::Recompute::SELECTIVE && chunk > 0) recomputed = std::max(0.0, whole - 2 * kept);
    if (spec.recompute == strategies::Recompute::EVERY_K && chunk > 0) {
      const std::int64_t k = std::max<std::int64_t>(spec.recompute_k, 1);
      const std::int64_t segments = (chunk + k - 1) / k;
      kept_per_layer = kept * static_cast<double>(segments) / static_cast<double>(chunk);
      recomputed = static_cast<double>(chunk - k * (segments - 1)) * whole;
      // Then the segment before it: k layers' activations, once the last segment's backward
      // has freed that segment's input and activations.
      if (segments > 1) recomputed = std::max(recomputed, static_cast<double>(k) * whole - kept);
    }
    double forwards = 1;  // micro-batches' worth of the stage's layers
    if (spec.pipeline_schedule == "gpipe") {
      forwards = static_cast<double>(m);
    } else if (spec.pipeline_schedule == "1f1b" || (spec.pipeline_schedule == "interleaved-1f1b" && v == 1)) {
      forwards = static_cast<double>(std::min(p - i, m));
    } else if (spec.pipeline_schedule == "interleaved-1f1b") {
      forwards = static_cast<double>(std::min((p - i - 1) * 2 + (v - 1) * p + 1, m * v)) / static_cast<double>(v);
    }
    // The embedding's chunk (the first stage's first) and the head's (the last stage's last)
    // have run as many forwards as the stage's layers; under interleaving at least one. The
    // first backward frees its micro-batch's head activations before it recomputes a layer;
    // the embedding's backward comes last.
    const double edge_forwards = spec.pipeline_schedule == "interleaved-1f1b" && v > 1 ? 1.0 : forwards;
    const double embedding = i == 0 ? embedding_kept * edge_forwards : 0.0;
    const bool has_head = i == static_cast<std::int64_t>(layers.size()) - 1;
    const double held = states[static_cast<std::size_t>(i)] + n * kept_per_layer * forwards + embedding;
    most = std::max({most, held + (has_head ? head_kept * edge_forwards : 0.0),
                     held + (has_head ? head_kept * (edge_forwards - 1) : 0.0) + recomputed});
  }
  return most;
}

MemoryLowerBound memory_lower_bound(const strategies::TrainingSpec& spec, const hardware::GpuProfile& gpu) {
  return {gpu.cuda_context_bytes().value() + gpu.cublas_workspace_bytes().value() +
              strategies::comm_buffer_bytes(spec.layout, spec.model, gpu),
          model_state_lower_bound_bytes(spec), stage_activation_lower_bound_bytes(spec)};
}

}  // namespace trainsim::scenarios
