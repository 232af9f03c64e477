#pragma once

#include <cstdint>

namespace podsim {

/// A count (elements, tokens, ranks) as a double for arithmetic in FLOPs,
/// bytes and seconds; exact below 2^53, far above any count podsim forms.
inline double d(int64_t v) { return static_cast<double>(v); }

}  // namespace podsim
