#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hwmodels/cluster_spec.h"
#include "scenarios/input/software_spec.h"
#include "strategies/model.h"
#include "strategies/plan.h"

namespace podsim::scenarios {

/// How the step is simulated.
enum class SimulationMode : uint8_t {
  kSymmetric,  ///< one representative per pipeline stage; identical ranks share work
  kEveryRank,  ///< every GPU simulated on its own
};

/// A scenario after reading and checking: typed, units resolved, presets
/// expanded. Everything downstream works from this, never from JSON.
struct ScenarioSpec {
  std::string name;
  strategies::ModelShape model;
  hwmodels::ClusterSpec cluster;
  int64_t gpus = 0;  ///< GPUs the job uses (dp*tp*pp*cp)
  strategies::TrainingSetup training;
  strategies::ParallelPlan plan;
  strategies::ScheduleOptions options;
  /// The training framework (scenario-format.md v1.1 `software`).
  SoftwareSpec software;
  SimulationMode mode = SimulationMode::kSymmetric;
  /// Remarks of the reader that do not stop the run (uneven pipeline stages,
  /// tp spanning scale-up domains, ...); the report should carry them.
  std::vector<std::string> warnings;
};

}  // namespace podsim::scenarios
