#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "hwmodels/cluster_spec.h"
#include "hwmodels/kernel_implementation.h"
#include "scenarios/step/profile_fit.h"
#include "strategies/job.h"

namespace podsim::scenarios {

// Lower bounds on what simulate() reports for a plan, for the sweep: a plan
// whose memory bound exceeds the GPU's capacity cannot fit, and a plan whose
// step-time bound exceeds a known step time cannot beat it. Each is a
// relaxation of the simulated step, so it never exceeds the simulated value
// (tests/scenarios/sweep/bounds_test.cc checks this on many plans).
//
// Two levels:
// - quick (no schedule is built): the stage's pipeline order only;
// - refined (the representatives' schedule is built, ~1 ms): every task.
//
// Memory. When a compute task starts, every earlier compute task of its rank
// has ended (the stream runs in order) and no later one has started. So the
// live bytes at that moment are at least: what the compute tasks up to it
// allocated, minus what the earlier ones freed, plus what communication
// tasks it or an earlier compute task waited for allocated, minus what any
// communication task not waiting for a later compute task may have freed.
// The quick bound keeps only forward allocations and backward frees of the
// stored activations (everything else is allocated and then freed by a task
// that depends on the allocating one, so it adds a non-negative amount at
// every moment); a zero-bubble B counts as freeing everything its forward
// stored. Static memory and the runtime's reservation are added exactly as
// simulate() adds them.
//
// Step time. The longest path through a relaxed step: compute tasks cost
// what simulate() charges them (the work's kernels plus its exposed in-task
// TP/CP/EP collectives, scenarios::cost_work for the stage's representative
// rank), and
// - quick: only the in-order compute stream, a forward after the forward of
//   the previous model chunk, a backward (with its recompute) after the
//   backward of the next model chunk, and the optimizer after the stage's
//   last slot; communication costs nothing;
// - refined: every dependency and stream order of the schedule, and each
//   communication task costs its collective plan's closed-form estimate
//   (per phase: latency + the busiest link's bytes / capacity), which no
//   flow simulation can beat: latency elapses before a flow moves, and
//   flows sharing a link share its capacity.
// Dropping constraints and shortening durations can only shorten a longest
// path, and the engine rounds delays up, so neither bound exceeds the
// simulated step time.

/// The quick per-stage memory bound (index = stage), bytes.
std::vector<double> memory_lower_bound_per_stage(const strategies::Job& job,
                                                 const hwmodels::ClusterSpec& cluster);

/// Bounds of plans on one cluster. Keeps the hardware models and a cache of
/// work costs (works repeat across plans); not thread-safe: one per thread.
class PlanBounds {
 public:
  /// `hardware`: what simulate() runs the plans on (calibrated_hardware of
  /// their scenario), so that both price the same work alike.
  /// `kernels`: the scenario's software (its attention kernel and host
  /// costs), as the simulation prices them.
  PlanBounds(const CalibratedHardware& hardware, const hwmodels::KernelImplementation& kernels);
  ~PlanBounds();
  PlanBounds(const PlanBounds&) = delete;
  PlanBounds& operator=(const PlanBounds&) = delete;

  struct Bounds {
    double memory_bytes = 0;  ///< largest per-stage memory bound
    bool can_fit = true;      ///< memory_bytes <= the GPU's capacity
    double step_s = 0;        ///< 0 when !can_fit or when no bound is known
  };
  /// The quick bounds (the step bound only when the plan can fit).
  Bounds quick(const strategies::Job& job);
  /// The refined bounds, from the representatives' schedule (the step bound
  /// only when the plan can fit). A job the schedule builder refuses gets
  /// {0, true, 0}: no information.
  Bounds refined(const strategies::Job& job);

  /// Segment costs priced so far.
  size_t cached_costs() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace podsim::scenarios
