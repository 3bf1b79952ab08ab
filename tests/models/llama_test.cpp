// Llama-family layers (GQA, SwiGLU, RMSNorm, RoPE, untied head, no biases, no dropout):
// parameter totals of the published checkpoints and the generalised FLOP count.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "models/model.hpp"
#include "models/op.hpp"
#include "models/presets.hpp"

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

ShardSpec shard(std::int64_t b, std::int64_t s, std::int64_t t, bool sp = false) {
  return ShardSpec{.micro_batch = b, .sequence = s, .tensor = t, .sequence_parallel = sp, .bytes_per_element = 2};
}

// Hugging Face safetensors totals (formulas.md).
TEST(Llama, PublishedParameterCounts) {
  const std::vector<std::pair<std::string, std::int64_t>> published = {
      {"llama2-7b", 6'738'415'616},      {"llama2-13b", 13'015'864'320}, {"llama2-70b", 68'976'648'192},
      {"llama3-8b", 8'030'261'248},      {"llama3-70b", 70'553'706'496}, {"llama3.1-405b", 405'853'388'800},
  };
  for (const auto& [name, params] : published) {
    const auto m = find_preset(name);
    ASSERT_TRUE(m.has_value()) << name;
    EXPECT_EQ(m->family, Family::LLAMA);
    EXPECT_EQ(total_params(*m), params) << name;
  }
}

TEST(Llama, LayerShape) {
  const ModelConfig m = *find_preset("llama3-70b");  // h 8192, 64 heads, 8 KV groups, ffn 28672
  const std::int64_t t = 8, b = 1, s = 4096, h = m.hidden, hd = h / m.heads;
  const Layer layer = transformer_layer(m, shard(b, s, t));
  std::vector<std::string> names;
  for (const Op& op : layer.ops) names.push_back(op.name);
  EXPECT_EQ(names, (std::vector<std::string>{"attn_norm", "qkv", "rope", "attn_scores", "softmax", "attn_over_v",
                                             "proj", "attn_residual", "mlp_norm", "fc1", "swiglu", "fc2",
                                             "mlp_residual"}));
  // GQA: the fused QKV is h + 2·kv_heads·head_dim wide; SwiGLU's fc1 is 2·ffn wide.
  EXPECT_EQ(layer.ops[1].gemm.n, (h + 2 * m.kv_heads * hd) / t);
  EXPECT_EQ(layer.ops[9].gemm.n, 2 * m.ffn_hidden / t);
  // No biases; RMSNorm weights only (replicated): shard × t − (t−1)·2h = unsharded.
  const std::int64_t unsharded = transformer_layer(m, shard(b, s, 1)).params();
  EXPECT_EQ(unsharded, h * (h + 2 * m.kv_heads * hd) + h * h + 3 * h * m.ffn_hidden + 2 * h);
  EXPECT_EQ(layer.params() * t - (t - 1) * 2 * h, unsharded);
  // No dropout: no masks, and the attention core keeps only softmax's output.
  const double sbh = static_cast<double>(s * b * h);
  const double as2b = static_cast<double>(m.heads * s * s * b);
  const double qkv_out = static_cast<double>(s * b * (h + 2 * m.kv_heads * hd));
  const double ffn = static_cast<double>(s * b * m.ffn_hidden);
  EXPECT_EQ(layer.activation_bytes(),
            2 * sbh /*attn_norm*/ + 2 * sbh + 2 * qkv_out / t /*qkv*/ + 2 * as2b / t /*softmax*/ + 2 * sbh / t /*proj*/ +
                2 * sbh /*mlp_norm*/ + 2 * sbh /*fc1*/ + 4 * ffn / t /*swiglu*/ + 2 * ffn / t /*fc2*/);
  // Embedding: RoPE, so no position table and no dropout; untied head.
  EXPECT_EQ(embedding_layer(m, shard(b, s, t)).params(), m.vocab * h / t);
  EXPECT_EQ(head_layer(m, shard(b, s, t)).params(), h + m.vocab * h / t);
}

// formulas.md generalised count, per token: 6·(GEMM weights it touches, including the
// logits) + 12·s·h per layer for the attention core.
TEST(Llama, ModelFlopsGeneralised) {
  for (const char* name : {"llama2-7b", "llama3-8b", "llama3-70b", "llama3.1-405b"}) {
    const ModelConfig m = *find_preset(name);
    const std::int64_t s = 8192, batch = 512;
    const double h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden),
                 kv_width = static_cast<double>(m.kv_heads * (m.hidden / m.heads));
    const double layer_weights = h * (h + 2 * kv_width) + h * h + 3 * h * f;
    const double per_token = 6 * (static_cast<double>(m.layers) * layer_weights + static_cast<double>(m.vocab) * h) +
                             12.0 * static_cast<double>(m.layers) * static_cast<double>(s) * h;
    const double expected = static_cast<double>(batch) * static_cast<double>(s) * per_token;
    const double actual = model_flops_per_iteration(m, batch, s);
    EXPECT_LE(std::abs(actual - expected), 1e-12 * expected) << name;
  }
}

TEST(Llama, SequenceParallelDividesReplicatedTerms) {
  const ModelConfig m = *find_preset("llama3-8b");
  const std::int64_t t = 8;
  const Layer tp = transformer_layer(m, shard(1, 4096, t));
  const Layer sp = transformer_layer(m, shard(1, 4096, t, true));
  const double sbh = 4096.0 * static_cast<double>(m.hidden);
  // Replicated: two norm inputs and the qkv and fc1 inputs, 8sbh; SP keeps 1/t of it.
  EXPECT_EQ(tp.activation_bytes() - sp.activation_bytes(), 8 * sbh * (1 - 1.0 / t));
  EXPECT_EQ(tp.fwd_flops(), sp.fwd_flops());
}

TEST(Llama, KvHeadsMustSplitOverTensor) {
  const ModelConfig m = *find_preset("llama3-8b");  // 8 KV groups
  EXPECT_NO_THROW(transformer_layer(m, shard(1, 128, 8)));
  EXPECT_THROW(transformer_layer(m, shard(1, 128, 16)), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::models
