#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "hwmodels/fabric.h"
#include "hwmodels/gpu_model.h"
#include "scenarios/input/problem.h"
#include "scenarios/step/step_simulation.h"
#include "strategies/schedule.h"

namespace podsim::scenarios {

// What a step simulation holds. A step longer than the engine's clock
// (sim::Time, ~106 days) or with more flows than kMaxStepFlows is not
// simulated: it is bad input (a unit slip, "1 B/s" for "1 GB/s", or an
// absurd model), reported as a problem at the key that made it so.

/// The longest step podsim simulates, in words ("about 106 days").
std::string clock_limit_text();

/// The key that makes a transfer among `members` slow: the slowest link on
/// the routes from the first member to another in its NVLink domain and to
/// one outside it, as a problem path with the link in words
/// ("/cluster/scale_up/bandwidth", "NVLink links of 370 B/s (bandwidth
/// 450 GB/s x efficiency 1e-09)").
struct SlowLink {
  std::string path;
  std::string description;
  double capacity_bytes_per_s = 0;
};
SlowLink slowest_link(const hwmodels::Fabric& fabric, std::span<const int64_t> members);

/// The problem for a step that ran past the clock at `task` (the first task
/// to end past it, StepTimeline::beyond_clock_task): a compute task names
/// the GPU rate its slowest op is bound by (or the links of its slowest
/// in-task collective), a transfer the slowest link it crosses.
Problem clock_problem(const strategies::Schedule& schedule, const StepHardware& hardware,
                      const StepTimeline& timeline, uint32_t task);

/// The problem for a step whose transfers passed `max_flows` at `task`
/// (StepTimeline::too_many_flows_task), at the key that multiplies them.
Problem flows_problem(const strategies::Schedule& schedule, uint32_t task,
                      size_t max_flows = kMaxStepFlows);

}  // namespace podsim::scenarios
