#pragma once

#include <cstdint>

namespace podsim {

/// a / b rounded up, for a >= 0 and b > 0: tiles over a matrix, waves over
/// the SMs, layers per pipeline stage, nodes for a GPU count.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// a rounded up to a multiple of unit > 0, unsigned so that it covers byte
/// counts and addresses: allocator blocks and segments, pages, row widths.
constexpr uint64_t round_up(uint64_t a, uint64_t unit) { return (a + unit - 1) / unit * unit; }

}  // namespace podsim
