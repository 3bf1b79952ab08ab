// Hugging Face config.json import: the published checkpoints' configs (values as on the
// hub) give their published parameter totals exactly, and every malformed config is
// refused with a message that names the file, the field and what would be valid.
#include "models/hf_config.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "models/model.hpp"
#include "models/presets.hpp"

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

ModelConfig parsed(const std::string& json, const std::string& origin = "config.json") {
  auto result = parse_hf_config(json, origin);
  if (const auto* error = std::get_if<std::string>(&result)) {
    ADD_FAILURE() << "expected a model, got: " << *error;
    return {};
  }
  return std::get<ModelConfig>(result);
}

std::string error(const std::string& json, const std::string& origin = "cfg/config.json") {
  auto result = parse_hf_config(json, origin);
  if (const auto* message = std::get_if<std::string>(&result)) return *message;
  ADD_FAILURE() << "expected an error, the config parsed";
  return {};
}

// `text` with its one occurrence of `from` replaced by `to` (the test fails if there is none).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The configs as published on the hub (meta-llama/<name>/config.json).
const std::string LLAMA2_7B = R"({
  "_name_or_path": "meta-llama/Llama-2-7b-hf",
  "architectures": ["LlamaForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 11008,
  "max_position_embeddings": 4096,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 32,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "transformers_version": "4.31.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";

const std::string LLAMA2_13B = R"({
  "_name_or_path": "meta-llama/Llama-2-13b-hf",
  "architectures": ["LlamaForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 5120,
  "initializer_range": 0.02,
  "intermediate_size": 13824,
  "max_position_embeddings": 4096,
  "model_type": "llama",
  "num_attention_heads": 40,
  "num_hidden_layers": 40,
  "num_key_value_heads": 40,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "transformers_version": "4.32.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";

const std::string LLAMA2_70B = R"({
  "architectures": ["LlamaForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 8192,
  "initializer_range": 0.02,
  "intermediate_size": 28672,
  "max_position_embeddings": 4096,
  "model_type": "llama",
  "num_attention_heads": 64,
  "num_hidden_layers": 80,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "transformers_version": "4.31.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";

const std::string LLAMA3_8B = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 8192,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

const std::string LLAMA3_70B = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 8192,
  "initializer_range": 0.02,
  "intermediate_size": 28672,
  "max_position_embeddings": 8192,
  "model_type": "llama",
  "num_attention_heads": 64,
  "num_hidden_layers": 80,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

const std::string LLAMA31_405B = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009],
  "hidden_act": "silu",
  "hidden_size": 16384,
  "initializer_range": 0.02,
  "intermediate_size": 53248,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 128,
  "num_hidden_layers": 126,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

// ---------------------------------------------------------------------------------------
// Published checkpoints.

// formulas.md: Hugging Face safetensors totals (untied head, no biases, RMSNorm weights).
TEST(HfConfig, PublishedConfigsGiveThePublishedParameterCounts) {
  const std::vector<std::pair<const std::string*, std::int64_t>> published = {
      {&LLAMA2_7B, 6'738'415'616},  {&LLAMA2_13B, 13'015'864'320}, {&LLAMA2_70B, 68'976'648'192},
      {&LLAMA3_8B, 8'030'261'248},  {&LLAMA3_70B, 70'553'706'496}, {&LLAMA31_405B, 405'853'388'800},
  };
  for (const auto& [json, params] : published) {
    const ModelConfig m = parsed(*json);
    EXPECT_EQ(total_params(m), params) << *json;
  }
}

TEST(HfConfig, Llama3_70bHasTheShapeOfItsPreset) {
  const ModelConfig m = parsed(LLAMA3_70B, "scenarios/examples/hf/llama3-70b/config.json");
  const ModelConfig preset = *find_preset("llama3-70b");
  EXPECT_EQ(m.name, "llama3-70b");  // the folder's name: every such file is config.json
  EXPECT_EQ(m.family, Family::LLAMA);
  EXPECT_EQ(m.layers, preset.layers);
  EXPECT_EQ(m.hidden, preset.hidden);
  EXPECT_EQ(m.heads, preset.heads);
  EXPECT_EQ(m.kv_heads, preset.kv_heads);
  EXPECT_EQ(m.ffn_hidden, preset.ffn_hidden);
  EXPECT_EQ(m.vocab, preset.vocab);
  EXPECT_EQ(m.max_positions, 0);  // RoPE: max_position_embeddings is informational
  EXPECT_FALSE(m.tied_embedding);
}

// ---------------------------------------------------------------------------------------
// Names and defaults.

TEST(HfConfig, NameIsNameOrPathElseTheFileStemElseTheFolder) {
  EXPECT_EQ(parsed(LLAMA2_7B, "anything.json").name, "meta-llama/Llama-2-7b-hf");
  EXPECT_EQ(parsed(LLAMA3_8B, "/models/llama3-8b.json").name, "llama3-8b");
  EXPECT_EQ(parsed(LLAMA3_8B, "/models/Meta-Llama-3-8B/config.json").name, "Meta-Llama-3-8B");
  EXPECT_EQ(parsed(LLAMA3_8B, "config.json").name, "config");  // no folder to name it by
  EXPECT_EQ(parsed(replaced(LLAMA3_8B, R"("architectures")", R"("_name_or_path": "", "architectures")"),
                   "x/y.json")
                .name,
            "y");
}

TEST(HfConfig, KeyValueHeadsDefaultToTheHeadsAndTheHeadIsUntied) {
  const std::string minimal = R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 4, "intermediate_size": 172, "vocab_size": 1000})";
  ModelConfig m = parsed(minimal);
  EXPECT_EQ(m.kv_heads, 4);
  EXPECT_FALSE(m.tied_embedding);
  EXPECT_EQ(m.max_positions, 0);
  // transformers saves None as null: the default applies.
  m = parsed(replaced(minimal, R"("vocab_size": 1000)", R"("vocab_size": 1000, "num_key_value_heads": null)"));
  EXPECT_EQ(m.kv_heads, 4);
  m = parsed(replaced(minimal, R"("vocab_size": 1000)", R"("vocab_size": 1000, "tie_word_embeddings": true)"));
  EXPECT_TRUE(m.tied_embedding);
  // Tied: the head adds no weights of its own.
  EXPECT_EQ(total_params(parsed(minimal)) - total_params(m), 1000 * 64);
}

TEST(HfConfig, ConsistentHeadDimAndFalseBiasesAreAccepted) {
  const ModelConfig m = parsed(replaced(LLAMA31_405B, R"("mlp_bias": false)", R"("mlp_bias": false, "head_dim": 128)"));
  EXPECT_EQ(total_params(m), 405'853'388'800);
}

// ---------------------------------------------------------------------------------------
// Errors: each names the file and the field and says what would be valid.

TEST(HfConfigErrors, MalformedJsonHasLineAndColumn) {
  // A trailing comma: the error is at the closing brace, line 4 column 1.
  EXPECT_EQ(error("{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 8192,\n}"),
            "cfg/config.json:4:1: invalid JSON: syntax error while parsing object key - unexpected '}'; expected "
            "string literal");
  // A missing comma: the position is the byte where the parser stopped, the last of the
  // unexpected token (the closing quote of "hidden_size").
  EXPECT_EQ(error("{\n  \"model_type\": \"llama\"\n  \"hidden_size\": 8192\n}"),
            "cfg/config.json:3:15: invalid JSON: syntax error while parsing object - unexpected string literal; "
            "expected '}'");
  // Truncated: the error is one past the last byte.
  EXPECT_EQ(error("{\"model_type\": \"llama\""),
            "cfg/config.json:1:23: invalid JSON: syntax error while parsing object - unexpected end of input; "
            "expected '}'");
  // Columns count a tab to the next multiple of 8, as the scenario loader does: the space
  // that ends the literal "tru" is column 8 + 9.
  EXPECT_EQ(error("{\n\t\"a\": tru }"), "cfg/config.json:2:17: invalid JSON: syntax error while parsing value - "
                                        "invalid literal; last read: '\"a\": tru '");
  EXPECT_EQ(error(""), "cfg/config.json:1:1: invalid JSON: syntax error while parsing value - unexpected end of "
                       "input; expected '[', '{', or a literal");
}

TEST(HfConfigErrors, TopLevelMustBeAnObject) {
  EXPECT_EQ(error("[1, 2]"),
            "cfg/config.json: expected a JSON object { \"model_type\": \"llama\", … } at the top level, got array");
}

TEST(HfConfigErrors, MissingFieldSaysWhatItHolds) {
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("intermediate_size": 28672,)", "")),
            "cfg/config.json: intermediate_size: missing: a Llama config.json gives SwiGLU's inner size as a "
            "positive integer (e.g. 28672 for Llama-3-70B)");
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("num_hidden_layers": 80,)", R"("num_hidden_layers": null,)")),
            "cfg/config.json: num_hidden_layers: missing: a Llama config.json gives the number of transformer layers "
            "as a positive integer (e.g. 80 for Llama-3-70B)");
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("model_type": "llama",)", "")),
            "cfg/config.json: model_type: missing: name the architecture (supported: llama)");
}

