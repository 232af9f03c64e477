#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/input/problem.h"
#include "scenarios/input/spec.h"
#include "scenarios/run/run_report.h"
#include "scenarios/sweep/plan_space.h"
#include "scenarios/sweep/space_options.h"
#include "scenarios/sweep/targets.h"

namespace podsim::scenarios {

// `podsim sweep`: every valid parallel plan of a scenario's model and
// training setup, on one or more hardware targets (GPU count x GPU type),
// screened cheaply and simulated where it matters, ranked by step time.
//
// 1. Enumerate (plan_space.h; canonical order, the tie-breaker of every
//    ranking).
// 2. Bound each plan without simulating it (bounds.h, quick level): a
//    lower bound on its peak memory (static memory + the activations of the
//    in-flight micro-batches of its pipeline order) prunes plans that cannot
//    fit; a lower bound on its step time orders the rest.
// 3. Rounds, smallest bound first. A plan with only quick bounds gets the
//    refined, schedule-based bounds (which may prune it for memory) and goes
//    back into the queue; a refined plan is simulated. A plan whose bound
//    exceeds the K-th best step time of its target found in earlier rounds
//    (and the scenario's own plan's time) cannot enter the top K: it is
//    skipped and counted. Rounds take a fixed number of plans, so what is
//    refined, skipped and simulated does not depend on threads or processes.
//
// Work is split across processes by a partition (rank, size); after each
// phase the processes exchange their results (exchange.h) through a
// caller-supplied all-gather (MPI in tools/, identity in a single process),
// so every process ends with the same outcome.

/// What the bounds (bounds.h) found about a plan.
struct PlanScreen {
  bool pruned_memory = false;
  bool refined = false;                 ///< the schedule-based bounds were computed
  double memory_lower_bound_bytes = 0;  ///< peak memory per GPU can be no less
  double step_lower_bound_s = 0;        ///< step time can be no less (0 when pruned)
};

/// A simulated plan.
struct PlanOutcome {
  bool fits = false;
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double memory_peak_bytes = 0;  ///< the report's device peak (allocator reserved + outside)
  double memory_capacity_bytes = 0;
  double exposed_comm_s = 0;
  double bubble_fraction = 0;
  /// Non-empty when the simulation could not run the plan.
  std::string error;
};

/// A ranked plan with its costs.
struct RankedPlan {
  uint64_t index = 0;  ///< candidate index
  PlanOutcome outcome;
  double step_lower_bound_s = 0;
  /// Expected wall-clock time to train SweepOptions::tokens: the steps, and
  /// the job's interruptions, checkpoint saves and restarts (scenarios/run/;
  /// stragglers left out: their step would need a second simulation).
  double train_time_s = 0;
  double failure_free_time_s = 0;  ///< the steps alone
  double gpu_hours = 0;
  std::optional<double> cost_usd;
  /// The plan's run sampled (the scenario's /run samples and seed): where
  /// the time to train goes, and its spread. The top K plans only.
  std::optional<RunReport> run;
  /// Set when another plan of the same target simulated to exactly the same
  /// results (step, memory, exposed communication, bubble, time to train):
  /// the index into `ranked` of the preferred one, the row this plan is
  /// collapsed into (collapse_identical_plans).
  std::optional<size_t> collapsed_into;
  /// On a preferred plan with identical twins: why it is preferred over them.
  std::string preferred_because;
  /// Its step time is within the model's measured error of its target's
  /// best plan (mark_ties): the ranking cannot tell them apart.
  bool tied_with_best = false;
};

/// The model's measured step-time error for one hardware target: the
/// validation MAPE of the published family nearest to it (podsim validate).
struct TargetModelError {
  double mape = 0;     ///< fraction
  std::string family;  ///< "dgxc_llama31"
  size_t cases = 0;
  /// Why this family: "same GPU (h100-sxm-80g) and software (megatron-core);
  /// nearest case dgxc_llama31_70b_1024gpu_bf16".
  std::string basis;
};

/// Lets the processes of a partitioned sweep share what each computed:
/// given this process's bytes, returns every process's bytes in rank order.
using SweepExchange = std::function<std::vector<std::string>(const std::string&)>;

/// Where a sweep stands, for a progress display.
struct SweepProgressInfo {
  uint64_t done = 0;  ///< plans settled: pruned, skipped or simulated
  uint64_t total = 0;
  uint64_t simulated = 0;
  /// What is left, in seconds of wall time, or -1 before the first round of
  /// simulations has shown what one costs. Never more than the previous
  /// report's value less the time between them: it counts down, and drops
  /// when the bounds rule plans out (docs/sweep.md, "Progress").
  double seconds_left = -1;
  /// The screening that comes first: this process's plans (`to_screen`),
  /// each given its quick bounds before any is simulated, and how many have
  /// them (`screened`; equal to `to_screen` once the rounds begin).
  uint64_t screened = 0;
  uint64_t to_screen = 0;
  /// While screening, the time it has left at its average rate so far
  /// (wall seconds per plan screened); -1 before the first plan and after
  /// the screening. It may climb when later plans take longer to bound.
  double screening_seconds_left = -1;
  bool screening() const { return screened < to_screen; }
};

/// Called as plans are screened and settle (from worker threads, one call
/// at a time).
using SweepProgress = std::function<void(const SweepProgressInfo&)>;

struct SweepOptions {
  SweepSpace space;
  size_t top_k = 10;
  /// Tokens to train, for the time and cost columns.
  double tokens = 1e12;
  /// Skip plans that cannot enter the top K (off: simulate every plan that
  /// can fit).
  bool use_bounds = true;
  /// Also simulate every plan that may beat the scenario's own plan, so that
  /// its rank is exact (can cost many simulations when that plan is slow).
  bool exact_baseline_rank = false;
  /// Plans simulated (and refined) at most per round: the granularity of
  /// threshold updates.
  size_t simulate_per_round = 32;
  size_t refine_per_round = 256;
  /// Worker threads in this process; 0 = all cores.
  unsigned jobs = 0;
  int partition_rank = 0;
  int partition_size = 1;
  SweepExchange exchange;  ///< required when partition_size > 1
  SweepProgress progress;
  /// Plans must leave at least this much memory free on every GPU
  /// (--min-headroom); the others are not ranked.
  HeadroomRequirement min_headroom;
};

/// Everything a sweep found. Identical in every process of a partition.
struct SweepOutcome {
  std::vector<SweepTarget> targets;
  std::vector<SweepCandidate> candidates;
  std::vector<PlanScreen> screens;  ///< by candidate
  uint64_t plans_total = 0;
  uint64_t plans_pruned_memory = 0;
  uint64_t plans_skipped_by_bound = 0;
  uint64_t plans_simulated = 0;
  uint64_t plans_not_fitting = 0;  ///< simulated, and over the memory capacity
  uint64_t plans_failed = 0;       ///< the simulation refused them
  /// Simulated, fit, but leave less free memory than options.min_headroom.
  uint64_t plans_below_headroom = 0;
  HeadroomRequirement min_headroom;
  std::vector<std::string> failures;  ///< the first few failure messages
  /// Simulated plans that fit, best first (step time, then canonical order).
  std::vector<RankedPlan> ranked;
  /// Indices into `ranked` of the Pareto front of time to train against
  /// cost (dollars when every target has a price, else GPU-hours).
  std::vector<size_t> pareto;
  bool cost_in_dollars = false;
  double tokens = 0;
  size_t top_k = 0;
  /// By target: the model's measured error that ties are judged by
  /// (mark_ties); none when no validation family applies or before marking.
  std::vector<std::optional<TargetModelError>> model_error;

