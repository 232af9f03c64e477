#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/input/spec.h"
#include "scenarios/run/run_inputs.h"

namespace podsim::scenarios {

// The run model of a scenario: from its cluster's failure rates, the job's
// part counts, the checkpoint its plan writes and its simulated step, the
// numbers a run is sampled from (RunInputs). Sources: docs/goodput.md.

/// One class of interruptions of the job.
struct FailureClass {
  std::string name;    ///< "gpu", "hbm", ..., "planned"
  std::string part;    ///< what it is counted per: "GPU", "node", "NIC", "job"
  double parts = 0;    ///< of the job
  double per_day = 0;  ///< interruptions of the job per day
};

/// What a checkpoint costs.
struct CheckpointCost {
  double bytes = 0;          ///< written once: weights and optimizer states of the whole model
  double bytes_per_gpu = 0;  ///< the most one GPU holds (weights + optimizer states, as sharded)
  double write_bytes_per_s = 0;
  double read_bytes_per_s = 0;
  double stall_s = 0;    ///< training blocked per save
  double persist_s = 0;  ///< asynchronous: from the end of the stall to the commit
  double load_s = 0;     ///< at a restart
  int64_t interval_steps = 0;
  double interval_s = 0;
  std::string interval_rule;  ///< how the interval was chosen, in words
};

/// Everything the run model derived, and the inputs it gives the sampler.
struct RunModel {
  double tokens = 0;
  double tokens_per_step = 0;
  int64_t gpus = 0, nodes = 0, nics = 0;
  std::vector<FailureClass> failures;
  double interruptions_per_day = 0;  ///< the job, all classes
  CheckpointCost checkpoint;
  SaveMode save_mode = SaveMode::kAsync;
  double restart_s = 0;          ///< overhead + requeue + checkpoint load
  double straggler_present = 0;  ///< fraction of the time at least one straggler is present
  RunInputs inputs;
};

/// The run model of `spec` (its spec.run settings; `tokens` to train) when
/// one step takes `step_time_s`, and `straggler_step_time_s` with one GPU
/// slowed by spec.run.straggler_gpu_slowdown.
RunModel run_model(const ScenarioSpec& spec, double tokens, double step_time_s,
                   double straggler_step_time_s);

/// A lower bound on expected_wall_s(run_model(p, tokens, t, t').inputs) for
/// every plan p of `spec`'s model and training on its cluster and GPU count
/// whose step takes t (t' >= t): e^(l R) (steps t - P), where l is the job's
/// interruption rate, R its restart without the GPU's copy and P the write
/// of an asynchronous save, none of which the plan changes (every segment's
/// expected cost is at least its length times e^(l (R + P)), run_sampler.h).
/// For sweeps that skip plans.
struct TrainTimeBound {
  double restart_factor = 1;  ///< e^(l R)
  double steps = 0;
  double persist_s = 0;
  double at(double step_time_s) const { return restart_factor * (steps * step_time_s - persist_s); }
};
TrainTimeBound train_time_bound(const ScenarioSpec& spec, double tokens);

}  // namespace podsim::scenarios
