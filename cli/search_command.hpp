#pragma once
// `trainsim search FILE`: the best layouts for a scenario's model, GPU count and global batch.
#include <cstdint>
#include <iosfwd>
#include <string>

namespace trainsim::cli {

struct SearchOptions {
  std::string scenario_path;  // model, training (sequence, global batch, precision), cluster
  int top = 10;
  unsigned threads = 0;            // 0: every core
  std::int64_t max_micro_batch = 16;
  bool prune = true;               // false: simulate every candidate that fits the memory bound
  bool progress = true;            // drawn only when stderr is a terminal
  bool count_only = false;         // enumerate and bound, simulate nothing
  // Every candidate's row (cli/detail/search_table.hpp) as CSV and/or JSON Lines; empty: none.
  std::string csv_path, jsonl_path;
};

// Prints the top-k by throughput among the candidates that fit in memory, why the best beats
// the runner-up (the breakdown terms that differ), and how many candidates were pruned and
// why. The report (stdout) is identical for any thread count; the timing goes to `err`.
int search_command(const SearchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
