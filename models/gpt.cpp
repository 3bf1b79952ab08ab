// Dense decoder-only transformers (GPT, and Llama-style GQA/SwiGLU/RMSNorm), sharded the
// Megatron way: QKV and fc1 column-parallel, proj and fc2 row-parallel, heads split over
// the tensor group, vocabulary-parallel embedding and logits.
//
// Activation bytes follow Korthikanti et al. 2022 ("Reducing Activation Recomputation in
// Large Transformer Models", §4), attributed to the op whose backward needs the tensor:
//   ln1          input 2sbh                 (replicated over t; /t with sequence parallelism)
//   qkv          input 2sbh (rep) + Q,K,V 6sbh/t that the attention core keeps
//   attn_scores  0 (Q, K counted on qkv)                     selective
//   softmax      output 2as²b/t                              selective
//   attn_dropout mask as²b/t                                 selective
//   attn_over_v  dropout output 2as²b/t (V counted on qkv)   selective
//   proj         input 2sbh/t
//   proj_dropout mask sbh (rep)
//   ln2          input 2sbh (rep)
//   fc1          input 2sbh (rep)
//   gelu         input 2·s·b·ffn/t
//   fc2          input 2·s·b·ffn/t
//   mlp_dropout  mask sbh (rep)
// which sums to s·b·h·(10 + 24/t + 5as/(ht)) for ffn = 4h, and s·b·h·(34/t + 5as/(ht))
// with sequence parallelism.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/detail/shape.hpp"
#include "models/model.hpp"
#include "models/op.hpp"
#include "models/shard_rules.hpp"

namespace trainsim::models {

namespace detail {

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument("models: " + message);
}

std::string field(const char* name, std::int64_t value) { return std::string(name) + "=" + std::to_string(value); }

}  // namespace

Shape make_shape(const ModelConfig& model, const ShardSpec& shard) {
  const std::string where = model.name.empty() ? std::string("model") : "model '" + model.name + "'";
  require(model.hidden > 0, where + ": " + field("hidden", model.hidden) + " must be positive");
  require(model.heads > 0, where + ": " + field("heads", model.heads) + " must be positive");
  require(model.ffn_hidden > 0, where + ": " + field("ffn_hidden", model.ffn_hidden) + " must be positive");
  require(model.vocab > 0, where + ": " + field("vocab", model.vocab) + " must be positive");
  require(model.kv_heads >= 0, where + ": " + field("kv_heads", model.kv_heads) + " must not be negative");
  // The shape rules (models/shard_rules.hpp): callers check them first and say where the
  // violation was written; here they guard the arithmetic below.
  const auto rule = [](const std::string& broken, const std::string& prefix) { require(broken.empty(), prefix + broken); };
  rule(heads_divide_hidden(model.heads, model.hidden), where + ": ");
  // kv_heads = 0 means "not grouped": multi-head attention.
  const std::int64_t kv = model.kv_heads == 0 ? model.heads : model.kv_heads;
  rule(kv_heads_divide_heads(kv, model.heads), where + ": ");
  require(shard.micro_batch > 0, field("micro_batch", shard.micro_batch) + " must be positive");
  require(shard.sequence > 0, field("sequence", shard.sequence) + " must be positive");
  require(shard.tensor > 0, field("tensor", shard.tensor) + " must be positive");
  require(shard.bytes_per_element > 0, field("bytes_per_element", shard.bytes_per_element) + " must be positive");
  require(shard.main_grad_bytes > 0, field("main_grad_bytes", shard.main_grad_bytes) + " must be positive");
  const std::int64_t t = shard.tensor;
  rule(tensor_divides_heads(t, model.heads), "");
  rule(tensor_divides_kv_heads(t, kv), "");
  rule(tensor_divides_ffn(t, model.ffn_hidden), "");
  // Sequence parallelism splits the sequence dimension outside the tensor-parallel regions.
  rule(sequence_parallel_divides_sequence(shard.sequence_parallel, t, shard.sequence), "");

  Shape x;
  x.gpt = model.family == Family::GPT;
  x.b = shard.micro_batch;
  x.s = shard.sequence;
  x.h = model.hidden;
  x.heads = model.heads;
  x.kv_heads = kv;
  x.head_dim = model.hidden / model.heads;
  x.ffn = model.ffn_hidden;
  x.t = t;
  x.heads_shard = model.heads / t;
  x.kv_shard = kv / t;
  x.ffn_shard = model.ffn_hidden / t;
  x.vocab_shard = (model.vocab + t - 1) / t;
  x.sp = shard.sequence_parallel;
  x.e = static_cast<double>(shard.bytes_per_element);
  x.li = shard.fp8_linear_inputs ? 1.0 : x.e;
  x.g = static_cast<double>(shard.main_grad_bytes);
  x.fused_accumulation = shard.gradient_accumulation_fusion;
  return x;
}

