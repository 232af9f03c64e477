// Pools and holds: work that shares a processor with what holds part of it
// (a GPU's SMs and the communication kernels that occupy some of them).
#include <gtest/gtest.h>

#include <array>
#include <span>

#include "sim/engine.h"

namespace podsim::sim {
namespace {

Time us(int64_t n) { return Time::from_ps(n * 1'000'000); }

TEST(EnginePool, WorkNobodyHoldsFromIsADelay) {
  Engine engine;
  const PoolId pool = engine.add_pool();
  const StreamId stream = engine.add_stream();
  const ActivityId first = engine.add_pool_work(us(100), pool, stream);
  const ActivityId second = engine.add_pool_work(us(30), pool, stream);
  const ActivityId plain = engine.add_delay(us(100));
  ASSERT_TRUE(engine.run().completed());
  EXPECT_EQ(engine.finish_time(first), engine.finish_time(plain));
  EXPECT_EQ(engine.start_time(second), us(100));
  EXPECT_EQ(engine.finish_time(second), us(130));
}

TEST(EnginePool, WorkSlowsByTheShareHeldWhileTheHoldLasts) {
  // 100 us of work; a quarter of the pool is held from 20 to 60 us: 20 us
  // done by 20, 30 more by 60 (at 3/4), the last 50 at full rate: ends at
  // 110 = 100 + 0.25 x 40.
  Engine engine;
  const PoolId pool = engine.add_pool();
  const ActivityId work = engine.add_pool_work(us(100), pool);
  const ActivityId before = engine.add_delay(us(20));
  const ActivityId comm = engine.add_delay(us(40));
  engine.add_dependency(before, comm);
  engine.add_hold(comm, comm, pool, 0.25);
  ASSERT_TRUE(engine.run().completed());
  EXPECT_EQ(engine.start_time(work), Time::zero());
  EXPECT_EQ(engine.finish_time(work), us(110));
}

TEST(EnginePool, OneHoldOverSeveralPoolsSlowsEachOfThemAndNoOther) {
  // A collective's SM hold on two of three GPUs, a quarter of each from 20 to
  // 60 us: both pools' work ends at 110 us (as with one pool above), the
  // third pool's at 100 us.
  Engine engine;
  const std::array<PoolId, 2> held{engine.add_pool(), engine.add_pool()};
  const PoolId free_pool = engine.add_pool();
  const ActivityId first = engine.add_pool_work(us(100), held[0]);
  const ActivityId second = engine.add_pool_work(us(100), held[1]);
  const ActivityId third = engine.add_pool_work(us(100), free_pool);
  const ActivityId before = engine.add_delay(us(20));
  const ActivityId comm = engine.add_delay(us(40));
  engine.add_dependency(before, comm);
  engine.add_hold(comm, comm, std::span<const PoolId>(held), 0.25);
  ASSERT_TRUE(engine.run().completed());
  EXPECT_EQ(engine.finish_time(first), us(110));
  EXPECT_EQ(engine.finish_time(second), us(110));
  EXPECT_EQ(engine.finish_time(third), us(100));
}

TEST(EnginePool, ConcurrentHoldsAddUpAndOtherPoolsAreUntouched) {
  // Two holds of 0.25 over the whole work: it runs at half rate.
  Engine engine;
  const PoolId pool = engine.add_pool();
  const PoolId other = engine.add_pool();
  const ActivityId work = engine.add_pool_work(us(100), pool);
  const ActivityId elsewhere = engine.add_pool_work(us(100), other);
  const ActivityId a = engine.add_delay(us(500));
  const ActivityId b = engine.add_delay(us(500));
  engine.add_hold(a, a, pool, 0.25);
  engine.add_hold(b, b, pool, 0.25);
  ASSERT_TRUE(engine.run().completed());
  EXPECT_EQ(engine.finish_time(work), us(200));
  EXPECT_EQ(engine.finish_time(elsewhere), us(100));
}

TEST(EnginePool, HoldSpansFromOneActivitysStartToAnothersFinish) {
  // The hold begins when `from` starts (t = 0) and ends when `until`
  // finishes (t = 10): work of 30 us runs at half rate for 10 us.
  Engine engine;
  const PoolId pool = engine.add_pool();
  const ActivityId work = engine.add_pool_work(us(30), pool);
  const ActivityId from = engine.add_delay(us(2));
  const ActivityId until = engine.add_delay(us(10));
  engine.add_hold(from, until, pool, 0.5);
  // A hold whose `until` has finished before `from` starts never begins.
  const ActivityId late = engine.add_delay(us(1));
  engine.add_dependency(until, late);
  const ActivityId early = engine.add_delay(us(1));
  engine.add_hold(late, early, pool, 0.9);
  ASSERT_TRUE(engine.run().completed());
  EXPECT_EQ(engine.finish_time(work), us(35));
}

TEST(EnginePool, WorkKeepsAHundredthOfThePool) {
  Engine engine;
  const PoolId pool = engine.add_pool();
  const ActivityId work = engine.add_pool_work(us(1), pool);
  const ActivityId comm = engine.add_delay(us(1000));
  engine.add_hold(comm, comm, pool, 1.0);
  ASSERT_TRUE(engine.run().completed());
  EXPECT_EQ(engine.finish_time(work), us(100));
}

}  // namespace
}  // namespace podsim::sim
