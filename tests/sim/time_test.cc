#include "sim/time.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace podsim::sim {
namespace {

TEST(Time, IntegerArithmetic) {
  const Time a = Time::from_ps(1'500);
  const Time b = Time::from_ps(250);
  EXPECT_EQ((a + b).ps(), 1'750);
  EXPECT_EQ((a - b).ps(), 1'250);
  Time c = a;
  c += b;
  EXPECT_EQ(c.ps(), 1'750);
  EXPECT_LT(b, a);
  EXPECT_EQ(Time::zero().ps(), 0);
  EXPECT_EQ(Time().ps(), 0);
  EXPECT_EQ(Time::max().ps(), std::numeric_limits<int64_t>::max());
  EXPECT_DOUBLE_EQ(Time::from_ps(2'500'000'000'000).seconds(), 2.5);
}

TEST(Time, FromSecondsCeilRoundsUpToTheTick) {
  EXPECT_EQ(Time::from_seconds_ceil(1e-12).ps(), 1);
  EXPECT_EQ(Time::from_seconds_ceil(1.5e-12).ps(), 2);
  // Below one tick still lasts a tick: a duration never rounds to zero.
  EXPECT_EQ(Time::from_seconds_ceil(1e-15).ps(), 1);
  EXPECT_EQ(Time::from_seconds_ceil(1e-3).ps(), 1'000'000'000);
  EXPECT_EQ(Time::from_seconds_ceil(2.0).ps(), 2'000'000'000'000);
  EXPECT_EQ(Time::from_seconds_ceil(1e-6 + 0.25e-12).ps(), 1'000'001);
}

TEST(Time, FromSecondsCeilClampsBadInputAndSaturates) {
  EXPECT_EQ(Time::from_seconds_ceil(0.0), Time::zero());
  EXPECT_EQ(Time::from_seconds_ceil(-1.0), Time::zero());
  // NaN is an undefined time (infinities make it), not a zero duration.
  EXPECT_EQ(Time::from_seconds_ceil(std::nan("")), Time::max());
  // 1e7 s is 1e19 ps, past int64's 9.22e18.
  EXPECT_EQ(Time::from_seconds_ceil(1e7), Time::max());
  EXPECT_EQ(Time::from_seconds_ceil(std::numeric_limits<double>::infinity()), Time::max());
  // Just below the saturation threshold stays exact-ish and finite.
  EXPECT_EQ(Time::from_seconds_ceil(9e6).ps(), 9'000'000'000'000'000'000);
}

TEST(Time, ArithmeticSaturatesAtTheEndsOfTheClock) {
  const Time almost = Time::max() - Time::from_ps(10);
  EXPECT_EQ(almost + Time::from_ps(10), Time::max());
  EXPECT_EQ(almost + Time::from_ps(11), Time::max());  // wrapped negative before
  EXPECT_EQ(Time::max() + Time::max(), Time::max());
  Time t = almost;
  t += Time::max();
  EXPECT_EQ(t, Time::max());
  EXPECT_TRUE(t.beyond_clock());
  EXPECT_FALSE(almost.beyond_clock());
  EXPECT_EQ(Time::min() - Time::from_ps(1), Time::min());
  EXPECT_EQ(Time::zero() - Time::min(), Time::max());
  EXPECT_EQ(Time::from_ps(5) - Time::from_ps(7), Time::from_ps(-2));  // spans may be negative
  static_assert((Time::max() + Time::from_ps(1)).ps() == std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace podsim::sim