Op make_gemm(std::string name, ComputeClass cls, const GemmDims& dims, std::int64_t params, double e) {
  Op op;
  op.name = std::move(name);
  op.cls = cls;
  op.gemm = dims;
  const double batch = static_cast<double>(dims.batch);
  const double m = static_cast<double>(dims.m);
  const double n = static_cast<double>(dims.n);
  const double k = static_cast<double>(dims.k);
  op.fwd_flops = 2 * batch * m * n * k;
  if (cls == ComputeClass::GEMM) {
    op.bwd_input_flops = op.fwd_flops;
    op.bwd_weight_flops = op.fwd_flops;
  } else {
    op.bwd_input_flops = 2 * op.fwd_flops;  // gradients w.r.t. both inputs, no weights
  }
  op.fwd_bytes = e * batch * (m * k + k * n + m * n);
  op.bwd_bytes = 2 * op.fwd_bytes;
  op.params = params;
  op.fwd_kernels = 1;
  op.bwd_kernels = 2;  // input gradient and weight (or second input's) gradient
  return op;
}

Op make_weight_gemm(std::string name, const GemmDims& dims, std::int64_t params, const Shape& x) {
  Op op = make_gemm(std::move(name), ComputeClass::GEMM, dims, params, x.e);
  const double weights = static_cast<double>(dims.batch) * static_cast<double>(dims.n) * static_cast<double>(dims.k);
  if (x.fused_accumulation) op.wgrad_accumulate_bytes = (2 * x.g - x.e) * weights;
  else op.wgrad_add_bytes = (2 * x.g + x.e) * weights;
  return op;
}

Op make_elementwise(std::string name, double fwd_bytes, double bwd_bytes, double activation_bytes,
                    std::int64_t params, int fwd_kernels, int bwd_kernels) {
  Op op;
  op.fwd_kernels = fwd_kernels;
  op.bwd_kernels = bwd_kernels;
  op.name = std::move(name);
  op.cls = ComputeClass::ELEMENTWISE;
  op.fwd_bytes = fwd_bytes;
  op.bwd_bytes = bwd_bytes;
  op.activation_bytes = activation_bytes;
  op.params = params;
  return op;
}

}  // namespace detail

