#pragma once
// Private to models/: the derived, validated dimensions that the layer builders share, and
// the two op constructors (GEMM-like, element-wise) that fix the FLOP and byte rules in
// one place.
//
// Byte rule (Op::fwd_bytes / Op::bwd_bytes), stated once so that every op follows it:
//  * GEMM and BATCHED_GEMM: forward reads both operands and writes the result once,
//    e·(m·k + k·n + m·n) per batch element (e = ShardSpec::bytes_per_element). Backward
//    runs two GEMMs of the same three shapes (input gradient: dY·Wᵀ; weight gradient, or
//    for the attention core the second input's gradient: Xᵀ·dY), so bwd_bytes = 2·fwd_bytes.
//    Bias adds are fused into the GEMM epilogue and not counted. A weight GEMM's weight
//    gradient is added into the g-byte main_grad buffer (read and written) rather than
//    written in e bytes: Op::wgrad_accumulate_bytes = (2g − e)·n·k, apart from bwd_bytes
//    because it was measured to add time rather than join the roofline. Without the
//    gradient-accumulation fusion the GEMM writes its e bytes (in bwd_bytes) and a separate
//    kernel adds them into main_grad: Op::wgrad_add_bytes = (2g + e)·n·k.
//  * Element-wise: each kernel the framework launches reads its inputs (and parameters)
//    and writes its outputs once; where Megatron-LM fuses (bias-GeLU, bias-dropout-add,
//    scaled masked softmax, LayerNorm, SwiGLU, rotary) that is one pass, where it does not
//    (cross-entropy, bias gradients, the residual stream's gradient sum) every pass counts.
//    Each op says its passes in a comment beside its byte count. Activations and parameters are e bytes per element,
//    dropout masks 1 byte, token ids 8 bytes, cross-entropy's softmax 4 bytes (fp32).
//
// FLOP rule: only GEMMs count (2·m·n·k per batch element). Element-wise ops are memory
// bound and count 0 FLOPs, as in Narayanan et al.'s formulas. A weight GEMM's backward is
// input-gradient = weight-gradient = forward; an attention-core matmul has no weights, so
// its backward (gradients w.r.t. both inputs) is 2·forward, all input-gradient. Either way
// backward = 2·forward, the assumption behind the 72·B·s·l·h²(…) model-FLOP formula.
#include <cstdint>
#include <string>

#include "models/model.hpp"
#include "models/op.hpp"

namespace trainsim::models::detail {

struct Shape {
  bool gpt = true;  // GPT: LayerNorm, biases, GeLU, dropout, learned positions.
                    // LLAMA: RMSNorm, no biases, SwiGLU, RoPE, no dropout (Llama trains without).
  std::int64_t b = 1, s = 1, h = 1;
  std::int64_t heads = 1, kv_heads = 1, head_dim = 1;
  std::int64_t ffn = 1;
  std::int64_t t = 1;
  std::int64_t heads_shard = 1, kv_shard = 1, ffn_shard = 1;
  std::int64_t vocab_shard = 1;  // ceil(V/t): Megatron pads the vocabulary so t divides it
  bool sp = false;
  double e = 2;  // bytes per activation / weight element
  double li = 2;  // bytes per element of the input a linear layer saves (1: FP8, ShardSpec)
  double g = 4;  // bytes per element of the main_grad buffer weight gradients are added into
  bool fused_accumulation = true;  // ShardSpec::gradient_accumulation_fusion
  // Elements of one [b, s, h] tensor as an element-wise op outside the tensor-parallel
  // region sees it: replicated over the tensor group, or split by sequence parallelism.
  double rep_tokens() const { return sp ? static_cast<double>(b * s) / static_cast<double>(t) : static_cast<double>(b * s); }
  double rep_elems() const { return rep_tokens() * static_cast<double>(h); }
  double full_elems() const { return static_cast<double>(b * s * h); }
  std::int64_t norm_params() const { return gpt ? 2 * h : h; }  // LayerNorm γ,β vs RMSNorm γ
};

// Validates (model, shard) and derives the shape; throws std::invalid_argument naming the
// offending field. Scenario validation should have caught these first; this is the guard
// for callers that build models directly.
Shape make_shape(const ModelConfig& model, const ShardSpec& shard);

// A GEMM (weights × activations, cls GEMM) or an attention-core matmul (no weights,
// cls BATCHED_GEMM), with FLOPs, bytes and dims from the rules above.
Op make_gemm(std::string name, ComputeClass cls, const GemmDims& dims, std::int64_t params, double e);
// A linear layer's GEMM (cls GEMM, Y = X·W with W of n × k elements) whose weight gradient
// is accumulated into main_grad, per the byte rule above.
Op make_weight_gemm(std::string name, const GemmDims& dims, std::int64_t params, const Shape& x);

// fwd_kernels / bwd_kernels: the launches each direction makes (Op::fwd_kernels).
Op make_elementwise(std::string name, double fwd_bytes, double bwd_bytes, double activation_bytes,
                    std::int64_t params, int fwd_kernels, int bwd_kernels);

}  // namespace trainsim::models::detail
