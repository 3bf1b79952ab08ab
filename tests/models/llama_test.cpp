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
                                             "attn_layout", "proj", "attn_residual", "mlp_norm", "fc1", "swiglu", "fc2",
                                             "mlp_residual"}));
  // GQA: the fused QKV is h + 2·kv_heads·head_dim wide; SwiGLU's fc1 is 2·ffn wide.
  EXPECT_EQ(layer.ops[1].gemm.n, (h + 2 * m.kv_heads * hd) / t);
  EXPECT_EQ(layer.ops[10].gemm.n, 2 * m.ffn_hidden / t);
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

// Every memory-bound kernel of a Llama layer (fused attention, sequence parallel): bytes
// and launches against hand counts (2-byte values, 4-byte fp32 statistics).
TEST(Llama, MemoryBoundKernelBytesAndLaunches) {
  const ModelConfig m = *find_preset("llama3-70b");  // h 8192, 64 heads, 8 KV groups, ffn 28672
  const std::int64_t t = 8, b = 1, s = 4096, h = m.hidden, hd = h / m.heads;
  ShardSpec sh = shard(b, s, t, true);
  sh.flash_attention = true;
  const Layer layer = transformer_layer(m, sh);
  for (const Op& op : layer.ops) {
    if (op.cls == ComputeClass::FUSED_ATTENTION) {
      EXPECT_FALSE(op.dropout) << "Llama trains without attention dropout";
    }
  }
  const double rows = static_cast<double>(b * s / t);  // sequence-parallel rows
  const double n = rows * static_cast<double>(h);      // one [b, s/t, h] shard
  const double tokens = static_cast<double>(b * s);    // inside the TP region: every token
  const double q = tokens * static_cast<double>(m.heads / t * hd);       // Q (and O)
  const double kv = tokens * static_cast<double>(m.kv_heads / t * hd);  // K (and V)
  const double inner = tokens * static_cast<double>(m.ffn_hidden / t);
  auto expect = [&](const std::string& name, double fwd, double bwd, int fk, int bk) {
    for (const Op& op : layer.ops) {
      if (op.name != name) continue;
      EXPECT_EQ(op.fwd_bytes, fwd) << name;
      EXPECT_EQ(op.bwd_bytes, bwd) << name;
      EXPECT_EQ(op.fwd_kernels, fk) << name;
      EXPECT_EQ(op.bwd_kernels, bk) << name;
      return;
    }
    ADD_FAILURE() << "no op " << name;
  };
  // RMSNorm: fwd read x, γ, write y and 1/rms (4 B a row); bwd reads dy, x twice and the
  // statistic twice, reads γ, writes dx and dγ.
  expect("attn_norm", 2 * (2 * n + h) + 4 * rows, 2 * (5 * n + 2 * h) + 8 * rows, 1, 3);
  expect("mlp_norm", 2 * (2 * n + h) + 4 * rows, 2 * (5 * n + 2 * h) + 8 * rows, 1, 3);
  // Fused rotary on Q and K, one kernel each: read and write each once, both ways.
  expect("rope", 2 * 2 * (q + kv), 2 * 2 * (q + kv), 2, 2);
  // SwiGLU: read gate and up, write y / read dy, gate, up, write their gradients.
  expect("swiglu", 3 * 2 * inner, 5 * 2 * inner, 1, 1);
  // Residual adds (no bias, no dropout): read two, write one; backward the gradient sum.
  expect("attn_residual", 3 * 2 * n, 3 * 2 * n, 1, 1);
  expect("mlp_residual", 3 * 2 * n, 3 * 2 * n, 1, 1);
  // Fused attention: fwd reads Q, K, V, writes O and the fp32 log-sum-exp (lse, 4 B per
  // (head, token)). bwd: pre-pass reads dO, O, writes D (lse-sized); main kernel reads Q,
  // K, V, dO, lse and D, writes dK, dV, accumulates dQ in fp32 (read + write 8·q); the
  // conversion reads 4·q, writes dQ.
  const double lse = 4 * tokens * static_cast<double>(m.heads / t);
  const double qkv = q + 2 * kv;
  expect("flash_attention", 2 * (qkv + q) + lse,
         2 * 2 * q + lse + 2 * (qkv + q) + 2 * lse + 2 * 2 * kv + 8 * q + 4 * q + 2 * q, 1, 3);
}

// Llama-3 70B at t = 8: qkv (64 + 2·8)/8 heads of 128 = 1,280 columns × 8,192, proj
// 8,192 × 1,024, fc1 (gate and up) 2·28,672/8 = 7,168 × 8,192, fc2 8,192 × 3,584:
// 8,192 · 13,056 = 106,954,752 weights, 6 extra bytes each into the fp32 main_grad
// = 641,728,512 (no biases).
TEST(Llama, WeightGradientsAccumulateIntoMainGrad) {
  const Layer layer = transformer_layer(*find_preset("llama3-70b"), shard(1, 4096, 8));
  double sum = 0;
  for (const Op& op : layer.ops) sum += op.wgrad_accumulate_bytes;
  EXPECT_EQ(sum, 641'728'512.0);
}

TEST(Llama, KvHeadsMustSplitOverTensor) {
  const ModelConfig m = *find_preset("llama3-8b");  // 8 KV groups
  EXPECT_NO_THROW(transformer_layer(m, shard(1, 128, 8)));
  EXPECT_THROW(transformer_layer(m, shard(1, 128, 16)), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::models
