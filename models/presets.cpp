// Named model shapes. Each carries its source; shapes are the published ones exactly
// (the GPT rows are cross-checked against ../shared/validation/runs-dev.csv).
#include "models/presets.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainsim::models {

namespace {

// One row of the table: plain data, so the table is constexpr (no static constructor).
struct Row {
  const char* name;
  Family family;
  std::int64_t layers, hidden, heads, kv_heads, ffn_hidden, vocab, max_positions;
  bool tied_embedding;
};

// GPT: multi-head attention, ffn = 4h, learned positions.
constexpr Row gpt(const char* name, std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t vocab,
                  std::int64_t positions, bool tied) {
  return Row{name, Family::GPT, layers, hidden, heads, heads, 4 * hidden, vocab, positions, tied};
}

// Llama: GQA, SwiGLU, RMSNorm, RoPE (no position table), untied output head.
constexpr Row llama(const char* name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                    std::int64_t kv_heads, std::int64_t ffn, std::int64_t vocab) {
  return Row{name, Family::LLAMA, layers, hidden, heads, kv_heads, ffn, vocab, 0, false};
}

// Narayanan et al. 2021 (SC'21) Table 1 and Megatron-LM's README: V = 51200, s = 2048, tied.
constexpr Row narayanan(const char* name, std::int64_t layers, std::int64_t hidden, std::int64_t heads) {
  return gpt(name, layers, hidden, heads, 51200, 2048, true);
}

// Megatron-LM README weak-scaling table (Megatron-Core r0.8.0, H100): V = 131072, s = 4096.
// Untied output layer: only then do the parameter counts match the names
// (7.1B: 7.13e9 untied vs 6.60e9 tied; 16B: 16.1e9 vs 15.3e9; 70B: 69.8e9 vs 68.7e9).
constexpr Row mcore(const char* name, std::int64_t layers, std::int64_t hidden, std::int64_t heads) {
  return gpt(name, layers, hidden, heads, 131072, 4096, false);
}

constexpr std::array PRESETS = {
    // Brown et al. 2020 (GPT-3 paper) Table 2.1; V = 51200 as padded by Megatron (Narayanan et al. 2021).
    gpt("gpt3-175b", 96, 12288, 96, 51200, 2048, true),
    narayanan("gpt-1.7b", 24, 2304, 24),      // Narayanan et al. 2021 Table 1
    narayanan("gpt-3.6b", 30, 3072, 32),      // Narayanan et al. 2021 Table 1
    narayanan("gpt-7.5b", 36, 4096, 32),      // Narayanan et al. 2021 Table 1
    narayanan("gpt-18.4b", 40, 6144, 48),     // Narayanan et al. 2021 Table 1
    narayanan("gpt-39.1b", 48, 8192, 64),     // Narayanan et al. 2021 Table 1
    narayanan("gpt-76.1b", 60, 10240, 80),    // Narayanan et al. 2021 Table 1
    narayanan("gpt-145.6b", 80, 12288, 96),   // Narayanan et al. 2021 Table 1
    narayanan("gpt-310.1b", 96, 16384, 128),  // Narayanan et al. 2021 Table 1
    narayanan("gpt-529.6b", 105, 20480, 128), // Narayanan et al. 2021 Table 1
    narayanan("gpt-1t", 128, 25600, 160),     // Narayanan et al. 2021 Table 1 (1008.0B)
    mcore("mcore-gpt-1.7b", 24, 2048, 16),    // Megatron-LM README weak scaling
    mcore("mcore-gpt-7.1b", 30, 4096, 32),    // Megatron-LM README weak scaling
    mcore("mcore-gpt-16b", 32, 6144, 48),     // Megatron-LM README weak scaling
    mcore("mcore-gpt-32b", 48, 7168, 56),     // Megatron-LM README weak scaling
    mcore("mcore-gpt-70b", 84, 8192, 64),     // Megatron-LM README weak scaling
    mcore("mcore-gpt-119b", 92, 10240, 80),   // Megatron-LM README weak scaling
    mcore("mcore-gpt-177b", 96, 12288, 96),   // Megatron-LM README weak scaling
    mcore("mcore-gpt-314b", 96, 16384, 128),  // Megatron-LM README weak scaling
    mcore("mcore-gpt-462b", 112, 18432, 144), // Megatron-LM README weak scaling
    llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000),         // meta-llama/Llama-2-7b-hf config.json
    llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000),        // meta-llama/Llama-2-13b-hf config.json
    llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000),         // meta-llama/Llama-2-70b-hf config.json
    llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256),         // meta-llama/Meta-Llama-3-8B config.json
    llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256),        // meta-llama/Meta-Llama-3-70B config.json
    llama("llama3.1-405b", 126, 16384, 128, 8, 53248, 128256),  // meta-llama/Llama-3.1-405B config.json
};

}  // namespace

std::optional<ModelConfig> find_preset(const std::string& name) {
  for (const Row& row : PRESETS) {
    if (name == row.name) {
      return ModelConfig{.name = row.name, .family = row.family, .layers = row.layers, .hidden = row.hidden,
                         .heads = row.heads, .kv_heads = row.kv_heads, .ffn_hidden = row.ffn_hidden,
                         .vocab = row.vocab, .max_positions = row.max_positions,
                         .tied_embedding = row.tied_embedding};
    }
  }
  return std::nullopt;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  names.reserve(PRESETS.size());
  for (const Row& row : PRESETS) names.emplace_back(row.name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace trainsim::models
