// One GPT transformer layer, its embedding and head, against the closed forms of
// Korthikanti et al. 2022 (activation bytes) and Narayanan et al. 2021 (FLOPs, parameters),
// and the Megatron tensor-parallel sharding rules.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/model.hpp"
#include "models/op.hpp"
#include "models/presets.hpp"

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

ModelConfig gpt3() { return *find_preset("gpt3-175b"); }

// A small GPT whose shapes make every closed form an integer for t ∈ {1, 2, 4, 8}.
ModelConfig small_gpt() {
  return ModelConfig{.name = "small", .family = Family::GPT, .layers = 4, .hidden = 256, .heads = 8,
                     .kv_heads = 8, .ffn_hidden = 1024, .vocab = 1024, .max_positions = 512,
                     .tied_embedding = true};
}

ShardSpec shard(std::int64_t b, std::int64_t s, std::int64_t t, bool sp = false) {
  return ShardSpec{.micro_batch = b, .sequence = s, .tensor = t, .sequence_parallel = sp, .bytes_per_element = 2};
}

std::vector<std::string> names(const Layer& layer) {
  std::vector<std::string> out;
  for (const Op& op : layer.ops) out.push_back(op.name);
  return out;
}

const Op& find_op(const Layer& layer, const std::string& name) {
  for (const Op& op : layer.ops) {
    if (op.name == name) return op;
  }
  throw std::runtime_error("no op " + name);
}

double non_selective_activation(const Layer& layer) {
  double sum = 0;
  for (const Op& op : layer.ops) {
    if (!op.selective_recompute) sum += op.activation_bytes;
  }
  return sum;
}

TEST(GptLayer, OpsInExecutionOrder) {
  const Layer layer = transformer_layer(small_gpt(), shard(1, 128, 2));
  EXPECT_EQ(layer.name, "transformer");
  EXPECT_EQ(names(layer), (std::vector<std::string>{"ln1", "qkv", "attn_scores", "softmax", "attn_dropout",
                                                    "attn_over_v", "attn_layout", "proj", "proj_dropout", "ln2", "fc1", "gelu",
                                                    "fc2", "mlp_dropout"}));
  EXPECT_EQ(names(embedding_layer(small_gpt(), shard(1, 128, 2))),
            (std::vector<std::string>{"word_embedding", "position_embedding", "embedding_dropout"}));
  EXPECT_EQ(names(head_layer(small_gpt(), shard(1, 128, 2))),
            (std::vector<std::string>{"final_norm", "logits", "cross_entropy"}));
}

// Korthikanti Table 2, no parallelism: s·b·h·(34 + 5as/h) bytes per layer.
TEST(GptLayer, ActivationBytesNoParallelism) {
  for (const ModelConfig& m : {small_gpt(), gpt3()}) {
    for (std::int64_t b : {1, 2, 4}) {
      for (std::int64_t s : {128, 512}) {
        const std::int64_t sbh = s * b * m.hidden;
        const std::int64_t expected = 34 * sbh + 5 * m.heads * s * s * b;
        EXPECT_EQ(transformer_layer(m, shard(b, s, 1)).activation_bytes(), static_cast<double>(expected))
            << m.name << " b=" << b << " s=" << s;
      }
    }
  }
}

// Tensor parallel t: s·b·h·(10 + 24/t + 5as/(ht)).
TEST(GptLayer, ActivationBytesTensorParallel) {
  for (const ModelConfig& m : {small_gpt(), gpt3()}) {
    for (std::int64_t t : {1, 2, 4, 8}) {
      for (std::int64_t b : {1, 3}) {
        const std::int64_t s = 256;
        const std::int64_t sbh = s * b * m.hidden;
        const std::int64_t expected = 10 * sbh + 24 * sbh / t + 5 * m.heads * s * s * b / t;
        EXPECT_EQ(transformer_layer(m, shard(b, s, t)).activation_bytes(), static_cast<double>(expected))
            << m.name << " t=" << t << " b=" << b;
      }
    }
  }
}

// The paper's worked numbers: GPT-3, t=8, b=1, s=2048.
TEST(GptLayer, ActivationBytesGpt3Published) {
  EXPECT_EQ(transformer_layer(gpt3(), shard(1, 2048, 8)).activation_bytes(), 578'813'952.0);
  // TP + SP + selective recompute: the attention core's tensors are not kept.
  EXPECT_EQ(non_selective_activation(transformer_layer(gpt3(), shard(1, 2048, 8, true))), 106'954'752.0);
}

