// Pipeline parallelism (Narayanan et al. 2021): the layers are split over the stages —
// evenly, or with Megatron's explicit first/last-stage layer counts and the rest even —
// the first stage also holds the embedding, the last the head. With v virtual stages each
// stage holds v chunks: chunk c of stage i is virtual stage c·p + i. Activations cross
// stage boundaries as point-to-point sends that the schedule pass places.
#include "strategies/detail/pass_functions.hpp"
#include "strategies/layout_rules.hpp"

namespace trainsim::strategies::detail {

std::string pipeline_parallel(Program& program, const PassArgs& args) {
  if (is_scheduled(program)) return "must run before the schedule";
  Layout l;
  l.pipeline = args.get("size");
  l.virtual_stages = args.get("v");
  l.first_stage_layers = args.get("first");
  l.last_stage_layers = args.get("last");
  const std::int64_t p = l.pipeline, v = l.virtual_stages, layers = program.spec.model.layers;
  if (p < 1 || v < 1) return "pipeline and virtual_stages must be positive";
  if (program.roles.size() != 1) return "pipeline already applied";
  const bool uneven = l.first_stage_layers > 0 || l.last_stage_layers > 0;
  // Layer counts per virtual stage, in model order.
  std::vector<std::int64_t> counts;
  if (uneven) {
    if (auto e = uneven_split(layers, p, v, l.first_stage_layers, l.last_stage_layers); !e.empty()) return e;
    const std::int64_t middle_stages = p - 2;
    const std::int64_t even = layers / p;
    const std::int64_t first = l.first_stage_layers > 0 ? l.first_stage_layers : even;
    const std::int64_t last = l.last_stage_layers > 0 ? l.last_stage_layers : even;
    const std::int64_t rest = layers - first - last;
    counts.push_back(first);
    for (std::int64_t i = 0; i < middle_stages; ++i) counts.push_back(rest / middle_stages);
    counts.push_back(last);
  } else {
    if (auto e = pipeline_divides_layers(p, layers); !e.empty()) return e;
    if (auto e = virtual_stages_divide_layers(v, p, layers); !e.empty()) return e;
    counts.assign(static_cast<std::size_t>(p * v), layers / (p * v));
  }
  std::vector<Role> roles(static_cast<std::size_t>(p));
  for (std::int64_t s = 0; s < p; ++s) {
    roles[static_cast<std::size_t>(s)].stage = static_cast<std::int32_t>(s);
    roles[static_cast<std::size_t>(s)].chunks.resize(static_cast<std::size_t>(v));
  }
  std::int32_t next_layer = 0;
  for (std::int64_t vs = 0; vs < p * v; ++vs) {
    Chunk& c = roles[static_cast<std::size_t>(vs % p)].chunks[static_cast<std::size_t>(vs / p)];
    for (std::int64_t i = 0; i < counts[static_cast<std::size_t>(vs)]; ++i) c.layers.push_back(next_layer++);
    c.has_embedding = vs == 0;
    c.has_head = vs == p * v - 1;
  }
  program.roles = std::move(roles);
  program.applied.pipeline = p;
  program.applied.virtual_stages = v;
  program.templates_stale = true;  // built when a pass reads them (refresh_templates)
  return {};
}

}  // namespace trainsim::strategies::detail
