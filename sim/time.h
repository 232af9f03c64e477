#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace podsim::sim {

/// Simulated time (a point or a span): an integer count of picoseconds.
/// Integer ticks keep runs exactly reproducible; rates stay `double` and a
/// completion time computed from a rate rounds up to the next tick.
class Time {
 public:
  constexpr Time() = default;

  static constexpr Time from_ps(int64_t picoseconds) { return Time(picoseconds); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<int64_t>::max()); }

  /// Seconds to ticks, rounding up (a duration never shrinks to zero by
  /// rounding) and saturating at max(). Negative or NaN input gives zero.
  static Time from_seconds_ceil(double seconds) {
    if (!(seconds > 0.0)) return zero();
    const double ps = std::ceil(seconds * 1e12);
    if (ps >= 9.2e18) return max();
    return Time(static_cast<int64_t>(ps));
  }

  constexpr int64_t ps() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }

  constexpr Time operator+(Time other) const { return Time(ps_ + other.ps_); }
  constexpr Time operator-(Time other) const { return Time(ps_ - other.ps_); }
  constexpr Time& operator+=(Time other) {
    ps_ += other.ps_;
    return *this;
  }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(int64_t picoseconds) : ps_(picoseconds) {}
  int64_t ps_ = 0;
};

}  // namespace podsim::sim