TEST(HfConfigErrors, WrongTypeSaysWhatIsExpected) {
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("hidden_size": 8192)", R"("hidden_size": "8192")")),
            "cfg/config.json: hidden_size: expected a positive integer (e.g. 8192), got string \"8192\"");
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("vocab_size": 128256)", R"("vocab_size": 128256.5)")),
            "cfg/config.json: vocab_size: expected a positive integer (e.g. 128256), got number 128256.5");
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("num_key_value_heads": 8)", R"("num_key_value_heads": [8])")),
            "cfg/config.json: num_key_value_heads: expected a positive integer (e.g. 8), got array");
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("tie_word_embeddings": false)", R"("tie_word_embeddings": "no")")),
            "cfg/config.json: tie_word_embeddings: expected true or false, got string \"no\"");
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("model_type": "llama")", R"("model_type": 7)")),
            "cfg/config.json: model_type: expected a string, got number 7 (supported: llama)");
}

TEST(HfConfigErrors, SizesMustBePositive) {
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("num_hidden_layers": 80)", R"("num_hidden_layers": 0)")),
            "cfg/config.json: num_hidden_layers: must be a positive integer, got 0");
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("num_attention_heads": 64)", R"("num_attention_heads": -64)")),
            "cfg/config.json: num_attention_heads: must be a positive integer, got -64");
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("max_position_embeddings": 8192)", R"("max_position_embeddings": 0)")),
            "cfg/config.json: max_position_embeddings: must be a positive integer, got 0");
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("vocab_size": 128256)", R"("vocab_size": 18446744073709551615)")),
            "cfg/config.json: vocab_size: must be a positive integer below 2^63, got 18446744073709551615");
}

