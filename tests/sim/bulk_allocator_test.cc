#include "sim/bulk_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>

namespace podsim::sim {
namespace {

// The line of the mapping that holds `p` in /proc/self/smaps that starts
// with `key` ("VmFlags:", "Rss:"), or "".
[[maybe_unused]] std::string smaps_line(const void* p, const std::string& key) {
  std::ifstream smaps("/proc/self/smaps");
  const auto address = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0;
    uintptr_t end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= address && address < end;
    } else if (inside && line.rfind(key, 0) == 0) {
      return line;
    }
  }
  return "";
}

[[maybe_unused]] std::string vm_flags_of(const void* p) { return smaps_line(p, "VmFlags:"); }

// The mapping's resident memory in KiB.
[[maybe_unused]] long rss_kib_of(const void* p) {
  std::istringstream line(smaps_line(p, "Rss:"));
  std::string key;
  long kib = -1;
  line >> key >> kib;
  return kib;
}

TEST(BulkAllocator, LargeArraysStartOnAHugePageAndSmallOnesComeFromTheHeap) {
#if !PODSIM_BULK_MAPPINGS
  GTEST_SKIP() << "bulk arrays stay on the heap in this build";
#endif
  BulkAllocator<double> allocator;
  const size_t large = kBulkBytes / sizeof(double) + 3;
  double* big = allocator.allocate(large);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % kHugePageBytes, 0u);
  big[0] = 1.0;
  big[large - 1] = 2.0;  // the whole length is mapped
  EXPECT_EQ(big[0] + big[large - 1], 3.0);
  allocator.deallocate(big, large);

  int* small = BulkAllocator<int>().allocate(16);
  small[15] = 7;
  EXPECT_EQ(small[15], 7);
  BulkAllocator<int>().deallocate(small, 16);
}

TEST(BulkAllocator, LargeArraysAreAdvisedAsHugePagesWhereTheKernelHasThem) {
#if !PODSIM_BULK_MAPPINGS
  GTEST_SKIP() << "bulk arrays stay on the heap in this build";
#else
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  }
  BulkAllocator<uint8_t> allocator;
  uint8_t* big = allocator.allocate(2 * kBulkBytes);
  big[0] = 1;
  // "hg": the mapping carries MADV_HUGEPAGE.
  EXPECT_NE(vm_flags_of(big).find(" hg"), std::string::npos) << vm_flags_of(big);
  allocator.deallocate(big, 2 * kBulkBytes);
  uint8_t* small = allocator.allocate(4096);
  EXPECT_EQ(vm_flags_of(small).find(" hg"), std::string::npos) << vm_flags_of(small);
  allocator.deallocate(small, 4096);
#endif
}

TEST(BulkVector, KeepsItsElementsAcrossGrowthPastTheBulkSizeAndBack) {
  BulkVector<uint32_t> v;
  const uint32_t n = 3 * kBulkBytes / sizeof(uint32_t);
  for (uint32_t i = 0; i < n; ++i) v.push_back(i);
  v.shrink_to_fit();
  uint64_t sum = std::accumulate(v.begin(), v.end(), uint64_t{0});
  EXPECT_EQ(sum, uint64_t{n} * (n - 1) / 2);
  v.resize(10);
  v.shrink_to_fit();
  EXPECT_EQ(v.back(), 9u);
}

TEST(BulkVector, ReleasingUnusedCapacityFreesThePagesPastTheEndInPlace) {
#if !PODSIM_BULK_MAPPINGS
  GTEST_SKIP() << "bulk arrays stay on the heap in this build";
#else
  BulkVector<uint8_t> v(4 * kBulkBytes, 1);
  const uint8_t* data = v.data();
  v.resize(kBulkBytes / 2);
  EXPECT_GE(rss_kib_of(data) * 1024, static_cast<long>(4 * kBulkBytes) - 4096);
  release_unused_capacity(v);
  EXPECT_EQ(v.data(), data);  // no copy
  EXPECT_EQ(v.capacity(), 4 * kBulkBytes);
  EXPECT_LE(rss_kib_of(data) * 1024, static_cast<long>(kBulkBytes / 2) + 4096);
  EXPECT_EQ(v.front() + v.back(), 2);
#endif
}

}  // namespace
}  // namespace podsim::sim
