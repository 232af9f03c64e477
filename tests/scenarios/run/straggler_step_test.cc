// The run's straggler step comes from the step simulated with one slow GPU
// (scenarios/step/, /degraded), not from a factor applied to the step.
#include <gtest/gtest.h>

#include <string>

#include "scenarios/input/reader.h"
#include "scenarios/run/simulate_run.h"
#include "scenarios/step/simulate.h"

namespace podsim::scenarios {
namespace {

ScenarioSpec read_ok(const std::string& json) {
  Result<ScenarioSpec> spec = read_scenario_text(json);
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.problems().front().to_string());
  return spec.value();
}

/// Pure data parallelism on 4 H100, the all-reduce after the backward pass,
/// `extra` keys added.
std::string data_parallel(const std::string& extra) {
  return R"({"model": {"layers": 4, "hidden": 2048, "ffn_hidden": 8192, "heads": 16,
                       "vocab": 32000},
             "cluster": {"base": "dgx-h100-superpod", "nodes": 1},
             "training": {"seq_len": 2048, "global_batch": 8},
             "parallelism": {"dp": 4}, "options": {"overlap": {"dp": false}})" +
         extra + "}";
}

// One GPU at 1.5x: the synchronous step takes 1.5 x (compute + optimizer) +
// all-reduce (tests/scenarios/step/degraded_step_test.cc), so the step
// factor is that over the healthy step, less than 1.5 because the
// all-reduce does not slow down.
TEST(StragglerStep, TheRunsStragglerStepIsTheSimulatedDegradedStep) {
  const ScenarioSpec spec = read_ok(data_parallel(
      R"(, "run": {"tokens": 1e9, "samples": 3, "stragglers": {"gpu_slowdown": 1.5}})"));
  const Result<Report> step = simulate(spec);
  ASSERT_TRUE(step.ok());
  const Result<RunReport> run = simulate_run(spec, step.value(), 1e9);
  ASSERT_TRUE(run.ok());
  const Breakdown& b = step.value().breakdown;
  const double slow_step = 1.5 * (b.compute + b.optimizer) + b.exposed_comm.dp;
  EXPECT_NEAR(run.value().model.inputs.straggler_step_factor, slow_step / step.value().step_time_s,
              1e-6);
  EXPECT_LT(run.value().model.inputs.straggler_step_factor, 1.5);
}

TEST(StragglerStep, NoStragglersNoSecondSimulationAndFactorOne) {
  const ScenarioSpec spec = read_ok(data_parallel(
      R"(, "run": {"tokens": 1e9, "samples": 3, "stragglers": {"node_fraction": 0}})"));
  const Result<Report> step = simulate(spec);
  ASSERT_TRUE(step.ok());
  const Result<RunReport> run = simulate_run(spec, step.value(), 1e9);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run.value().model.inputs.straggler_step_factor, 1.0);
}

TEST(StragglerStep, ARunOfAScenarioWithASlowGpuIsAnError) {
  const ScenarioSpec spec = read_ok(data_parallel(
      R"(, "degraded": {"gpu": {"rank": 1, "slowdown": 2}}, "run": {"tokens": 1e9})"));
  const Result<Report> step = simulate(spec);
  ASSERT_TRUE(step.ok());
  const Result<RunReport> run = simulate_run(spec, step.value(), 1e9);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.problems().front().path, "/degraded/gpu");
}

}  // namespace
}  // namespace podsim::scenarios