// TP + sequence parallel: s·b·h·(34/t + 5as/(ht)); with selective recompute s·b·h·34/t;
// TP + selective without SP: s·b·h·(10 + 24/t).
TEST(GptLayer, ActivationBytesSequenceParallelAndSelective) {
  for (const ModelConfig& m : {small_gpt(), gpt3()}) {
    for (std::int64_t t : {1, 2, 4, 8}) {
      const std::int64_t b = 2;
      const std::int64_t s = 512;
      const std::int64_t sbh = s * b * m.hidden;
      const std::int64_t attention_core = 5 * m.heads * s * s * b / t;
      const Layer sp = transformer_layer(m, shard(b, s, t, true));
      EXPECT_EQ(sp.activation_bytes(), static_cast<double>(34 * sbh / t + attention_core)) << m.name << " t=" << t;
      EXPECT_EQ(non_selective_activation(sp), static_cast<double>(34 * sbh / t));
      const Layer tp = transformer_layer(m, shard(b, s, t));
      EXPECT_EQ(non_selective_activation(tp), static_cast<double>(10 * sbh + 24 * sbh / t));
      // What selective recompute drops is exactly the 5as²b/t term.
      EXPECT_EQ(tp.activation_bytes() - non_selective_activation(tp), static_cast<double>(attention_core));
    }
  }
}

TEST(GptLayer, SelectiveOpsAreTheAttentionCore) {
  const Layer layer = transformer_layer(small_gpt(), shard(1, 128, 1));
  std::vector<std::string> selective;
  for (const Op& op : layer.ops) {
    if (op.selective_recompute) selective.push_back(op.name);
  }
  // (attn_layout: the context permute inside Megatron's CoreAttention, rerun with it)
  EXPECT_EQ(selective,
            (std::vector<std::string>{"attn_scores", "softmax", "attn_dropout", "attn_over_v", "attn_layout"}));
}

// Per-op attribution of Korthikanti's terms (2-byte activations, 1-byte masks).
TEST(GptLayer, ActivationAttributionPerOp) {
  const ModelConfig m = small_gpt();
  const std::int64_t b = 2, s = 128, t = 4, h = m.hidden, a = m.heads, f = m.ffn_hidden;
  const Layer layer = transformer_layer(m, shard(b, s, t));
  const double sbh = static_cast<double>(s * b * h);
  const double as2b = static_cast<double>(a * s * s * b);
  EXPECT_EQ(find_op(layer, "ln1").activation_bytes, 2 * sbh);
  EXPECT_EQ(find_op(layer, "qkv").activation_bytes, 2 * sbh + 6 * sbh / t);
  EXPECT_EQ(find_op(layer, "attn_scores").activation_bytes, 0);
  EXPECT_EQ(find_op(layer, "softmax").activation_bytes, 2 * as2b / t);
  EXPECT_EQ(find_op(layer, "attn_dropout").activation_bytes, as2b / t);
  EXPECT_EQ(find_op(layer, "attn_over_v").activation_bytes, 2 * as2b / t);
  EXPECT_EQ(find_op(layer, "proj").activation_bytes, 2 * sbh / t);
  EXPECT_EQ(find_op(layer, "proj_dropout").activation_bytes, sbh);
  EXPECT_EQ(find_op(layer, "ln2").activation_bytes, 2 * sbh);
  EXPECT_EQ(find_op(layer, "fc1").activation_bytes, 2 * sbh);
  EXPECT_EQ(find_op(layer, "gelu").activation_bytes, 2.0 * static_cast<double>(s * b * f / t));
  EXPECT_EQ(find_op(layer, "fc2").activation_bytes, 2.0 * static_cast<double>(s * b * f / t));
  EXPECT_EQ(find_op(layer, "mlp_dropout").activation_bytes, sbh);
}

// Narayanan: forward of one layer = 24bsh² + 4bs²h; backward = 2× forward.
TEST(GptLayer, ForwardFlopsPerLayer) {
  for (const ModelConfig& m : {small_gpt(), gpt3()}) {
    for (std::int64_t b : {1, 4}) {
      for (std::int64_t s : {256, 2048}) {
        if (s > m.max_positions) continue;
        const double h = static_cast<double>(m.hidden);
        const double bs = static_cast<double>(b * s);
        const Layer layer = transformer_layer(m, shard(b, s, 1));
        EXPECT_DOUBLE_EQ(layer.fwd_flops(), 24 * bs * h * h + 4 * bs * static_cast<double>(s) * h);
        EXPECT_DOUBLE_EQ(layer.bwd_flops(), 2 * layer.fwd_flops());
      }
    }
  }
}

// General ffn: 2bsh·(3h + h + 2·ffn) + 4bs²h.
TEST(GptLayer, ForwardFlopsGeneralFfn) {
  ModelConfig m = small_gpt();
  m.ffn_hidden = 768;
  const std::int64_t b = 2, s = 64;
  const double h = 256, f = 768;
  EXPECT_DOUBLE_EQ(transformer_layer(m, shard(b, s, 1)).fwd_flops(),
                   2.0 * b * s * h * (3 * h + h + 2 * f) + 4.0 * b * s * s * h);
}

