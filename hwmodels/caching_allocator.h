#pragma once

#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

namespace podsim::hwmodels {

/// Constants of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp,
/// the same from torch 1.10 to 2.x with the default PYTORCH_CUDA_ALLOC_CONF: no
/// max_split_size, no expandable segments, no garbage-collection threshold).
struct CachingAllocatorParams {
  uint64_t min_block_bytes = 512;            ///< kMinBlockSize: every size rounds up to 512 B
  uint64_t small_size_bytes = 1ull << 20;    ///< kSmallSize: largest "small" request
  uint64_t small_buffer_bytes = 2ull << 20;  ///< kSmallBuffer: small requests share 2 MiB segments
  uint64_t min_large_alloc_bytes = 10ull << 20;  ///< kMinLargeAlloc: below it a 20 MiB segment
  uint64_t large_buffer_bytes = 20ull << 20;     ///< kLargeBuffer
  uint64_t round_large_bytes = 2ull << 20;       ///< kRoundLarge: larger segments round to 2 MiB
  /// What cudaMalloc can still hand out: device memory less what lives
  /// outside the allocator (CUDA context, NCCL buffers).
  uint64_t limit_bytes = UINT64_MAX;
};

/// A deterministic model of the caching allocator: requests are rounded, served
/// best-fit from the cached free blocks of the same stream and pool (smallest
/// block that fits, lowest address on ties), split when the remainder is large
/// enough to be useful, and merged with free neighbours when released; a miss
/// cudaMallocs a new segment. Segments are never returned (no empty_cache),
/// except when a cudaMalloc would exceed the limit: then, as the allocator
/// does before raising out-of-memory, every cached segment with no live block
/// is freed and the request retried. Reserved = segments, allocated = live blocks.
class CachingAllocator {
 public:
  using Handle = uint32_t;

  explicit CachingAllocator(const CachingAllocatorParams& params = {});

  /// A block of at least `bytes` for `stream`. Never fails: a request beyond
  /// the limit even after freeing the cache is counted in out_of_memory()
  /// and served anyway, so that the demand stays visible.
  Handle allocate(uint64_t bytes, int stream);
  void release(Handle block);

  uint64_t allocated_bytes() const { return allocated_; }
  uint64_t reserved_bytes() const { return reserved_; }
  uint64_t peak_allocated_bytes() const { return peak_allocated_; }
  uint64_t peak_reserved_bytes() const { return peak_reserved_; }
  /// Starts a new observation window (torch.cuda.reset_peak_memory_stats):
  /// the peaks become the current values.
  void reset_peaks();
  /// Cache flushes forced by the limit (the allocator's num_alloc_retries).
  int64_t alloc_retries() const { return alloc_retries_; }
  /// Requests the limit could not hold even after a flush.
  int64_t out_of_memory() const { return out_of_memory_; }

  /// The size a request of `bytes` occupies (512 B multiple).
  uint64_t rounded(uint64_t bytes) const;
  /// The segment a miss for a request of `bytes` allocates.
  uint64_t segment_size(uint64_t bytes) const;

 private:
  struct Block {
    uint64_t address = 0;
    uint64_t size = 0;
    int stream = 0;
    bool small = false;
    bool live = false;
    int64_t prev = -1;  ///< neighbours in the same segment, -1 at its ends
    int64_t next = -1;
    int64_t segment = -1;
  };
  struct Segment {
    uint64_t size = 0;
    bool released = false;
  };
  using FreeKey = std::tuple<int, uint64_t, uint64_t, uint32_t>;  // stream, size, address, id

  FreeKey key(uint32_t id) const;
  void insert_free(uint32_t id);
  void erase_free(uint32_t id);
  uint32_t new_segment(uint64_t size, int stream, bool small);
  void flush_cache();
  void note_peaks();

  CachingAllocatorParams params_;
  std::vector<Block> blocks_;
  std::vector<Segment> segments_;
  std::vector<uint32_t> recycled_;  ///< ids of merged-away blocks, reused
  std::set<FreeKey> free_small_, free_large_;
  uint64_t next_address_ = 0;
  uint64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  int64_t alloc_retries_ = 0, out_of_memory_ = 0;
};

}  // namespace podsim::hwmodels
