#include "scenarios/framework_import.hpp"

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "models/presets.hpp"
#include "scenarios/detail/nemo_overrides.hpp"

namespace trainsim::scenarios {
namespace {

// Arguments that change nothing an iteration's time depends on.
const std::set<std::string>& no_effect() {
  static const std::set<std::string> names = {
      "lr", "min-lr", "lr-decay-style", "lr-decay-iters", "lr-decay-samples", "lr-warmup-fraction",
      "lr-warmup-iters", "lr-warmup-samples", "weight-decay", "clip-grad", "adam-beta1", "adam-beta2", "adam-eps",
      "init-method-std", "seed", "data-path", "vocab-file", "merge-file", "tokenizer-type", "tokenizer-model",
      "save", "load", "log-interval", "eval-interval", "eval-iters", "save-interval", "train-iters",
      "train-samples", "split", "distributed-backend", "tensorboard-dir", "wandb-project", "exit-interval",
      "attention-dropout", "hidden-dropout", "no-masked-softmax-fusion", "no-bias-gelu-fusion", "norm-epsilon",
      "layernorm-epsilon", "rotary-base", "rotary-percent", "distributed-timeout-minutes", "log-throughput",
      "log-timers-to-tensorboard", "log-validation-ppl-to-tensorboard", "tensorboard-log-interval", "ckpt-format",
      "no-load-optim", "no-load-rng", "no-save-optim", "no-save-rng", "data-cache-path", "num-workers",
      "dataloader-type", "mock-data", "log-world-size-to-tensorboard", "log-memory-to-tensorboard",
      "timing-log-level", "exit-duration-in-mins"};
  return names;
}

std::optional<std::int64_t> integer(const std::string& s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The architecture flags of a Megatron-LM command line, which together name one of the two
// model families trainsim builds (models::Family): GPT (LayerNorm, GeLU MLP, learned
// positions, tied embedding and head, linear biases) or LLAMA (RMSNorm, SwiGLU, rotary
// positions, untied, no biases). Megatron-LM's defaults are GPT's.
struct Architecture {
  std::vector<std::string> written;  // the family flags as given, for messages
  bool swiglu = false, rms_norm = false, rope = false, learned_positions = true, untied = false;
  std::string no_bias;  // --disable-bias-linear as written, or empty
  std::string qkv_bias, layernorm_1p;  // --add-qkv-bias, --apply-layernorm-1p as written, or empty
  std::int64_t vocab = 0;          // --vocab-size: the tokenizer's, before Megatron pads it
  std::int64_t vocab_multiple = 128;  // --make-vocab-size-divisible-by (Megatron's default)
  std::string vocab_multiple_written;
  std::int64_t kv_channels = 0;  // --kv-channels: the head size, which trainsim takes as hidden / heads
};

// The family the base scenario already gives: its field, its preset's, or a Hugging Face
// config's (those are Llama models); GPT as the loader defaults.
models::Family base_family(const Scenario& s) {
  if (s.model().family() == LLAMA) return models::Family::LLAMA;
  if (s.model().family() == GPT) return models::Family::GPT;
  if (const auto preset = models::find_preset(s.model().preset())) return preset->family;
  return s.model().hf_config().empty() ? models::Family::GPT : models::Family::LLAMA;
}

void apply_architecture(const Architecture& a, Scenario& s, ImportResult& r) {
  if (a.kv_channels > 0) {
    // Megatron-LM's default is hidden / heads; another head size has no field here. The shape
    // is the arguments' or the preset's; a Hugging Face config's is read only by the loader.
    const auto preset = models::find_preset(s.model().preset());
    const std::int64_t hidden = s.model().has_hidden_size() ? s.model().hidden_size() : preset ? preset->hidden : 0;
    const std::int64_t heads =
        s.model().has_num_attention_heads() ? s.model().num_attention_heads() : preset ? preset->heads : 0;
    if (hidden == 0 || heads == 0)
      r.notes.push_back(fmt::format("--kv-channels {}: not checked here (no hidden size and head count in the "
                                    "arguments or a preset); trainsim's heads are hidden / heads wide",
                                    a.kv_channels));
    else if (hidden % heads != 0 || hidden / heads != a.kv_channels)
      r.errors.push_back(fmt::format("--kv-channels {}: trainsim's heads are hidden / heads wide (hidden {}, "
                                     "{} heads); another head size has no scenario field",
                                     a.kv_channels, hidden, heads));
  }
  const std::string flags = fmt::format("{}", fmt::join(a.written, " "));
  models::Family family = base_family(s);
  if (!a.written.empty()) {
    const bool llama = a.swiglu && a.rms_norm && a.rope && !a.learned_positions && a.untied;
    const bool gpt = !a.swiglu && !a.rms_norm && !a.rope && a.learned_positions && !a.untied;
    if (!llama && !gpt) {
      r.errors.push_back(fmt::format(
          "{}: no model family trainsim builds has this architecture: GPT is LayerNorm, a GeLU MLP, learned "
          "positions and a tied embedding (Megatron-LM's defaults); LLAMA is --swiglu --normalization RMSNorm "
          "--position-embedding-type rope --untie-embeddings-and-output-weights",
          flags));
      return;
    }
    family = llama ? models::Family::LLAMA : models::Family::GPT;
    s.mutable_model()->set_family(llama ? LLAMA : GPT);
  }
  if (family == models::Family::GPT && !a.no_bias.empty())
    r.errors.push_back(fmt::format("{}: trainsim's GPT family has linear biases; only its LLAMA family has none "
                                   "(with --swiglu --normalization RMSNorm --position-embedding-type rope "
                                   "--untie-embeddings-and-output-weights)",
                                   a.no_bias));
  if (family == models::Family::LLAMA && a.no_bias.empty() && !a.written.empty())
    r.notes.push_back(fmt::format("{}: without --disable-bias-linear the run's linear layers add biases, which "
                                  "trainsim's LLAMA family leaves out (an elementwise add per GEMM output)",
                                  flags));
  if (!a.qkv_bias.empty())
    r.notes.push_back(family == models::Family::GPT
                          ? fmt::format("{}: trainsim's GPT family adds every linear layer's bias already", a.qkv_bias)
                          : fmt::format("{}: the QKV projection adds a bias, which trainsim's LLAMA family leaves out "
                                        "((heads + 2 × query groups) × head size parameters a layer, added in the "
                                        "GEMM's epilogue)",
                                        a.qkv_bias));
  if (!a.layernorm_1p.empty()) {
    if (family == models::Family::GPT)
      r.notes.push_back(fmt::format("{}: LayerNorm with its weights stored as γ − 1, the same kernels (adding the 1 "
                                    "is one pass over h weights)",
                                    a.layernorm_1p));
    else
      r.errors.push_back(fmt::format("{}: a LayerNorm variant; trainsim's LLAMA family normalizes with RMSNorm",
                                     a.layernorm_1p));
  }
}

// Megatron-LM pads the tokenizer's vocabulary to a multiple of --make-vocab-size-divisible-by
// × the tensor-parallel size (megatron/training/tokenizer: _vocab_size_with_padding); the
// scenario's vocab_size is the padded one.
void apply_vocabulary(const Architecture& a, Scenario& s, ImportResult& r) {
  if (a.vocab == 0) {
    if (!a.vocab_multiple_written.empty())
      r.notes.push_back(fmt::format("{}: pads --vocab-size, which is not given (the vocabulary is the base "
                                    "scenario's); ignored",
                                    a.vocab_multiple_written));
    return;
  }
  if (s.model().has_vocab_size()) {
    r.errors.push_back(
        "--vocab-size and --padded-vocab-size: give one (--vocab-size is padded as Megatron-LM pads it)");
    return;
  }
  const std::int64_t tensor = std::max<std::int64_t>(1, s.parallel().tensor());
  const std::int64_t multiple = a.vocab_multiple * tensor;
  const std::int64_t padded = (a.vocab + multiple - 1) / multiple * multiple;
  s.mutable_model()->set_vocab_size(padded);
  r.notes.push_back(fmt::format("--vocab-size {}: padded to {}, a multiple of {} ({} × tensor {}), as Megatron-LM "
                                "pads it",
                                a.vocab, padded, multiple, a.vocab_multiple, tensor));
}

// Megatron-LM's recompute arguments, read together since their order does not matter.
struct Recompute {
  std::string granularity;  // "selective", "full", "none" (--recompute-activations false), or unset
  std::int64_t layers = 0;  // --recompute-num-layers
  std::string layers_written;
};

// --recompute-num-layers counts the layers of a uniform full recompute's segment: 1 is
// trainsim's "full", more its "every-k"; Megatron-LM reads it with full granularity only.
void apply_recompute(const Recompute& c, Scenario& s, ImportResult& r) {
  if (c.layers > 0 && c.granularity != "full")
    r.notes.push_back(fmt::format("{}: counts the layers of a full recompute's segments, and the granularity is not "
                                  "full; ignored, as Megatron-LM ignores it",
                                  c.layers_written));
  if (c.granularity == "full" && c.layers > 1) {
    s.mutable_strategy()->set_recompute("every-k");
    s.mutable_strategy()->mutable_recompute_every_k()->set_k(c.layers);
  } else if (!c.granularity.empty()) {
    s.mutable_strategy()->set_recompute(c.granularity);
  }
}

}  // namespace

ImportResult import_megatron(const std::vector<std::string>& args, const Scenario& base) {
  ImportResult r;
  r.scenario = base;
  Scenario& s = r.scenario;
  std::int64_t layers_per_virtual = 0;
  // Megatron-LM's two gradient-dtype flags; --grad-reduce-in-bf16 wins when both are given
  // (arguments.py turns accumulation in fp32 off after it).
  bool grads_in_fp32 = false, grad_reduce_in_bf16 = false;
  Architecture arch;
  Recompute recompute;
  std::string softmax_in_fp32;  // --attention-softmax-in-fp32 as written, or empty
  // (name, value or "" for a flag, how it was written)
  std::vector<std::tuple<std::string, std::string, std::string>> items;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.starts_with("--")) {
      std::string name = a.substr(2), value;
      if (const auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      } else if (i + 1 < args.size() && !args[i + 1].starts_with("--") && args[i + 1].find('=') == std::string::npos) {
        value = args[++i];
      }
      std::replace(name.begin(), name.end(), '_', '-');
      items.emplace_back(name, value, a);
    } else if (const auto eq = a.find('='); eq != std::string::npos) {
      const detail::NemoOverride o = detail::translate_nemo(a.substr(0, eq), a.substr(eq + 1));
      for (const auto& [name, value] : o.arguments) items.emplace_back(name, value, a);
      if (!o.note.empty()) r.notes.push_back(fmt::format("{}: {}", a, o.note));
      if (!o.error.empty()) r.errors.push_back(fmt::format("{}: {}", a, o.error));
    } else {
      r.errors.push_back(fmt::format("{}: not an argument (expected --name [value] or a NeMo key=value)", a));
    }
  }
  for (const auto& item : items) {
    // Named references, not a structured binding: Clang 14 cannot capture those in lambdas.
    const std::string& name = std::get<0>(item);
    const std::string& value = std::get<1>(item);
    const std::string& written = std::get<2>(item);
    // The argument with its value as given: one word ("--x=v", NeMo's "key=v") or two.
    const std::string with_value =
        value.empty() || written.find('=') != std::string::npos ? written : written + " " + value;
    auto need_int = [&](const std::function<void(std::int64_t)>& set) {
      if (auto v = integer(value); v && *v > 0) set(*v);
      else r.errors.push_back(fmt::format("{}: expected a positive integer, got \"{}\"", written, value));
    };
    auto flag = [&](const std::function<void(bool)>& set) {
      if (value.empty() || value == "true" || value == "True") set(true);
      else if (value == "false" || value == "False") set(false);
      else r.errors.push_back(fmt::format("{}: expected true or false, got \"{}\"", written, value));
    };
    if (name == "tensor-model-parallel-size") need_int([&](auto v) { s.mutable_parallel()->set_tensor(v); });
    else if (name == "pipeline-model-parallel-size") need_int([&](auto v) { s.mutable_parallel()->set_pipeline(v); });
    else if (name == "virtual-pipeline-model-parallel-size")
      need_int([&](auto v) { s.mutable_parallel()->set_virtual_stages(v); });
    else if (name == "num-layers-per-virtual-pipeline-stage") need_int([&](auto v) { layers_per_virtual = v; });
    else if (name == "decoder-first-pipeline-num-layers")
      need_int([&](auto v) { s.mutable_parallel()->set_first_stage_layers(v); });
    else if (name == "decoder-last-pipeline-num-layers")
      need_int([&](auto v) { s.mutable_parallel()->set_last_stage_layers(v); });
    else if (name == "context-parallel-size") need_int([&](auto v) { s.mutable_parallel()->set_context(v); });
    else if (name == "expert-model-parallel-size") need_int([&](auto v) { s.mutable_parallel()->set_expert(v); });
    else if (name == "sequence-parallel") flag([&](bool v) { s.mutable_parallel()->set_sequence_parallel(v); });
    else if (name == "micro-batch-size") need_int([&](auto v) { s.mutable_training()->set_micro_batch_size(v); });
    else if (name == "global-batch-size") need_int([&](auto v) { s.mutable_training()->set_global_batch_size(v); });
    else if (name == "seq-length") need_int([&](auto v) { s.mutable_training()->set_sequence_length(v); });
    else if (name == "num-layers") need_int([&](auto v) { s.mutable_model()->set_num_layers(v); });
    else if (name == "hidden-size") need_int([&](auto v) { s.mutable_model()->set_hidden_size(v); });
    else if (name == "num-attention-heads") need_int([&](auto v) { s.mutable_model()->set_num_attention_heads(v); });
    else if (name == "ffn-hidden-size") need_int([&](auto v) { s.mutable_model()->set_ffn_hidden_size(v); });
    else if (name == "num-query-groups") need_int([&](auto v) { s.mutable_model()->set_num_query_groups(v); });
    else if (name == "group-query-attention") flag([](bool) {});  // the group count is --num-query-groups
    else if (name == "max-position-embeddings")
      need_int([&](auto v) { s.mutable_model()->set_max_position_embeddings(v); });
    else if (name == "padded-vocab-size") need_int([&](auto v) { s.mutable_model()->set_vocab_size(v); });
    else if (name == "vocab-size") need_int([&](auto v) { arch.vocab = v; });
    else if (name == "kv-channels") need_int([&](auto v) { arch.kv_channels = v; });
    else if (name == "use-mcore-models")
      flag([&](bool v) {
        if (v) r.notes.push_back(fmt::format("{}: Megatron-Core's models, which trainsim models", written));
        else
          r.errors.push_back(
              fmt::format("{}: only Megatron-Core's models map (trainsim models their layers)", written));
      });
    else if (name == "transformer-impl") {
      if (value == "transformer_engine")
        r.notes.push_back(fmt::format("{}: Transformer Engine's layers, which trainsim models", with_value));
      else
        r.errors.push_back(fmt::format("{}: only transformer_engine maps (trainsim models Transformer Engine's "
                                       "layers and their overlaps), got \"{}\"",
                                       written, value));
    } else if (name == "make-vocab-size-divisible-by") {
      need_int([&](auto v) {
        arch.vocab_multiple = v;
        arch.vocab_multiple_written = written;
      });
    } else if (name == "swiglu") {
      arch.written.push_back(written);
      flag([&](bool v) { arch.swiglu = v; });
    } else if (name == "normalization") {
      arch.written.push_back(with_value);
      if (value == "RMSNorm" || value == "LayerNorm") arch.rms_norm = value == "RMSNorm";
      else r.errors.push_back(fmt::format("{}: expected LayerNorm or RMSNorm, got \"{}\"", written, value));
    } else if (name == "position-embedding-type") {
      arch.written.push_back(with_value);
      if (value == "rope" || value == "learned_absolute") {
        arch.rope = value == "rope";
        arch.learned_positions = !arch.rope;
      } else {
        r.errors.push_back(
            fmt::format("{}: expected learned_absolute (GPT) or rope (LLAMA), got \"{}\"", written, value));
      }
    } else if (name == "use-rotary-position-embeddings") {
      arch.written.push_back(written);
      flag([&](bool v) {
        arch.rope = v;
        if (v) arch.learned_positions = false;
      });
    } else if (name == "no-position-embedding") {
      arch.written.push_back(written);
      flag([&](bool v) { arch.learned_positions = !v; });
    } else if (name == "untie-embeddings-and-output-weights") {
      arch.written.push_back(written);
      flag([&](bool v) { arch.untied = v; });
    } else if (name == "disable-bias-linear") {
      flag([&](bool v) { arch.no_bias = v ? written : std::string(); });
    } else if (name == "add-qkv-bias") {
      flag([&](bool v) { arch.qkv_bias = v ? written : std::string(); });
    } else if (name == "apply-layernorm-1p") {
      flag([&](bool v) { arch.layernorm_1p = v ? written : std::string(); });
    } else if (name == "attention-softmax-in-fp32") {
      flag([&](bool v) { softmax_in_fp32 = v ? written : std::string(); });
    } else if (name == "bf16") s.mutable_training()->set_precision(BF16);
    else if (name == "fp16") s.mutable_training()->set_precision(FP16);
    else if (name == "fp8-format") s.mutable_training()->set_precision(FP8);
    else if (name == "precision") {
      if (value == "bf16" || value == "bf16-mixed") s.mutable_training()->set_precision(BF16);
      else if (value == "16" || value == "16-mixed" || value == "fp16") s.mutable_training()->set_precision(FP16);
      else r.errors.push_back(fmt::format("{}: precision \"{}\" is not one trainsim models (valid: bf16, 16)", written, value));
    } else if (name == "use-flash-attn") {
      flag([&](bool v) {
        if (v) s.mutable_training()->set_attention(FLASH);
        else r.errors.push_back(fmt::format("{}: only true maps (the fused attention kernel); for unfused attention "
                                            "set training.attention: UNFUSED in the scenario",
                                            with_value));
      });
    }
    else if (name == "accumulate-allreduce-grads-in-fp32") flag([&](bool v) { grads_in_fp32 = v; });
    else if (name == "grad-reduce-in-bf16") flag([&](bool v) { grad_reduce_in_bf16 = v; });
    else if (name == "use-distributed-optimizer")
      flag([&](bool v) { s.mutable_strategy()->set_zero_stage(v ? 1 : 0); });
    else if (name == "overlap-grad-reduce") flag([&](bool v) { s.mutable_strategy()->set_overlap_grad_reduce(v); });
    else if (name == "overlap-param-gather") flag([&](bool v) { s.mutable_strategy()->set_overlap_param_gather(v); });
    else if (name == "tp-comm-overlap") flag([&](bool v) { s.mutable_strategy()->set_overlap_tp_comm(v); });
    else if (name == "recompute-activations") flag([&](bool v) { recompute.granularity = v ? "selective" : "none"; });
    else if (name == "no-gradient-accumulation-fusion")
      flag([&](bool v) { s.mutable_training()->set_gradient_accumulation_fusion(!v); });
    else if (name == "recompute-granularity") {
      if (value == "selective" || value == "full") recompute.granularity = value;
      else r.errors.push_back(fmt::format("{}: expected selective or full, got \"{}\"", written, value));
    } else if (name == "recompute-method") {
      if (value != "uniform")
        r.errors.push_back(fmt::format("{}: only the uniform method maps (recompute every-k); \"{}\" has no pass", written,
                                       value));
    } else if (name == "recompute-num-layers") {
      need_int([&](auto v) {
        recompute.layers = v;
        recompute.layers_written = with_value;
      });
    } else if (name == "optimizer") {
      if (value == "adam") s.mutable_training()->set_optimizer(ADAM);
      else if (value == "sgd") s.mutable_training()->set_optimizer(SGD);
      else r.errors.push_back(fmt::format("{}: expected adam or sgd, got \"{}\"", written, value));
    } else if (name == "nodes") need_int([&](auto v) { s.mutable_cluster()->set_nodes(v); });
    else if (name == "gpus-per-node") need_int([&](auto v) { s.mutable_cluster()->set_gpus_per_node(v); });
    else if (no_effect().count(name)) r.notes.push_back(fmt::format("{}: does not change an iteration's time; ignored", written));
    else r.errors.push_back(fmt::format("{}: no scenario field maps --{}", written, name));
  }
  apply_architecture(arch, s, r);
  apply_vocabulary(arch, s, r);
  apply_recompute(recompute, s, r);
  // Megatron-LM's fused masked softmax runs in fp32 on the unfused attention path only.
  if (!softmax_in_fp32.empty()) {
    if (s.training().attention() == UNFUSED)
      r.errors.push_back(fmt::format("{}: the unfused softmax in fp32 is not modelled (trainsim prices it in the "
                                     "16-bit dtype)",
                                     softmax_in_fp32));
    else
      r.notes.push_back(fmt::format("{}: the unfused attention's softmax; with fused attention (FLASH) it changes "
                                    "nothing",
                                    softmax_in_fp32));
  }
  if (grad_reduce_in_bf16) s.mutable_training()->set_accumulate_allreduce_grads_in_fp32(false);
  else if (grads_in_fp32) s.mutable_training()->set_accumulate_allreduce_grads_in_fp32(true);
  if (layers_per_virtual > 0) {
    const std::int64_t layers = s.model().num_layers(), p = std::max<std::int64_t>(1, s.parallel().pipeline());
    if (layers == 0 || layers % (p * layers_per_virtual) != 0)
      r.errors.push_back(fmt::format("--num-layers-per-virtual-pipeline-stage {}: needs --num-layers divisible by "
                                     "pipeline × it (num-layers {}, pipeline {})",
                                     layers_per_virtual, layers, p));
    else
      s.mutable_parallel()->set_virtual_stages(layers / (p * layers_per_virtual));
  }
  if (s.parallel().virtual_stages() > 1) s.mutable_strategy()->set_pipeline_schedule("interleaved-1f1b");
  return r;
}

