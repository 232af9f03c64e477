// Timing of delays, joins and streams: every expected time is a sum or max of
// integer durations, worked out by hand (or by an independent reference pass).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "sim/engine.h"
#include "tests/sim/engine_test_util.h"

namespace podsim::sim {
namespace {

using testing::ps;

TEST(EngineDag, ChainAddsDurations) {
  Engine engine;
  const ActivityId a = engine.add_delay(ps(10));
  const ActivityId b = engine.add_delay(ps(20));
  const ActivityId c = engine.add_delay(ps(30));
  engine.add_dependency(a, b);
  engine.add_dependency(b, c);
  const RunResult result = engine.run();
  EXPECT_TRUE(result.completed());
  EXPECT_EQ(engine.start_time(b), ps(10));
  EXPECT_EQ(engine.start_time(c), ps(30));
  EXPECT_EQ(engine.finish_time(c), ps(60));
  EXPECT_EQ(result.end, ps(60));
  EXPECT_EQ(result.events, 3u);
}

TEST(EngineDag, DiamondWaitsForTheSlowerBranch) {
  Engine engine;
  const ActivityId a = engine.add_delay(ps(5));
  const ActivityId b = engine.add_delay(ps(10));
  const ActivityId c = engine.add_delay(ps(20));
  const ActivityId d = engine.add_delay(ps(1));
  engine.add_dependency(a, b);
  engine.add_dependency(a, c);
  engine.add_dependency(b, d);
  engine.add_dependency(c, d);
  const RunResult result = engine.run();
  EXPECT_EQ(engine.start_time(b), ps(5));
  EXPECT_EQ(engine.start_time(c), ps(5));
  EXPECT_EQ(engine.start_time(d), ps(25));  // 5 + max(10, 20)
  EXPECT_EQ(engine.finish_time(d), ps(26));
  EXPECT_EQ(result.end, ps(26));
}

TEST(EngineDag, JoinTakesNoTime) {
  Engine engine;
  const ActivityId a = engine.add_delay(ps(7));
  const ActivityId b = engine.add_delay(ps(3));
  const ActivityId join = engine.add_join(/*tag=*/42);
  const ActivityId after = engine.add_delay(ps(2));
  const ActivityId lone = engine.add_join();
  engine.add_dependency(a, join);
  engine.add_dependency(b, join);
  engine.add_dependency(join, after);
  engine.run();
  EXPECT_EQ(engine.start_time(join), ps(7));
  EXPECT_EQ(engine.finish_time(join), ps(7));
  EXPECT_EQ(engine.finish_time(after), ps(9));
  EXPECT_EQ(engine.finish_time(lone), ps(0));
  EXPECT_EQ(engine.kind(join), ActivityKind::kJoin);
  EXPECT_EQ(engine.tag(join), 42u);
}

TEST(EngineDag, ZeroDurationDelayAndDuplicateDependency) {
  Engine engine;
  const ActivityId a = engine.add_delay(ps(4));
  const ActivityId zero = engine.add_delay(ps(0));
  const ActivityId b = engine.add_delay(ps(1));
  engine.add_dependency(a, zero);
  engine.add_dependency(zero, b);
  engine.add_dependency(zero, b);  // counted twice, released twice
  EXPECT_TRUE(engine.run().completed());
  EXPECT_EQ(engine.finish_time(zero), ps(4));
  EXPECT_EQ(engine.finish_time(b), ps(5));
}

TEST(EngineDag, StreamRunsReadyActivitiesBackToBack) {
  Engine engine;
  const StreamId s = engine.add_stream();
  const ActivityId first = engine.add_delay(ps(10), s);
  const ActivityId second = engine.add_delay(ps(20), s);
  const ActivityId free = engine.add_delay(ps(5));  // no stream: runs alongside
  engine.run();
  EXPECT_EQ(engine.start_time(first), ps(0));
  EXPECT_EQ(engine.start_time(second), ps(10));
  EXPECT_EQ(engine.finish_time(second), ps(30));
  EXPECT_EQ(engine.start_time(free), ps(0));
}

TEST(EngineDag, StreamIsInOrderEvenWhenALaterActivityIsReadyFirst) {
  Engine engine;
  const StreamId s = engine.add_stream();
  const StreamId other = engine.add_stream();
  const ActivityId producer = engine.add_delay(ps(10));
  const ActivityId x = engine.add_delay(ps(5), s);
  const ActivityId z = engine.add_delay(ps(1), s);  // no dependency, but after x on s
  const ActivityId w = engine.add_delay(ps(3), other);
  engine.add_dependency(producer, x);
  engine.run();
  EXPECT_EQ(engine.start_time(x), ps(10));
  EXPECT_EQ(engine.start_time(z), ps(15));
  EXPECT_EQ(engine.finish_time(z), ps(16));
  EXPECT_EQ(engine.start_time(w), ps(0));  // other streams are independent
}

TEST(EngineDag, TimesBeforeRunAreMax) {
  Engine engine;
  const ActivityId a = engine.add_delay(ps(1));
  EXPECT_EQ(engine.start_time(a), Time::max());
  EXPECT_EQ(engine.finish_time(a), Time::max());
  EXPECT_EQ(engine.activity_count(), 1u);
}

TEST(EngineDag, EmptyEngineRuns) {
  Engine engine;
  const RunResult result = engine.run();
  EXPECT_TRUE(result.completed());
  EXPECT_EQ(result.end, Time::zero());
  EXPECT_EQ(result.events, 0u);
}

TEST(EngineDag, EnginesAreIndependentValues) {
  Engine first;
  Engine second;
  const ActivityId a = first.add_delay(ps(3));
  const ActivityId b = second.add_delay(ps(8));
  Engine moved = std::move(first);
  moved.run();
  second.run();
  EXPECT_EQ(moved.finish_time(a), ps(3));
  EXPECT_EQ(second.finish_time(b), ps(8));
}

// A random DAG of delays and joins on a few streams, dependencies pointing
// from lower to higher indices, against a reference pass in index order:
// start = max(finish of dependencies, finish of the previous on the stream).
TEST(EngineDag, RandomDagMatchesReferencePass) {
  std::mt19937_64 rng(2024);
  const int n = 4000;
  Engine engine;
  std::vector<StreamId> streams;
  for (int i = 0; i < 12; ++i) streams.push_back(engine.add_stream());
  std::vector<std::vector<int>> deps(n);
  std::vector<int64_t> duration(n);
  std::vector<int> stream_of(n, -1);
  std::vector<ActivityId> ids;
  std::uniform_int_distribution<int64_t> dur(0, 1000);
  std::uniform_int_distribution<int> pick_stream(-4, 11);  // negative: no stream
  std::uniform_int_distribution<int> ndeps(0, 3);
  for (int i = 0; i < n; ++i) {
    const int s = pick_stream(rng);
    const bool join = s < -2;
    duration[i] = join ? 0 : dur(rng);
    if (join) {
      ids.push_back(engine.add_join());
    } else {
      stream_of[i] = s;
      ids.push_back(engine.add_delay(ps(duration[i]), s >= 0 ? streams[s] : kNoStream));
    }
    if (i == 0) continue;
    const int k = ndeps(rng);
    std::uniform_int_distribution<int> earlier(std::max(0, i - 200), i - 1);
    for (int d = 0; d < k; ++d) {
      const int j = earlier(rng);
      deps[i].push_back(j);
      engine.add_dependency(ids[j], ids[i]);
    }
  }
  const RunResult result = engine.run();
  ASSERT_TRUE(result.completed());
  std::vector<int64_t> start(n), finish(n);
  std::vector<int64_t> stream_free(12, 0);
  int64_t end = 0;
  for (int i = 0; i < n; ++i) {
    int64_t t = 0;
    for (const int j : deps[i]) t = std::max(t, finish[j]);
    if (stream_of[i] >= 0) t = std::max(t, stream_free[stream_of[i]]);
    start[i] = t;
    finish[i] = t + duration[i];
    if (stream_of[i] >= 0) stream_free[stream_of[i]] = finish[i];
    end = std::max(end, finish[i]);
  }
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(engine.start_time(ids[i]).ps(), start[i]) << "activity " << i;
    ASSERT_EQ(engine.finish_time(ids[i]).ps(), finish[i]) << "activity " << i;
  }
  EXPECT_EQ(result.end.ps(), end);
  EXPECT_EQ(result.events, static_cast<uint64_t>(n));
}

}  // namespace
}  // namespace podsim::sim
