#include "scenarios/detail/nemo_overrides.hpp"

#include <map>
#include <set>

#include <fmt/format.h>

namespace trainsim::scenarios::detail {
namespace {

// Keys that are Megatron-LM arguments under another name, the value spelled alike (a
// boolean's True/False is read as Megatron's flag is).
const std::map<std::string, std::string>& renamed() {
  static const std::map<std::string, std::string> keys = {
      {"model.tensor_model_parallel_size", "tensor-model-parallel-size"},
      {"model.pipeline_model_parallel_size", "pipeline-model-parallel-size"},
      {"model.virtual_pipeline_model_parallel_size", "virtual-pipeline-model-parallel-size"},
      {"model.sequence_parallel", "sequence-parallel"},
      {"model.micro_batch_size", "micro-batch-size"},
      {"model.global_batch_size", "global-batch-size"},
      {"model.encoder_seq_length", "seq-length"},
      {"model.num_layers", "num-layers"},
      {"model.hidden_size", "hidden-size"},
      {"model.num_attention_heads", "num-attention-heads"},
      {"model.ffn_hidden_size", "ffn-hidden-size"},
      {"model.num_query_groups", "num-query-groups"},
      {"model.max_position_embeddings", "max-position-embeddings"},
      {"model.make_vocab_size_divisible_by", "make-vocab-size-divisible-by"},
      {"model.position_embedding_type", "position-embedding-type"},
      {"model.activations_checkpoint_granularity", "recompute-granularity"},
      {"model.activations_checkpoint_method", "recompute-method"},
      {"model.activations_checkpoint_num_layers", "recompute-num-layers"},
      {"model.mcore_gpt", "use-mcore-models"},
      {"model.use_flash_attention", "use-flash-attn"},
      {"model.ub_tp_comm_overlap", "tp-comm-overlap"},
      {"model.optim.overlap_grad_sync", "overlap-grad-reduce"},
      {"model.optim.overlap_param_sync", "overlap-param-gather"},
      {"trainer.precision", "precision"},
      {"trainer.num_nodes", "nodes"},
      {"trainer.devices", "gpus-per-node"},
  };
  return keys;
}

// Keys whose null (NeMo's config files write it for "not used") is Megatron-LM's default.
const std::set<std::string>& nullable() {
  static const std::set<std::string> keys = {
      "model.virtual_pipeline_model_parallel_size", "model.activations_checkpoint_granularity",
      "model.activations_checkpoint_method", "model.activations_checkpoint_num_layers", "model.num_query_groups"};
  return keys;
}

// Keys, and key prefixes (ending in '.'), that change nothing an iteration's time depends on.
bool without_effect(const std::string& key) {
  static const std::set<std::string> keys = {
      "trainer.max_steps", "trainer.max_epochs", "trainer.max_time", "trainer.log_every_n_steps",
      "trainer.val_check_interval", "trainer.limit_val_batches", "trainer.limit_test_batches",
      "trainer.num_sanity_val_steps", "trainer.enable_checkpointing", "trainer.logger", "trainer.gradient_clip_val",
      "model.optim.lr", "model.optim.weight_decay", "model.optim.betas", "model.init_method_std", "model.seed",
      "model.hidden_dropout", "model.attention_dropout", "model.ffn_dropout", "model.layernorm_epsilon",
      "model.rotary_base", "model.rotary_percentage", "model.resume_from_checkpoint", "model.log_parameter_norm",
      "model.log_token_counts"};
  static const char* const prefixes[] = {"model.data.", "model.tokenizer.", "model.optim.sched.", "exp_manager.",
                                         "run."};
  if (keys.count(key) > 0) return true;
  for (const char* prefix : prefixes)
    if (key.starts_with(prefix)) return true;
  return false;
}

// Kernel fusions on by default in NeMo and Megatron-LM; off, each is the Megatron-LM flag
// that turns it off.
const std::map<std::string, std::string>& fusions() {
  static const std::map<std::string, std::string> keys = {
      {"model.masked_softmax_fusion", "no-masked-softmax-fusion"},
      {"model.bias_activation_fusion", "no-bias-gelu-fusion"},
      {"model.bias_dropout_add_fusion", "no-bias-dropout-fusion"},
      {"model.gradient_accumulation_fusion", "no-gradient-accumulation-fusion"},
  };
  return keys;
}

}  // namespace

NemoOverride translate_nemo(const std::string& key, const std::string& value) {
  const bool truth = value == "true" || value == "True", falsity = value == "false" || value == "False";
  const auto boolean = [&]() { return fmt::format("expected True or False, got \"{}\"", value); };
  NemoOverride o;
  if (nullable().count(key) > 0 && (value == "null" || value == "None")) {
    o.note = "Megatron-LM's default; nothing to set";
  } else if (const auto it = renamed().find(key); it != renamed().end()) {
    o.arguments = {{it->second, value}};
  } else if (key == "model.activation") {
    if (value == "swiglu" || value == "fast-swiglu") o.arguments = {{"swiglu", "true"}};
    else if (value == "gelu") o.arguments = {{"swiglu", "false"}};
    else o.error = fmt::format("expected gelu (GPT), swiglu or fast-swiglu (LLAMA), got \"{}\"", value);
  } else if (key == "model.normalization") {
    if (value == "rmsnorm") o.arguments = {{"normalization", "RMSNorm"}};
    else if (value == "layernorm") o.arguments = {{"normalization", "LayerNorm"}};
    else if (value == "layernorm1p") o.arguments = {{"normalization", "LayerNorm"}, {"apply-layernorm-1p", "true"}};
    else o.error = fmt::format("expected layernorm or layernorm1p (GPT) or rmsnorm (LLAMA), got \"{}\"", value);
  } else if (key == "model.share_embeddings_and_output_weights" || key == "model.bias") {
    // Both say the opposite of Megatron-LM's flag.
    const char* flag = key == "model.bias" ? "disable-bias-linear" : "untie-embeddings-and-output-weights";
    if (truth || falsity) o.arguments = {{flag, truth ? "false" : "true"}};
    else o.error = boolean();
  } else if (key == "model.transformer_engine") {
    if (truth || falsity) o.arguments = {{"transformer-impl", truth ? "transformer_engine" : "local"}};
    else o.error = boolean();
  } else if (key == "model.optim.name") {
    // NeMo's distributed_fused_adam shards the optimizer states over the data-parallel group
    // as Megatron-LM's distributed optimizer does; the others keep them whole.
    if (value == "distributed_fused_adam")
      o.arguments = {{"use-distributed-optimizer", "true"}, {"optimizer", "adam"}};
    else if (value == "fused_adam" || value == "adam" || value == "adamw")
      o.arguments = {{"use-distributed-optimizer", "false"}, {"optimizer", "adam"}};
    else if (value == "sgd")
      o.arguments = {{"use-distributed-optimizer", "false"}, {"optimizer", "sgd"}};
    else
      o.error = fmt::format("expected distributed_fused_adam (ZeRO-1), fused_adam, adam, adamw or sgd, got \"{}\"",
                            value);
  } else if (key == "model.optim.grad_sync_dtype") {
    if (value == "bf16") o.arguments = {{"grad-reduce-in-bf16", "true"}};
    else if (value == "fp32") o.arguments = {{"accumulate-allreduce-grads-in-fp32", "true"}};
    else o.error = fmt::format("expected bf16 or fp32, got \"{}\"", value);
  } else if (key == "model.fp8") {
    if (truth) o.arguments = {{"fp8-format", "hybrid"}};
    else if (falsity) o.note = "FP8 off: the precision is trainer.precision's";
    else o.error = boolean();
  } else if (key == "model.megatron_amp_O2") {
    if (truth)
      o.note = "fp32 main parameters and gradients beside the 16-bit weights, as trainsim models mixed precision";
    else if (falsity)
      o.error = "only True maps: without O2 the weights stay in fp32 under autocast, a memory and time trainsim "
                "does not model";
    else o.error = boolean();
  } else if (const auto fusion = fusions().find(key); fusion != fusions().end()) {
    if (truth) o.note = "fused, Megatron-LM's default, as trainsim prices it";
    else if (falsity) o.arguments = {{fusion->second, ""}};
    else o.error = boolean();
  } else if (key == "model.optim.bucket_cap_mb" || key == "model.optim.contiguous_grad_buffer" ||
             key == "model.optim.contiguous_param_buffer") {
    o.note = "trainsim buckets gradients by Megatron-LM's rule; ignored";
  } else if (without_effect(key)) {
    o.note = "does not change an iteration's time; ignored";
  } else {
    o.error = fmt::format("no scenario field for the NeMo key {}", key);
  }
  return o;
}

}  // namespace trainsim::scenarios::detail
