#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "scenarios/input/spec.h"
#include "scenarios/sweep/targets.h"
#include "strategies/plan.h"

namespace podsim::scenarios {

// The plans a sweep considers: every split of each target's GPUs into
// parallel degrees, micro-batch sizes, schedules, recompute and sharding
// that strategies::validate accepts, in one canonical order.

/// The largest TP degree tried by default: the scale-up domain (TP across
/// the network is never competitive), at most 8, since a 72-GPU NVLink rack
/// or a TPU slice would otherwise multiply the space with degrees no recipe
/// uses (Megatron-Bridge's NVL72 recipes run TP <= 4, MaxText's TPU recipes
/// TP <= 8; docs/sweep.md).
inline int64_t default_max_tp(int64_t scale_up_domain) {
  return std::clamp<int64_t>(scale_up_domain, 1, 8);
}

/// Which plans a sweep enumerates. The defaults are in docs/sweep.md.
struct SweepSpace {
  /// Largest tensor-parallel degree; 0 = default_max_tp of the target's
  /// scale-up domain.
  int64_t max_tp = 0;
  /// Largest context-parallel degree; 0 = seq_len / 1024 (at least 1,024
  /// tokens per CP rank), at least 1.
  int64_t max_cp = 0;
  /// Largest pipeline degree; 0 = the model's layers.
  int64_t max_pp = 0;
  /// MoE models: largest expert tensor-parallel degree; 0 = max_tp. Every
  /// ep dividing the experts and expert_tp dividing the expert ffn with
  /// ep * expert_tp dividing tp*cp*dp is tried (MoE parallel folding).
  int64_t max_expert_tp = 0;
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
  /// Context-parallel algorithms tried when cp > 1 (cp = 1 keeps the
  /// scenario's, which then does nothing).
  std::vector<strategies::ContextAlgorithm> context_algorithms{
      strategies::ContextAlgorithm::kRing, strategies::ContextAlgorithm::kUlysses,
      strategies::ContextAlgorithm::kAllGather};
  /// ZeRO stages tried (3 = FSDP).
  std::vector<int> zero{0, 1, 2, 3};
  /// ZeRO-3 also with HSDP shard groups: every divisor g of dp*cp with
  /// 1 < g < dp*cp.
  bool hsdp = true;
  /// Restrict tp, cp, pp and ep to powers of two.
  bool powers_of_two = false;
  /// Degrees pinned by `podsim sweep --fix KEY=VALUE` (unset: every value the
  /// limits above allow). A pinned tp or cp is tried even past max_tp or
  /// max_cp. The other settings are pinned by leaving one value in their
  /// lists.
  struct Pinned {
    std::optional<int64_t> tp, cp, pp, dp, ep, expert_tp, virtual_stages, shard_group;
  } pinned;
};

/// One plan of a sweep.
struct SweepCandidate {
  uint32_t target = 0;  ///< index into the targets
  strategies::ParallelPlan plan;
  int64_t micro_batch = 1;
};

/// Every plan of `space` that strategies::validate accepts for `scenario`'s
/// model and training on each target and whose schedule is not too large to
/// build (strategies::schedule_size_problem), in canonical order: target, tp,
/// cp, pp, ep, expert_tp, micro-batch, schedule, virtual stages, recompute,
/// context algorithm, zero, shard group. The scenario's sequence-parallel
/// flag and rank order are kept (sequence parallelism is on for every tp > 1 when the
/// scenario uses it or has tp = 1).
std::vector<SweepCandidate> enumerate_plans(const ScenarioSpec& scenario,
                                            const std::vector<SweepTarget>& targets,
                                            const SweepSpace& space);

/// 0..count-1 in blocks of `block` consecutive indices, the blocks taken in
/// a spread order (a stride coprime with the block count, near its golden
/// section), for a sample of the canonical order that is representative
/// from the start while neighbouring plans stay together.
std::vector<size_t> spread_order(size_t count, size_t block);

/// The scenario for one candidate: its plan, micro-batch, GPU count and
/// cluster.
ScenarioSpec candidate_scenario(const ScenarioSpec& scenario, const SweepTarget& target,
                                const SweepCandidate& candidate);

}  // namespace podsim::scenarios
