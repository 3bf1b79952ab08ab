// GPipe (Huang et al. 2019): every stage runs all m forwards, then all m backwards. The
// bubble is that of 1F1B, (p − 1)/m of the ideal time, but every stage holds the
// activations of all m micro-batches.
#include "strategies/detail/pass_functions.hpp"
#include "strategies/detail/schedule_builder.hpp"

namespace trainsim::strategies::detail {

std::string schedule_gpipe(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "a schedule already ran";
  if (program.applied.virtual_stages > 1) return "GPipe has no virtual stages (use interleaved-1f1b)";
  const auto m = static_cast<std::int32_t>(program.micro_batches);
  for (auto& role : program.roles) {
    ScheduleBuilder b(program, role);
    b.prologue();
    for (std::int32_t i = 0; i < m; ++i) b.forward(i);
    // Backwards start from the last micro-batch, whose activations are freshest.
    for (std::int32_t i = m; i-- > 0;) b.backward(i);
    b.tail();
  }
  return {};
}

}  // namespace trainsim::strategies::detail
