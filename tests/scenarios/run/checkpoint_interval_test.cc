#include "scenarios/run/checkpoint_interval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace podsim::scenarios {
namespace {

constexpr double kMinute = 60;
constexpr double kHour = 3600;

TEST(CheckpointInterval, YoungIsTheSquareRootOfTwiceStallTimesMtti) {
  EXPECT_DOUBLE_EQ(young_interval_s(5 * kMinute, 24 * kHour), std::sqrt(2 * 300.0 * 86400));
  EXPECT_DOUBLE_EQ(young_interval_s(1, 8), 4);
}

// Daly (2006) works three cases with a 5-minute dump: M = 24 h gives
// tau_opt = 117 min (his Fig. 3), M = 6 h 57 min (Fig. 4), M = 15 min
// 9.1 min (Fig. 5). His closed form: sqrt(2 d M) [1 + sqrt(d/2M)/3 +
// (d/2M)/9] - d; Young's first-order sqrt(2 d M) gives 120, 60 and 12.2.
TEST(CheckpointInterval, DalyMatchesHisWorkedExamples) {
  const double d = 5 * kMinute;
  EXPECT_NEAR(daly_interval_s(d, 24 * kHour) / kMinute, 117, 0.5);
  EXPECT_NEAR(daly_interval_s(d, 6 * kHour) / kMinute, 57, 0.5);
  EXPECT_NEAR(daly_interval_s(d, 15 * kMinute) / kMinute, 9.1, 0.05);
  EXPECT_NEAR(young_interval_s(d, 15 * kMinute) / kMinute, 12.25, 0.01);
}

TEST(CheckpointInterval, DalyAgainstItsClosedFormAndItsLimits) {
  const double d = 7, m = 5000;
  const double x = std::sqrt(d / (2 * m));
  EXPECT_DOUBLE_EQ(daly_interval_s(d, m), std::sqrt(2 * d * m) * (1 + x / 3 + x * x / 9) - d);
  // A dump longer than twice the MTTI: checkpoint once per MTTI.
  EXPECT_DOUBLE_EQ(daly_interval_s(30, 10), 10);
  EXPECT_DOUBLE_EQ(daly_interval_s(20, 10), 10);
  // Small dumps: Daly tends to Young minus the dump.
  EXPECT_NEAR(daly_interval_s(1e-3, 1e6) / (young_interval_s(1e-3, 1e6) - 1e-3), 1, 1e-4);
  // Never failing: never save.
  const double never = std::numeric_limits<double>::infinity();
  EXPECT_EQ(young_interval_s(3, never), never);
  EXPECT_EQ(daly_interval_s(3, never), never);
}

}  // namespace
}  // namespace podsim::scenarios
