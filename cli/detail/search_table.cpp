#include "cli/detail/search_table.hpp"

namespace trainsim::cli::detail {

const char* to_string(CandidateStatus s) {
  switch (s) {
    case CandidateStatus::PRUNED_MEMORY_STATES: return "pruned-memory-states";
    case CandidateStatus::PRUNED_MEMORY_ACTIVATIONS: return "pruned-memory-activations";
    case CandidateStatus::PRUNED_TIME: return "pruned-time";
    case CandidateStatus::NOT_SIMULATED: return "not-simulated";
    case CandidateStatus::FIT: return "fit";
    case CandidateStatus::OUT_OF_MEMORY: return "out-of-memory";
    case CandidateStatus::FAILED: return "failed";
  }
  return "?";
}

const std::vector<std::string>& search_columns() {
  static const std::vector<std::string> columns = {
      "candidate", "tensor", "pipeline", "data", "virtual_stages", "first_stage_layers", "last_stage_layers",
      "micro_batch", "schedule", "zero_stage", "recompute", "recompute_k", "sequence_parallel", "overlap_grad_reduce",
      "overlap_param_gather", "overlap_tp_comm", "layout", "memory_lower_bound_bytes", "time_lower_bound_s",
      "status", "rank", "iteration_s", "tokens_per_s", "mfu", "peak_memory_bytes", "error"};
  return columns;
}

Row search_row(const CandidateOutcome& c) {
  const scenarios::LayoutCandidate& l = *c.layout;
  const bool simulated = c.status == CandidateStatus::FIT || c.status == CandidateStatus::OUT_OF_MEMORY;
  const bool bounded = c.status != CandidateStatus::PRUNED_MEMORY_STATES &&
                       c.status != CandidateStatus::PRUNED_MEMORY_ACTIVATIONS;
  const auto figure = [&](double v) { return simulated ? Cell(v) : Cell(); };
  Row row;
  row.cells = {static_cast<std::int64_t>(c.index),
               std::int64_t{l.tensor},
               std::int64_t{l.pipeline},
               std::int64_t{l.data},
               std::int64_t{l.virtual_stages},
               std::int64_t{l.first_stage_layers},
               std::int64_t{l.last_stage_layers},
               std::int64_t{l.micro_batch},
               std::string(scenarios::schedule_name(l.schedule)),
               std::int64_t{l.zero_stage},
               std::string(scenarios::recompute_name(l.recompute)),
               l.recompute == strategies::Recompute::EVERY_K ? Cell(std::int64_t{l.recompute_k}) : Cell(),
               l.sequence_parallel,
               l.overlap_grad_reduce,
               l.overlap_param_gather,
               l.overlap_tp_comm,
               scenarios::describe(l),
               c.memory_lower_bound_bytes,
               bounded ? Cell(c.time_lower_bound_s) : Cell(),
               std::string(to_string(c.status)),
               c.rank > 0 ? Cell(static_cast<std::int64_t>(c.rank)) : Cell(),
               figure(c.iteration_s),
               figure(c.tokens_per_s),
               figure(c.mfu),
               figure(c.peak_bytes),
               c.error.empty() ? Cell() : Cell(c.error)};
  return row;
}

}  // namespace trainsim::cli::detail
