#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hwmodels/cluster_spec.h"
#include "scenarios/input/problem.h"
#include "scenarios/input/spec.h"
#include "strategies/plan.h"

namespace podsim::scenarios {

// `podsim sweep`: every valid parallel plan of a scenario's model and
// training setup, on one or more hardware targets (GPU count x GPU type),
// screened cheaply and simulated where it matters, ranked by step time.
//
// 1. Enumerate (canonical order, the tie-breaker of every ranking).
// 2. Bound each plan without simulating it (sweep_bounds.h, quick level): a
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
// phase the processes exchange their results through a caller-supplied
// all-gather (MPI in tools/, identity in a single process), so every process
// ends with the same outcome.

/// Which plans a sweep enumerates. The defaults are in docs/sweep.md.
struct SweepSpace {
  /// Largest tensor-parallel degree; 0 = the cluster's scale-up domain
  /// (TP across the network is never competitive).
  int64_t max_tp = 0;
  /// Largest context-parallel degree; 0 = seq_len / 1024 (at least 1,024
  /// tokens per CP rank), at least 1.
  int64_t max_cp = 0;
  /// Largest pipeline degree; 0 = the model's layers.
  int64_t max_pp = 0;
  /// Micro-batch sizes tried (each must divide global_batch / dp).
  std::vector<int64_t> micro_batches{1, 2, 4, 8};
  /// Interleaved 1F1B: virtual stages 2..max dividing ceil(layers / pp).
  int64_t max_virtual_stages = 8;
  /// Pipeline schedules tried when pp > 1 (pp = 1 has no pipeline: 1F1B).
  std::vector<strategies::PipelineSchedule> schedules{
      strategies::PipelineSchedule::kGpipe, strategies::PipelineSchedule::kOneFOneB,
      strategies::PipelineSchedule::kInterleavedOneFOneB,
      strategies::PipelineSchedule::kZeroBubble};
  std::vector<strategies::RecomputeMode> recompute{strategies::RecomputeMode::kNone,
                                                   strategies::RecomputeMode::kSelective,
                                                   strategies::RecomputeMode::kFull};
  /// ZeRO stages tried (3 = FSDP).
  std::vector<int> zero{0, 1, 2, 3};
  /// ZeRO-3 also with HSDP shard groups: every divisor g of dp*cp with
  /// 1 < g < dp*cp.
  bool hsdp = true;
  /// Restrict tp, cp, pp and ep to powers of two.
  bool powers_of_two = false;
};

/// One hardware configuration: the scenario's cluster resized to `gpus` and
/// possibly with another GPU.
struct SweepTarget {
  std::string gpu;  ///< GPU preset name (or the scenario's GPU name)
  int64_t gpus = 0;
  hwmodels::ClusterSpec cluster;
  /// Dollars per GPU-hour, or none when no price is known.
  std::optional<double> price_per_gpu_hour;
  std::string price_source;
  /// What was changed relative to the scenario's cluster other than its
  /// node count, in words (empty: nothing).
  std::string note;
};

/// A GPU to sweep over: its preset name and its data.
struct SweepGpu {
  std::string name;
  hwmodels::GpuSpec spec;
};

/// A GPU preset by name ("b200"), read as a cluster's "gpu" key would be:
/// problems say what is wrong (with the preset names to choose from).
Result<SweepGpu> sweep_gpu_preset(const std::string& name);

/// The scenario's cluster with `gpus` GPUs (nodes = gpus / gpus_per_node)
/// and `gpu` (nullopt: the scenario's own). A new GPU brings its NVLink
/// bandwidth and efficiency where podsim knows them (sweep_hardware.h) and
/// its NVLS flag; the scale-out network, tiers and latencies stay. Problems
/// under "/sweep/gpus" when the count is not a multiple of gpus_per_node.
Result<SweepTarget> make_sweep_target(const ScenarioSpec& scenario, int64_t gpus,
                                      const std::optional<SweepGpu>& gpu);

/// One plan of a sweep.
struct SweepCandidate {
  uint32_t target = 0;  ///< index into the targets
  strategies::ParallelPlan plan;
  int64_t micro_batch = 1;
};

/// Every plan of `space` that strategies::validate accepts for `scenario`'s
/// model and training on each target, in canonical order: target, tp, cp,
/// pp, ep, micro-batch, schedule, virtual stages, recompute, zero, shard
/// group. The scenario's sequence-parallel flag, context algorithm and rank
/// order are kept (sequence parallelism is on for every tp > 1 when the
/// scenario uses it or has tp = 1).
std::vector<SweepCandidate> enumerate_plans(const ScenarioSpec& scenario,
                                            const std::vector<SweepTarget>& targets,
                                            const SweepSpace& space);

/// The scenario for one candidate: its plan, micro-batch, GPU count and
/// cluster.
ScenarioSpec candidate_scenario(const ScenarioSpec& scenario, const SweepTarget& target,
                                const SweepCandidate& candidate);

/// What the bounds (sweep_bounds.h) found about a plan.
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
  double memory_peak_bytes = 0;
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
  double train_time_s = 0;  ///< time to train SweepOptions::tokens
  double gpu_hours = 0;
  std::optional<double> cost_usd;
};

/// Lets the processes of a partitioned sweep share what each computed:
/// given this process's bytes, returns every process's bytes in rank order.
using SweepExchange = std::function<std::vector<std::string>(const std::string&)>;

/// Called as plans finish (from worker threads, one call at a time).
using SweepProgress = std::function<void(uint64_t done, uint64_t total)>;

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
  uint64_t plans_not_fitting = 0;     ///< simulated, and over the memory capacity
  uint64_t plans_failed = 0;          ///< the simulation refused them
  std::vector<std::string> failures;  ///< the first few failure messages
  /// Simulated plans that fit, best first (step time, then canonical order).
  std::vector<RankedPlan> ranked;
  /// Indices into `ranked` of the Pareto front of time to train against
  /// cost (dollars when every target has a price, else GPU-hours).
  std::vector<size_t> pareto;
  bool cost_in_dollars = false;
  double tokens = 0;
  size_t top_k = 0;

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
  };
  std::optional<Baseline> baseline;
};

/// Runs a sweep of `scenario` over `targets`. Plans are simulated in
/// symmetric mode (one representative GPU per stage) whatever the scenario's
/// simulation mode. Problems: no targets, a missing exchange for a
/// partitioned run, a partition rank out of range.
Result<SweepOutcome> run_sweep(const ScenarioSpec& scenario, std::vector<SweepTarget> targets,
                               const SweepOptions& options);

}  // namespace podsim::scenarios
