#include "models/hf_config.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/divisors.hpp"
#include "models/model.hpp"

namespace trainsim::models {

namespace {

using Json = nlohmann::json;
using Int = std::int64_t;

// Lists of valid values stop here; a longer list helps nobody read the message.
// What a message quotes from the file is cut here, so that it stays one readable line.
constexpr std::size_t MAX_QUOTED = 80;
// Columns count as the scenario loader counts them (and GCC): a tab advances to the next
// multiple of 8, so that a config's positions read like the scenario's own.
constexpr int TAB_WIDTH = 8;

// `s` with bytes outside printable ASCII escaped (\xNN) and anything past `max_bytes` cut.
std::string printable(std::string_view s, std::size_t max_bytes) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i == max_bytes) {
      out += "…";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

std::string quote(std::string_view s) { return "\"" + printable(s, MAX_QUOTED) + "\""; }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// A JSON value as a message shows it: its type and, for scalars, the value.
std::string describe(const Json& value) {
  if (value.is_string()) return "string " + quote(value.get_ref<const std::string&>());
  if (value.is_object() || value.is_array()) return std::string(value.type_name());
  if (value.is_null()) return "null";
  // Numbers and booleans: dump() cannot throw on them (no strings inside).
  return std::string(value.type_name()) + " " + printable(value.dump(), MAX_QUOTED);
}

// 1-based line and column of the byte at 0-based `offset` (one past the end is allowed:
// errors at the end of the input point there).
std::pair<int, int> position_of(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  int line = 1;
  int column = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 0;
    } else {
      column = text[i] == '\t' ? column + TAB_WIDTH - column % TAB_WIDTH : column + 1;
    }
  }
  return {line, column + 1};
}

// nlohmann's what() is "[json.exception.parse_error.101] parse error at line 1, column 2:
// syntax error …"; its position is replaced by ours (origin:line:col), so only the part
// after the first ": " that follows the bracketed id is kept.
std::string parse_problem(const std::string& what) {
  std::size_t id_end = what.find("] ");
  std::size_t colon = what.find(": ", id_end == std::string::npos ? 0 : id_end);
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

struct Field {
  const char* key;
  const char* meaning;  // what the field holds, for a "missing" message
  Int example;          // its value for Llama-3-70B
};

constexpr Field LAYERS{"num_hidden_layers", "the number of transformer layers", 80};
constexpr Field HIDDEN{"hidden_size", "the model width", 8192};
constexpr Field HEADS{"num_attention_heads", "the number of query heads", 64};
constexpr Field KV_HEADS{"num_key_value_heads", "the number of key/value heads (GQA)", 8};
constexpr Field FFN{"intermediate_size", "SwiGLU's inner size", 28672};
constexpr Field VOCAB{"vocab_size", "the rows of the embedding table", 128256};
constexpr Field POSITIONS{"max_position_embeddings", "the longest sequence trained", 8192};
constexpr Field HEAD_DIM{"head_dim", "the width of one head", 128};

// Reads fields off the top-level object, keeping the first problem: later checks often
// follow from an earlier one (a divisor rule needs both sizes), so one message is clearer.
class Reader {
 public:
  Reader(const Json& config, const std::string& origin) : config_(config), origin_(origin) {}

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  void fail(std::string_view field, const std::string& message) {
    if (ok()) error_ = origin_ + ": " + std::string(field) + ": " + message;
  }

  // The value at `key`; JSON null counts as absent, as `transformers` treats None (a
  // config saved with num_key_value_heads=None means "same as the heads").
  const Json* find(std::string_view key) const {
    auto it = config_.find(key);
    return it == config_.end() || it->is_null() ? nullptr : &*it;
  }

  std::optional<Int> required_size(const Field& field) {
    if (find(field.key) == nullptr) {
      fail(field.key, "missing: a Llama config.json gives " + std::string(field.meaning) + " as a positive integer "
                          "(e.g. " + std::to_string(field.example) + " for Llama-3-70B)");
      return std::nullopt;
    }
    return optional_size(field);
  }

  // A positive integer when present; nullopt (and no error) when absent.
  std::optional<Int> optional_size(const Field& field) {
    const Json* value = find(field.key);
    if (value == nullptr || !ok()) return std::nullopt;
    if (!value->is_number_integer()) {
      fail(field.key, "expected a positive integer (e.g. " + std::to_string(field.example) + "), got " +
                          describe(*value));
      return std::nullopt;
    }
    if (value->is_number_unsigned() && value->get<std::uint64_t>() > std::uint64_t{std::numeric_limits<Int>::max()}) {
      fail(field.key, "must be a positive integer below 2^63, got " + printable(value->dump(), MAX_QUOTED));
      return std::nullopt;
    }
    const Int n = value->get<Int>();
    if (n <= 0) {
      fail(field.key, "must be a positive integer, got " + std::to_string(n));
      return std::nullopt;
    }
    return n;
  }

  std::optional<bool> optional_bool(const char* key) {
    const Json* value = find(key);
    if (value == nullptr || !ok()) return std::nullopt;
    if (!value->is_boolean()) {
      fail(key, "expected true or false, got " + describe(*value));
      return std::nullopt;
    }
    return value->get<bool>();
  }

 private:
  const Json& config_;
  const std::string& origin_;
  std::string error_;
};

// "_name_or_path" when the config carries one (saved from a hub checkpoint); else the file
// stem, except that Hugging Face names every file config.json, so then its folder's name.
std::string model_name(const Json& config, const std::string& origin) {
  auto it = config.find("_name_or_path");
  if (it != config.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
    return it->get<std::string>();
  }
  const std::filesystem::path path(origin);
  if (path.stem() == "config" && path.parent_path().has_filename()) return path.parent_path().filename().string();
  return path.stem().string();
}

}  // namespace

