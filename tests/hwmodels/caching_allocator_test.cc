#include "hwmodels/caching_allocator.h"

#include <gtest/gtest.h>

#include <vector>

namespace podsim::hwmodels {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(CachingAllocator, RoundsRequestsAndSizesSegmentsLikePyTorch) {
  const CachingAllocator a;
  EXPECT_EQ(a.rounded(1), 512u);
  EXPECT_EQ(a.rounded(513), 1024u);
  EXPECT_EQ(a.segment_size(100), 2 * kMiB);        // small pool: 2 MiB segments
  EXPECT_EQ(a.segment_size(kMiB), 2 * kMiB);       // 1 MiB is still small
  EXPECT_EQ(a.segment_size(kMiB + 1), 20 * kMiB);  // 1-10 MiB: a 20 MiB segment
  EXPECT_EQ(a.segment_size(10 * kMiB), 10 * kMiB);
  EXPECT_EQ(a.segment_size(30 * kMiB + 1), 32 * kMiB);  // larger: 2 MiB multiples
}

TEST(CachingAllocator, ReusesAFreedBlockOfTheSameSize) {
  CachingAllocator a;
  const auto x = a.allocate(100 * kMiB, 0);
  a.release(x);
  const auto y = a.allocate(100 * kMiB, 0);
  EXPECT_EQ(a.reserved_bytes(), 100 * kMiB);
  EXPECT_EQ(a.allocated_bytes(), 100 * kMiB);
  a.release(y);
  EXPECT_EQ(a.allocated_bytes(), 0u);
  EXPECT_EQ(a.reserved_bytes(), 100 * kMiB);  // the cache keeps the segment
}

TEST(CachingAllocator, ASplitBlockLeavesAHoleThatALargerRequestCannotUse) {
  CachingAllocator a;
  const auto big = a.allocate(64 * kMiB, 0);
  a.release(big);
  const auto b = a.allocate(32 * kMiB, 0);  // best fit: splits the 64 MiB block
  const auto c = a.allocate(40 * kMiB, 0);  // the 32 MiB rest is too small: new segment
  EXPECT_EQ(a.reserved_bytes(), 104 * kMiB);
  EXPECT_EQ(a.allocated_bytes(), 72 * kMiB);
  a.release(b);  // merges with its free neighbour into the whole 64 MiB block again
  const auto d = a.allocate(60 * kMiB, 0);
  EXPECT_EQ(a.reserved_bytes(), 104 * kMiB);
  EXPECT_EQ(a.peak_reserved_bytes(), 104 * kMiB);
  EXPECT_EQ(a.peak_allocated_bytes(), 100 * kMiB);
  a.release(c);
  a.release(d);
}

TEST(CachingAllocator, BestFitTakesTheSmallestBlockThatFits) {
  CachingAllocator a;
  const auto x = a.allocate(50 * kMiB, 0);
  const auto y = a.allocate(30 * kMiB, 0);
  a.release(x);
  a.release(y);
  a.allocate(28 * kMiB, 0);  // the 30 MiB block, leaving 2 MiB (split: more than 1 MiB)
  a.allocate(48 * kMiB, 0);  // still fits the untouched 50 MiB block
  EXPECT_EQ(a.reserved_bytes(), 80 * kMiB);
  EXPECT_EQ(a.allocated_bytes(), 76 * kMiB);
}

TEST(CachingAllocator, KeepsAnUnsplittableRemainderInTheBlock) {
  CachingAllocator a;
  const auto x = a.allocate(5 * kMiB, 0);  // a 20 MiB segment, split: 15 MiB free
  a.release(x);
  a.allocate(19 * kMiB + 512 * 1024, 0);  // 0.5 MiB left: not worth a block of its own
  EXPECT_EQ(a.allocated_bytes(), 20 * kMiB);
  EXPECT_EQ(a.reserved_bytes(), 20 * kMiB);
}

TEST(CachingAllocator, SmallRequestsShareTwoMebibyteSegments) {
  CachingAllocator a;
  std::vector<CachingAllocator::Handle> blocks;
  for (int i = 0; i < 2048; ++i) blocks.push_back(a.allocate(1000, 0));  // 1 KiB each
  EXPECT_EQ(a.reserved_bytes(), 2 * kMiB);
  blocks.push_back(a.allocate(1000, 0));
  EXPECT_EQ(a.reserved_bytes(), 4 * kMiB);
  for (auto b : blocks) a.release(b);
  EXPECT_EQ(a.allocated_bytes(), 0u);
}

TEST(CachingAllocator, BlocksCachedForOneStreamServeOnlyThatStream) {
  CachingAllocator a;
  a.release(a.allocate(100 * kMiB, 1));
  a.allocate(100 * kMiB, 0);
  EXPECT_EQ(a.reserved_bytes(), 200 * kMiB);
  a.allocate(100 * kMiB, 1);
  EXPECT_EQ(a.reserved_bytes(), 200 * kMiB);
}

TEST(CachingAllocator, FlushesItsCacheBeforeGoingPastTheLimit) {
  CachingAllocator a({.limit_bytes = 250 * kMiB});
  const auto x = a.allocate(100 * kMiB, 0);
  a.release(a.allocate(120 * kMiB, 0));
  a.release(x);
  // 220 MiB cached; 130 MiB more would pass the limit: both free segments go first.
  a.allocate(130 * kMiB, 0);
  EXPECT_EQ(a.alloc_retries(), 1);
  EXPECT_EQ(a.out_of_memory(), 0);
  EXPECT_EQ(a.reserved_bytes(), 130 * kMiB);
  EXPECT_EQ(a.peak_reserved_bytes(), 220 * kMiB);
  a.allocate(200 * kMiB, 0);  // nothing left to flush: out of memory, served anyway
  EXPECT_EQ(a.out_of_memory(), 1);
  EXPECT_EQ(a.reserved_bytes(), 330 * kMiB);
}

TEST(CachingAllocator, PeaksRestartFromTheCurrentState) {
  CachingAllocator a;
  const auto x = a.allocate(100 * kMiB, 0);
  a.release(a.allocate(50 * kMiB, 0));
  a.reset_peaks();
  EXPECT_EQ(a.peak_allocated_bytes(), 100 * kMiB);
  EXPECT_EQ(a.peak_reserved_bytes(), 150 * kMiB);
  a.release(x);
}

}  // namespace
}  // namespace podsim::hwmodels
