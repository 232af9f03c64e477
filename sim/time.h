#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace podsim::sim {

/// Simulated time (a point or a span): an integer count of picoseconds.
/// Integer ticks keep runs exactly reproducible; rates stay `double` and a
/// completion time computed from a rate rounds up to the next tick.
///
/// The clock holds about 106 days. Arithmetic saturates instead of wrapping:
/// max() means "at or past the end of the clock" and stays there (min()
/// likewise for negative spans), so a time too long for the clock can be
/// recognised and reported rather than turned into a wrong, wrapped one.
class Time {
 public:
  constexpr Time() = default;

  static constexpr Time from_ps(int64_t picoseconds) { return Time(picoseconds); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<int64_t>::max()); }
  static constexpr Time min() { return Time(std::numeric_limits<int64_t>::min()); }

  /// Seconds to ticks, rounding up (a duration never shrinks to zero by
  /// rounding) and saturating at max(). Zero or negative input gives zero;
  /// NaN (an undefined time, as infinities make) saturates too, so that it
  /// cannot pass for a zero duration.
  static Time from_seconds_ceil(double seconds) {
    if (std::isnan(seconds)) return max();
    if (!(seconds > 0.0)) return zero();
    const double ps = std::ceil(seconds * 1e12);
    if (ps >= 9.2e18) return max();
    return Time(static_cast<int64_t>(ps));
  }

  constexpr int64_t ps() const { return ps_; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  /// True for max(): the time is at or past the end of the clock.
  constexpr bool beyond_clock() const { return ps_ == std::numeric_limits<int64_t>::max(); }

  constexpr Time operator+(Time other) const { return Time(saturate(ps_, other.ps_, false)); }
  constexpr Time operator-(Time other) const { return Time(saturate(ps_, other.ps_, true)); }
  constexpr Time& operator+=(Time other) {
    ps_ = saturate(ps_, other.ps_, false);
    return *this;
  }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(int64_t picoseconds) : ps_(picoseconds) {}
  /// a + b (or a - b), clamped to int64's range.
  static constexpr int64_t saturate(int64_t a, int64_t b, bool subtract) {
    int64_t out = 0;
    const bool overflow =
        subtract ? __builtin_sub_overflow(a, b, &out) : __builtin_add_overflow(a, b, &out);
    if (!overflow) return out;
    const bool up = subtract ? b < 0 : b > 0;
    return up ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  int64_t ps_ = 0;
};

}  // namespace podsim::sim