std::vector<std::string> hf_model_types() { return {"llama"}; }

std::variant<ModelConfig, std::string> parse_hf_config(const std::string& json_text, const std::string& origin) {
  Json config;
  try {
    // No comments: config.json is strict JSON, as Python's json module writes it.
    config = Json::parse(json_text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const Json::parse_error& e) {
    // e.byte counts the bytes read, the offending one included, so the position is where
    // the parser stopped: the last byte of the unexpected token (0-based offset byte − 1),
    // or one past the end for truncated input.
    auto [line, column] = position_of(json_text, e.byte == 0 ? 0 : e.byte - 1);
    return origin + ":" + std::to_string(line) + ":" + std::to_string(column) +
           ": invalid JSON: " + printable(parse_problem(e.what()), 200);
  } catch (const Json::out_of_range& e) {
    // A number beyond double's range ("1e400") is refused by the parser with out_of_range,
    // which carries no position.
    const std::string what = e.what();
    const std::size_t id_end = what.find("] ");
    return origin + ": invalid JSON: " +
           printable(id_end == std::string::npos ? what : what.substr(id_end + 2), 200) +
           " (a number beyond the range of a double)";
  }
  if (!config.is_object()) {
    return origin + ": expected a JSON object { \"model_type\": \"llama\", … } at the top level, got " +
           describe(config);
  }

  Reader read(config, origin);
  const std::string supported = join(hf_model_types());
  if (const Json* type = read.find("model_type"); type == nullptr) {
    read.fail("model_type", "missing: name the architecture (supported: " + supported + ")");
  } else if (!type->is_string()) {
    read.fail("model_type", "expected a string, got " + describe(*type) + " (supported: " + supported + ")");
  } else if (const auto& name = type->get_ref<const std::string&>(); name != "llama") {
    read.fail("model_type", "unsupported model type " + quote(name) + " (supported: " + supported + ")");
  }
  // Nothing else is read for an unknown architecture: its fields may mean other things.
  if (!read.ok()) return read.error();

  ModelConfig model;
  model.name = model_name(config, origin);
  model.family = Family::LLAMA;
  const auto layers = read.required_size(LAYERS);
  const auto hidden = read.required_size(HIDDEN);
  const auto heads = read.required_size(HEADS);
  const auto kv_heads = read.optional_size(KV_HEADS);
  const auto ffn = read.required_size(FFN);
  const auto vocab = read.required_size(VOCAB);
  const auto tied = read.optional_bool("tie_word_embeddings");
  // Read only to be checked: RoPE has no position table, and the sequence length is the
  // scenario's.
  read.optional_size(POSITIONS);
  const auto head_dim = read.optional_size(HEAD_DIM);
  const auto attention_bias = read.optional_bool("attention_bias");
  const auto mlp_bias = read.optional_bool("mlp_bias");
  if (!read.ok()) return read.error();

  if (*hidden % *heads != 0) {
    read.fail(HEADS.key, std::to_string(*heads) + " does not divide hidden_size=" + std::to_string(*hidden) +
                             " (each head takes an equal share; valid: " + divisor_list(*hidden) + ")");
  } else if (kv_heads && *heads % *kv_heads != 0) {
    read.fail(KV_HEADS.key, std::to_string(*kv_heads) + " does not divide num_attention_heads=" +
                                std::to_string(*heads) + " (each key/value head serves an equal group of query "
                                "heads; valid: " + divisor_list(*heads) + ")");
  } else if (head_dim && *head_dim != *hidden / *heads) {
    read.fail(HEAD_DIM.key, std::to_string(*head_dim) + " differs from hidden_size / num_attention_heads = " +
                                std::to_string(*hidden / *heads) + ", which the Llama layers assume (valid: " +
                                std::to_string(*hidden / *heads) + ", or leave it out)");
  } else if (attention_bias.value_or(false)) {
    read.fail("attention_bias", "true is not modelled: the Llama layers have no biases (valid: false)");
  } else if (mlp_bias.value_or(false)) {
    read.fail("mlp_bias", "true is not modelled: the Llama layers have no biases (valid: false)");
  }
  if (!read.ok()) return read.error();

  model.layers = *layers;
  model.hidden = *hidden;
  model.heads = *heads;
  model.kv_heads = kv_heads.value_or(*heads);
  model.ffn_hidden = *ffn;
  model.vocab = *vocab;
  model.max_positions = 0;
  model.tied_embedding = tied.value_or(false);  // LlamaConfig's default
  return model;
}

}  // namespace trainsim::models
