#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "scenarios/input/spec.h"
#include "scenarios/sweep/sweep.h"

namespace podsim::scenarios {

// What `podsim sweep` prints and writes. Everything is a function of the
// outcome only (no clocks, no host names), so the same sweep gives the same
// bytes, in one process or split across many.

/// A plan as the scenario format's "parallelism" object (dp, tp, pp, cp, ep,
/// sequence_parallel, zero, shard_group when set, pipeline, context,
/// recompute, order) plus micro_batch, gpus and gpu.
nlohmann::json sweep_plan_json(const SweepCandidate& candidate, const SweepTarget& target);

/// "tp2 cp2 ring pp4 dp64 mb1 interleaved_1f1b v5 recompute=none zero=2" (the
/// context-parallel algorithm only when cp > 1).
std::string sweep_plan_label(const SweepCandidate& candidate);

/// Lines saying which plans the sweep enumerates for `scenario` on
/// `targets` (for the reports and docs/sweep.md).
std::vector<std::string> describe_sweep_space(const ScenarioSpec& scenario,
                                              const std::vector<SweepTarget>& targets,
                                              const SweepSpace& space);

/// The sweep as one JSON object: plans_total, plans_pruned_memory,
/// plans_skipped_by_bound, plans_simulated, plans_not_fitting, plans_failed,
/// results (the top K, best first: rank, plan, step_time_s, tokens_per_s,
/// mfu, memory_peak_bytes, memory_headroom_bytes, exposed_comm_s,
/// bubble_fraction, step_lower_bound_s, train_time_s, gpu_hours, cost_usd
/// (null without a price), pareto), pareto (ranks on the front), baseline,
/// targets, space, tokens, notes.
nlohmann::json sweep_to_json(const ScenarioSpec& scenario, const SweepOutcome& outcome,
                             const std::vector<std::string>& space);
/// sweep_to_json pretty-printed, with a trailing newline.
std::string sweep_json_text(const ScenarioSpec& scenario, const SweepOutcome& outcome,
                            const std::vector<std::string>& space);

/// Every simulated plan that fits, best first, one CSV row each (header
/// first): results.csv.
std::string sweep_csv(const SweepOutcome& outcome);

/// The report for people: counts, targets, the top K as aligned columns,
/// the Pareto front and where the scenario's own plan ranks.
std::string format_sweep_text(const ScenarioSpec& scenario, const SweepOutcome& outcome,
                              const std::vector<std::string>& space);

/// report.html: the same, with inline SVG charts of the best step time and
/// cost against GPUs per GPU type and of the Pareto front. Self-contained:
/// no scripts, fonts, images or links to anything outside the file.
std::string sweep_html(const ScenarioSpec& scenario, const SweepOutcome& outcome,
                       const std::vector<std::string>& space);

}  // namespace podsim::scenarios
