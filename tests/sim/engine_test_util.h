#pragma once

// Units the engine and flow-network tests share.

#include <cstdint>

#include "sim/time.h"

namespace podsim::sim::testing {

inline Time ps(int64_t n) { return Time::from_ps(n); }

inline constexpr double kG = 1e9;  // 1 GB/s, in bytes/s

}  // namespace podsim::sim::testing
