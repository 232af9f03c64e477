#pragma once

#include <cstdint>

#include "scenarios/run/run_model.h"
#include "scenarios/run/run_sampler.h"

namespace podsim::scenarios {

/// A quantity over the sampled runs: mean, median and the 90% range (5th
/// and 95th percentiles, linear between order statistics).
struct Spread {
  double mean = 0, median = 0, low = 0, high = 0;
};

/// The run-level figures of a scenario: its run model and what the sampled
/// runs did.
struct RunReport {
  RunModel model;
  int64_t samples = 0;
  uint64_t seed = 0;
  double failure_free_wall_s = 0;  ///< the steps alone: today's time to train
  double expected_wall_s = 0;      ///< closed form (run_sampler.h)
  Spread wall_s;
  Spread gpu_hours;
  /// Effective training time ratio: time training on steps that stayed
  /// (stragglers' slowness included) over wall-clock time, as Llama 3 and
  /// MegaScale define it.
  Spread ettr;
  /// Goodput: tokens trained over wall-clock time.
  Spread goodput_tokens_per_s;
  Spread interruptions;
  RunSample mean;  ///< every part's mean over the samples, seconds
};

/// Samples `samples` runs of `model` (samples 0 .. samples-1 of `seed`).
RunReport sample_runs(const RunModel& model, int64_t samples, uint64_t seed);

}  // namespace podsim::scenarios