TEST(GptLayer, FlopSplitPerOp) {
  const Layer layer = transformer_layer(gpt3(), shard(1, 2048, 8));
  for (const Op& op : layer.ops) {
    switch (op.cls) {
      case ComputeClass::GEMM:
        EXPECT_GT(op.fwd_flops, 0) << op.name;
        EXPECT_EQ(op.bwd_input_flops, op.fwd_flops) << op.name;
        EXPECT_EQ(op.bwd_weight_flops, op.fwd_flops) << op.name;
        break;
      case ComputeClass::BATCHED_GEMM:  // no weights: both inputs' gradients are input gradients
        EXPECT_GT(op.fwd_flops, 0) << op.name;
        EXPECT_EQ(op.bwd_input_flops, 2 * op.fwd_flops) << op.name;
        EXPECT_EQ(op.bwd_weight_flops, 0) << op.name;
        EXPECT_EQ(op.params, 0) << op.name;
        break;
      case ComputeClass::FUSED_ATTENTION:
        ADD_FAILURE() << op.name << ": this layer is built unfused";
        break;
      case ComputeClass::ELEMENTWISE:
        EXPECT_EQ(op.fwd_flops + op.bwd_input_flops + op.bwd_weight_flops, 0) << op.name;
        break;
    }
  }
  // The attention matmuls: 2·b·s²·h/t each.
  const double expected = 2.0 * 2048 * 2048 * 12288 / 8;
  EXPECT_EQ(find_op(layer, "attn_scores").fwd_flops, expected);
  EXPECT_EQ(find_op(layer, "attn_over_v").fwd_flops, expected);
}

// GEMM dims agree with FLOPs and with the byte rule 2·(m·k + k·n + m·n) per batch element.
TEST(GptLayer, GemmDimsAndBytes) {
  const ModelConfig m = small_gpt();
  const std::int64_t b = 2, s = 128, t = 4, h = m.hidden, a = m.heads, f = m.ffn_hidden;
  const Layer layer = transformer_layer(m, shard(b, s, t));
  auto dims = [&](const char* name) {
    const GemmDims& d = find_op(layer, name).gemm;
    return std::vector<std::int64_t>{d.batch, d.m, d.n, d.k};
  };
  EXPECT_EQ(dims("qkv"), (std::vector<std::int64_t>{1, b * s, 3 * h / t, h}));
  EXPECT_EQ(dims("attn_scores"), (std::vector<std::int64_t>{b * a / t, s, s, h / a}));
  EXPECT_EQ(dims("attn_over_v"), (std::vector<std::int64_t>{b * a / t, s, h / a, s}));
  EXPECT_EQ(dims("proj"), (std::vector<std::int64_t>{1, b * s, h, h / t}));
  EXPECT_EQ(dims("fc1"), (std::vector<std::int64_t>{1, b * s, f / t, h}));
  EXPECT_EQ(dims("fc2"), (std::vector<std::int64_t>{1, b * s, h, f / t}));
  for (const Op& op : layer.ops) {
    if (op.cls == ComputeClass::ELEMENTWISE) continue;
    const double batch = static_cast<double>(op.gemm.batch), mm = static_cast<double>(op.gemm.m),
                 n = static_cast<double>(op.gemm.n), k = static_cast<double>(op.gemm.k);
    EXPECT_EQ(op.fwd_flops, 2 * batch * mm * n * k) << op.name;
    EXPECT_EQ(op.fwd_bytes, 2 * batch * (mm * k + k * n + mm * n)) << op.name;
    EXPECT_EQ(op.bwd_bytes, 2 * op.fwd_bytes) << op.name;
  }
}

