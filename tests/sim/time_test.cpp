// sim::Time never leaves its range silently: a wrapped sum would be a negative time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sim/time.hpp"

namespace trainsim::sim {
namespace {

using ::testing::HasSubstr;

TEST(Time, ConversionsRoundAsDocumented) {
  EXPECT_EQ(Time::from_seconds(1.5e-12).ps, 2);  // ties away from zero
  EXPECT_EQ(Time::ceil_seconds(1.2e-12).ps, 2);
  EXPECT_EQ(Time::from_seconds(1.0).ps, 1'000'000'000'000);
}

TEST(Time, OutOfRangeConversionThrowsInsteadOfWrapping) {
  // 1e7 s is about 116 days, beyond 2^63 ps.
  try {
    (void)Time::from_seconds(1e7);
    ADD_FAILURE() << "expected TimeRangeError";
  } catch (const TimeRangeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a duration of 10000000.000000 s is outside the engine's time range (int64 "
                                    "picoseconds: at most 9223372.036855 s, about 106 days)"));
  }
  EXPECT_THROW((void)Time::ceil_seconds(std::numeric_limits<double>::infinity()), TimeRangeError);
  EXPECT_THROW((void)Time::from_seconds(std::nan("")), TimeRangeError);
  EXPECT_THROW((void)Time::from_seconds(-1e7), TimeRangeError);
}

TEST(Time, SumsBeyondTheRangeThrow) {
  const Time big = Time::from_seconds(5e6);
  EXPECT_THROW((void)(big + big), TimeRangeError);
  Time t = big;
  EXPECT_THROW(t += big, TimeRangeError);
  EXPECT_THROW((void)(Time::from_ps(std::numeric_limits<std::int64_t>::min()) - Time::from_ps(1)), TimeRangeError);
  EXPECT_EQ((big - big).ps, 0);
}

}  // namespace
}  // namespace trainsim::sim
