// Data parallelism: each of the d replicas processes global_batch / d sequences as
// micro-batches, then the gradients are all-reduced over the replicas before the
// optimizer step (bytes = parameters × gradient bytes; formulas.md: 2Ψ of traffic).
#include "strategies/detail/pass_functions.hpp"
#include "strategies/layout_rules.hpp"

namespace trainsim::strategies::detail {

std::string data_parallel(Program& program, const PassArgs& args) {
  if (is_scheduled(program)) return "must run before the schedule";
  const TrainingSpec& spec = program.spec;
  const std::int64_t d = args.get("size");
  if (d < 1) return "data size must be positive";
  if (auto e = batch_divides(spec.global_batch, spec.micro_batch, d); !e.empty()) return e;
  program.applied.data = d;
  program.micro_batches = spec.global_batch / (spec.micro_batch * d);
  const StateBytes sb = state_bytes_per_param(spec);
  for (auto& role : program.roles) {
    std::vector<Item> sync;
    if (d > 1) {
      Item ar;
      ar.kind = Item::Kind::COLLECTIVE;
      ar.collective = {Dim::DATA, hardware::Collective::ALL_REDUCE, static_cast<double>(role.params) * sb.gradients};
      ar.category = Category::DP_COMM;
      ar.stream = program.stream("dp-comm");
      static const Label DP_ALLREDUCE("dp-allreduce");  // interned once, not per role
      ar.label = DP_ALLREDUCE;
      ar.deps = {Dep::every_stream()};
      sync.push_back(ar);
    }
    // The copies of a tied embedding on the first and last stage sum their gradients.
    const bool tied_copy = spec.model.tied_embedding && program.applied.pipeline > 1 &&
                           (role.has_embedding() != role.has_head());
    if (tied_copy) {
      Item ar;
      ar.kind = Item::Kind::COLLECTIVE;
      ar.collective = {Dim::PIPELINE, hardware::Collective::ALL_REDUCE,
                       static_cast<double>(word_embedding_shard_params(spec.model, program.applied.tensor)) *
                           sb.gradients};
      ar.category = Category::PP_COMM;
      ar.stream = program.stream("pp-comm");
      static const Label EMBEDDING_ALLREDUCE("embedding-allreduce");
      ar.label = EMBEDDING_ALLREDUCE;
      ar.deps = {Dep::every_stream()};
      sync.push_back(ar);
    }
    role.tail.insert(role.tail.begin(), sync.begin(), sync.end());
  }
  return {};
}

}  // namespace trainsim::strategies::detail