// The weight gradients are added into main_grad (Megatron-LM's gradient-accumulation
// fusion): each weight GEMM's epilogue reads and writes the g-byte buffer where a fresh
// result would write 2 bytes: (2g − 2)·n·k extra bytes for a weight of n × k elements.
// GPT-3 175B at t = 8 (h = 12288): qkv 3h/t·h, proj h·h/t, fc1 4h/t·h, fc2 h·4h/t, together 12h²/t = 226,492,416 weights; fp32 main_grad (g = 4): 6 bytes each,
// 1,358,954,496; FP16's 2-byte main_grad: 2 bytes each, 452,984,832. The attention core has
// no weights and accumulates nothing; the logits GEMM adds V/t·h = 6,400·12,288 weights'
// worth into the (tied) embedding's main_grad: 6 · 78,643,200 = 471,859,200.
TEST(GptLayer, WeightGradientsAccumulateIntoMainGrad) {
  const ModelConfig m = gpt3();
  ShardSpec sh = shard(1, 2048, 8);
  const auto accumulated = [](const Layer& layer) {
    double sum = 0;
    for (const Op& op : layer.ops) sum += op.wgrad_accumulate_bytes;
    return sum;
  };
  const Layer layer = transformer_layer(m, sh);
  EXPECT_EQ(accumulated(layer), 1'358'954'496.0);
  EXPECT_EQ(find_op(layer, "qkv").wgrad_accumulate_bytes, 6.0 * 3 * 12288 / 8 * 12288);
  for (const char* core : {"flash_attention", "attn_scores", "attn_over_v"}) {
    for (const Op& op : layer.ops) {
      if (op.name == core) {
        EXPECT_EQ(op.wgrad_accumulate_bytes, 0.0) << core;
      }
    }
  }
  EXPECT_EQ(find_op(head_layer(m, sh), "logits").wgrad_accumulate_bytes, 471'859'200.0);
  sh.main_grad_bytes = 2;
  EXPECT_EQ(accumulated(transformer_layer(m, sh)), 452'984'832.0);
  // Per weight, not per token: a bigger micro-batch accumulates the same bytes.
  sh.micro_batch = 4;
  EXPECT_EQ(accumulated(transformer_layer(m, sh)), 452'984'832.0);
}

// Without Megatron-LM's gradient-accumulation fusion the weight-gradient GEMM writes a fresh
// 2-byte gradient and a kernel of its own adds it into main_grad, reading both and writing
// main_grad: (2g + 2) bytes per weight, nothing in the epilogue. GPT-3 175B at t = 8: the
// layer's 226,492,416 weights at g = 4 are 10 bytes each, 2,264,924,160; the logits GEMM's
// 78,643,200 are 786,432,000; the attention core adds nothing.
TEST(GptLayer, UnfusedWeightGradientsAreAddedByAKernelOfTheirOwn) {
  const ModelConfig m = gpt3();
  ShardSpec sh = shard(1, 2048, 8);
  sh.gradient_accumulation_fusion = false;
  double added = 0, accumulated = 0;
  const Layer layer = transformer_layer(m, sh);
  for (const Op& op : layer.ops) {
    added += op.wgrad_add_bytes;
    accumulated += op.wgrad_accumulate_bytes;
  }
  EXPECT_EQ(added, 2'264'924'160.0);
  EXPECT_EQ(accumulated, 0.0);
  EXPECT_EQ(find_op(layer, "qkv").wgrad_add_bytes, 10.0 * 3 * 12288 / 8 * 12288);
  EXPECT_EQ(find_op(head_layer(m, sh), "logits").wgrad_add_bytes, 786'432'000.0);
  // The GEMMs themselves are unchanged: FLOPs and the roofline's bytes.
  ShardSpec fused = sh;
  fused.gradient_accumulation_fusion = true;
  const Layer fused_layer = transformer_layer(m, fused);
  const Op& a = find_op(layer, "fc1");
  const Op& b = find_op(fused_layer, "fc1");
  EXPECT_EQ(a.bwd_weight_flops, b.bwd_weight_flops);
  EXPECT_EQ(a.bwd_bytes, b.bwd_bytes);
  EXPECT_EQ(b.wgrad_add_bytes, 0.0);
}

// Every memory-bound kernel of a GPT layer, its head and embedding: bytes and launches
// against hand counts (2-byte values, 1-byte masks, 4-byte fp32; each pass Megatron-LM
// makes reads its inputs and writes its outputs once).
TEST(GptLayer, MemoryBoundKernelBytesAndLaunches) {
  const ModelConfig m = small_gpt();
  const std::int64_t b = 2, s = 128, t = 2, h = m.hidden, a = m.heads, f = m.ffn_hidden, v = m.vocab;
  const Layer layer = transformer_layer(m, shard(b, s, t));
  const double tokens = static_cast<double>(b * s);     // 256 rows
  const double n = static_cast<double>(b * s * h);      // one [b, s, h] tensor, replicated
  const double scores = static_cast<double>(b * a / t * s * s);
  const double inner = static_cast<double>(b * s * f / t);
  const double o = static_cast<double>(b * s * h / t);  // the context, h/t wide
  const double qkv = 3 * o;                             // Q, K, V of the shard's heads
  auto expect = [&](const Layer& l, const std::string& name, double fwd, double bwd, int fk, int bk) {
    const Op& op = find_op(l, name);
    EXPECT_EQ(op.fwd_bytes, fwd) << name;
    EXPECT_EQ(op.bwd_bytes, bwd) << name;
    EXPECT_EQ(op.fwd_kernels, fk) << name;
    EXPECT_EQ(op.bwd_kernels, bk) << name;
  };
  // LayerNorm: fwd reads x, γ, β and writes y and mean, 1/σ (8 B a row); bwd reads dy and x
  // twice (partial parameter gradients, then the input gradient) and the statistics twice,
  // reads γ, writes dx, dγ, dβ: 2·(2n + 2h) + 8·rows and 2·(5n + 3h) + 16·rows.
  expect(layer, "ln1", 2 * (2 * n + 2 * h) + 8 * tokens, 2 * (5 * n + 3 * h) + 16 * tokens, 1, 3);
  // Scaled masked softmax: read scores, write P / read dP, P, write dS. The causal kernel
  // reads each row up to its diagonal, 129 of 256 entries at s = 128 (two rows: 1 + 128 = 129
  // of 2 · 128), and writes whole rows; a non-causal one reads them whole.
  expect(layer, "softmax", 2 * scores * 129 / 256 + 2 * scores, 2 * 2 * scores * 129 / 256 + 2 * scores, 1, 1);
  {
    ShardSpec full = shard(b, s, t);
    full.causal = false;
    expect(transformer_layer(m, full), "softmax", 2 * 2 * scores, 2 * 3 * scores, 1, 1);
  }
  // Attention dropout: read P, write P' and the mask / read dP', mask, write dP.
  expect(layer, "attn_dropout", 5 * scores, 5 * scores, 1, 1);
  // Layout copies: the context permute (read + write o) / its gradient's permute and the
  // QKV split's backward (read + write the QKV output's size).
  expect(layer, "attn_layout", 2 * 2 * o, 2 * 2 * (o + qkv), 1, 2);
  // Bias-GeLU: read x, bias, write y / read dy, x, bias, write dx; bias gradient reads dx
  // and writes f/t.
  expect(layer, "gelu", 2 * (2 * inner + f / t), 2 * (4 * inner + 2 * f / t), 1, 2);
  // Bias-dropout-add: read x, bias, residual, write y and mask: n·(3·2 + 1) + 2h. Backward:
  // dropout (read dy, mask, write dx: 5n), bias gradient (read dx, write h: 2n + 2h), the
  // residual gradient sum (read two, write one: 6n).
  expect(layer, "mlp_dropout", 7 * n + 2 * h, 5 * n + 2 * n + 2 * h + 6 * n, 1, 3);
  expect(layer, "proj_dropout", 7 * n + 2 * h, 13 * n + 2 * h, 1, 3);
  // Cross-entropy over the L = b·s·V/t logits: fwd cast (2 + 4), max 4, subtract 8, exp 8,
  // sum 4, divide 8 = 38·L in 6 kernels; bwd scale 8 and cast back 6 = 14·L in 3.
  const Layer head = head_layer(m, shard(b, s, t));
  const double logits = static_cast<double>(b * s * v / t);
  expect(head, "cross_entropy", 38 * logits, 14 * logits, 6, 3);
  expect(head, "final_norm", 2 * (2 * n + 2 * h) + 8 * tokens, 2 * (5 * n + 3 * h) + 16 * tokens, 1, 3);
  for (const Op& op : layer.ops) {
    EXPECT_GT(op.fwd_bytes, 0) << op.name;
    EXPECT_GT(op.bwd_bytes, 0) << op.name;
    EXPECT_GE(op.fwd_kernels, 1) << op.name;
  }
}

// The word embedding's backward (per micro-batch): the masked rows' backward with t > 1,
// PyTorch's dense gradient of the whole table shard (zero-fill, then the rows from dY), and
// Megatron's add of it into the fp32 (BF16) or 16-bit (FP16) main_grad buffer. small_gpt:
// V = 1024, h = 256, e = 2.
// The learned position table (512 × 256 here, replicated) is an nn.Embedding too: the
// same passes over its whole table with the b·s position ids, no mask.
TEST(GptLayer, WordEmbeddingBackwardWritesTheWholeTableShard) {
  const ModelConfig m = small_gpt();
  const double h = static_cast<double>(m.hidden);
  // b 2, s 128, t 2: 256 ids (direct path, at most 3072). T = 512·256 = 131,072 table
  // elements, n = 2·128·256 = 65,536. Mask 2·2·n = 262,144; zero-fill 2·T = 262,144; the
  // rows 8·256 + 2·2·n = 264,192; main_grad (2·4 + 2)·T = 1,310,720. Sum 2,099,200 bytes,
  // 1 + 1 + 1 + 1 = 4 kernels.
  {
    const Op op = find_op(embedding_layer(m, shard(2, 128, 2)), "word_embedding");
    EXPECT_EQ(512 * h, 131072.0);
    EXPECT_EQ(op.bwd_bytes, 2099200.0);
    EXPECT_EQ(op.bwd_kernels, 4);
    // Position table, T = 512·256 = 131,072: zero-fill 262,144, the rows 264,192,
    // main_grad 1,310,720: 1,837,056 bytes in 3 kernels.
    const Op pos = find_op(embedding_layer(m, shard(2, 128, 2)), "position_embedding");
    EXPECT_EQ(pos.bwd_bytes, 1837056.0);
    EXPECT_EQ(pos.bwd_kernels, 3);
  }
  // b 4, s 1024, t 1: 4096 ids (sort path), no mask. T = 1024·256 = 262,144, n = 1,048,576.
  // Zero-fill 2·T = 524,288; sort path 48·4096 + (2·2 + 8)·n = 196,608 + 12,582,912;
  // main_grad with FP16's 16-bit buffer (2·2 + 2)·T = 1,572,864. Sum 14,876,672 bytes,
  // 0 + 1 + 8 + 1 = 10 kernels.
  {
    ShardSpec sh = shard(4, 1024, 1);
    sh.main_grad_bytes = 2;
    ModelConfig long_positions = m;
    long_positions.max_positions = 1024;
    const Op op = find_op(embedding_layer(long_positions, sh), "word_embedding");
    EXPECT_EQ(op.bwd_bytes, 14876672.0);
    EXPECT_EQ(op.bwd_kernels, 10);
    // Its 1024-row position table has the word table's size here (V = 1024, t = 1, no
    // mask): the same bytes and kernels.
    const Op pos = find_op(embedding_layer(long_positions, sh), "position_embedding");
    EXPECT_EQ(pos.bwd_bytes, 14876672.0);
    EXPECT_EQ(pos.bwd_kernels, 10);
  }
}

// A causal fused attention executes half the FLOPs of a non-causal one; the model FLOPs
// (MFU's) stay the full count, and the curve is read at fwd + bwd FLOPs of one (sequence,
// head), 3.5 · 4·s²·d, whatever the batch or the tensor split.
TEST(GptLayer, CausalFusedAttentionRunsHalfTheFlops) {
  const ModelConfig m = gpt3();
  ShardSpec sh = shard(2, 2048, 8);
  sh.flash_attention = true;
  sh.causal = false;
  const Op full = find_op(transformer_layer(m, sh), "flash_attention");
  sh.causal = true;
  const Op causal = find_op(transformer_layer(m, sh), "flash_attention");
  EXPECT_EQ(full.cls, ComputeClass::FUSED_ATTENTION);
  // 4·b·s²·h/t forward either way (QKᵀ and scores × V over every (query, key) pair).
  const double fwd = 4.0 * 2 * 2048 * 2048 * 12288 / 8;
  EXPECT_EQ(full.fwd_flops, fwd);
  EXPECT_EQ(causal.fwd_flops, fwd);
  EXPECT_EQ(full.executed_fraction, 1.0);
  EXPECT_EQ(causal.executed_fraction, 0.5);
  EXPECT_EQ(causal.fwd_flops * causal.executed_fraction, fwd / 2);
  EXPECT_EQ(full.attention_curve_flops, 14.0 * 2048 * 2048 * 128);
  EXPECT_EQ(causal.attention_curve_flops, full.attention_curve_flops);
  EXPECT_FALSE(full.causal);
  EXPECT_TRUE(causal.causal);
  EXPECT_TRUE(causal.dropout);  // GPT: Megatron-LM's attention dropout inside the kernel
  // The unfused path computes every score and masks them in the softmax.
  const Op scores = find_op(transformer_layer(m, shard(2, 2048, 8)), "attn_scores");
  EXPECT_EQ(scores.executed_fraction, 1.0);
}

TEST(GptLayer, TensorParallelBoundaries) {
  const ModelConfig m = small_gpt();
  const std::int64_t b = 2, s = 128;
  const double full = 2.0 * static_cast<double>(b * s * m.hidden);
  for (bool sp : {false, true}) {
    const Layer layer = transformer_layer(m, shard(b, s, 4, sp));
    std::vector<std::string> marked;
    for (const Op& op : layer.ops) {
      if (op.tp_boundary == TpBoundary::NONE) {
        EXPECT_EQ(op.tp_comm_bytes, 0) << op.name;
        continue;
      }
      marked.push_back(op.name + (op.tp_boundary == TpBoundary::ENTER ? ":enter" : ":exit"));
      EXPECT_EQ(op.tp_comm_bytes, full) << op.name;
    }
    EXPECT_EQ(marked, (std::vector<std::string>{"qkv:enter", "proj:exit", "fc1:enter", "fc2:exit"}));
  }
  const Layer embedding = embedding_layer(m, shard(b, s, 4));
  const Op& word = find_op(embedding, "word_embedding");
  EXPECT_EQ(word.tp_boundary, TpBoundary::EXIT);
  EXPECT_EQ(word.tp_comm_bytes, full);
  const Layer head = head_layer(m, shard(b, s, 4));
  const Op& logits = find_op(head, "logits");
  EXPECT_EQ(logits.tp_boundary, TpBoundary::ENTER);
  EXPECT_EQ(logits.tp_comm_bytes, full);
}

// Per-shard FLOPs × t = unsharded, op by op and for every layer kind.
TEST(GptLayer, ShardedFlopsScale) {
  for (const ModelConfig& m : {small_gpt(), gpt3()}) {
    const Layer one = transformer_layer(m, shard(2, 512, 1));
    const Layer head_one = head_layer(m, shard(2, 512, 1));
    for (std::int64_t t : {2, 4, 8}) {
      for (bool sp : {false, true}) {
        const Layer sharded = transformer_layer(m, shard(2, 512, t, sp));
        ASSERT_EQ(sharded.ops.size(), one.ops.size());
        for (std::size_t i = 0; i < one.ops.size(); ++i) {
          EXPECT_EQ(sharded.ops[i].fwd_flops * static_cast<double>(t), one.ops[i].fwd_flops) << one.ops[i].name;
          EXPECT_EQ(sharded.ops[i].bwd_input_flops * static_cast<double>(t), one.ops[i].bwd_input_flops);
          EXPECT_EQ(sharded.ops[i].bwd_weight_flops * static_cast<double>(t), one.ops[i].bwd_weight_flops);
        }
        const Layer head = head_layer(m, shard(2, 512, t, sp));
        EXPECT_EQ((head.fwd_flops() + head.bwd_flops()) * static_cast<double>(t),
                  head_one.fwd_flops() + head_one.bwd_flops());
      }
    }
  }
}

// Per-shard parameters × t = unsharded, except what every shard holds whole: the two
// LayerNorms (2h each) and the row-parallel proj and fc2 biases (h each), 6h per layer.
TEST(GptLayer, ShardedParams) {
  for (const ModelConfig& m : {small_gpt(), gpt3()}) {
    const std::int64_t h = m.hidden;
    const std::int64_t unsharded = transformer_layer(m, shard(1, 128, 1)).params();
    EXPECT_EQ(unsharded, 12 * h * h + 13 * h);
    for (std::int64_t t : {2, 4, 8}) {
      const std::int64_t per_shard = transformer_layer(m, shard(1, 128, t)).params();
      EXPECT_EQ(per_shard * t - (t - 1) * 6 * h, unsharded) << m.name << " t=" << t;
      // Embedding: the word table is split over t, the position table is replicated.
      const std::int64_t emb = embedding_layer(m, shard(1, 128, t)).params();
      EXPECT_EQ(emb, m.vocab * h / t + m.max_positions * h);
      // Head: final LayerNorm replicated; the tied logits weight lives in the embedding.
      EXPECT_EQ(head_layer(m, shard(1, 128, t)).params(), 2 * h);
      ModelConfig untied = m;
      untied.tied_embedding = false;
      EXPECT_EQ(head_layer(untied, shard(1, 128, t)).params(), 2 * h + m.vocab * h / t);
    }
  }
}

// Head: formulas.md's output layer + cross-entropy 4·s·b·h·(1 + V/h)/t, stated by
// Korthikanti with sequence parallelism (and equal to it at t = 1): final-norm input
// 2sbh/t + logits input 2sbh/t + fp32 softmax 4sbV/t.
TEST(GptLayer, HeadActivationBytes) {
  for (const ModelConfig& m : {small_gpt(), gpt3()}) {
    const std::int64_t b = 2, s = 256, h = m.hidden, v = m.vocab;
    for (std::int64_t t : {1, 2, 4, 8}) {
      const Layer sp = head_layer(m, shard(b, s, t, true));
      EXPECT_EQ(sp.activation_bytes(), static_cast<double>(4 * s * b * h / t + 4 * s * b * v / t)) << t;
      EXPECT_EQ(find_op(sp, "logits").activation_bytes + find_op(sp, "final_norm").activation_bytes,
                static_cast<double>(4 * s * b * h / t));
      EXPECT_EQ(find_op(sp, "cross_entropy").activation_bytes, static_cast<double>(4 * s * b * v / t));
      // Without SP the norm and logits inputs are replicated over the tensor group.
      const Layer tp = head_layer(m, shard(b, s, t));
      EXPECT_EQ(tp.activation_bytes(), static_cast<double>(4 * s * b * h + 4 * s * b * v / t));
    }
    // Logits GEMM: 2·b·s·h·V/t forward.
    const Layer head = head_layer(m, shard(b, s, 4));
    EXPECT_EQ(find_op(head, "logits").fwd_flops, 2.0 * static_cast<double>(b * s * h) * static_cast<double>(v / 4));
  }
}

// Embedding: dropout mask sbh (/t with SP) and the int64 token ids 8sb (first-stage extras).
TEST(GptLayer, EmbeddingActivationBytes) {
  const ModelConfig m = gpt3();
  const std::int64_t b = 1, s = 2048, h = m.hidden;
  for (std::int64_t t : {1, 8}) {
    EXPECT_EQ(embedding_layer(m, shard(b, s, t)).activation_bytes(), static_cast<double>(s * b * h + 8 * s * b));
    EXPECT_EQ(embedding_layer(m, shard(b, s, t, true)).activation_bytes(),
              static_cast<double>(s * b * h / t + 8 * s * b));
    EXPECT_EQ(embedding_layer(m, shard(b, s, t)).fwd_flops(), 0);
  }
}

TEST(GptLayer, WiderElementsScaleActivations) {
  ShardSpec fp32 = shard(1, 128, 2);
  fp32.bytes_per_element = 4;
  const Layer four = transformer_layer(small_gpt(), fp32);
  const Layer two = transformer_layer(small_gpt(), shard(1, 128, 2));
  // Everything but the 1-byte dropout masks doubles.
  const double masks = find_op(two, "attn_dropout").activation_bytes + find_op(two, "proj_dropout").activation_bytes +
                       find_op(two, "mlp_dropout").activation_bytes;
  EXPECT_EQ(four.activation_bytes(), 2 * (two.activation_bytes() - masks) + masks);
  EXPECT_EQ(four.fwd_flops(), two.fwd_flops());
}

TEST(GptLayer, RejectsShapesTheShardingCannotSplit) {
  const ModelConfig m = small_gpt();  // 8 heads, ffn 1024
  EXPECT_THROW(transformer_layer(m, shard(1, 128, 3)), std::invalid_argument);
  EXPECT_THROW(transformer_layer(m, shard(1, 130, 4, true)), std::invalid_argument);
  EXPECT_THROW(transformer_layer(m, shard(0, 128, 1)), std::invalid_argument);
  EXPECT_THROW(transformer_layer(m, shard(1, 0, 1)), std::invalid_argument);
  EXPECT_THROW(embedding_layer(m, shard(1, 1024, 1)), std::invalid_argument);  // > max_positions
  {
    ShardSpec no_grad_buffer = shard(1, 128, 1);
    no_grad_buffer.main_grad_bytes = 0;
    try {
      embedding_layer(m, no_grad_buffer);
      FAIL() << "expected a throw";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("main_grad_bytes=0 must be positive"), std::string::npos) << error.what();
    }
  }
  ModelConfig odd = m;
  odd.hidden = 250;  // 8 heads do not divide it
  EXPECT_THROW(transformer_layer(odd, shard(1, 128, 1)), std::invalid_argument);
  try {
    transformer_layer(m, shard(1, 128, 16));
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()), "models: tensor=16 does not divide num_attention_heads=8");
  }
  // A vocabulary t does not divide is padded: each shard holds ceil(V/t) rows.
  ModelConfig ragged = m;
  ragged.vocab = 1001;
  EXPECT_EQ(find_op(embedding_layer(ragged, shard(1, 128, 4)), "word_embedding").params, 251 * m.hidden);
}

}  // namespace
}  // namespace trainsim::models

