// run_ordered hands results back in index order whatever the threads do, stops early when
// asked, and on a WorkerPool runs every call on the same threads: a search's rounds keep
// what each thread caches (its cluster, cost model and memos) instead of starting cold.
#include "cli/detail/ordered_pool.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace trainsim::cli::detail {
namespace {

TEST(OrderedPool, ResultsComeBackInIndexOrderForAnyThreadCount) {
  for (const unsigned threads : {1u, 2u, 3u}) {
    SCOPED_TRACE(threads);
    WorkerPool pool(threads);
    std::vector<std::uint64_t> seen;
    run_ordered<std::uint64_t>(pool, 10, 200, 4, [](std::uint64_t i) { return i * i; },
                               [&](std::uint64_t i, std::uint64_t&& r) {
                                 EXPECT_EQ(r, i * i);
                                 seen.push_back(i);
                                 return true;
                               });
    ASSERT_EQ(seen.size(), 190u);
    for (std::size_t j = 0; j < seen.size(); ++j) EXPECT_EQ(seen[j], 10 + j);
  }
}

TEST(OrderedPool, StopsWhenTakeSaysSoAndThePoolServesTheNextCall) {
  WorkerPool pool(2);
  std::uint64_t last = 0;
  run_ordered<int>(pool, 0, 1000, 8, [](std::uint64_t) { return 1; }, [&](std::uint64_t i, int&&) {
    last = i;
    return i < 5;
  });
  EXPECT_EQ(last, 5u);
  int taken = 0;
  run_ordered<int>(pool, 0, 50, 8, [](std::uint64_t) { return 1; }, [&](std::uint64_t, int&& r) {
    taken += r;
    return true;
  });
  EXPECT_EQ(taken, 50);
}

TEST(OrderedPool, ThePoolsThreadsOutliveACall) {
  // What a worker keeps in a thread_local during one call is there in the next: with one
  // thread, every work of the second call sees the first call's count. Threads of their
  // own per call (the form without a pool) start from zero.
  thread_local int works = 0;
  auto count = [](std::uint64_t) { return ++works; };
  auto ignore = [](std::uint64_t, int&&) { return true; };
  WorkerPool pool(1);
  run_ordered<int>(pool, 0, 10, 4, count, ignore);
  std::vector<int> second;
  run_ordered<int>(pool, 0, 10, 4, count, [&](std::uint64_t, int&& r) {
    second.push_back(r);
    return true;
  });
  ASSERT_EQ(second.size(), 10u);
  EXPECT_EQ(second.front(), 11);
  EXPECT_EQ(second.back(), 20);
  std::vector<int> fresh;
  run_ordered<int>(0, 10, 1, 4, count, [&](std::uint64_t, int&& r) {
    fresh.push_back(r);
    return true;
  });
  ASSERT_EQ(fresh.size(), 10u);
  EXPECT_EQ(fresh.front(), 1);
}

}  // namespace
}  // namespace trainsim::cli::detail
