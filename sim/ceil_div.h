#pragma once

#include <cstdint>

namespace podsim {

/// a / b rounded up, for a >= 0 and b > 0: tiles over a matrix, waves over
/// the SMs, layers per pipeline stage, nodes for a GPU count.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace podsim
