#include "strategies/detail/flat_map.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>

namespace trainsim::strategies::detail {
namespace {

struct Pair {
  std::int32_t a = 0, b = 0;
  bool operator==(const Pair&) const = default;
};
// Every key in one bucket: the probing alone must keep them apart.
struct Colliding {
  std::size_t operator()(const Pair&) const { return 7; }
};
struct Spread {
  std::size_t operator()(const Pair& k) const {
    return static_cast<std::size_t>(k.a) * 31 + static_cast<std::size_t>(k.b);
  }
};

// The map against std::map over enough keys to grow it several times, found after each
// growth, with absent keys (the zero key among them) not found.
template <class Hash>
void agrees_with_std_map(int keys) {
  FlatMap<Pair, std::int64_t, Hash> flat;
  std::map<std::pair<int, int>, std::int64_t> expected;
  EXPECT_EQ(flat.find({0, 0}), nullptr);  // before anything is kept
  for (int i = 0; i < keys; ++i) {
    const Pair k{i % 37, i / 37};
    auto [value, fresh] = flat.try_emplace(k);
    ASSERT_TRUE(fresh) << i;
    EXPECT_EQ(*value, 0) << "a new value starts value-initialized";
    *value = 1000 + i;
    expected[{k.a, k.b}] = 1000 + i;
    const auto [again, fresh_again] = flat.try_emplace(k);
    EXPECT_FALSE(fresh_again);
    EXPECT_EQ(*again, 1000 + i);
  }
  EXPECT_EQ(flat.size(), expected.size());
  for (const auto& [k, v] : expected) {
    const std::int64_t* found = flat.find({k.first, k.second});
    ASSERT_NE(found, nullptr) << k.first << "," << k.second;
    EXPECT_EQ(*found, v);
  }
  EXPECT_EQ(flat.find({-1, 0}), nullptr);
  EXPECT_EQ(flat.find({0, keys}), nullptr);
  std::size_t visited = 0;
  flat.for_each([&](const Pair& k, std::int64_t& v) {
    ++visited;
    EXPECT_EQ(v, expected.at({k.a, k.b}));
  });
  EXPECT_EQ(visited, expected.size());
  flat.clear();
  EXPECT_EQ(flat.size(), 0u);
  EXPECT_EQ(flat.find({0, 0}), nullptr);
  flat[{3, 4}] = 5;
  EXPECT_EQ(*flat.find({3, 4}), 5);
}

TEST(FlatMap, AgreesWithStdMapThroughGrowth) { agrees_with_std_map<Spread>(5000); }
TEST(FlatMap, KeepsCollidingKeysApart) { agrees_with_std_map<Colliding>(300); }

}  // namespace
}  // namespace trainsim::strategies::detail
