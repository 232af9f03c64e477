// The memory replay on hand-made schedules whose allocator states are worked
// out by hand (the block arithmetic is in the comments).
#include "scenarios/step/memory_replay.h"

#include <gtest/gtest.h>

#include <vector>

namespace podsim::scenarios {
namespace {

using strategies::Buffer;
using strategies::Lifetime;
using strategies::MemoryKind;
using strategies::Schedule;

constexpr double kMiB = 1024.0 * 1024.0;

/// One rank, tasks back to back: F0 [0,1] F1 [1,2] B1 [2,4] B0 [4,6] O [6,7].
struct OneRank {
  Schedule schedule;
  StepTimeline timeline;
  OneRank() {
    schedule.ranks = {0};
    schedule.rank_begin = {0, 5};
    for (int i = 0; i < 5; ++i) schedule.tasks.push_back({});
    const double at[6] = {0, 1, 2, 4, 6, 7};
    for (size_t i = 0; i < 5; ++i) {
      timeline.tasks.push_back(
          {sim::Time::from_seconds_ceil(at[i]), sim::Time::from_seconds_ceil(at[i + 1])});
    }
  }
  void hold(double mib, uint32_t alloc, uint32_t free, MemoryKind kind,
            Lifetime lifetime = Lifetime::kStep) {
    schedule.tensor_lists.push_back({mib * kMiB});
    schedule.tensor_list_bytes.push_back(mib * kMiB);
    Buffer b;
    b.tensors = static_cast<uint32_t>(schedule.tensor_lists.size() - 1);
    b.alloc = alloc;
    b.free = free;
    b.kind = kind;
    b.lifetime = lifetime;
    schedule.buffers.push_back(b);
  }
};

TEST(MemoryReplay, OptimizerStatesCreatedInTheFirstStepFragmentTheCacheForTheNext) {
  OneRank r;
  r.hold(10, 0, 0, MemoryKind::kWeights, Lifetime::kPersistent);
  r.hold(64, 0, 3, MemoryKind::kActivations);   // F0's, freed by B0
  r.hold(64, 1, 2, MemoryKind::kActivations);   // F1's, freed by B1
  r.hold(100, 2, 2, MemoryKind::kTemporaries);  // B1's working memory
  r.hold(32, 4, 4, MemoryKind::kOptimizer, Lifetime::kFromFirstStep);
  const MemoryReplay m = replay_memory(r.schedule, r.timeline, 0, {});
  // Step 1: 10 + 64 + 64 + 100 reserved, all free after B0 but the weights;
  // the moments take half of the lowest 64 MiB block. Step 2: F0 gets the
  // other 64 MiB block, F1 splits the 100 MiB one, and B1's 100 MiB finds
  // no block that large: a new segment. Step 3 repeats step 2 in place.
  EXPECT_DOUBLE_EQ(m.reserved_peak, 338 * kMiB);
  EXPECT_DOUBLE_EQ(m.allocated_peak, (10 + 32 + 64 + 64 + 100) * kMiB);
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryKind::kActivations)], 128 * kMiB);
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryKind::kTemporaries)], 100 * kMiB);
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryKind::kOptimizer)], 32 * kMiB);
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryKind::kWeights)], 10 * kMiB);
}

TEST(MemoryReplay, WithoutTheFirstStepStatesTheCacheIsReusedWhole) {
  OneRank r;
  r.hold(10, 0, 0, MemoryKind::kWeights, Lifetime::kPersistent);
  r.hold(64, 0, 3, MemoryKind::kActivations);
  r.hold(64, 1, 2, MemoryKind::kActivations);
  r.hold(100, 2, 2, MemoryKind::kTemporaries);
  const MemoryReplay m = replay_memory(r.schedule, r.timeline, 0, {});
  EXPECT_DOUBLE_EQ(m.reserved_peak, 238 * kMiB);
  EXPECT_DOUBLE_EQ(m.allocated_peak, 238 * kMiB);
}

TEST(MemoryReplay, AMemoryHandedOverAsOneTaskEndsAndTheNextStartsIsReused) {
  OneRank r;
  r.hold(64, 0, 0, MemoryKind::kTemporaries);  // F0 only
  r.hold(64, 1, 1, MemoryKind::kTemporaries);  // F1 only: F0's block, freed at t=1
  const MemoryReplay m = replay_memory(r.schedule, r.timeline, 0, {});
  EXPECT_DOUBLE_EQ(m.reserved_peak, 64 * kMiB);
}

TEST(MemoryReplay, WorkspacesComeFirstAndStay) {
  OneRank r;
  r.hold(64, 0, 0, MemoryKind::kActivations);
  ReplayOptions options;
  options.workspaces = {32 * kMiB, 32 * kMiB};
  const MemoryReplay m = replay_memory(r.schedule, r.timeline, 0, options);
  EXPECT_DOUBLE_EQ(m.reserved_peak, 128 * kMiB);
  EXPECT_DOUBLE_EQ(m.workspace, 64 * kMiB);
  EXPECT_DOUBLE_EQ(m.at_peak[static_cast<size_t>(MemoryKind::kTemporaries)], 64 * kMiB);
}

TEST(MemoryReplay, PastTheLimitWithNothingToFlushTheRequestCountsAsOutOfMemory) {
  OneRank r;
  r.hold(64, 0, 3, MemoryKind::kActivations);
  r.hold(64, 1, 2, MemoryKind::kActivations);
  r.hold(100, 2, 2, MemoryKind::kTemporaries);
  r.hold(32, 4, 4, MemoryKind::kOptimizer, Lifetime::kFromFirstStep);
  ReplayOptions options;
  options.allocator.limit_bytes = static_cast<uint64_t>(300 * kMiB);
  const MemoryReplay m = replay_memory(r.schedule, r.timeline, 0, options);
  // As above without the weights: step 2's new 100 MiB segment makes 328
  // MiB; every segment holds a live block, so the flush frees nothing.
  EXPECT_EQ(m.alloc_retries, 1);
  EXPECT_EQ(m.out_of_memory, 1);
  EXPECT_DOUBLE_EQ(m.reserved_peak, 328 * kMiB);
}

}  // namespace
}  // namespace podsim::scenarios
