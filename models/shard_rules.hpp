#pragma once
// The rules a model's shape and its tensor-parallel shards must follow, each written once.
// Each returns an error message in the scenario's words (Megatron-LM's argument names), or
// an empty string when the rule holds. The model builder enforces them; the tensor-parallel
// pass, the scenario loader (and through it every runs-table row) and the Hugging Face
// config reader call them to report a violation where it was written.
#include <cstdint>
#include <string>

namespace trainsim::models {

// Every head takes an equal slice of the hidden size.
std::string heads_divide_hidden(std::int64_t heads, std::int64_t hidden);
// Grouped-query attention: each key/value head serves an equal group of query heads
// (kv_heads ≤ 0: not grouped).
std::string kv_heads_divide_heads(std::int64_t kv_heads, std::int64_t heads);

// Tensor parallelism splits the heads, the key/value heads and the MLP's hidden size.
std::string tensor_divides_heads(std::int64_t tensor, std::int64_t heads);
std::string tensor_divides_kv_heads(std::int64_t tensor, std::int64_t kv_heads);
std::string tensor_divides_ffn(std::int64_t tensor, std::int64_t ffn_hidden);
// Sequence parallelism shards the sequence over the tensor group.
std::string sequence_parallel_divides_sequence(bool sequence_parallel, std::int64_t tensor, std::int64_t sequence);

}  // namespace trainsim::models
