#pragma once
// The layout rules, each written once: which sizes must divide which, and which dimensions
// may combine. Each returns an error message, or an empty string when the rule holds. The
// passes that own a dimension call them, and so does the scenario loader (which also checks
// every runs-table row, mapped to a scenario), with its own additions (the field, the valid
// values, where the fix goes).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/shard_rules.hpp"

namespace trainsim::strategies {

// a × b, or nullopt when it overflows int64 (hostile input); and its text.
std::optional<std::int64_t> checked_product(std::int64_t a, std::int64_t b);
std::string product_text(std::optional<std::int64_t> p);  // "more than int64" for nullopt

// The tensor-parallel rules are the model's (models/shard_rules.hpp).
using models::sequence_parallel_divides_sequence;
using models::tensor_divides_ffn;
using models::tensor_divides_heads;
using models::tensor_divides_kv_heads;

// An even split: pipeline divides the layers.
std::string pipeline_divides_layers(std::int64_t pipeline, std::int64_t layers);
// Interleaving: virtual_stages > 1 needs pipeline > 1, and pipeline × virtual_stages
// dividing the layers.
std::string virtual_stages_need_pipeline(std::int64_t virtual_stages, std::int64_t pipeline);
std::string virtual_stages_divide_layers(std::int64_t virtual_stages, std::int64_t pipeline, std::int64_t layers);
// Megatron's uneven split (first/last-stage layer counts, 0: an even share): needs
// pipeline ≥ 2, no interleaving, and the middle stages splitting the rest evenly.
std::string uneven_split(std::int64_t layers, std::int64_t pipeline, std::int64_t virtual_stages,
                         std::int64_t first_stage_layers, std::int64_t last_stage_layers);

// The product of the layout's sizes is the number of GPUs: "" when it is, else
// "tensor × pipeline × data = 2 × 2 × 4 = 16" for the caller to finish (", but …").
std::string layout_product_mismatch(const std::vector<std::pair<const char*, std::int64_t>>& sizes,
                                    std::int64_t gpus);

// Every data-parallel replica takes whole micro-batches of the global batch.
std::string batch_divides(std::int64_t global_batch, std::int64_t micro_batch, std::int64_t data);
// Megatron's interleaved schedule walks micro-batches in groups of `pipeline`: the
// micro-batches per replica must be a multiple of pipeline (message names the nearest
// valid global batch sizes). Holds trivially without interleaving.
std::string interleaved_micro_batches(std::int64_t global_batch, std::int64_t micro_batch, std::int64_t data,
                                      std::int64_t pipeline, std::int64_t virtual_stages);

}  // namespace trainsim::strategies
