#pragma once
// `trainsim sweep FILE`: every variant of a scenario's sweep block, one table row each.
#include <cstdint>
#include <iosfwd>
#include <string>

namespace trainsim::cli {

struct SweepOptions {
  std::string sweep_path;
  std::string csv_path;    // empty: no CSV
  std::string jsonl_path;  // empty: no JSON Lines
  unsigned threads = 0;    // 0: every core (std::thread::hardware_concurrency)
  bool breakdown = true;   // false: summary-only simulation, no time breakdown columns (faster)
  bool progress = true;    // drawn only when stderr is a terminal
  double max_memory_bytes = 0;  // per thread; 0: default budget / threads
  // Testing only: stop after writing this many rows (0: never), leaving the last one half
  // written, as a kill would.
  std::uint64_t stop_after = 0;
};

// Writes the table(s) in variant order and a summary to `out` (variants, simulated, dropped
// with the reason counted). An existing table written for the same sweep file is resumed
// after its last whole row; one written for anything else is refused. Exit status 0 when
// every variant has its row, 1 otherwise (bad sweep file, unwritable output).
int sweep_command(const SweepOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