namespace {

using detail::make_elementwise;
using detail::make_gemm;
using detail::make_weight_gemm;
using detail::Shape;

constexpr double MASK_BYTES = 1;      // dropout masks are bytes (Korthikanti)
constexpr double TOKEN_ID_BYTES = 8;  // int64 token ids
constexpr double FP32_BYTES = 4;      // cross-entropy keeps its softmax in fp32
// PyTorch's CUDA embedding backward takes a direct path (one kernel over the ids) for at
// most this many ids and a sort-and-segment path above it (aten/src/ATen/native/cuda/
// Embedding.cu, embedding_dense_backward_cuda: `num_indices <= 3072`).
constexpr std::int64_t EMBEDDING_DIRECT_BACKWARD_MAX_IDS = 3072;

// A fused norm (apex FusedLayerNorm / FusedRMSNorm, which Megatron-LM uses) over `elems`
// elements of a [*, h] tensor; saves its input and its per-row fp32 statistics for backward.
//  fwd, 1 kernel: read x, γ(,β); write y and the statistics (LayerNorm mean and 1/σ, RMSNorm
//    1/rms: 8 or 4 bytes per row).
//  bwd, 3 kernels (apex layer_norm_cuda_kernel.cu: cuComputePartGradGammaBeta,
//    cuComputeGradGammaBeta, cuComputeGradInput): the partial parameter gradients and the
//    input gradient each read dy, x and the statistics; read γ; write dx and dγ(,dβ).
Op norm_op(std::string name, const Shape& x, double elems) {
  const double p = static_cast<double>(x.norm_params());
  const double h = static_cast<double>(x.h);
  const double rows = elems / h;
  const double stats = (x.gpt ? 2 : 1) * FP32_BYTES * rows;
  const double fwd = x.e * (2 * elems + p) + stats;
  const double bwd = x.e * (5 * elems + h + p) + 2 * stats;
  // Korthikanti counts the input; the per-row statistics are left out of activations.
  return make_elementwise(std::move(name), fwd, bwd, x.e * elems, x.norm_params(), 1, 3);
}

// The residual add after a row-parallel GEMM. GPT: Megatron's fused bias-dropout-add (the
// row-parallel GEMM skips its bias, jit-fused bias_dropout_add_fused_train), mask kept.
Op residual_op(std::string name, const Shape& x) {
  const double n = x.rep_elems();
  const double h = static_cast<double>(x.h);
  // Backward accumulates the branch gradient into the residual stream's (autograd sums
  // the two uses of the layer input): read two, write one, one kernel.
  const double accumulate = 3 * x.e * n;
  if (x.gpt) {
    // fwd, 1 kernel: read x, bias, residual; write y and the mask.
    // bwd, 3 kernels: dropout backward (read dy, mask; write dx); the bias gradient, a
    // reduction over tokens (read dx, write h); the accumulation.
    return make_elementwise(std::move(name), n * (3 * x.e + MASK_BYTES) + x.e * h,
                            n * (2 * x.e + MASK_BYTES) + x.e * (n + h) + accumulate, MASK_BYTES * n, 0, 1, 3);
  }
  return make_elementwise(std::move(name), 3 * x.e * n, accumulate, 0, 0, 1, 1);
}

Op with_boundary(Op op, TpBoundary boundary, const Shape& x) {
  op.tp_boundary = boundary;
  // The full [b, s, h] activation: what the all-reduce moves, or what the all-gather /
  // reduce-scatter assembles with sequence parallelism.
  op.tp_comm_bytes = x.e * x.full_elems();
  return op;
}

// PyTorch's dense embedding backward plus Megatron's accumulation into main_grad, for `ids`
// looked-up ids whose gradient rows are the n = ids·h elements of dY, into a table of
// `table` elements (e-byte values, 8-byte ids, fp32 partial sums, g-byte main_grad):
//  - embedding_dense_backward_cuda (aten/src/ATen/native/cuda/Embedding.cu) returns a dense
//    gradient of the whole table, zero-filled first (at::zeros): e·table, 1 kernel. At most
//    3072 ids, one kernel reads the ids and dY and adds the rows
//    (embedding_backward_feature_kernel): 8·ids + 2e·n, 1 kernel. Above
//    (EmbeddingBackwardKernel.cu, embedding_backward_cuda_kernel): the positions (arange,
//    write 8·ids) and a radix sort of (id, position) pairs counted as one pass (read and
//    write 16·ids); four bookkeeping kernels over the sorted ids (unique_by_key, partials
//    per segment, their scan, partial-segment offsets; their id-sized arrays left out);
//    compute_grad_weight reads the positions and dY and writes fp32 partial sums
//    (8·ids + e·n + 4·n, at most one partial sum per id: distinct ids, an upper bound);
//    sum_and_scatter reads them and writes the rows (4·n + e·n): 48·ids + (2e + 8)·n in 8
//    kernels;
//  - Megatron's backward hook adds that gradient into the parameter's main_grad buffer
//    (megatron/core/distributed/distributed_data_parallel.py, _make_backward_post_hook:
//    param.main_grad.add_(param.grad)), every micro-batch: read g, read e, write g bytes
//    per table element: (2g + e)·table, 1 kernel.
struct EmbeddingBackward {
  double bytes = 0;
  int kernels = 0;
};
EmbeddingBackward embedding_backward(double ids, double n, double table, double e, double g) {
  const bool direct = ids <= static_cast<double>(EMBEDDING_DIRECT_BACKWARD_MAX_IDS);
  const double rows =
      direct ? TOKEN_ID_BYTES * ids + 2 * e * n : 6 * TOKEN_ID_BYTES * ids + (2 * e + 2 * FP32_BYTES) * n;
  return {e * table + rows + (2 * g + e) * table, 1 + (direct ? 1 : 8) + 1};
}

}  // namespace

