#include "scenarios/run/run_sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace podsim::scenarios {
namespace {

RunInputs hourly_failures() {
  RunInputs in;
  in.steps = 72000;
  in.step_time_s = 10;  // 200 hours of work
  in.interval_steps = 60;
  in.save_stall_s = 30;
  in.restart_s = 300;
  in.interruption_rate_per_s = 1.0 / 3600;
  return in;
}

double parts(const RunSample& s) {
  return s.useful_s + s.straggler_s + s.lost_s + s.checkpoint_s + s.restart_s;
}

TEST(RunSampler, SameSeedAndIndexGiveTheSameRunBitForBit) {
  RunInputs in = hourly_failures();
  in.persist_s = 100;
  in.straggler_rate_per_s = 1e-4;
  in.straggler_mean_s = 3000;
  in.straggler_step_factor = 1.2;
  const RunSample a = sample_run(in, 7, 3), b = sample_run(in, 7, 3);
  EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0);
  EXPECT_NE(sample_run(in, 7, 4).wall_s, a.wall_s);
  EXPECT_NE(sample_run(in, 8, 3).wall_s, a.wall_s);
}

TEST(RunSampler, WithoutFailuresTheRunIsItsStepsAndSaves) {
  RunInputs in;
  in.steps = 10;
  in.step_time_s = 1;
  in.interval_steps = 4;  // segments of 4, 4, 2 steps: two saves
  in.save_stall_s = 0.5;
  const RunSample s = sample_run(in, 1, 0);
  EXPECT_DOUBLE_EQ(s.wall_s, 11);
  EXPECT_DOUBLE_EQ(s.useful_s, 10);
  EXPECT_DOUBLE_EQ(s.checkpoint_s, 1);
  EXPECT_EQ(s.interruptions, 0);
  EXPECT_DOUBLE_EQ(expected_wall_s(in), 11);
  // One segment (the interval at least the run): no save at all.
  in.interval_steps = 10;
  EXPECT_DOUBLE_EQ(sample_run(in, 1, 0).wall_s, 10);
  EXPECT_DOUBLE_EQ(expected_wall_s(in), 10);
}

TEST(RunSampler, PartsAddUpAndEveryStepStays) {
  RunInputs in = hourly_failures();
  in.persist_s = 200;
  for (uint64_t i = 0; i < 50; ++i) {
    const RunSample s = sample_run(in, 1, i);
    EXPECT_NEAR(parts(s), s.wall_s, 1e-9 * s.wall_s);
    EXPECT_NEAR(s.useful_s, in.work_s(), 1e-9 * in.work_s());
    EXPECT_GT(s.interruptions, 100);  // about 250 expected
    EXPECT_GT(s.lost_s, 0);
  }
}

// The sampled mean against the closed form: 4,000 runs of about 250
// interruptions each; the standard error of the mean is about 0.1% of it, so
// 4 standard errors is a test that a biased sampler (or formula) fails.
void expect_mean_matches_closed_form(const RunInputs& in) {
  const int n = 4000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const double w = sample_run(in, 11, static_cast<uint64_t>(i)).wall_s;
    sum += w;
    sum2 += w * w;
  }
  const double mean = sum / n;
  const double se = std::sqrt((sum2 / n - mean * mean) / n);
  EXPECT_NEAR(mean, expected_wall_s(in), 4 * se);
}

TEST(RunSampler, SynchronousSavesMatchDalysExactExpectation) {
  expect_mean_matches_closed_form(hourly_failures());
}

TEST(RunSampler, AsynchronousSavesMatchTheirClosedForm) {
  RunInputs in = hourly_failures();
  in.save_stall_s = 2;
  in.persist_s = 250;
  expect_mean_matches_closed_form(in);
}

TEST(RunSampler, AStragglerAlwaysPresentSlowsEveryStep) {
  RunInputs in;
  in.steps = 1000;
  in.step_time_s = 2;
  in.interval_steps = 1000;
  in.straggler_rate_per_s = 1;  // about 10^4 present at once: never without one
  in.straggler_mean_s = 1e4;
  in.straggler_step_factor = 1.25;
  const RunSample s = sample_run(in, 1, 0);
  EXPECT_DOUBLE_EQ(s.wall_s, 2500);
  EXPECT_DOUBLE_EQ(s.useful_s, 2000);
  EXPECT_DOUBLE_EQ(s.straggler_s, 500);
  EXPECT_DOUBLE_EQ(expected_wall_s(in), 2500);
}

TEST(RunSampler, StragglersSlowTheRunByTheirShareOfTheTime) {
  RunInputs in;
  in.steps = 100000;
  in.step_time_s = 10;  // 10^6 s
  in.interval_steps = in.steps;
  in.straggler_rate_per_s = 1e-4;
  in.straggler_mean_s = 5000;  // 0.5 present on average: slowed 1 - e^-0.5 of the time
  in.straggler_step_factor = 2;
  // Slowed a fraction q = 1 - e^-0.5 of the time, the work goes at
  // (1 - q) + q / 2 of its pace, and q / 2 of it is done slowly.
  const double q = -std::expm1(-0.5), pace = 1 - q + q / 2;
  double slowed = 0, wall = 0;
  const int n = 400;
  for (int i = 0; i < n; ++i) {
    const RunSample s = sample_run(in, 3, static_cast<uint64_t>(i));
    slowed += s.straggler_s / s.useful_s;  // what stragglers added, per step: f - 1 = 1 when slowed
    wall += s.wall_s;
  }
  EXPECT_NEAR(slowed / n, q / 2 / pace, 0.01);
  EXPECT_NEAR(wall / n / 1e6, 1 / pace, 0.01);
  EXPECT_DOUBLE_EQ(expected_wall_s(in), 1e6 / pace);
}

}  // namespace
}  // namespace podsim::scenarios
