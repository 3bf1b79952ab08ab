#pragma once
// Model description: the shape of a transformer and the layers of ops it produces.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/op.hpp"

namespace trainsim::models {

enum class Family : std::uint8_t { GPT, LLAMA };

struct ModelConfig {
  bool operator==(const ModelConfig&) const = default;
  std::string name;
  Family family = Family::GPT;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;      // GQA; equals heads for multi-head attention
  std::int64_t ffn_hidden = 0;    // MLP inner size (4·hidden for GPT)
  std::int64_t vocab = 0;         // padded vocabulary
  std::int64_t max_positions = 0; // learned position table size (GPT); 0 with RoPE
  bool tied_embedding = true;
};

// How one replica's slice of work is shaped: micro-batch b, sequence s, tensor degree t.
struct ShardSpec {
  bool operator==(const ShardSpec&) const = default;
  std::int64_t micro_batch = 1;
  std::int64_t sequence = 0;
  std::int64_t tensor = 1;
  bool sequence_parallel = false;
  // The attention core as one fused kernel (FlashAttention, Dao et al. 2022; cuDNN fused
  // attention): no s² scores in HBM, nothing of size s² kept for backward (Korthikanti's
  // 5·a·s²·b term is gone). Off: the unfused QKᵀ, softmax, dropout, scores×V of
  // Megatron-LM before 2022, which Korthikanti's formulas describe.
  bool flash_attention = false;
  // A decoder's causal mask: a fused attention kernel skips the tiles above the diagonal.
  // (The unfused path computes every score and masks them in the softmax.)
  bool causal = true;
  int bytes_per_element = 2;  // 16-bit activations and weights
  // Transformer Engine's FP8 linear layers keep the input they save for the weight
  // gradient as the FP8 copy (or its FP8 transpose) cast for the forward GEMM, 1 byte per
  // element instead of the 16-bit input (transformer_engine/pytorch/module/linear.py,
  // _Linear.forward: saved_inputmat = inputmat / inputmat_t under fp8, inputmat_no_fp8 otherwise).
  bool fp8_linear_inputs = false;
  // The element size of the gradient buffer (Megatron's param.main_grad) that each
  // parameter's gradient is added into after every micro-batch's backward: fp32 with BF16
  // (--accumulate-allreduce-grads-in-fp32, forced on by --bf16), the 16-bit parameter dtype
  // with FP16 (megatron/training/arguments.py).
  int main_grad_bytes = 4;
  // Megatron-LM's gradient-accumulation fusion (its default; off with
  // --no-gradient-accumulation-fusion, NeMo's gradient_accumulation_fusion False): a linear
  // layer's weight-gradient GEMM adds its product into main_grad. Off, the GEMM writes a
  // fresh 16-bit weight gradient and the data-parallel hook adds it into main_grad with a
  // kernel of its own (Op::wgrad_add_bytes).
  bool gradient_accumulation_fusion = true;
};

// One transformer layer, sharded per `shard`.
Layer transformer_layer(const ModelConfig& model, const ShardSpec& shard);
// Token + position embedding (vocabulary-parallel over the tensor group), with dropout.
Layer embedding_layer(const ModelConfig& model, const ShardSpec& shard);
// Final norm, output projection to the vocabulary (tied or not) and cross-entropy.
Layer head_layer(const ModelConfig& model, const ShardSpec& shard);

// The three layers above for one (model, shard), built once per thread and kept while the
// same few shapes recur (every stage of a program, and a sweep's variants, ask for them).
struct LayerSet {
  Layer transformer, embedding, head;
};
std::shared_ptr<const LayerSet> shared_layers(const ModelConfig& model, const ShardSpec& shard);

// Unsharded parameter count of the whole model (embedding, layers, final norm, head).
std::int64_t total_params(const ModelConfig& model);
// Forward + backward FLOPs of one iteration over `global_batch` sequences without
// recomputation (the "model FLOPs" of MFU), summed from the ops.
double model_flops_per_iteration(const ModelConfig& model, std::int64_t global_batch, std::int64_t sequence);

}  // namespace trainsim::models
