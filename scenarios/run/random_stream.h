#pragma once

#include <cstdint>

namespace podsim::scenarios {

/// xoshiro256** 1.0 (Blackman and Vigna, "Scrambled linear pseudorandom
/// number generators", 2018), seeded through SplitMix64. Its output and the
/// sampling below are fixed by their published algorithms, so a seeded run
/// gives the same numbers on every platform and standard library (the
/// distributions of <random> do not).
class RandomStream {
 public:
  /// Stream `stream` of `seed`: different (seed, stream) pairs start far
  /// apart in the generator's sequence (SplitMix64 of both).
  RandomStream(uint64_t seed, uint64_t stream);

  uint64_t next();
  /// Uniform on [0, 1), 53 random bits.
  double uniform();
  /// Exponentially distributed with mean 1 / rate (rate > 0): the wait for
  /// the next event of a Poisson process, by inversion.
  double exponential(double rate);
  /// Log-uniform on [low, high] (0 < low <= high), by inversion.
  double log_uniform(double low, double high);

 private:
  uint64_t state_[4];
};

}  // namespace podsim::scenarios
