#pragma once

// Reading and simulating a scenario in the step tests: a failure is a test
// failure naming every problem.
#include <gtest/gtest.h>

#include <string>

#include "hwmodels/collectives.h"
#include "hwmodels/fabric.h"
#include "hwmodels/gpu_model.h"
#include "scenarios/input/reader.h"
#include "scenarios/step/simulate.h"
#include "scenarios/step/software.h"
#include "scenarios/step/step_simulation.h"

namespace podsim::scenarios::testing {

inline ScenarioSpec read(const std::string& json) {
  Result<ScenarioSpec> spec = read_scenario_text(json);
  if (!spec.ok()) {
    std::string all;
    for (const Problem& p : spec.problems()) all += p.to_string() + "\n";
    ADD_FAILURE() << all;
    return {};
  }
  return spec.value();
}

inline Report simulate_ok(const ScenarioSpec& spec, SimulateOptions options = {}) {
  Result<Report> report = simulate(spec, options);
  if (!report.ok()) {
    std::string all;
    for (const Problem& p : report.problems()) all += p.to_string() + "\n";
    ADD_FAILURE() << all;
    return {};
  }
  return report.value();
}

/// A scenario's schedule (one rank per stage) and the hardware models the
/// step prices it on, built as simulate() builds them, for tests that drive
/// the pricing or the engine themselves.
struct StepParts {
  explicit StepParts(const ScenarioSpec& spec)
      : built(strategies::build_schedule(job_of(spec), strategies::Scope::kRepresentatives)),
        fabric(hwmodels::Fabric::build(spec.cluster, fabric_options(spec))),
        gpu(spec.cluster.gpu),
        collectives(hwmodels::CollectiveParams::for_cluster(spec.cluster)),
        kernels(kernel_implementation(spec)) {
    for (const strategies::PlanProblem& p : built.problems)
      ADD_FAILURE() << p.path << ": " << p.message;
  }
  static hwmodels::FabricOptions fabric_options(const ScenarioSpec& spec) {
    hwmodels::FabricOptions options;
    options.gpus = spec.gpus;
    return options;
  }
  StepHardware hardware() const { return {gpu, fabric, collectives, kernels}; }

  strategies::BuildResult built;
  hwmodels::Fabric fabric;
  hwmodels::GpuModel gpu;
  hwmodels::CollectiveParams collectives;
  hwmodels::KernelImplementation kernels;
};

}  // namespace podsim::scenarios::testing
