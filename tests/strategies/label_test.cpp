#include "strategies/label.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace trainsim::strategies {
namespace {

TEST(Label, EqualNamesAreOneInternedCopy) {
  const std::string built = std::string("tp-") + "reduce-scatter";
  const Label a("tp-reduce-scatter"), b(built);
  EXPECT_EQ(a, b);
  EXPECT_EQ(&a.str(), &b.str());
  EXPECT_EQ(a.identity_hash(), b.identity_hash());
  EXPECT_EQ(a, "tp-reduce-scatter");
  EXPECT_EQ(a, built);
  EXPECT_NE(a, Label("tp-all-gather"));
  EXPECT_NE(a, "tp-reduce");
  EXPECT_TRUE(Label().empty());
  EXPECT_EQ(Label(), Label(""));
}

TEST(Label, IdsAreDenseAndOnePerName) {
  // Tables indexed by Label::id stand for maps from labels: one id per name, 0 only for
  // the empty name, each below the number of names met so far.
  const Label a("label-id-test-a"), b("label-id-test-b"), again(std::string("label-id-test-") + "a");
  EXPECT_EQ(Label().id(), 0u);
  EXPECT_NE(a.id(), 0u);
  EXPECT_NE(a.id(), b.id());
  EXPECT_EQ(a.id(), again.id());
  std::vector<std::thread> threads;
  std::vector<std::uint32_t> ids(8);
  for (std::size_t i = 0; i < ids.size(); ++i)
    threads.emplace_back([&ids, i] { ids[i] = Label("label-id-test-" + std::to_string(i)).id(); });
  for (auto& t : threads) t.join();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());  // distinct names on any thread, distinct ids
  EXPECT_EQ(Label("label-id-test-3").id(), Label(std::string("label-id-test-") + "3").id());
}

TEST(Label, OrdersByNameNotByAddress) {
  // Interned in the opposite order to their names'.
  const Label z("zz-label-order-test"), a("aa-label-order-test");
  EXPECT_LT(a, z);
  std::map<Label, int> sorted{{z, 1}, {a, 0}};
  EXPECT_EQ(sorted.begin()->first, "aa-label-order-test");
}

TEST(Label, ThreadsShareTheInternedCopy) {
  // A name first met on several threads at once still has one copy.
  std::vector<const std::string*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i)
    threads.emplace_back([&seen, i] { seen[i] = &Label(std::string("label-threads-") + "test").str(); });
  for (auto& t : threads) t.join();
  for (const auto* s : seen) EXPECT_EQ(s, seen.front());
  EXPECT_EQ(*seen.front(), "label-threads-test");
  EXPECT_EQ(&Label("label-threads-test").str(), seen.front());
}

// A Label is a four-byte number into a table of fixed size: a process that would name more
// than it holds gets an error naming the limit, not a number that reads another name. Run
// in a child process, whose table it fills.
TEST(LabelDeathTest, MoreNamesThanTheTableHoldsIsAnError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const Label first("label-cap-test-first");
        try {
          for (int i = 0; i < (1 << 17); ++i) Label("label-cap-test-" + std::to_string(i));
        } catch (const std::length_error& e) {
          const std::string what = e.what();
          const bool names_limit = what.find("more than 65535 distinct labels in one process") != std::string::npos;
          std::exit(names_limit && first.str() == "label-cap-test-first" ? 0 : 2);
        }
        std::exit(1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace trainsim::strategies
