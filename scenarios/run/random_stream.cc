#include "scenarios/run/random_stream.h"

#include <cmath>

namespace podsim::scenarios {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

/// SplitMix64's output function (Steele, Lea and Flood 2014).
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

RandomStream::RandomStream(uint64_t seed, uint64_t stream) {
  // SplitMix64 started at a point that depends on both numbers; its
  // successive outputs fill the state (the seeding xoshiro's authors give).
  uint64_t x = mix(seed + kGolden) ^ mix(stream ^ 0xD1B54A32D192ED03ULL);
  for (uint64_t& word : state_) {
    x += kGolden;
    word = mix(x);
  }
}

uint64_t RandomStream::next() {
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double RandomStream::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double RandomStream::exponential(double rate) { return -std::log1p(-uniform()) / rate; }

double RandomStream::log_uniform(double low, double high) {
  return low * std::exp(uniform() * std::log(high / low));
}

}  // namespace podsim::scenarios
