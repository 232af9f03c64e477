#pragma once

#include <vector>

#include "hwmodels/kernel_implementation.h"
#include "scenarios/input/problem.h"
#include "scenarios/input/spec.h"
#include "strategies/job.h"

namespace podsim::scenarios {

// Where a software stack meets the rest of the scenario: the reader's
// SoftwareSpec splits into what the framework runs and when (the strategies'
// SoftwarePolicy, inside the Job) and how its kernels are implemented (the
// hardware models' KernelImplementation). Rules that need both the stack and
// the plan, the options or the GPU are applied here and nowhere else.

/// The strategies' schedule policy of the scenario's software.
strategies::SoftwarePolicy software_policy(const ScenarioSpec& spec);

/// The job of `spec` (its model, training setup, plan, options and software
/// policy), with `plan` in place of the scenario's (the sweep's candidates).
strategies::Job job_of(const ScenarioSpec& spec, const strategies::ParallelPlan& plan);
inline strategies::Job job_of(const ScenarioSpec& spec) { return job_of(spec, spec.plan); }

/// The hardware models' view of the scenario's software.
hwmodels::KernelImplementation kernel_implementation(const ScenarioSpec& spec);

/// What the scenario's software cannot do on its hardware (FlashAttention-3
/// on an A100), each with the JSON path of the mechanism.
std::vector<Problem> software_problems(const ScenarioSpec& spec);

}  // namespace podsim::scenarios
