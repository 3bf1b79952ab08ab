#include "strategies/layout_rules.hpp"

#include <sstream>

namespace trainsim::strategies {

namespace {

// A "{}" template filled with the arguments in order (strategies/ does not link fmt).
template <typename... Args>
std::string format(const char* pattern, const Args&... args) {
  std::ostringstream out;
  const char* p = pattern;
  auto next = [&](const auto& arg) {
    while (*p != '\0' && !(p[0] == '{' && p[1] == '}')) out << *p++;
    if (*p != '\0') p += 2;
    out << arg;
  };
  (next(args), ...);
  out << p;
  return out.str();
}

}  // namespace

std::optional<std::int64_t> checked_product(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

std::string product_text(std::optional<std::int64_t> p) { return p ? std::to_string(*p) : "more than int64"; }

std::string pipeline_divides_layers(std::int64_t pipeline, std::int64_t layers) {
  if (pipeline < 1 || layers % pipeline == 0) return {};
  return format("{}={} does not divide {}={}", "pipeline", pipeline, "num_layers", layers);
}

std::string virtual_stages_need_pipeline(std::int64_t virtual_stages, std::int64_t pipeline) {
  if (virtual_stages <= 1 || pipeline != 1) return {};
  return format("{}={} needs {} > 1 (interleaving splits each pipeline stage's layers into chunks)",
                     "virtual_stages", virtual_stages, "pipeline");
}

std::string virtual_stages_divide_layers(std::int64_t virtual_stages, std::int64_t pipeline, std::int64_t layers) {
  if (virtual_stages <= 1) return {};
  const auto chunks = checked_product(pipeline, virtual_stages);
  if (chunks && *chunks > 0 && layers % *chunks == 0) return {};
  return format("{}={} needs {}={} divisible by {} × {} = {} × {} = {}", "virtual_stages", virtual_stages, "num_layers",
                layers, "pipeline", "virtual_stages", pipeline, virtual_stages, product_text(chunks));
}

std::string uneven_split(std::int64_t layers, std::int64_t pipeline, std::int64_t virtual_stages,
                         std::int64_t first_stage_layers, std::int64_t last_stage_layers) {
  if (first_stage_layers <= 0 && last_stage_layers <= 0) return {};
  if (pipeline < 2) return "an uneven split needs pipeline ≥ 2";
  if (virtual_stages > 1) return "an uneven split cannot be combined with virtual_stages > 1";
  const std::int64_t even = layers / pipeline;
  const std::int64_t first = first_stage_layers > 0 ? first_stage_layers : even;
  const std::int64_t last = last_stage_layers > 0 ? last_stage_layers : even;
  const std::int64_t middle = pipeline - 2;
  const std::int64_t rest = layers - first - last;
  if (rest < 0 || (middle == 0 && rest != 0) || (middle > 0 && (rest <= 0 || rest % middle != 0)))
    return format("first_stage_layers={} and last_stage_layers={} leave {} of num_layers={} for the {} middle "
                       "stages, which must split them evenly (at least one layer each)",
                       first, last, rest, layers, middle);
  return {};
}

std::string layout_product_mismatch(const std::vector<std::pair<const char*, std::int64_t>>& sizes,
                                    std::int64_t gpus) {
  std::optional<std::int64_t> product = 1;
  std::string names, values;
  for (const auto& [name, size] : sizes) {
    if (!names.empty()) {
      names += " × ";
      values += " × ";
    }
    names += name;
    values += std::to_string(size);
    if (product) product = checked_product(*product, size);
  }
  if (product == gpus) return {};
  return format("{} = {} = {}", names, values, product_text(product));
}

std::string batch_divides(std::int64_t global_batch, std::int64_t micro_batch, std::int64_t data) {
  const auto step = checked_product(micro_batch, data);
  if (step && *step > 0 && global_batch % *step == 0) return {};
  return format("{}={} is not divisible by {} × {} = {} × {} = {}", "global_batch_size", global_batch, "micro_batch_size",
                     "data", micro_batch, data, product_text(step));
}

std::string interleaved_micro_batches(std::int64_t global_batch, std::int64_t micro_batch, std::int64_t data,
                                      std::int64_t pipeline, std::int64_t virtual_stages) {
  const auto per_step = checked_product(micro_batch, data);
  if (virtual_stages <= 1 || pipeline <= 1 || !per_step || *per_step <= 0 || global_batch % *per_step != 0) return {};
  const std::int64_t m = global_batch / *per_step;
  if (m % pipeline == 0) return {};
  const std::int64_t step = *per_step * pipeline;
  const std::int64_t lower = global_batch / step * step;
  return format("interleaved-1f1b needs the micro-batches per pipeline, global_batch_size / (micro_batch_size "
                     "× data) = {}, to be a multiple of pipeline={} (nearest valid global_batch_size: {}{})",
                     m, pipeline, lower > 0 ? std::to_string(lower) + ", " : "", lower + step);
}

}  // namespace trainsim::strategies
