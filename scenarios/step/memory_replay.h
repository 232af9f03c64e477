#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hwmodels/caching_allocator.h"
#include "scenarios/step/step_simulation.h"
#include "strategies/schedule.h"

namespace podsim::scenarios {

// Memory of one rank as PyTorch's caching allocator holds it: the rank's
// buffers (strategies::Buffer) are allocated and freed tensor by tensor in
// the order the simulated timeline takes and gives them back, through
// hwmodels::CachingAllocator, over a few steps: the first creates the
// optimizer moments wherever the cache has room after its backward pass,
// and the later ones reuse (or cannot reuse) the blocks the first left.

/// One rank's memory over the replayed steps.
struct MemoryReplay {
  double allocated_peak = 0;  ///< live blocks (rounded sizes) at their peak in the last step
  double reserved_peak = 0;   ///< the allocator's segments at their peak
  /// Bytes live by strategies::MemoryKind at the allocated peak (as requested).
  std::array<double, strategies::kMemoryKinds> at_peak{};
  double workspace = 0;       ///< of at_peak's temporaries: the library workspaces
  int64_t alloc_retries = 0;  ///< cache flushes the limit forced
  int64_t out_of_memory = 0;  ///< requests beyond the limit even after a flush
};

struct ReplayOptions {
  hwmodels::CachingAllocatorParams allocator;
  /// Steps replayed; the peaks are the last one's (torchtitan resets the
  /// peak statistics after every log, and the reserved pool never shrinks).
  int steps = 3;
  /// Allocations made through the allocator before the first step and kept
  /// (cuBLAS workspaces), bytes each.
  std::vector<double> workspaces;
};

MemoryReplay replay_memory(const strategies::Schedule& schedule, const StepTimeline& timeline,
                           size_t rank_index, const ReplayOptions& options);

}  // namespace podsim::scenarios
