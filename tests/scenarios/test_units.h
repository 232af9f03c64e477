#pragma once

// Units the scenarios tests share.

namespace podsim::scenarios::testing {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace podsim::scenarios::testing