TEST(HfConfigErrors, UnsupportedModelTypeListsTheSupportedOnes) {
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("model_type": "llama")", R"("model_type": "mistral")")),
            "cfg/config.json: model_type: unsupported model type \"mistral\" (supported: llama)");
  // Fields are not read for an unknown architecture: the model type is the one error.
  EXPECT_EQ(error(R"({"model_type": "gpt2", "n_layer": 12})"),
            "cfg/config.json: model_type: unsupported model type \"gpt2\" (supported: llama)");
}

TEST(HfConfigErrors, HeadsMustDivideHiddenAndKvHeadsMustDivideHeads) {
  EXPECT_EQ(error(replaced(LLAMA3_8B, R"("num_attention_heads": 32)", R"("num_attention_heads": 24)")),
            "cfg/config.json: num_attention_heads: 24 does not divide hidden_size=4096 (each head takes an equal "
            "share; valid: 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)");
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("num_key_value_heads": 8)", R"("num_key_value_heads": 5)")),
            "cfg/config.json: num_key_value_heads: 5 does not divide num_attention_heads=64 (each key/value head "
            "serves an equal group of query heads; valid: 1, 2, 4, 8, 16, 32, 64)");
}

TEST(HfConfigErrors, ShapesTheLlamaLayersCannotExpressAreRefused) {
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("attention_bias": false)", R"("attention_bias": false, "head_dim": 64)")),
            "cfg/config.json: head_dim: 64 differs from hidden_size / num_attention_heads = 128, which the Llama "
            "layers assume (valid: 128, or leave it out)");
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("attention_bias": false)", R"("attention_bias": true)")),
            "cfg/config.json: attention_bias: true is not modelled: the Llama layers have no biases (valid: false)");
  EXPECT_EQ(error(replaced(LLAMA31_405B, R"("mlp_bias": false)", R"("mlp_bias": true)")),
            "cfg/config.json: mlp_bias: true is not modelled: the Llama layers have no biases (valid: false)");
}

TEST(HfConfigErrors, QuotedInputIsCutAndEscaped) {
  const std::string long_type = std::string(200, 'x');
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("model_type": "llama")", "\"model_type\": \"" + long_type + "\"")),
            "cfg/config.json: model_type: unsupported model type \"" + std::string(80, 'x') +
                "…\" (supported: llama)");
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("model_type": "llama")", "\"model_type\": \"ll\\u0001\"")),
            "cfg/config.json: model_type: unsupported model type \"ll\\x01\" (supported: llama)");
}

// Found by tests/fuzz/hf_config_fuzz: the JSON parser throws out_of_range, not
// parse_error, for a number beyond double's range.
TEST(HfConfigErrors, NumberBeyondDoubleRangeIsAnErrorNotAnAbort) {
  EXPECT_EQ(error(replaced(LLAMA3_70B, R"("rms_norm_eps": 1e-05)", R"("rms_norm_eps": 1e400)")),
            "cfg/config.json: invalid JSON: number overflow parsing '1e400' (a number beyond the range of a double)");
}

TEST(HfConfigErrors, DeepNestingIsRefusedWithoutExhaustingTheStack) {
  EXPECT_EQ(error(std::string(100000, '[') + std::string(100000, ']')),
            "cfg/config.json: expected a JSON object { \"model_type\": \"llama\", … } at the top level, got array");
  EXPECT_EQ(error(std::string(100000, '[')), "cfg/config.json:1:100001: invalid JSON: syntax error while parsing "
                                             "value - unexpected end of input; expected '[', '{', or a literal");
}

TEST(HfConfig, SupportedModelTypes) { EXPECT_EQ(hf_model_types(), std::vector<std::string>{"llama"}); }

}  // namespace
}  // namespace trainsim::models
