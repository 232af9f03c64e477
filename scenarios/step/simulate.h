#pragma once

#include <optional>
#include <string>

#include "scenarios/input/problem.h"
#include "scenarios/input/spec.h"
#include "scenarios/step/report.h"
#include "scenarios/step/step_simulation.h"
#include "strategies/schedule.h"

namespace podsim::scenarios {

struct SimulateOptions {
  /// Overrides the scenario's simulation mode (the CLI's --every-rank).
  std::optional<SimulationMode> mode;
  /// A calibration profile to use instead of datasheet efficiency curves
  /// (the CLI's --profile); overrides the cluster's gpu.profile.
  std::string profile_path;
};

/// Simulates one optimizer step of a checked scenario. Problems found only
/// now (a plan the schedule cannot be built for, an unreadable profile) come
/// back as problems with the JSON path they concern.
Result<Report> simulate(const ScenarioSpec& spec, const SimulateOptions& options = {});

/// The step with everything behind the report: the schedule that ran and
/// when each of its tasks ran (for traces and timelines).
struct StepDetail {
  strategies::Schedule schedule;
  StepTimeline timeline;
  Report report;
};
Result<StepDetail> simulate_detailed(const ScenarioSpec& spec, const SimulateOptions& options = {});

}  // namespace podsim::scenarios
