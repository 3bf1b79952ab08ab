#pragma once
// Work on indices [begin, end) spread over threads, results handed to the caller's thread
// in index order: what makes a parallel sweep's table identical to a serial one. Workers
// run at most `window` indices ahead of the one the caller waits for, which bounds memory.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace trainsim::cli::detail {

// `work(index)` → Result, on any thread; it must not throw (turn errors into results).
// `take(index, Result&&)` on the calling thread, in index order; returning false stops
// early (the workers finish what they hold and the rest is not started).
template <class Result, class Work, class Take>
void run_ordered(std::uint64_t begin, std::uint64_t end, unsigned threads, std::uint64_t window, Work&& work,
                 Take&& take) {
  if (begin >= end) return;
  threads = std::max(threads, 1u);
  window = std::max<std::uint64_t>(window, threads);
  std::vector<std::optional<Result>> ring(window);
  std::mutex mutex;
  std::condition_variable ready, room;
  std::uint64_t next = begin;     // next index to hand out
  std::uint64_t taken = begin;    // next index the caller takes
  bool stop = false;
  auto worker = [&] {
    while (true) {
      std::uint64_t index;
      {
        std::unique_lock lock(mutex);
        room.wait(lock, [&] { return stop || next >= end || next < taken + window; });
        if (stop || next >= end) return;
        index = next++;
      }
      Result r = work(index);
      {
        std::lock_guard lock(mutex);
        ring[index % window].emplace(std::move(r));
      }
      ready.notify_one();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (; taken < end;) {
    Result r;
    {
      std::unique_lock lock(mutex);
      ready.wait(lock, [&] { return ring[taken % window].has_value(); });
      r = std::move(*ring[taken % window]);
      ring[taken % window].reset();
    }
    const bool more = take(taken, std::move(r));
    {
      std::lock_guard lock(mutex);
      ++taken;
      if (!more) stop = true;
    }
    room.notify_all();
    if (!more) break;
  }
  for (auto& t : pool) t.join();
}

}  // namespace trainsim::cli::detail
