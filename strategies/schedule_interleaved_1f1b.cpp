// Interleaved 1F1B (Narayanan et al. 2021, Megatron's virtual pipeline): each stage holds
// v model chunks; micro-batches go through the chunks in groups of p, so the bubble
// shrinks to (p − 1)/(v·m) of the ideal time at the cost of v times more transfers.
// Order as in Megatron-LM: unit k of a stage's forward work is chunk (k / p) mod v of
// micro-batch (k / (p·v))·p + k mod p; backward visits chunks in reverse. Stage i warms
// up with (p − i − 1)·2 + (v − 1)·p units.
#include <algorithm>

#include "strategies/detail/pass_functions.hpp"
#include "strategies/detail/schedule_builder.hpp"
#include "strategies/layout_rules.hpp"

namespace trainsim::strategies::detail {

std::string schedule_interleaved_1f1b(Program& program, const PassArgs& /*args*/) {
  if (is_scheduled(program)) return "a schedule already ran";
  const auto p = static_cast<std::int32_t>(program.roles.size());
  const auto m = static_cast<std::int32_t>(program.micro_batches);
  const auto v = static_cast<std::int32_t>(program.applied.virtual_stages);
  if (p > 1 && v > 1 && m % p != 0) {
    std::string e = interleaved_micro_batches(program.spec.global_batch, program.spec.micro_batch, program.applied.data, p, v);
    return e.empty() ? "interleaved-1f1b needs the micro-batches per pipeline to be a multiple of pipeline" : e;
  }
  const std::int32_t units = m * v;
  auto micro_batch_of = [&](std::int32_t k) { return (k / (p * v)) * p + k % p; };
  auto chunk_of = [&](std::int32_t k, bool forward) {
    const std::int32_t c = (k / p) % v;
    return forward ? c : v - 1 - c;
  };
  for (auto& role : program.roles) {
    ScheduleBuilder b(program, role);
    b.prologue();
    std::int32_t warmup = (p - role.stage - 1) * 2 + (v - 1) * p;
    if (v == 1) warmup = p - role.stage - 1;  // plain 1F1B
    warmup = std::min(warmup, units);
    for (std::int32_t k = 0; k < warmup; ++k) b.forward(micro_batch_of(k), chunk_of(k, true));
    for (std::int32_t k = 0; k < units - warmup; ++k) {
      // With v = 1 this is plain 1F1B, whose transfers follow each run.
      if (v > 1) {
        b.forward_backward(micro_batch_of(warmup + k), chunk_of(warmup + k, true), micro_batch_of(k), chunk_of(k, false));
      } else {
        b.forward(micro_batch_of(warmup + k), chunk_of(warmup + k, true));
        b.backward(micro_batch_of(k), chunk_of(k, false));
      }
    }
    for (std::int32_t k = units - warmup; k < units; ++k) b.backward(micro_batch_of(k), chunk_of(k, false));
    b.tail();
  }
  return {};
}

}  // namespace trainsim::strategies::detail