  /// The scenario's own plan, when its GPU count and type are swept.
  struct Baseline {
    uint32_t target = 0;
    SweepCandidate candidate;
    PlanOutcome outcome;
    std::optional<uint64_t> index;  ///< its candidate index when it is in the space
    /// 1-based rank by step time among the plans that fit (ties: canonical
    /// order, the baseline last when it is not in the space), also when the
    /// baseline itself does not fit (outcome.fits says so); none when its
    /// simulation failed. Plans skipped by the bound may still beat it:
    /// `rank` counts the simulated ones, `rank_worst` adds every skipped plan
    /// whose bound is below the baseline's step time (equal when the rank is
    /// exact, as it is whenever the baseline is in the top K of its target).
    std::optional<uint64_t> rank;
    std::optional<uint64_t> rank_worst;
    /// `rank` among the simulated plans of the baseline's own target (the
    /// comparison a sweep of several GPU types or counts asks for).
    std::optional<uint64_t> rank_in_target;
  };
  std::optional<Baseline> baseline;
};

/// Runs a sweep of `scenario` over `targets`. Plans are simulated in
/// symmetric mode (one representative GPU per stage) whatever the scenario's
/// simulation mode. Problems: no targets, a missing exchange for a
/// partitioned run, a partition rank out of range.
Result<SweepOutcome> run_sweep(const ScenarioSpec& scenario, std::vector<SweepTarget> targets,
                               const SweepOptions& options);

/// Groups the ranked plans of a target whose simulated results are exactly
/// equal (ZeRO-1 and ZeRO-2 with a pipeline, whose gradients are reduced once
/// per step either way) and picks the preferred one of each group: fewer
/// collectives per step in its schedule, then less memory held between
/// steps, then the lower ZeRO stage (the simpler setting), then canonical
/// order. Sets collapsed_into on the others and preferred_because on it.
/// run_sweep calls it.
void collapse_identical_plans(const ScenarioSpec& scenario, SweepOutcome& outcome);

/// Marks the plans whose step time is within `errors[target]` (a relative
/// error) of their target's fastest plan as tied with it, and keeps the
/// errors in outcome.model_error.
void mark_ties(SweepOutcome& outcome, std::vector<std::optional<TargetModelError>> errors);

}  // namespace podsim::scenarios
