#pragma once
// A one-line progress bar on a terminal — done/total, rate, time left — redrawn at most ten
// times a second; silent when the stream is not a terminal (a log or a pipe gets nothing).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace trainsim::cli::detail {

class Progress {
 public:
  // `enabled` false: every call does nothing. `what`: the unit ("variants").
  Progress(bool enabled, std::uint64_t total, std::uint64_t already_done, std::string what);
  void update(std::uint64_t done);
  // Clears the line.
  void finish();

 private:
  bool enabled_;
  std::uint64_t total_, start_done_;
  std::string what_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

// Whether stderr is a terminal.
bool stderr_is_terminal();

}  // namespace trainsim::cli::detail
