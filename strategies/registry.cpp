#include "strategies/registry.hpp"

#include <algorithm>
#include <stdexcept>

#include "strategies/detail/pass_functions.hpp"

namespace trainsim::strategies {

const char* to_string(PassKind k) {
  switch (k) {
    case PassKind::LAYOUT: return "layout";
    case PassKind::SCHEDULE: return "schedule";
    case PassKind::MEMORY: return "memory";
    case PassKind::OVERLAP: return "overlap";
  }
  return "?";
}

const std::vector<PassInfo>& all_passes() {
  static const std::vector<PassInfo> passes = {
#define TRAINSIM_PASS(name, kind, function, description) {name, PassKind::kind, &detail::function, description},
#include "strategies/passes.def"
#undef TRAINSIM_PASS
  };
  return passes;
}

const PassInfo* find_pass(std::string_view name) {
  for (const auto& p : all_passes())
    if (name == p.name) return &p;
  return nullptr;
}

std::vector<std::string> pass_names(PassKind kind) {
  std::vector<std::string> names;
  for (const auto& p : all_passes())
    if (p.kind == kind) names.emplace_back(p.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> pipeline_for(const TrainingSpec& spec) {
  // Template-level passes run before the schedule, which expands the templates into the
  // iteration's steps: layout, model-state sharding, recompute, overlap, then schedule.
  std::vector<std::string> names = {"tensor", "pipeline", "data"};
  if (spec.zero_stage > 0) names.push_back("zero-" + std::to_string(spec.zero_stage));
  if (spec.recompute == Recompute::SELECTIVE) names.emplace_back("selective");
  if (spec.recompute == Recompute::FULL) names.emplace_back("full");
  if (spec.overlap_grad_reduce) names.emplace_back("overlap-grad-reduce");
  if (spec.overlap_param_gather) names.emplace_back("overlap-param-gather");
  if (spec.overlap_tp_comm) names.emplace_back("overlap-tp-comm");
  names.push_back(spec.pipeline_schedule);
  return names;
}

Program build_program(const TrainingSpec& spec) {
  Program program = initial_program(spec);
  for (const auto& name : pipeline_for(spec)) {
    const PassInfo* pass = find_pass(name);
    if (pass == nullptr) {
      std::string known;
      for (const auto& p : all_passes()) known += std::string(known.empty() ? "" : ", ") + p.name;
      throw std::invalid_argument("strategy pass \"" + name + "\" is not implemented (registered passes: " +
                                  known + ")");
    }
    if (std::string why = pass->run(program); !why.empty())
      throw std::invalid_argument("pass \"" + name + "\": " + why);
  }
  if (!is_scheduled(program))
    throw std::invalid_argument("the pass pipeline \"" + program.pipeline_string() +
                                "\" has no schedule pass");
  return program;
}

}  // namespace trainsim::strategies
