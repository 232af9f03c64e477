#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hwmodels/cluster_spec.h"
#include "scenarios/input/problem.h"
#include "scenarios/input/run_spec.h"
#include "scenarios/input/software_spec.h"
#include "strategies/model.h"
#include "strategies/plan.h"

namespace podsim::scenarios {

/// How the step is simulated.
enum class SimulationMode : uint8_t {
  kSymmetric,  ///< one representative per pipeline stage; identical ranks share work
  kEveryRank,  ///< every GPU simulated on its own
};

/// Parts of the job running below their datasheet in the simulated step
/// (/degraded): a GPU whose compute kernels take `gpu_slowdown` times as
/// long (thermal or power throttling), a NIC that keeps `nic_rate_fraction`
/// of its rate. Either breaks the symmetry of the ranks, so the step is
/// simulated with every rank. Rank -1: none.
struct DegradedParts {
  int64_t slow_gpu_rank = -1;
  double gpu_slowdown = 1;
  int64_t slow_nic_rank = -1;  ///< the NIC this GPU sends and receives through
  double nic_rate_fraction = 1;
  bool any() const { return slow_gpu_rank >= 0 || slow_nic_rank >= 0; }
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
  DegradedParts degraded;
  /// What the cluster's parts fail at and where checkpoints go (for the
  /// run above the step; the step never reads them).
  ReliabilitySpec reliability;
  StorageSpec storage;
  /// The whole run: token budget, checkpoints, restarts, stragglers.
  RunSpec run;
  /// Remarks of the reader that do not stop the run (uneven pipeline stages,
  /// tp spanning scale-up domains, ...); the report should carry them.
  std::vector<std::string> warnings;
  /// What is wrong with the plan itself, when read with
  /// ReadOptions::plan_problems_as_warnings (empty otherwise).
  std::vector<Problem> plan_problems;
  /// Remarks on the input itself, each at its JSON path, for standard error
  /// and not the report: a quantity beyond any hardware (400e9 B/s meant as
  /// 400 Gb/s), a preset named by a prefix. The run goes on the same.
  std::vector<Problem> input_warnings;
};

}  // namespace podsim::scenarios
