#pragma once
// Work on indices [begin, end) spread over threads, results handed to the caller's thread
// in index order: what makes a parallel sweep's table identical to a serial one. Workers
// run at most `window` indices ahead of the one the caller waits for, which bounds memory.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace trainsim::cli::detail {

// Threads that outlive one run_ordered call: what each keeps per thread (its cluster and
// cost model, the fold memo, the closed-form and layout caches) serves the next call, as a
// search's rounds need — fresh threads per round started every round cold.
class WorkerPool {
 public:
  explicit WorkerPool(unsigned threads) {
    threads = std::max(threads, 1u);
    workers_.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) workers_.emplace_back([this] { serve(); });
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool() {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
  unsigned size() const { return static_cast<unsigned>(workers_.size()); }
  // Every worker runs `job` once; returns at once (wait() waits for all to return).
  void start(std::function<void()> job) {
    {
      std::lock_guard lock(mutex_);
      job_ = std::move(job);
      running_ = size();
      ++generation_;
    }
    wake_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return running_ == 0; });
  }

 private:
  void serve() {
    std::uint64_t seen = 0;
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return quit_ || generation_ != seen; });
        if (quit_) return;
        seen = generation_;
        job = job_;
      }
      job();
      {
        std::lock_guard lock(mutex_);
        --running_;
      }
      done_.notify_all();
    }
  }
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::function<void()> job_;
  std::uint64_t generation_ = 0;
  unsigned running_ = 0;
  bool quit_ = false;
};

// `work(index)` → Result, on the pool's threads; it must not throw (turn errors into results).
// `take(index, Result&&)` on the calling thread, in index order; returning false stops
// early (the workers finish what they hold and the rest is not started).
template <class Result, class Work, class Take>
void run_ordered(WorkerPool& pool, std::uint64_t begin, std::uint64_t end, std::uint64_t window, Work&& work,
                 Take&& take) {
  if (begin >= end) return;
  window = std::max<std::uint64_t>(window, pool.size());
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
  pool.start(worker);
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
  pool.wait();
}

// The same on `threads` threads of its own.
template <class Result, class Work, class Take>
void run_ordered(std::uint64_t begin, std::uint64_t end, unsigned threads, std::uint64_t window, Work&& work,
                 Take&& take) {
  if (begin >= end) return;
  WorkerPool pool(threads);
  run_ordered<Result>(pool, begin, end, window, std::forward<Work>(work), std::forward<Take>(take));
}

}  // namespace trainsim::cli::detail
