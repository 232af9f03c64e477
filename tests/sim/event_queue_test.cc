#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace podsim::sim {
namespace {

TEST(EventQueue, EqualTimesPopInInsertionOrder) {
  EventQueue queue;
  for (uint32_t i = 0; i < 100; ++i) queue.push(Time::from_ps(7), i, 0);
  queue.push(Time::from_ps(3), 1000, 1);
  EXPECT_EQ(queue.size(), 101u);
  EXPECT_EQ(queue.pop().target, 1000u);
  for (uint32_t i = 0; i < 100; ++i) {
    const Event event = queue.pop();
    EXPECT_EQ(event.target, i);
    EXPECT_EQ(event.time_ps, 7);
    EXPECT_EQ(event.seq, i);  // seq counts pushes from 0
  }
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.pushed(), 101u);
}

TEST(EventQueue, RandomPushesPopLikeAStableSortByTime) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> time(0, 500);  // many ties
  std::vector<std::pair<int64_t, uint32_t>> pushed;
  EventQueue queue;
  for (uint32_t i = 0; i < 20'000; ++i) {
    const int64_t t = time(rng);
    pushed.emplace_back(t, i);
    queue.push(Time::from_ps(t), i, i % 3);
  }
  std::stable_sort(pushed.begin(), pushed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [t, target] : pushed) {
    ASSERT_FALSE(queue.empty());
    const Event event = queue.pop();
    ASSERT_EQ(event.time_ps, t);
    ASSERT_EQ(event.target, target);
    ASSERT_EQ(event.kind, target % 3);
  }
  EXPECT_TRUE(queue.empty());
}

TEST(EventQueue, InterleavedPushPopMatchesAnOrderedSet) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> step(0, 50);
  std::bernoulli_distribution do_pop(0.45);
  EventQueue queue;
  std::set<std::pair<int64_t, uint64_t>> reference;  // (time, seq)
  int64_t now = 0;
  for (int i = 0; i < 50'000; ++i) {
    if (!reference.empty() && do_pop(rng)) {
      const Event event = queue.pop();
      const auto expected = *reference.begin();
      reference.erase(reference.begin());
      ASSERT_EQ(event.time_ps, expected.first);
      ASSERT_EQ(event.seq, expected.second);
      now = event.time_ps;
    } else {
      const int64_t t = now + step(rng);  // never in the past, as in a simulation
      const uint64_t seq = queue.push(Time::from_ps(t), 0, 0);
      reference.emplace(t, seq);
    }
    ASSERT_EQ(queue.size(), reference.size());
  }
}

TEST(EventQueue, RetainIfDropsEventsAndKeepsOrder) {
  EventQueue queue;
  for (uint32_t i = 0; i < 1000; ++i) queue.push(Time::from_ps((i * 37) % 101), i, i % 2);
  queue.retain_if([](const Event& event) { return event.kind == 0; });
  EXPECT_EQ(queue.size(), 500u);
  Event previous = queue.pop();
  EXPECT_EQ(previous.kind, 0u);
  while (!queue.empty()) {
    const Event event = queue.pop();
    EXPECT_EQ(event.kind, 0u);
    EXPECT_TRUE(EventQueue::before(previous, event));
    previous = event;
  }
}

}  // namespace
}  // namespace podsim::sim
