#include "scenarios/run/simulate_run.h"

#include <cmath>
#include <vector>

#include "strategies/layout.h"

namespace podsim::scenarios {
namespace {

/// The step while a GPU straggles: the step simulated with every rank and
/// one GPU's compute spec.run.straggler_gpu_slowdown times as long. The slow
/// GPU is the first of the last pipeline stage: under 1F1B schedules that
/// stage's forward-backward pairs are on the critical path while the first
/// stage's slack absorbs most of a slowdown (Llama 3 405B, pp = 16: x1.030
/// on the last stage, x1.002 on the first), so the run pays for a straggler
/// near where it costs most, not for the mean over where it may land.
Result<double> straggler_step_time_s(const ScenarioSpec& spec, const Report& step,
                                     const SimulateOptions& options) {
  if (!(spec.run.straggler_node_fraction > 0) || !(spec.run.straggler_gpu_slowdown > 1)) {
    return step.step_time_s;
  }
  if (spec.degraded.slow_gpu_rank >= 0) {
    // The scenario's slow GPU is in every step already; the run's episodes
    // would need a second one.
    return std::vector<Problem>{
        {"/degraded/gpu",
         "the scenario has a slow GPU in every step and the run has straggler "
         "episodes besides",
         "remove /degraded/gpu, or set /run/stragglers/node_fraction to 0"}};
  }
  ScenarioSpec slowed = spec;
  slowed.degraded.slow_gpu_rank = strategies::Layout(spec.plan).representative(spec.plan.pp - 1);
  slowed.degraded.gpu_slowdown = spec.run.straggler_gpu_slowdown;
  Result<Report> straggling = simulate(slowed, options);
  if (!straggling.ok()) return straggling.problems();
  return straggling.value().step_time_s;
}

}  // namespace

Result<RunReport> simulate_run(const ScenarioSpec& spec, const Report& step, double tokens,
                               const SimulateOptions& options) {
  if (!(tokens > 0) || !std::isfinite(tokens)) {
    return std::vector<Problem>{
        {"/run/tokens", "must be a positive number of tokens", "e.g. 15e12"}};
  }
  if (!(step.step_time_s > 0)) {
    return std::vector<Problem>{{"", "the step took no time: nothing to train", ""}};
  }
  const Result<double> straggling = straggler_step_time_s(spec, step, options);
  if (!straggling.ok()) return straggling.problems();
  const RunModel model = run_model(spec, tokens, step.step_time_s, straggling.value());
  return sample_runs(model, spec.run.samples, spec.run.seed);
}

}  // namespace podsim::scenarios
