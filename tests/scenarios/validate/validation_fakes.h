#pragma once

// Validation cases and a fake simulator for the tests of run_validation and
// of the validation writers.
#include <vector>

#include "scenarios/validate/validation.h"
#include "tests/scenarios/step/sample_report.h"
#include "tests/scenarios/test_units.h"

namespace podsim::scenarios::testing {

/// Three cases against a fake simulator that returns a chosen step time.
inline std::vector<ValidationCase> three_cases() {
  std::vector<ValidationCase> cases(3);
  cases[0].id = "twice";
  cases[0].measured.step_time_s = 1.0;
  cases[0].measured.mfu = 0.5;
  cases[0].scenario = ScenarioSpec{};
  cases[0].scenario->name = "twice";
  cases[1].id = "half";
  cases[1].measured.step_time_s = 4.0;
  cases[1].measured.memory_peak_gib = 60;
  cases[1].scenario = ScenarioSpec{};
  cases[1].scenario->name = "half";
  cases[2].id = "broken";
  cases[2].measured.step_time_s = 1.0;
  cases[2].problems = {{"/cases/2/scenario/parallelism/tp", "tp=6 does not divide heads=32", ""}};
  return cases;
}

inline Result<Report> fake_simulate(const ScenarioSpec& spec) {
  Report r = sample_report();
  r.scenario = spec.name;
  r.step_time_s = 2.0;  // +100% against "twice" (1 s), -50% against "half" (4 s)
  r.mfu = 0.4;
  r.memory_peak_bytes = 45 * kGiB;
  return r;
}

}  // namespace podsim::scenarios::testing
