#pragma once

#include <cstdint>

namespace podsim::scenarios {

/// One training run as the run model sees it, in seconds and events per
/// second: what the step simulation, the checkpoint model and the cluster's
/// failure rates say, before anything is sampled (run_model.h builds it from
/// a scenario and its step report).
///
/// The run: `steps` steps of `step_time_s`, cut into segments of
/// `interval_steps` steps. Every segment but the last ends with a save that
/// blocks training for `save_stall_s`; the checkpoint is committed
/// `persist_s` after the stall ends (asynchronous saves; 0 for synchronous
/// ones, whose stall includes the write). Interruptions arrive as a Poisson
/// process at `interruption_rate_per_s` over wall-clock time, restarts
/// included; each rolls training back to the last committed checkpoint and
/// costs `restart_s` before training resumes (an interruption during a
/// restart starts it again). Stragglers (a slow GPU somewhere in the job)
/// start at `straggler_rate_per_s` and last `straggler_mean_s` on average;
/// while one or more is present a step takes `straggler_step_factor` times
/// as long. The run ends when its last step does.
struct RunInputs {
  int64_t steps = 0;
  double step_time_s = 0;
  int64_t interval_steps = 1;
  double save_stall_s = 0;
  double persist_s = 0;
  double restart_s = 0;
  double interruption_rate_per_s = 0;
  double straggler_rate_per_s = 0;
  double straggler_mean_s = 0;
  double straggler_step_factor = 1;

  /// Failure-free, straggler-free training time: steps x step time.
  double work_s() const { return static_cast<double>(steps) * step_time_s; }
};

}  // namespace podsim::scenarios