Layer transformer_layer(const ModelConfig& model, const ShardSpec& shard) {
  const Shape x = detail::make_shape(model, shard);
  const std::int64_t tokens = x.b * x.s;  // GEMM rows: TP regions always see the full sequence
  const double e = x.e;
  const double rep = x.rep_elems();
  // Columns of the fused QKV GEMM on one shard: its query heads plus its K and V groups.
  const std::int64_t qkv_cols = (x.heads_shard + 2 * x.kv_shard) * x.head_dim;
  const std::int64_t attn_cols = x.heads_shard * x.head_dim;  // h/t
  const std::int64_t fc1_cols = x.gpt ? x.ffn_shard : 2 * x.ffn_shard;  // SwiGLU: gate and up
  // One attention-score tensor per (sample, local head): b·(a/t)·s² elements.
  const double scores = static_cast<double>(x.b * x.heads_shard) * static_cast<double>(x.s) *
                        static_cast<double>(x.s);
  const std::int64_t attn_batch = x.b * x.heads_shard;
  const std::int64_t bias = x.gpt ? 1 : 0;

  Layer layer;
  layer.name = "transformer";
  auto& ops = layer.ops;
  ops.reserve(24);  // at most about 20 kernels (the unfused attention path): one allocation per layer built

  ops.push_back(norm_op(x.gpt ? "ln1" : "attn_norm", x, rep));

  {
    Op qkv = make_weight_gemm("qkv", {1, tokens, qkv_cols, x.h}, x.h * qkv_cols + bias * qkv_cols, x);
    // Its input (replicated, or sequence-split with SP) and the Q, K, V the attention core keeps.
    qkv.activation_bytes = x.li * rep + e * static_cast<double>(tokens * qkv_cols);
    qkv.fp8_linear = true;
    ops.push_back(with_boundary(std::move(qkv), TpBoundary::ENTER, x));
  }

  if (!x.gpt) {
    // Rotary embedding of Q and K, Megatron-Core's fused kernel (--apply-rope-fusion, on by
    // default): one kernel for Q and one for K in each direction, read and write each once.
    // Linear, so backward needs only the cos/sin tables (their s·d reads are left out).
    const double qk = static_cast<double>(tokens * (x.heads_shard + x.kv_shard) * x.head_dim);
    ops.push_back(make_elementwise("rope", 2 * e * qk, 2 * e * qk, 0, 0, 2, 2));
  }

  if (shard.flash_attention) {
    // One fused kernel: QKᵀ and scores×V FLOPs (4·b·s²·h/t forward), reading Q, K, V and
    // writing O; it keeps only the fp32 log-sum-exp per (sample, head, token). Its backward
    // recomputes QKᵀ: 2.5× the forward's FLOPs, of which 2× are model FLOPs.
    Op op = make_gemm("flash_attention", ComputeClass::FUSED_ATTENTION, {attn_batch, x.s, x.s, x.head_dim}, 0, e);
    const double fwd = 2 * op.fwd_flops;  // make_gemm counted one of the two matmuls
    op.fwd_flops = fwd;
    op.bwd_input_flops = 2 * fwd;
    op.bwd_weight_flops = 0;
    op.bwd_extra_flops = 0.5 * fwd;
    // A decoder's mask is causal: the kernel skips the score tiles above the diagonal, and
    // the flash-attention benchmark (benchmarks/benchmark_flash_attention.py, flops())
    // counts a causal run as half the non-causal FLOPs.
    if (shard.causal) {
      op.executed_fraction = 0.5;
      op.causal = true;
    }
    // GPT applies attention dropout (Megatron-LM's default 0.1) inside the fused kernel, as
    // the unfused path has its attn_dropout op; Llama-style models train without it.
    op.dropout = x.gpt;
    // The attention curve's unit: fwd + bwd FLOPs of one (sequence, head), non-causal.
    op.attention_curve_flops = 3.5 * 4 * static_cast<double>(x.s) * static_cast<double>(x.s) *
                               static_cast<double>(x.head_dim);
    const double qkv_elems = static_cast<double>(tokens * qkv_cols), o_elems = static_cast<double>(tokens * attn_cols);
    const double lse = FP32_BYTES * static_cast<double>(attn_batch) * static_cast<double>(x.s);
    const double q_elems = static_cast<double>(tokens * attn_cols);
    // fwd, 1 kernel: read Q, K, V; write O and the log-sum-exp.
    op.fwd_bytes = e * (qkv_elems + o_elems) + lse;
    // bwd, 3 kernels (FlashAttention-2's backward: a pre-pass D = rowsum(dO ∘ O), the main
    // kernel, the conversion of dQ from its fp32 accumulator): the pre-pass reads dO, O and
    // writes D; the main kernel reads Q, K, V, dO, the log-sum-exp and D, writes dK, dV and
    // accumulates dQ in fp32 (read + write); the conversion reads it and writes dQ.
    op.bwd_bytes = e * 2 * o_elems + lse + e * (qkv_elems + o_elems) + 2 * lse + e * (qkv_elems - q_elems) +
                   2 * FP32_BYTES * q_elems + FP32_BYTES * q_elems + e * q_elems;
    op.fwd_kernels = 1;
    op.bwd_kernels = 3;
    op.activation_bytes = 4.0 * static_cast<double>(attn_batch) * static_cast<double>(x.s);
    op.selective_recompute = true;  // Megatron's "core_attn" recompute reruns the fused kernel
    ops.push_back(std::move(op));
  } else {
    {
      Op op = make_gemm("attn_scores", ComputeClass::BATCHED_GEMM, {attn_batch, x.s, x.s, x.head_dim}, 0, e);
      op.selective_recompute = true;
      ops.push_back(std::move(op));
    }
    {
      // Megatron's fused scaled masked softmax, 1 kernel each way. fwd: read scores, write
      // probabilities. bwd: read dP and P, write dS. The causal (upper-triangular) kernel
      // reads a row's first i + 1 entries only and writes the rest as zeros: (s + 1)/(2s) of
      // each read (megatron/fused_kernels/scaled_upper_triang_masked_softmax.h: the loads
      // are guarded by element_index < local_seq = row + 1, the stores are not).
      const double read = shard.causal ? (static_cast<double>(x.s) + 1) / (2 * static_cast<double>(x.s)) : 1.0;
      Op op = make_elementwise("softmax", e * scores * (read + 1), e * scores * (2 * read + 1), e * scores, 0, 1, 1);
      op.selective_recompute = true;
      ops.push_back(std::move(op));
    }
    if (x.gpt) {
      // fwd: read P, write the dropped P and the mask. bwd: read the gradient and the mask, write.
      Op op = make_elementwise("attn_dropout", scores * (2 * e + MASK_BYTES), scores * (2 * e + MASK_BYTES),
                               MASK_BYTES * scores, 0, 1, 1);
      op.selective_recompute = true;
      ops.push_back(std::move(op));
    }
    {
      Op op = make_gemm("attn_over_v", ComputeClass::BATCHED_GEMM, {attn_batch, x.s, x.head_dim, x.s}, 0, e);
      // GPT keeps the dropout output; without dropout its input is softmax's saved output.
      op.activation_bytes = x.gpt ? e * scores : 0;
      op.selective_recompute = true;
      ops.push_back(std::move(op));
    }
    {
      // Layout copies of the unfused core (Megatron-LM's CoreAttention): forward, the
      // context [b·a/t, s, d] is permuted back to [s, b, h/t] (.contiguous(): read and write
      // it); backward, the same permute of its gradient, and the backward of the split of
      // the fused QKV output into Q, K, V, which writes their gradients into one tensor
      // (read and write the QKV output's size).
      const double o_elems = static_cast<double>(tokens * attn_cols);
      const double qkv_elems = static_cast<double>(tokens * qkv_cols);
      Op op = make_elementwise("attn_layout", 2 * e * o_elems, 2 * e * (o_elems + qkv_elems), 0, 0, 1, 2);
      op.selective_recompute = true;
      ops.push_back(std::move(op));
    }
  }
  {
    // Row-parallel: the bias is added after the reduction, so every shard holds all of it.
    Op proj = make_weight_gemm("proj", {1, tokens, x.h, attn_cols}, attn_cols * x.h + bias * x.h, x);
    proj.activation_bytes = x.li * static_cast<double>(tokens * attn_cols);
    proj.fp8_linear = true;
    ops.push_back(with_boundary(std::move(proj), TpBoundary::EXIT, x));
  }
  ops.push_back(residual_op(x.gpt ? "proj_dropout" : "attn_residual", x));

  ops.push_back(norm_op(x.gpt ? "ln2" : "mlp_norm", x, rep));
  {
    Op fc1 = make_weight_gemm("fc1", {1, tokens, fc1_cols, x.h}, x.h * fc1_cols + bias * fc1_cols, x);
    fc1.activation_bytes = x.li * rep;
    fc1.fp8_linear = true;
    ops.push_back(with_boundary(std::move(fc1), TpBoundary::ENTER, x));
  }
  {
    const double inner = static_cast<double>(tokens * x.ffn_shard);
    const double bias_elems = static_cast<double>(x.ffn_shard);
    if (x.gpt) {
      // Megatron's jit-fused bias-GeLU (fc1 skips its bias); keeps its input.
      // fwd, 1 kernel: read x and the bias, write y.
      // bwd, 2 kernels: bias_gelu_back reads dy, x and the bias and writes dx; the bias
      // gradient is a reduction of dx over tokens (read dx, write ffn/t).
      ops.push_back(make_elementwise("gelu", e * (2 * inner + bias_elems), e * (4 * inner + 2 * bias_elems),
                                     e * inner, 0, 1, 2));
    } else {
      // SwiGLU on [gate, up] (2·ffn/t wide) → ffn/t, Megatron's jit-fused swiglu, 1 kernel
      // each way: fwd read both halves, write y; bwd read dy and both halves, write both
      // halves' gradients. Keeps both halves of its input.
      ops.push_back(make_elementwise("swiglu", 3 * e * inner, 5 * e * inner, 2 * e * inner, 0, 1, 1));
    }
  }
  {
    Op fc2 = make_weight_gemm("fc2", {1, tokens, x.h, x.ffn_shard}, x.ffn_shard * x.h + bias * x.h, x);
    fc2.activation_bytes = x.li * static_cast<double>(tokens * x.ffn_shard);
    fc2.fp8_linear = true;
    ops.push_back(with_boundary(std::move(fc2), TpBoundary::EXIT, x));
  }
  ops.push_back(residual_op(x.gpt ? "mlp_dropout" : "mlp_residual", x));
  return layer;
}

