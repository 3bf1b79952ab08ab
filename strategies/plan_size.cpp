#include "strategies/plan_size.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace trainsim::strategies {

namespace {

// Measured on the shipped examples (RSS of `trainsim run` over the Program's steps and the
// Plan's tasks; RelWithDebInfo, glibc malloc): a Program step with its label and deps
// takes about 250 bytes; a lowered task with its edges, engine state, timeline span and
// share of flows about 105 (Llama-3 70B full: 86.7 M tasks in 9.0 GB). Rounded up.
constexpr double BYTES_PER_STEP = 320;
constexpr double BYTES_PER_TASK = 128;
// Items one layer adds to a micro-batch's forward plus backward templates: an upper
// bound for TP collectives around attention and MLP, recompute and gradient buckets
// (measured: 3 for gpt-1.7b with full recompute, 12 for GPT-3 175B at t8) …
constexpr double ITEMS_PER_LAYER = 16;
// … and, with tensor-parallel overlap, each GEMM next to a collective cut into `tensor`
// chunks (overlap_tp_comm.cpp; measured: 171 per GPT layer at t8 with sequence parallelism
// and selective recompute, the backward all-gathers of the QKV and fc1 inputs included).
constexpr double OVERLAP_ITEMS_PER_LAYER_AND_CHUNK = 20;
// The embedding and the head count as layers; the tail (gradient sync, optimizer) as a few.
constexpr double EXTRA_LAYERS_PER_STAGE = 2;
constexpr double TAIL_STEPS_PER_STAGE = 64;
// Task ids are 32-bit (sim::TaskId), with one value reserved for "none".
constexpr double MAX_TASKS = 4.0e9;

}  // namespace

std::string format_bytes(double bytes) {
  constexpr double GIB = 1024.0 * 1024.0 * 1024.0;
  if (bytes >= GIB) return fmt::format("{:.1f} GiB", bytes / GIB);
  return fmt::format("{:.0f} MiB", std::max(1.0, bytes / (1024.0 * 1024.0)));
}

PlanSize estimate_program(const TrainingSpec& spec) {
  const Layout& l = spec.layout;
  const double pipeline = static_cast<double>(std::max<std::int64_t>(1, l.pipeline));
  const double micro_batches = static_cast<double>(spec.global_batch) /
                               (static_cast<double>(std::max<std::int64_t>(1, spec.micro_batch)) *
                                static_cast<double>(std::max<std::int64_t>(1, l.data)));
  // The fullest stage sets the size of every stage's schedule, bounded by the uneven split.
  const double even = std::ceil(static_cast<double>(spec.model.layers) / pipeline);
  const double fullest = std::max({even, static_cast<double>(l.first_stage_layers),
                                   static_cast<double>(l.last_stage_layers)});
  const double items = ITEMS_PER_LAYER + (spec.overlap_tp_comm ? OVERLAP_ITEMS_PER_LAYER_AND_CHUNK *
                                                                        static_cast<double>(l.tensor)
                                                                  : 0.0);
  PlanSize s;
  s.steps = pipeline * (micro_batches * (fullest + EXTRA_LAYERS_PER_STAGE) * items + TAIL_STEPS_PER_STAGE);
  s.bytes = s.steps * BYTES_PER_STEP;
  return s;
}

PlanSize estimate_plan(const Program& program, Fidelity fidelity) {
  const Layout& l = program.spec.layout;
  // Full fidelity lowers every rank of a stage (tensor × data of them), fast one.
  const double ranks_per_stage =
      fidelity == Fidelity::FULL ? static_cast<double>(l.tensor) * static_cast<double>(l.data) : 1.0;
  PlanSize s;
  for (const Role& role : program.roles) {
    const auto steps = static_cast<double>(role.item_steps());
    s.steps += steps;
    s.tasks += steps * ranks_per_stage;
  }
  s.bytes = s.steps * BYTES_PER_STEP + s.tasks * BYTES_PER_TASK;
  return s;
}

void check_plan_size(const PlanSize& size, const PlanSize* fast, Fidelity fidelity, double budget_bytes) {
  const bool too_many_tasks = size.tasks > MAX_TASKS;
  if (!too_many_tasks && size.bytes <= budget_bytes) return;
  if (size.tasks == 0) {
    throw PlanTooLarge(fmt::format(
        "the run's program would hold about {:.3g} steps and need about {} of memory, more than the {} "
        "available (--max-memory): its schedule grows with micro-batches per pipeline (global_batch_size / "
        "(micro_batch_size × data)) × layers per pipeline stage; reduce global_batch_size or num_layers, or raise "
        "--max-memory",
        size.steps, format_bytes(size.bytes), format_bytes(budget_bytes)));
  }
  std::string advice;
  if (fidelity == Fidelity::FULL && fast != nullptr && fast->tasks <= MAX_TASKS && fast->bytes <= budget_bytes) {
    advice = fmt::format("use --fidelity fast (one rank per pipeline stage: about {:.3g} tasks, {})", fast->tasks,
                         format_bytes(fast->bytes));
  } else {
    advice = "reduce global_batch_size (fewer micro-batches per pipeline) or num_layers";
    if (fidelity == Fidelity::FULL) advice = "use --fidelity fast and " + advice;
  }
  if (too_many_tasks) {
    throw PlanTooLarge(fmt::format("the {} plan would have about {:.3g} tasks, more than the engine's 32-bit task "
                                   "ids hold ({:.3g}); {}",
                                   to_string(fidelity), size.tasks, MAX_TASKS, advice));
  }
  throw PlanTooLarge(fmt::format("the {} plan would have about {:.3g} tasks and need about {} of memory, more than "
                                 "the {} available (--max-memory); {}{}",
                                 to_string(fidelity), size.tasks, format_bytes(size.bytes), format_bytes(budget_bytes),
                                 advice, ", or raise --max-memory"));
}

}  // namespace trainsim::strategies