namespace trainsim::models {
namespace {

// FP8 as Transformer Engine runs it: each FP8 linear layer saves its input for the weight
// gradient as the 1-byte FP8 copy it cast for the forward GEMM. Per GPT layer (b·s tokens,
// t = 2, no SP) the four linear inputs are: QKV's b·s·h (the LayerNorm output), proj's
// b·s·h/t (the attention context), fc1's b·s·h, fc2's b·s·4h/t (the GeLU output), so FP8
// saves b·s·h·(1 + 1/t + 1 + 4/t) bytes less than 16-bit; nothing else changes (the QKV
// output the attention keeps, the GeLU input, the norms' inputs stay 16-bit).
TEST(GptLayer, Fp8LinearLayersSaveTheirInputsInOneByte) {
  const ModelConfig m = ModelConfig{.name = "small", .family = Family::GPT, .layers = 4, .hidden = 256, .heads = 8,
                                    .kv_heads = 8, .ffn_hidden = 1024, .vocab = 1024, .max_positions = 512,
                                    .tied_embedding = true};
  ShardSpec bf16{.micro_batch = 2, .sequence = 128, .tensor = 2, .sequence_parallel = false, .bytes_per_element = 2};
  bf16.flash_attention = true;
  ShardSpec fp8 = bf16;
  fp8.fp8_linear_inputs = true;
  const Layer a = transformer_layer(m, bf16), b = transformer_layer(m, fp8);
  const double bsh = 2.0 * 128 * 256;
  EXPECT_DOUBLE_EQ(a.activation_bytes() - b.activation_bytes(), bsh * (1 + 0.5 + 1 + 2));
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    if (a.ops[i].fp8_linear) continue;
    EXPECT_DOUBLE_EQ(a.ops[i].activation_bytes, b.ops[i].activation_bytes) << a.ops[i].name;
  }
  // The halves of the linear layers' own shares.
  EXPECT_DOUBLE_EQ(find_op(b, "fc1").activation_bytes, bsh);
  EXPECT_DOUBLE_EQ(find_op(b, "fc2").activation_bytes, bsh * 4 / 2);
  EXPECT_DOUBLE_EQ(find_op(b, "proj").activation_bytes, bsh / 2);
  EXPECT_DOUBLE_EQ(find_op(b, "qkv").activation_bytes, bsh + 2 * bsh * 3 / 2);  // + Q, K, V in 16 bits
}

}  // namespace
}  // namespace trainsim::models
