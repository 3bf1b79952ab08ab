// One-forward-one-backward (PipeDream-Flush; Narayanan et al. 2021): stage i runs
// min(p − i − 1, m) warm-up forwards, then alternates one forward and one backward, then
// drains the remaining backwards, so at most p − i micro-batches are in flight.
#include <algorithm>

#include "strategies/detail/pass_functions.hpp"
#include "strategies/detail/schedule_builder.hpp"

namespace trainsim::strategies::detail {

std::string schedule_1f1b(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "a schedule already ran";
  if (program.applied.virtual_stages > 1)
    return "virtual_stages=" + std::to_string(program.applied.virtual_stages) +
           " needs the interleaved schedule (pipeline_schedule: \"interleaved-1f1b\")";
  const auto p = static_cast<std::int32_t>(program.roles.size());
  const auto m = static_cast<std::int32_t>(program.micro_batches);
  for (auto& role : program.roles) {
    ScheduleBuilder b(program, role);
    b.prologue();
    const std::int32_t warmup = std::min(p - role.stage - 1, m);
    for (std::int32_t i = 0; i < warmup; ++i) b.forward(i);
    for (std::int32_t i = 0; i < m - warmup; ++i) {
      b.forward(warmup + i);
      b.backward(i);
    }
    for (std::int32_t i = m - warmup; i < m; ++i) b.backward(i);
    b.tail();
  }
  return {};
}

}  // namespace trainsim::strategies::detail