Layer embedding_layer(const ModelConfig& model, const ShardSpec& shard) {
  const Shape x = detail::make_shape(model, shard);
  const bool learned_positions = x.gpt && model.max_positions > 0;
  if (learned_positions && shard.sequence > model.max_positions) {
    throw std::invalid_argument("models: sequence=" + std::to_string(shard.sequence) + " exceeds max_positions=" +
                                std::to_string(model.max_positions) + " of the learned position table");
  }
  const double e = x.e;
  const double tokens = static_cast<double>(x.b * x.s);
  const double full = x.full_elems();
  const double rep = x.rep_elems();

  Layer layer;
  layer.name = "embedding";
  {
    // Vocabulary-parallel gather: each shard looks up the ids in its vocabulary range and
    // zeroes the rest; the partial sums are reduced over the tensor group (EXIT).
    // Backward scatter-adds dY into the table rows, so the token ids are kept
    // (Korthikanti's first-stage extra 8·s·b). Megatron's VocabParallelEmbedding runs 3
    // kernels forward (mask and shift the ids, the lookup, zero the rows of other shards).
    //
    // Backward, per micro-batch: with t > 1 the backward of `output_parallel[input_mask, :]
    // = 0` (Megatron-LM megatron/core/tensor_parallel/layers.py,
    // VocabParallelEmbedding.forward), dY with the other shards' rows zeroed, read and
    // written: 2e·b·s·h, 1 kernel; then embedding_backward over the b·s ids into the
    // V/t × h shard (zero-fill, rows, main_grad).
    const double table = static_cast<double>(x.vocab_shard) * static_cast<double>(x.h);
    const EmbeddingBackward back =
        embedding_backward(tokens, full, table, e, static_cast<double>(shard.main_grad_bytes));
    const double bwd = (x.t > 1 ? 2 * e * full : 0) + back.bytes;
    const int bwd_kernels = (x.t > 1 ? 1 : 0) + back.kernels;
    Op op = make_elementwise("word_embedding", TOKEN_ID_BYTES * tokens + 2 * e * full, bwd, TOKEN_ID_BYTES * tokens,
                             x.vocab_shard * x.h, 3, bwd_kernels);
    layer.ops.push_back(with_boundary(std::move(op), TpBoundary::EXIT, x));
  }
  if (learned_positions) {
    // Replicated table; fwd: read x and the s rows, write y. Backward: an nn.Embedding of
    // max_positions rows looked up with the b·s position ids (Megatron-LM
    // LanguageModelEmbedding.forward adds it before any scatter to the sequence-parallel
    // region), so embedding_backward over b·s ids and dY's b·s·h elements into the whole
    // max_positions × h table (zero-fill, rows, main_grad).
    const double rows = x.rep_tokens() / static_cast<double>(x.b) * static_cast<double>(x.h);
    const EmbeddingBackward back =
        embedding_backward(tokens, full, static_cast<double>(model.max_positions) * static_cast<double>(x.h), e,
                           static_cast<double>(shard.main_grad_bytes));
    layer.ops.push_back(make_elementwise("position_embedding", e * (2 * rep + rows), back.bytes, 0,
                                         model.max_positions * x.h, 2, back.kernels));
  }
  if (x.gpt) {
    layer.ops.push_back(make_elementwise("embedding_dropout", rep * (2 * e + MASK_BYTES),
                                         rep * (2 * e + MASK_BYTES), MASK_BYTES * rep, 0, 1, 1));
  }
  return layer;
}

