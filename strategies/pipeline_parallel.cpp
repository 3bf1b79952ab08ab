// Pipeline parallelism (Narayanan et al. 2021): the layers are split evenly over the
// stages; the first stage also holds the embedding, the last the head. Activations cross
// stage boundaries as point-to-point sends that the schedule pass places.
#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies::detail {

std::string pipeline_parallel(Program& program) {
  if (is_scheduled(program)) return "must run before the schedule";
  const std::int64_t p = program.spec.layout.pipeline;
  const std::int64_t layers = program.spec.model.layers;
  if (p < 1) return "pipeline size must be positive";
  if (layers % p != 0)
    return "pipeline=" + std::to_string(p) + " does not divide num_layers=" + std::to_string(layers);
  if (program.roles.size() != 1) return "pipeline already applied";
  const std::int64_t per_stage = layers / p;
  std::vector<Role> roles(static_cast<std::size_t>(p));
  for (std::int64_t s = 0; s < p; ++s) {
    Role& r = roles[static_cast<std::size_t>(s)];
    r.stage = static_cast<std::int32_t>(s);
    for (std::int64_t l = s * per_stage; l < (s + 1) * per_stage; ++l) r.layers.push_back(static_cast<std::int32_t>(l));
    r.has_embedding = s == 0;
    r.has_head = s == p - 1;
  }
  program.roles = std::move(roles);
  program.applied.pipeline = p;
  for (auto& role : program.roles) rebuild_role(role, program);
  program.passes_run.push_back("pipeline(" + std::to_string(p) + ")");
  return {};
}

}  // namespace trainsim::strategies::detail
