// Deadlock reports, fingerprints and precondition checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/engine.h"
#include "tests/sim/engine_test_util.h"

namespace podsim::sim {
namespace {

using testing::ps;

bool contains(const std::vector<ActivityId>& ids, ActivityId id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

TEST(EngineDeadlock, CycleIsReportedByName) {
  Engine engine;
  const ActivityId a = engine.add_delay(ps(1));
  const ActivityId b = engine.add_delay(ps(1));
  const ActivityId c = engine.add_delay(ps(1));
  const ActivityId fine = engine.add_delay(ps(5));
  engine.set_name(a, "alpha");
  engine.set_name(b, "beta");
  engine.set_name(c, "gamma");
  engine.add_dependency(a, b);
  engine.add_dependency(b, a);
  engine.add_dependency(a, c);
  const RunResult result = engine.run();
  EXPECT_FALSE(result.completed());
  ASSERT_EQ(result.deadlocked.size(), 3u);
  EXPECT_TRUE(contains(result.deadlocked, a));
  EXPECT_TRUE(contains(result.deadlocked, b));
  EXPECT_TRUE(contains(result.deadlocked, c));
  EXPECT_EQ(engine.finish_time(fine), ps(5));
  EXPECT_EQ(engine.start_time(a), Time::max());
  const std::string& report = result.deadlock_report;
  EXPECT_NE(report.find("3 activities never finished"), std::string::npos) << report;
  EXPECT_NE(report.find("'alpha' (delay #0) waits on 'beta' (delay #1)"), std::string::npos)
      << report;
  EXPECT_NE(report.find("'beta' (delay #1) waits on 'alpha' (delay #0)"), std::string::npos)
      << report;
  EXPECT_NE(report.find("'gamma' (delay #2) waits on 'alpha'"), std::string::npos) << report;
  EXPECT_EQ(report.find("#3"), std::string::npos) << report;  // the finished one is not listed
}

TEST(EngineDeadlock, WaitOnALaterActivityOfTheSameStream) {
  // x is first on the stream but depends on y, which is behind x on it.
  Engine engine;
  const StreamId s = engine.add_stream();
  const ActivityId x = engine.add_delay(ps(1), s, /*tag=*/7);
  const ActivityId y = engine.add_delay(ps(1), s);
  engine.add_dependency(y, x);
  const RunResult result = engine.run();
  EXPECT_EQ(result.deadlocked, (std::vector<ActivityId>{x, y}));
  EXPECT_NE(result.deadlock_report.find("(delay #0, tag 7, stream 0) waits on (delay #1"),
            std::string::npos)
      << result.deadlock_report;
}

TEST(EngineDeadlock, SelfDependencyAndFlowsInTheCycle) {
  Engine engine;
  const LinkId link = engine.add_link(1e9);
  const std::vector<PathHop> path{PathHop{link, 1}};
  const ActivityId flow = engine.add_flow(1e3, path, ps(0));
  const ActivityId join = engine.add_join();
  engine.add_dependency(join, join);
  engine.add_dependency(join, flow);
  const RunResult result = engine.run();
  EXPECT_EQ(result.deadlocked, (std::vector<ActivityId>{flow, join}));
  EXPECT_NE(result.deadlock_report.find("(flow #0) waits on (join #1)"), std::string::npos)
      << result.deadlock_report;
}

TEST(EngineDeadlock, LongReportsAreTruncated) {
  Engine engine;
  const ActivityId root = engine.add_join();
  engine.add_dependency(root, root);
  for (int i = 0; i < 200; ++i) engine.add_dependency(root, engine.add_delay(ps(1)));
  const RunResult result = engine.run();
  EXPECT_EQ(result.deadlocked.size(), 201u);
  EXPECT_NE(result.deadlock_report.find("... and 151 more"), std::string::npos);
}

// A small mixed build (streams, delays, flows sharing links, a join).
RunResult build_and_run(int64_t perturb_ps, bool swap_sizes = false) {
  Engine engine;
  const LinkId l0 = engine.add_link(1e9);
  const LinkId l1 = engine.add_link(2e9);
  const StreamId s0 = engine.add_stream();
  const StreamId s1 = engine.add_stream();
  const std::vector<PathHop> p0{PathHop{l0, 1}, PathHop{l1, 1}};
  const std::vector<PathHop> p1{PathHop{l1, 2}};
  const ActivityId d0 = engine.add_delay(ps(1000 + perturb_ps), s0);
  const ActivityId d1 = engine.add_delay(ps(3000), s1);
  const ActivityId f0 = engine.add_flow(swap_sizes ? 5e5 : 1e6, p0, ps(10), s0);
  const ActivityId f1 = engine.add_flow(swap_sizes ? 1e6 : 5e5, p1, ps(20), s1);
  const ActivityId j = engine.add_join();
  engine.add_dependency(f0, j);
  engine.add_dependency(f1, j);
  engine.add_dependency(d0, f1);
  const ActivityId tail = engine.add_delay(ps(7), s0);
  engine.add_dependency(j, tail);
  (void)d1;
  return engine.run();
}

TEST(EngineClock, ADelayPastTheClockStopsTheRunThere) {
  Engine engine;
  const ActivityId early = engine.add_delay(ps(1'000));
  const ActivityId half = engine.add_delay(Time::from_ps(Time::max().ps() / 2 + 1));
  const ActivityId second = engine.add_delay(Time::from_ps(Time::max().ps() / 2 + 1));
  const ActivityId after = engine.add_delay(ps(1));
  engine.add_dependency(half, second);
  engine.add_dependency(second, after);
  const RunResult result = engine.run();
  EXPECT_FALSE(result.completed());
  ASSERT_TRUE(result.beyond_clock.has_value());
  EXPECT_EQ(*result.beyond_clock, second);  // the first to end past the clock
  EXPECT_TRUE(result.deadlocked.empty());   // late, not stuck
  EXPECT_TRUE(result.deadlock_report.empty());
  EXPECT_EQ(result.end, Time::max());
  EXPECT_EQ(engine.finish_time(early), ps(1'000));
  EXPECT_EQ(engine.finish_time(half).ps(), Time::max().ps() / 2 + 1);
  EXPECT_EQ(engine.finish_time(after), Time::max());
}

TEST(EngineClock, AFlowOnATinyLinkIsBeyondTheClockNotDeadlocked) {
  // 1 GB at 1 B/s is 1e9 s, past the ~9.2e6 s the clock holds; so is any
  // size on a capacity too small to compute a finish from (inf ticks).
  for (const double capacity : {1.0, 5e-324}) {
    Engine engine;
    const LinkId link = engine.add_link(capacity);
    const PathHop hop{link, 1};
    const ActivityId flow = engine.add_flow(1e9, std::span(&hop, 1), Time::zero());
    const RunResult result = engine.run();
    ASSERT_TRUE(result.beyond_clock.has_value()) << capacity;
    EXPECT_EQ(*result.beyond_clock, flow);
    EXPECT_TRUE(result.deadlocked.empty());
  }
}

TEST(EngineClock, PoolWorkPastTheClockIsReported) {
  Engine engine;
  const PoolId pool = engine.add_pool();
  const ActivityId work = engine.add_pool_work(Time::max(), pool);
  const RunResult result = engine.run();
  ASSERT_TRUE(result.beyond_clock.has_value());
  EXPECT_EQ(*result.beyond_clock, work);
}

TEST(EngineFingerprint, SameBuildSameFingerprint) {
  const RunResult first = build_and_run(0);
  const RunResult second = build_and_run(0);
  EXPECT_TRUE(first.completed());
  EXPECT_EQ(first.fingerprint, second.fingerprint);
  EXPECT_EQ(first.events, second.events);
  EXPECT_EQ(first.end, second.end);
  // d0, d1, f0 (activate + done), f1 (activate + done), join, tail.
  EXPECT_EQ(first.events, 8u);
}

TEST(EngineFingerprint, PerturbingOneDurationChangesIt) {
  const RunResult base = build_and_run(0);
  const RunResult later = build_and_run(1);
  EXPECT_NE(base.fingerprint, later.fingerprint);
  const RunResult swapped = build_and_run(0, /*swap_sizes=*/true);
  EXPECT_NE(base.fingerprint, swapped.fingerprint);
}

using EngineDeathTest = ::testing::Test;

TEST_F(EngineDeathTest, UnknownDependencyAborts) {
  Engine engine;
  const ActivityId a = engine.add_delay(ps(1));
  EXPECT_DEATH(engine.add_dependency(a, ActivityId{5}), "unknown activity id 5");
}

TEST_F(EngineDeathTest, BadCapacityAborts) {
  Engine engine;
  EXPECT_DEATH(engine.add_link(0.0), "capacity must be finite and > 0");
  EXPECT_DEATH(engine.add_link(-1.0), "capacity must be finite and > 0");
  EXPECT_DEATH(engine.add_link(std::nan("")), "capacity must be finite and > 0");
}

TEST_F(EngineDeathTest, BadFlowAborts) {
  Engine engine;
  const LinkId link = engine.add_link(1e9);
  const std::vector<PathHop> path{PathHop{link, 1}};
  EXPECT_DEATH(engine.add_flow(std::nan(""), path, ps(0)), "bytes must be finite");
  EXPECT_DEATH(engine.add_flow(1.0, {}, ps(0)), "needs a path or a rate cap");
  const std::vector<PathHop> bad{PathHop{LinkId{3}, 1}};
  EXPECT_DEATH(engine.add_flow(1.0, bad, ps(0)), "bad hop \\(link 3");
  const std::vector<PathHop> zero{PathHop{link, 0}};
  EXPECT_DEATH(engine.add_flow(1.0, zero, ps(0)), "multiplicity must be >= 1");
}

TEST_F(EngineDeathTest, RunTwiceAborts) {
  Engine engine;
  engine.add_delay(ps(1));
  engine.run();
  EXPECT_DEATH(engine.run(), "run after run\\(\\)");
  EXPECT_DEATH(engine.add_delay(ps(1)), "after run\\(\\)");
}

TEST_F(EngineDeathTest, UnknownStreamAborts) {
  Engine engine;
  EXPECT_DEATH(engine.add_delay(ps(1), StreamId{0}), "unknown stream id 0");
}

}  // namespace
}  // namespace podsim::sim