Layer head_layer(const ModelConfig& model, const ShardSpec& shard) {
  const Shape x = detail::make_shape(model, shard);
  const double e = x.e;
  const double rep = x.rep_elems();
  const std::int64_t tokens = x.b * x.s;

  Layer layer;
  layer.name = "head";
  layer.ops.push_back(norm_op("final_norm", x, rep));
  {
    // Column-parallel over the vocabulary. Tied: the weight is the word embedding's, held
    // (and counted) by the embedding layer; its gradient is still computed here, and added
    // into the embedding's main_grad.
    const std::int64_t params = model.tied_embedding ? 0 : x.vocab_shard * x.h;
    Op logits = make_weight_gemm("logits", {1, tokens, x.vocab_shard, x.h}, params, x);
    // Its input: 2sbh, /t with sequence parallelism. With the final norm's input this is
    // Korthikanti's 4sbh/t of "output layer + cross-entropy" (stated for SP).
    logits.activation_bytes = e * rep;
    layer.ops.push_back(with_boundary(std::move(logits), TpBoundary::ENTER, x));
  }
  {
    // Megatron-LM's vocabulary-parallel cross-entropy (tensor_parallel/cross_entropy.py,
    // the default without --cross-entropy-loss-fusion) on the logits cast to fp32, pass by
    // pass over the [tokens, V/t] logits L (4 = fp32):
    //   fwd, 6 kernels: cast (read e, write 4), max (read 4), subtract the max in place
    //     (read 4, write 4), exp in place (4 + 4), sum (read 4), divide by the sum in place
    //     (4 + 4): (e + 36)·L; the softmax it leaves is kept for backward, 4·L.
    //   bwd, 3 kernels: subtract one at the targets (b·s elements, left out), scale by the
    //     loss gradient in place (4 + 4), cast back for the logits GEMM (read 4, write e):
    //     (e + 12)·L.
    // (Its three all-reduces of b·s scalars over the tensor group are too small to mark.)
    const double logits = static_cast<double>(tokens * x.vocab_shard);
    layer.ops.push_back(make_elementwise("cross_entropy", (e + 9 * FP32_BYTES) * logits,
                                         (e + 3 * FP32_BYTES) * logits, FP32_BYTES * logits, 0, 6, 3));
  }
  return layer;
}

}  // namespace trainsim::models
