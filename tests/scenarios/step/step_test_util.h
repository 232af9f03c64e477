#pragma once

// Reading and simulating a scenario in the step tests: a failure is a test
// failure naming every problem.
#include <gtest/gtest.h>

#include <string>

#include "scenarios/input/reader.h"
#include "scenarios/step/simulate.h"

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

}  // namespace podsim::scenarios::testing
