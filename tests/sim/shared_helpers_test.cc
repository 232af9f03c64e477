#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "sim/ceil_div.h"
#include "sim/format_fixed.h"
#include "sim/to_double.h"

namespace podsim {
namespace {

// The one-function headers every layer shares (sim/README.md).

TEST(SharedHelpers, CeilDivRoundsUpOnlyWhenThereIsARemainder) {
  EXPECT_EQ(ceil_div(0, 8), 0);
  EXPECT_EQ(ceil_div(1, 8), 1);
  EXPECT_EQ(ceil_div(8, 8), 1);
  EXPECT_EQ(ceil_div(9, 8), 2);
  // 126 layers on 16 pipeline stages: the longest stage holds 8.
  EXPECT_EQ(ceil_div(126, 16), 8);
  // Counts beyond 32 bits (tiles of a large batched GEMM) stay exact.
  EXPECT_EQ(ceil_div(int64_t{1} << 40, 3), ((int64_t{1} << 40) + 2) / 3);
  static_assert(ceil_div(7, 2) == 4, "usable in constant expressions");
}

TEST(SharedHelpers, RoundUpReachesTheNextMultipleOnlyWhenThereIsARemainder) {
  EXPECT_EQ(round_up(0, 512), 0u);
  EXPECT_EQ(round_up(1, 512), 512u);
  EXPECT_EQ(round_up(512, 512), 512u);
  EXPECT_EQ(round_up(513, 512), 1024u);
  // PyTorch rounds a large allocation of 20 MiB + 1 byte to the next 2 MiB.
  EXPECT_EQ(round_up((uint64_t{20} << 20) + 1, uint64_t{2} << 20), uint64_t{22} << 20);
  // Addresses and byte counts past 32 bits (a 2 MiB-aligned mapping).
  EXPECT_EQ(round_up((uint64_t{1} << 40) + 3, uint64_t{1} << 21),
            (uint64_t{1} << 40) + (uint64_t{1} << 21));
  static_assert(round_up(7, 4) == 8, "usable in constant expressions");
}

TEST(SharedHelpers, FormatFixedWritesPrintfsFixedPoint) {
  EXPECT_EQ(format_fixed(6.625, 2), "6.62");  // 6.625 is exact: round half to even
  EXPECT_EQ(format_fixed(78.8, 1), "78.8");
  EXPECT_EQ(format_fixed(1234.5, 0), "1234");
  EXPECT_EQ(format_fixed(0.5, 3), "0.500");
  // Unlike the SVG writer's fixed_number, a negative zero keeps its sign:
  // text reports print what printf prints.
  EXPECT_EQ(format_fixed(-0.0001, 2), "-0.00");
}

TEST(SharedHelpers, ToDoubleIsExactBelowTwoToThe53) {
  const int64_t big = (int64_t{1} << 53) - 1;
  EXPECT_EQ(static_cast<int64_t>(d(big)), big);
  EXPECT_EQ(d(16384) * d(8192), 134217728.0);
}

}  // namespace
}  // namespace podsim
