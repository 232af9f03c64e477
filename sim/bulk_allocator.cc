#include "sim/bulk_allocator.h"

#include <cstdint>
#include <cstdlib>

#include "sim/ceil_div.h"

#if PODSIM_BULK_MAPPINGS
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace podsim::sim {
namespace {

#if PODSIM_BULK_MAPPINGS
constexpr size_t kSmallPageBytes = 4096;

size_t mapped_bytes(size_t bytes) { return round_up(bytes, kSmallPageBytes); }
#endif

}  // namespace

void* allocate_bulk(size_t bytes) {
#if PODSIM_BULK_MAPPINGS
  if (bytes >= kBulkBytes) {
    // Over-map by a huge page, then unmap the head and tail around the
    // aligned start.
    const size_t length = mapped_bytes(bytes);
    const size_t span = length + kHugePageBytes;
    void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto base = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = round_up(base, kHugePageBytes);
    if (aligned > base) munmap(raw, aligned - base);
    const uintptr_t end = base + span;
    if (end > aligned + length)
      munmap(reinterpret_cast<void*>(aligned + length), end - aligned - length);
    void* p = reinterpret_cast<void*>(aligned);
    // Advice only: without transparent huge pages the mapping keeps small
    // pages and nothing else changes.
    madvise(p, length, MADV_HUGEPAGE);
    return p;
  }
#endif
  if (bytes == 0) bytes = 1;
  void* p = std::malloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void free_bulk(void* p, [[maybe_unused]] size_t bytes) noexcept {
  if (p == nullptr) return;
#if PODSIM_BULK_MAPPINGS
  if (bytes >= kBulkBytes) {
    munmap(p, mapped_bytes(bytes));
    return;
  }
#endif
  std::free(p);
}

void release_pages(void* begin, void* end) noexcept {
#if PODSIM_BULK_MAPPINGS
  const auto first = round_up(reinterpret_cast<uintptr_t>(begin), kSmallPageBytes);
  const auto last = reinterpret_cast<uintptr_t>(end) / kSmallPageBytes * kSmallPageBytes;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
#else
  (void)begin;
  (void)end;
#endif
}

}  // namespace podsim::sim
