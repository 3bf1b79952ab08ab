#pragma once
// The table `trainsim search --csv/--jsonl` writes: one row per candidate of the layout
// space, in enumeration order, with its layout, its two bounds, what the search made of it
// (pruned and by which bound, or simulated and how it came out) and, when simulated, its
// figures and its rank among those that fit. The same for any thread or rank count.
#include <cstdint>
#include <string>
#include <vector>

#include "cli/detail/table_cells.hpp"
#include "scenarios/layout_space.hpp"

namespace trainsim::cli::detail {

enum class CandidateStatus : std::uint8_t {
  PRUNED_MEMORY_STATES,       // the model states alone exceed the capacity
  PRUNED_MEMORY_ACTIVATIONS,  // with the activations a stage holds at its first backward
  PRUNED_TIME,                // its time lower bound exceeds the k-th best time found
  NOT_SIMULATED,              // --count-only
  FIT,
  OUT_OF_MEMORY,              // simulated, and its peak exceeds the capacity
  FAILED,                     // the strategies refused to build it
};
const char* to_string(CandidateStatus s);

struct CandidateOutcome {
  const scenarios::LayoutCandidate* layout = nullptr;
  std::uint64_t index = 0;              // in enumeration order
  double memory_lower_bound_bytes = 0;
  double time_lower_bound_s = 0;        // 0 when pruned by memory (not computed)
  CandidateStatus status = CandidateStatus::NOT_SIMULATED;
  std::uint64_t rank = 0;               // among the candidates that fit, by time; 0: none
  double iteration_s = 0, tokens_per_s = 0, mfu = 0, peak_bytes = 0;  // simulated only
  std::string error;                    // FAILED only
};

const std::vector<std::string>& search_columns();
Row search_row(const CandidateOutcome& c);

}  // namespace trainsim::cli::detail
