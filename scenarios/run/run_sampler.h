#pragma once

#include <cstdint>
#include <vector>

#include "scenarios/run/run_inputs.h"

namespace podsim::scenarios {

/// Where the wall-clock time of one sampled run went, seconds. The parts
/// add up to `wall_s`.
struct RunSample {
  double wall_s = 0;
  double useful_s = 0;      ///< steps that stayed, at their failure-free time (= work_s)
  double straggler_s = 0;   ///< what stragglers added to the steps that stayed
  double lost_s = 0;        ///< steps rolled back by an interruption, and redone
  double checkpoint_s = 0;  ///< training blocked by saves
  double restart_s = 0;     ///< from each interruption until training resumed
  int64_t interruptions = 0;
};

/// Samples one run: interruption times, straggler episodes and their
/// consequences, exactly as RunInputs describes (an event simulation; runs
/// of identical segments between events are stepped over whole). Sample
/// `index` of `seed` always gives the same run; interruptions and
/// stragglers draw from separate streams, so turning one off leaves the
/// other's times unchanged.
RunSample sample_run(const RunInputs& inputs, uint64_t seed, uint64_t index);

/// The expected wall-clock time of the run without stragglers, in closed
/// form (exact for the model of RunInputs): with rate l, restart R, persist
/// p and c the time from one commit to the next, each segment after the
/// first costs (exp(l c) - 1) exp(l (R + p)) / l; the first, from the
/// start, (exp(l (c + p)) - 1) exp(l R) / l; the last (no save) has c = its
/// work - p. With p = 0 this is Daly's (2006) exact expectation. Stragglers
/// enter as their stationary effect: present a fraction q = 1 - exp(-rate x
/// mean duration) of the time, they leave work (1 - q) + q / f of its pace
/// (exact on average over a long run, not segment by segment).
double expected_wall_s(const RunInputs& inputs);

}  // namespace podsim::scenarios
