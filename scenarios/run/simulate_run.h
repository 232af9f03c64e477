#pragma once

#include "scenarios/input/problem.h"
#include "scenarios/input/spec.h"
#include "scenarios/run/run_report.h"
#include "scenarios/step/report.h"
#include "scenarios/step/simulate.h"

namespace podsim::scenarios {

/// The whole run of `spec` training `tokens` tokens (spec.run's settings:
/// checkpoints, restarts, stragglers, samples, seed), whose failure-free step
/// is `step` (simulate(spec, options)): the run model and spec.run.samples
/// sampled runs.
Result<RunReport> simulate_run(const ScenarioSpec& spec, const Report& step, double tokens,
                               const SimulateOptions& options = {});

}  // namespace podsim::scenarios
