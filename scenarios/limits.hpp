#pragma once
// Upper bounds on every size a scenario or a runs-table row can give. Each value alone
// might be fine and still make the arithmetic downstream overflow int64 (parameters
// h²·layers, tokens b·s·h, bytes) or the Program outgrow memory, so each is bounded far
// above any real run — and the error names the bound. With these bounds every product the
// models and strategies form stays below 2^62.
#include <cstdint>
#include <string_view>

namespace trainsim::scenarios::limits {

inline constexpr std::int64_t LAYERS = 10'000;              // GPT-1T has 128
inline constexpr std::int64_t HIDDEN = std::int64_t{1} << 20;  // 1,048,576; GPT-1T: 25,600
inline constexpr std::int64_t HEADS = std::int64_t{1} << 16;
inline constexpr std::int64_t FFN = std::int64_t{1} << 22;
inline constexpr std::int64_t VOCAB = std::int64_t{1} << 24;     // 16.8 M; Llama 3: 128,256
inline constexpr std::int64_t SEQUENCE = std::int64_t{1} << 24;  // 16.8 M tokens
inline constexpr std::int64_t BATCH = std::int64_t{1} << 24;     // sequences per iteration
// Tokens of one micro-batch (micro_batch_size × sequence_length).
inline constexpr std::int64_t TOKENS_PER_MICRO_BATCH = std::int64_t{1} << 26;
inline constexpr std::int64_t GPUS = std::int64_t{1} << 20;  // 1,048,576 GPUs
inline constexpr std::int64_t GPUS_PER_NODE = 1024;
// A rate below this would make one iteration outlast the engine's time range.
inline constexpr double MIN_NIC_GBPS = 1e-3;
inline constexpr double MAX_NIC_GBPS = 1e6;
inline constexpr double MAX_OVERSUBSCRIPTION = 1e3;
inline constexpr double MAX_TRAIN_TOKENS = 1e18;
inline constexpr double MAX_PRICE_PER_GPU_HOUR = 1e6;
// A measured iteration time (runs table): a microsecond to the engine's whole range.
inline constexpr double MIN_ITERATION_S = 1e-6;
inline constexpr double MAX_ITERATION_S = 9e6;
// One GPU's model states and activations beyond this (8 PiB) are no run's, and would take
// the byte counts near the int64 range.
inline constexpr double BYTES_PER_GPU = 9.007199254740992e15;  // 2^53

// The bound of a size field by its scenario path ("model.num_layers"); 0 when it has none
// of its own (tensor, pipeline and data are bounded through the cluster's GPUs).
constexpr std::int64_t for_field(std::string_view path) {
  if (path == "model.num_layers" || path == "parallel.first_stage_layers" || path == "parallel.last_stage_layers" ||
      path == "parallel.virtual_stages")
    return LAYERS;
  if (path == "model.hidden_size") return HIDDEN;
  if (path == "model.num_attention_heads" || path == "model.num_query_groups") return HEADS;
  if (path == "model.ffn_hidden_size") return FFN;
  if (path == "model.vocab_size") return VOCAB;
  if (path == "model.max_position_embeddings" || path == "training.sequence_length") return SEQUENCE;
  if (path == "training.global_batch_size" || path == "training.micro_batch_size") return BATCH;
  if (path == "cluster.nodes" || path == "cluster.fabric.fat_tree.nodes_per_leaf" || path == "parallel.tensor" ||
      path == "parallel.pipeline" || path == "parallel.data")
    return GPUS;
  if (path == "cluster.gpus_per_node") return GPUS_PER_NODE;
  return 0;
}

}  // namespace trainsim::scenarios::limits
