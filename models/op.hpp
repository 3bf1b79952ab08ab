#pragma once
// An Op is one kernel-level operation of a layer, already sharded for the tensor-parallel
// degree it was built with. Everything is a function of (micro-batch, sequence, parallel
// degrees), never of hardware.
#include <cstdint>
#include <string>
#include <vector>

namespace trainsim::models {

enum class ComputeClass : std::uint8_t {
  GEMM,          // dense matrix multiply (weights × activations)
  BATCHED_GEMM,  // unfused attention-core matmuls (QKᵀ, scores × V): one strided-batched cuBLAS call
  FUSED_ATTENTION,  // the attention core as one fused kernel (FlashAttention, cuDNN)
  ELEMENTWISE,   // memory-bound: norms, activations, softmax, dropout, residual adds
};

// Where a Megatron tensor-parallel region begins or ends around this op. ENTER is the
// "f" operator before a column-parallel GEMM (identity forward, all-reduce backward;
// with sequence parallelism all-gather forward, reduce-scatter backward). EXIT is the
// "g" operator after a row-parallel GEMM (all-reduce forward, identity backward; with
// sequence parallelism reduce-scatter forward, all-gather backward).
enum class TpBoundary : std::uint8_t { NONE, ENTER, EXIT };

struct GemmDims {
  std::int64_t batch = 1;  // independent GEMMs of the same shape (heads × micro-batch)
  std::int64_t m = 0, n = 0, k = 0;
  bool operator==(const GemmDims&) const = default;
};

struct Op {
  std::string name;
  ComputeClass cls = ComputeClass::ELEMENTWISE;
  double fwd_flops = 0;
  double bwd_input_flops = 0;   // gradient w.r.t. the op's input
  double bwd_weight_flops = 0;  // gradient w.r.t. its weights (zero-bubble schedules split these)
  // Work the backward kernel does beyond the model FLOPs above (FlashAttention's backward
  // recomputes QKᵀ): it costs time but is not counted in MFU or HFU.
  double bwd_extra_flops = 0;
  double fwd_bytes = 0;         // HBM bytes read + written in forward
  double bwd_bytes = 0;         // HBM bytes read + written in backward
  double activation_bytes = 0;  // saved in forward for backward (Korthikanti's accounting)
  // HBM bytes the weight-gradient GEMM's epilogue moves beyond writing its result, adding it
  // into the parameter's main_grad buffer instead (Megatron-LM's gradient-accumulation
  // fusion, on by default: Transformer Engine's fuse_wgrad_accumulation, apex's
  // fused_weight_gradient_mlp_cuda): it reads and writes the g-byte buffer where a fresh
  // result would write e bytes, (2g − e) per weight element, every micro-batch.
  double wgrad_accumulate_bytes = 0;
  // Without that fusion: the separate add of the fresh e-byte weight gradient into the
  // g-byte main_grad (Megatron-LM's backward hook, main_grad.add_(grad)), which reads both
  // and writes main_grad, (2g + e) per weight element, every micro-batch; one launch.
  double wgrad_add_bytes = 0;
  std::int64_t params = 0;      // parameters held by this shard
  GemmDims gemm;                // for GEMM and BATCHED_GEMM
  bool selective_recompute = false;  // part of the attention core that selective recompute redoes
  TpBoundary tp_boundary = TpBoundary::NONE;
  double tp_comm_bytes = 0;     // full (unsharded-sequence) tensor that the boundary communicates
  // Kernel launches of the forward and of the backward; each costs the profile's per-kernel
  // overhead. (A weight GEMM's backward is its two GEMMs, one launch each.)
  int fwd_kernels = 1;
  int bwd_kernels = 1;
  // Share of the FLOPs above that the kernels execute: a causal fused attention skips the
  // score tiles above the diagonal, about half (model FLOPs for MFU stay the full count,
  // as Narayanan et al.'s formula has them).
  double executed_fraction = 1.0;
  // FUSED_ATTENTION: where the profile's attention curve is read, in the unit it was
  // measured in: forward + backward FLOPs of one (sequence, head) as the flash-attention
  // benchmark counts them non-causal, 3.5 · 4·s²·d.
  double attention_curve_flops = 0;
  // A linear layer of the transformer block (QKV, projection, MLP): the GEMMs Transformer
  // Engine runs in FP8 in an FP8 run. Attention and the output layer stay in BF16.
  bool fp8_linear = false;
  // FUSED_ATTENTION with a causal mask: read on the profile's causal attention curve.
  bool causal = false;
  // FUSED_ATTENTION applying attention dropout in the kernel (GPT: Megatron-LM's default 0.1).
  bool dropout = false;
  bool operator==(const Op&) const = default;
};

struct Layer {
  std::string name;  // "transformer", "embedding", "head"
  std::vector<Op> ops;

  double fwd_flops() const;
  double bwd_flops() const;  // input + weight gradients
  double activation_bytes() const;
  std::int64_t params() const;
};

}  // namespace trainsim::models