ImportResult import_deepspeed(const std::string& json_text, const Scenario& base) {
  ImportResult r;
  r.scenario = base;
  Scenario& s = r.scenario;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    r.errors.push_back(fmt::format("not JSON: {}", e.what()));
    return r;
  }
  if (!j.is_object()) {
    r.errors.push_back("the config is not a JSON object");
    return r;
  }
  auto positive = [&](const std::string& key, const nlohmann::json& v, const std::function<void(std::int64_t)>& set) {
    if (v.is_number_integer() && v.get<std::int64_t>() > 0) set(v.get<std::int64_t>());
    else r.errors.push_back(fmt::format("{}: expected a positive integer, got {}", key, v.dump()));
  };
  auto enabled = [](const nlohmann::json& v) { return v.is_object() && v.value("enabled", false); };
  for (const auto& [key, v] : j.items()) {
    if (key == "train_batch_size") positive(key, v, [&](auto x) { s.mutable_training()->set_global_batch_size(x); });
    else if (key == "train_micro_batch_size_per_gpu")
      positive(key, v, [&](auto x) { s.mutable_training()->set_micro_batch_size(x); });
    else if (key == "gradient_accumulation_steps") positive(key, v, [](auto) {});  // implied by the two batch sizes
    else if (key == "bf16") { if (enabled(v)) s.mutable_training()->set_precision(BF16); }
    else if (key == "fp16") { if (enabled(v)) s.mutable_training()->set_precision(FP16); }
    else if (key == "zero_optimization") {
      for (const auto& [zk, zv] : v.items()) {
        if (zk == "stage") {
          if (!zv.is_number_integer() || zv.get<int>() < 0 || zv.get<int>() > 3)
            r.errors.push_back(fmt::format("zero_optimization.stage: expected 0..3, got {}", zv.dump()));
          else s.mutable_strategy()->set_zero_stage(zv.get<int>());
        } else if (zk == "overlap_comm") {
          if (zv.is_boolean() && zv.get<bool>()) s.mutable_strategy()->set_overlap_grad_reduce(true);
        } else if (zk == "reduce_scatter" || zk == "allgather_partitions") {
          // DeepSpeed's defaults (true): gradients reduce-scattered, the updated partitions
          // all-gathered, as trainsim's sharded optimizer moves them; false swaps in an
          // all-reduce or broadcasts, which it does not model.
          if (zv.is_boolean() && zv.get<bool>())
            r.notes.push_back(
                fmt::format("zero_optimization.{}: true, as trainsim models it (DeepSpeed's default)", zk));
          else
            r.errors.push_back(fmt::format("zero_optimization.{}: only true maps (reduce-scatter the gradients, "
                                           "all-gather the partitions); got {}",
                                           zk, zv.dump()));
        } else if (zk == "reduce_bucket_size" || zk == "allgather_bucket_size" || zk == "contiguous_gradients") {
          r.notes.push_back(fmt::format("zero_optimization.{}: trainsim uses Megatron's bucket rule; ignored", zk));
        } else {
          r.errors.push_back(fmt::format("zero_optimization.{}: no scenario field maps it", zk));
        }
      }
    } else if (key == "optimizer") {
      const std::string type = v.is_object() ? v.value("type", "") : "";
      std::string lower = type;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if (lower == "adam" || lower == "adamw") s.mutable_training()->set_optimizer(ADAM);
      else if (lower == "sgd") s.mutable_training()->set_optimizer(SGD);
      else r.errors.push_back(fmt::format("optimizer.type: expected Adam, AdamW or SGD, got \"{}\"", type));
    } else if (key == "activation_checkpointing") {
      s.mutable_strategy()->set_recompute("full");
      r.notes.push_back("activation_checkpointing: mapped to full recompute (every layer's input kept)");
    } else if (key == "flops_profiler" && enabled(v)) {
      r.errors.push_back("flops_profiler: enabled, it profiles one step (profile_step) slower than the others; "
                         "trainsim predicts a steady iteration (disable it)");
    } else if (key == "gradient_clipping" || key == "steps_per_print" || key == "wall_clock_breakdown" ||
               key == "scheduler" || key == "flops_profiler" || key == "tensorboard" || key == "wandb" ||
               key == "csv_monitor" || key == "comet" || key == "zero_allow_untested_optimizer" ||
               key == "prescale_gradients" || key == "gradient_predivide_factor") {
      r.notes.push_back(fmt::format("{}: does not change an iteration's time; ignored", key));
    } else {
      r.errors.push_back(fmt::format("{}: no scenario field maps it", key));
    }
  }
  return r;
}

}  // namespace trainsim::scenarios
