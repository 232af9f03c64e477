#include "calibration/measurements.h"

#include "calibration/fit.h"

namespace podsim::calibration {

double Point::median_s() const { return median(times_s); }

double Point::rate_per_s() const {
  const double t = median_s();
  return t > 0 ? work / t : 0.0;
}

const Series* RawMeasurements::find(const std::string& name) const {
  for (const Series& s : series) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace podsim::calibration
