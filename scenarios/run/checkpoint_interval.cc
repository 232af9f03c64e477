#include "scenarios/run/checkpoint_interval.h"

#include <cmath>

namespace podsim::scenarios {

double young_interval_s(double stall_s, double mtti_s) { return std::sqrt(2 * stall_s * mtti_s); }

double daly_interval_s(double stall_s, double mtti_s) {
  if (stall_s >= 2 * mtti_s) return mtti_s;
  const double x = std::sqrt(stall_s / (2 * mtti_s));
  return std::sqrt(2 * stall_s * mtti_s) * (1 + x / 3 + x * x / 9) - stall_s;
}

}  // namespace podsim::scenarios
