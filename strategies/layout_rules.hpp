#pragma once
// The layout rules, each written once: which sizes must divide which, and which dimensions
// may combine. Each returns an error message, or an empty string when the rule holds. The
// passes that own a dimension call them, and so do the scenario loader and the runs-table
// mapping (cli validate), each with its own words for the quantities (RuleWords) and its
// own additions (the field, the valid values, where the fix goes).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainsim::strategies {

// What a caller calls each quantity in its messages.
struct RuleWords {
  const char* tensor;
  const char* heads;
  const char* kv_heads;
  const char* pipeline;
  const char* layers;
  const char* virtual_stages;
  const char* data;
  const char* global_batch;
  const char* micro_batch;
  const char* sequence;
  // "pipeline × virtual_stages = 4 × 4 = 16" (true) or "pp × vpp = 16".
  bool spell_out_chunks;
};
// Scenario files (Megatron-LM's argument words) and the passes.
inline constexpr RuleWords SCENARIO_WORDS = {"tensor",         "num_attention_heads", "num_query_groups",
                                             "pipeline",       "num_layers",          "virtual_stages",
                                             "data",           "global_batch_size",   "micro_batch_size",
                                             "sequence length", true};
// The runs table's columns (cli validate).
inline constexpr RuleWords RUNS_TABLE_WORDS = {"tp", "heads", "kv_heads",     "pp",          "layers",
                                               "vpp", "dp",   "global_batch", "micro_batch", "seq", false};

// a × b, or nullopt when it overflows int64 (hostile input); and its text.
std::optional<std::int64_t> checked_product(std::int64_t a, std::int64_t b);
std::string product_text(std::optional<std::int64_t> p);  // "more than int64" for nullopt

// tensor divides the attention heads, then the key/value heads (query groups; ≤ 0: none).
std::string tensor_divides_heads(std::int64_t tensor, std::int64_t heads, const RuleWords& w = SCENARIO_WORDS);
std::string tensor_divides_kv_heads(std::int64_t tensor, std::int64_t kv_heads, const RuleWords& w = SCENARIO_WORDS);

// Sequence parallelism shards the sequence over the tensor group.
std::string sequence_parallel_divides_sequence(bool sequence_parallel, std::int64_t tensor, std::int64_t sequence,
                                               const RuleWords& w = SCENARIO_WORDS);

// An even split: pipeline divides the layers.
std::string pipeline_divides_layers(std::int64_t pipeline, std::int64_t layers, const RuleWords& w = SCENARIO_WORDS);
// Interleaving: virtual_stages > 1 needs pipeline > 1, and pipeline × virtual_stages
// dividing the layers.
std::string virtual_stages_need_pipeline(std::int64_t virtual_stages, std::int64_t pipeline,
                                         const RuleWords& w = SCENARIO_WORDS);
std::string virtual_stages_divide_layers(std::int64_t virtual_stages, std::int64_t pipeline, std::int64_t layers,
                                         const RuleWords& w = SCENARIO_WORDS);
// Megatron's uneven split (first/last-stage layer counts, 0: an even share): needs
// pipeline ≥ 2, no interleaving, and the middle stages splitting the rest evenly.
std::string uneven_split(std::int64_t layers, std::int64_t pipeline, std::int64_t virtual_stages,
                         std::int64_t first_stage_layers, std::int64_t last_stage_layers);

// The product of the layout's sizes is the number of GPUs: "" when it is, else
// "tensor × pipeline × data = 2 × 2 × 4 = 16" for the caller to finish (", but …").
std::string layout_product_mismatch(const std::vector<std::pair<const char*, std::int64_t>>& sizes,
                                    std::int64_t gpus);

// Every data-parallel replica takes whole micro-batches of the global batch.
std::string batch_divides(std::int64_t global_batch, std::int64_t micro_batch, std::int64_t data,
                          const RuleWords& w = SCENARIO_WORDS);
// Megatron's interleaved schedule walks micro-batches in groups of `pipeline`: the
// micro-batches per replica must be a multiple of pipeline (message names the nearest
// valid global batch sizes). Holds trivially without interleaving.
std::string interleaved_micro_batches(std::int64_t global_batch, std::int64_t micro_batch, std::int64_t data,
                                      std::int64_t pipeline, std::int64_t virtual_stages);

}  // namespace trainsim::strategies
