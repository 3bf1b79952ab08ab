#include "cli/detail/progress.hpp"

#include <unistd.h>

#include <fmt/format.h>

namespace trainsim::cli::detail {

bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

Progress::Progress(bool enabled, std::uint64_t total, std::uint64_t already_done, std::string what)
    : enabled_(enabled), total_(total), start_done_(already_done), what_(std::move(what)),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

void Progress::update(std::uint64_t done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done - start_done_) / elapsed : 0;
  const double left_s = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
  constexpr int WIDTH = 30;
  const int filled = total_ > 0 ? static_cast<int>(WIDTH * static_cast<double>(done) / static_cast<double>(total_)) : WIDTH;
  const auto left = static_cast<long long>(left_s);
  std::string line = fmt::format("\r[{:<{}}] {}/{} {} {:.0f}/s {}:{:02}:{:02} left ", std::string(filled, '#'), WIDTH,
                                 done, total_, what_, rate, left / 3600, left / 60 % 60, left % 60);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_ || !drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

}  // namespace trainsim::cli::detail
