#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace podsim::sim {

// Memory for the engine's per-activity, per-flow and per-edge arrays, which
// run to megabytes each in an every-rank step. An array of kBulkBytes or more
// gets a mapping of its own, aligned to a huge page and advised as one
// (Linux transparent huge pages, in "madvise" mode on most distributions):
// each 2 MiB of it is one page fault instead of 512, which in a virtual
// machine is most of the cost of touching fresh memory. Only whole huge pages
// inside the array's own length become huge, so an array never holds more
// memory than its length rounded up to a small page; smaller arrays come from
// the ordinary heap. Without huge-page support the mapping is ordinary.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
inline constexpr size_t kBulkBytes = kHugePageBytes;

// Under AddressSanitizer every array stays on the heap, where it checks
// accesses past the end.
#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
#define PODSIM_BULK_MAPPINGS 1
#else
#define PODSIM_BULK_MAPPINGS 0
#endif

void* allocate_bulk(size_t bytes);
void free_bulk(void* p, size_t bytes) noexcept;

template <class T>
struct BulkAllocator {
  using value_type = T;
  BulkAllocator() = default;
  template <class U>
  BulkAllocator(const BulkAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_bulk(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { free_bulk(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const BulkAllocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using BulkVector = std::vector<T, BulkAllocator<T>>;

/// Gives the memory of whole pages in [begin, end) back to the system; they
/// read as zero if touched again.
void release_pages(void* begin, void* end) noexcept;

/// Gives back the memory under a bulk array's capacity beyond its size, in
/// place. A vector grown by doubling has touched at most one huge page past
/// its end (smaller pages are only touched when written), so a bulk array
/// needs no copy to shed its slack, as shrink_to_fit would make.
template <class T>
void release_unused_capacity(BulkVector<T>& v) noexcept {
  if (v.capacity() * sizeof(T) >= kBulkBytes)
    release_pages(v.data() + v.size(), v.data() + v.capacity());
}

}  // namespace podsim::sim
