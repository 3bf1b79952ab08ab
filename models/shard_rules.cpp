#include "models/shard_rules.hpp"

namespace trainsim::models {

namespace {

std::string does_not_divide(const char* a, std::int64_t av, const char* b, std::int64_t bv) {
  return std::string(a) + "=" + std::to_string(av) + " does not divide " + b + "=" + std::to_string(bv);
}

}  // namespace

std::string heads_divide_hidden(std::int64_t heads, std::int64_t hidden) {
  if (heads < 1 || hidden % heads == 0) return {};
  return does_not_divide("num_attention_heads", heads, "hidden_size", hidden);
}

std::string kv_heads_divide_heads(std::int64_t kv_heads, std::int64_t heads) {
  if (kv_heads <= 0 || heads % kv_heads == 0) return {};
  return does_not_divide("num_query_groups", kv_heads, "num_attention_heads", heads);
}

std::string tensor_divides_heads(std::int64_t tensor, std::int64_t heads) {
  if (tensor < 1 || heads % tensor == 0) return {};
  return does_not_divide("tensor", tensor, "num_attention_heads", heads);
}

std::string tensor_divides_kv_heads(std::int64_t tensor, std::int64_t kv_heads) {
  if (tensor < 1 || kv_heads <= 0 || kv_heads % tensor == 0) return {};
  return does_not_divide("tensor", tensor, "num_query_groups", kv_heads);
}

std::string tensor_divides_ffn(std::int64_t tensor, std::int64_t ffn_hidden) {
  if (tensor < 1 || ffn_hidden % tensor == 0) return {};
  return does_not_divide("tensor", tensor, "ffn_hidden_size", ffn_hidden);
}

std::string sequence_parallel_divides_sequence(bool sequence_parallel, std::int64_t tensor, std::int64_t sequence) {
  if (!sequence_parallel || tensor <= 1 || sequence % tensor == 0) return {};
  return "sequence parallelism needs tensor=" + std::to_string(tensor) + " to divide the sequence length " +
         std::to_string(sequence);
}

}  // namespace trainsim::models
