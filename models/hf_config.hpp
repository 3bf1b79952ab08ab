#pragma once
// Reading a Hugging Face `config.json` (the file `transformers` saves next to a checkpoint)
// into a ModelConfig, so that a published model can be simulated from the file its authors
// ship rather than from numbers copied by hand. Llama-style models only for now.
#include <string>
#include <variant>
#include <vector>

#include "models/model.hpp"

namespace trainsim::models {

// The `model_type` values parse_hf_config accepts ("llama"), sorted.
std::vector<std::string> hf_model_types();

// Parses the text of a config.json. `origin` names the text in messages (a path, usually)
// and gives the model its name when the config has no "_name_or_path": the file stem, or
// the folder's name for a file called config.json (Hugging Face's layout: <model>/config.json).
//
// Read: model_type ("llama"), num_hidden_layers, hidden_size, num_attention_heads,
// num_key_value_heads (default: num_attention_heads), intermediate_size, vocab_size,
// tie_word_embeddings (default false), max_position_embeddings (checked, not used: RoPE
// has no position table, so max_positions is 0). Other keys are ignored, except those that
// would change the parameter count in a way the Llama layers cannot express (head_dim other
// than hidden_size / num_attention_heads, attention_bias or mlp_bias true): those are errors
// rather than a silently different model.
//
// On failure, one message: "origin: field: problem (what would be valid)", or for
// malformed JSON "origin:line:column: invalid JSON: problem".
std::variant<ModelConfig, std::string> parse_hf_config(const std::string& json_text, const std::string& origin);

}  // namespace trainsim::models
