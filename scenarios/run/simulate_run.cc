#include "scenarios/run/simulate_run.h"

#include <cmath>
#include <vector>

namespace podsim::scenarios {

Result<RunReport> simulate_run(const ScenarioSpec& spec, const Report& step, double tokens,
                               const SimulateOptions& /*options*/) {
  if (!(tokens > 0) || !std::isfinite(tokens)) {
    return std::vector<Problem>{
        {"/run/tokens", "must be a positive number of tokens", "e.g. 15e12"}};
  }
  if (!(step.step_time_s > 0)) {
    return std::vector<Problem>{{"", "the step took no time: nothing to train", ""}};
  }
  const RunModel model = run_model(spec, tokens, step.step_time_s, step.step_time_s);
  return sample_runs(model, spec.run.samples, spec.run.seed);
}

}  // namespace podsim::scenarios
