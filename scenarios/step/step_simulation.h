#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "hwmodels/collectives.h"
#include "hwmodels/fabric.h"
#include "hwmodels/gpu_model.h"
#include "hwmodels/kernel_implementation.h"
#include "sim/bulk_allocator.h"
#include "sim/engine.h"
#include "strategies/schedule.h"

namespace podsim::scenarios {

// The meeting point of strategies/ and hwmodels/: a per-rank schedule is
// priced by the hardware models and executed on the event engine.
//
// - A compute task is one delay on its rank's compute stream. Its duration is
//   the work's kernels (GpuModel) plus the in-task collectives (TP, CP, EP:
//   priced alone on the fabric by predict_collective, since their groups sit
//   on links nothing else uses at that moment), where a collective paired
//   with a compute op (`overlap_op`) costs only what it adds beyond it; the
//   compute op runs on the SMs the NCCL kernel leaves it while both run
//   (hwmodels::kernel_sms).
// - The host issues a compute task's kernels ahead of the GPU: the task lasts
//   at least its issue time. Where an op waits for a host synchronisation
//   (Op::host_sync: a dropless MoE dispatch), host and GPU are followed op
//   by op, so the launches after the sync are not hidden.
// - Each simulated GPU's SMs are an engine pool: compute tasks are work on
//   it, and every communication task holds its NCCL kernel's share of the
//   SMs of each simulated member from its first to its last byte, so
//   compute that overlaps communication on other streams slows down.
// - A communication task (pipeline sends, data-parallel syncs, ZeRO gathers)
//   becomes flows on the fabric (plan_collective + add_collective), so
//   concurrent transfers share links max-min fairly. Every member rank of a
//   collective waits for all simulated members before the flows start.
// - Streams are in-order: each task also waits for the previous task of its
//   (rank, stream).
// - Symmetric scope (one representative rank per stage): each flow stands
//   for its images under all shifts of the (tp, cp, dp) coordinates, which
//   run the same schedule at the same times; every hop of the flow carries
//   the number of images that cross that link (PathHop::multiplicity), so an
//   oversubscribed tier or a shared NIC sees the whole job's load.
//
// Rank r runs on GPU r of the cluster.

/// Where one in-task collective op runs inside its work, as priced: the
/// work's ops run in order (a paired collective beside its compute op), so
/// instance k of repeat r of the op's segment starts
/// `start_s + r * repeat_s + k * step_s` into the work's op sequence.
struct InTaskCollective {
  uint32_t segment = 0;  ///< the op: Work::segments[segment].ops[op]
  uint32_t op = 0;
  strategies::Dim dim = strategies::Dim::kTp;
  double start_s = 0;   ///< the first instance, from the start of the sequence
  double repeat_s = 0;  ///< one repeat of its segment (a layer)
  int64_t repeats = 1;
  double step_s = 0;  ///< from one of its `count` instances to the next
  int64_t count = 1;
  double time_s = 0;     ///< one instance, priced alone on the fabric
  double exposed_s = 0;  ///< of one instance: not hidden under compute
  bool operator==(const InTaskCollective&) const = default;
};

/// What one work costs on one rank's compute stream, seconds.
struct WorkCost {
  double duration_s = 0;   ///< the task's time on the compute stream
  double compute_s = 0;    ///< forward / backward kernels
  double recompute_s = 0;  ///< kernels of recompute ops
  double optimizer_s = 0;  ///< optimizer kernels
  /// compute_s + recompute_s by kernel kind, as priced alone (without
  /// comm_contention_s).
  double gemm_s = 0, attention_s = 0, memory_bound_s = 0;
  /// In-task collectives not hidden under compute, by strategies::Dim.
  std::array<double, strategies::kDims> exposed_comm_s{};
  /// In-task collectives hidden under compute (reported, not on the critical path).
  double hidden_comm_s = 0;
  /// Part of compute_s + recompute_s that compute ops lose to the SMs held
  /// by NCCL kernels of collectives paired with them.
  double comm_contention_s = 0;
  /// Time of the MoE blocks' ops by strategies::MoePart (compute ops, and
  /// the exposed part of their collectives; included in the totals above).
  std::array<double, strategies::kMoeParts> moe_s{};
  /// Part of moe_s the busiest expert-parallel rank spends beyond its even
  /// share of the routed tokens (load imbalance).
  double moe_imbalance_s = 0;
  /// What the host spends issuing the work (kernel dispatch, compiled-region
  /// calls, hooks, synchronisations).
  double host_s = 0;
  /// Part of duration_s the GPU waits for the host (issue longer than the
  /// kernels, or serialised after a synchronisation).
  double host_idle_s = 0;
  /// Part of duration_s the work waits for its copies over the host link
  /// (activation offload longer than the kernels beside it).
  double host_copy_wait_s = 0;
  /// The ops one after another, as priced: compute + recompute + optimizer
  /// + exposed in-task communication before DualPipe's overlap stretches
  /// the compute (the positions of `collectives` are in this time).
  double sequence_s = 0;
  /// Every in-task collective op with its place in the sequence (those
  /// DualPipe runs beside the other half's compute: back to back from 0).
  std::vector<InTaskCollective> collectives;
  bool operator==(const WorkCost&) const = default;
};

struct TaskTime {
  sim::Time start;
  sim::Time end;
};

/// The simulated step: when every task ran.
struct StepTimeline {
  sim::BulkVector<TaskTime> tasks;  ///< by schedule task id
  /// Compute tasks: index into `costs`; communication tasks: kNoCost.
  sim::BulkVector<uint32_t> task_cost;
  std::vector<WorkCost> costs;
  sim::RunResult run;
  /// When run.beyond_clock: the task whose activity would end past the
  /// engine's clock (~106 days); `tasks` is then empty.
  std::optional<uint32_t> beyond_clock_task;
  /// The task whose flows took the step past its flow limit: nothing ran.
  std::optional<uint32_t> too_many_flows_task;
  size_t activities = 0;
  size_t flows = 0;
  static constexpr uint32_t kNoCost = UINT32_MAX;
};

/// The most flows one step puts on the engine: about 2 million, each ~200
/// bytes with its hops and ~2 us to add and run. Every rank of the
/// 16,384-GPU default scenario is 1.28 million (20 s); the per-layer
/// gathers and reductions of a 100,000-layer model over a 64-GPU ring are
/// 27-39 million (a minute and more before, with no answer sooner).
inline constexpr size_t kMaxStepFlows = size_t{1} << 21;

/// Parts slower than the hardware models say (stragglers), by rank. Only an
/// every-rank schedule can carry them: they break the ranks' symmetry.
/// - A slow GPU's compute ops take `factor` times as long; so do those of
///   every rank sharing an in-task (TP, CP, EP) collective of the work with
///   it, since each such collective waits for all its members, op by op.
///   Flows (pipeline sends, data-parallel syncs) wait for it through the
///   schedule's dependencies.
/// - A slow NIC's links to and from its switch keep `fraction` of their
///   capacity: the flows crossing it (data-parallel syncs, ZeRO gathers,
///   pipeline sends) slow down. In-task collectives keep their alone-on-the-
///   fabric price.
struct Degradation {
  std::map<int64_t, double> gpu_slowdown;       ///< rank -> factor >= 1
  std::map<int64_t, double> nic_rate_fraction;  ///< rank whose NIC -> fraction in (0, 1]
  bool empty() const { return gpu_slowdown.empty() && nic_rate_fraction.empty(); }
};

/// Seconds of collectives already predicted on one fabric under one set of
/// collective parameters, by kind, bytes (their bits) and group: a sweep
/// prices thousands of plans whose layers run the same collectives over the
/// same groups.
using CollectiveTimes = std::map<std::tuple<int, uint64_t, std::vector<int64_t>>, double>;

/// The hardware a schedule runs on.
struct StepHardware {
  const hwmodels::GpuModel& gpu;
  const hwmodels::Fabric& fabric;
  const hwmodels::CollectiveParams& collectives;
  /// The training framework's kernels and host costs.
  hwmodels::KernelImplementation kernels = {};
  const Degradation* degradation = nullptr;  ///< null: every part at its model's speed
  /// Where the collectives priced on this fabric are kept across schedules
  /// (null: each schedule's pricing keeps its own).
  CollectiveTimes* collective_times = nullptr;
};

/// Prices and runs `schedule` on a fresh engine. A step of more than
/// `max_flows` flows or too long for the engine's clock comes back with
/// `too_many_flows_task` or `beyond_clock_task` set (step_limits.h says
/// which key made it so). Throws std::logic_error if the engine deadlocks (a
/// schedule bug, reported with the stuck tasks) or if a schedule of
/// representatives leaves out a degraded rank (the caller chooses the
/// replica: degraded_replica_rank in simulate.h).
StepTimeline simulate_schedule(const strategies::Schedule& schedule, const StepHardware& hardware,
                               size_t max_flows = kMaxStepFlows);

/// What `work` costs when run by `rank` (its TP/CP/EP groups price the
/// in-task collectives).
WorkCost cost_work(const strategies::Schedule& schedule, const StepHardware& hardware, int32_t work,
                   int64_t rank);

/// What one instance of compute op `op` (a GEMM, an attention call or a
/// memory-bound kernel) of `job` costs on `gpu`: the price every compute op of
/// a simulated step gets. Flash attention runs the framework's `attention`
/// kernel, or podsim's own flash kernel model (the one calibration fits and
/// `podsim execute` runs) when nullopt. Throws std::logic_error for a
/// collective.
hwmodels::KernelCost price_op(const strategies::Op& op, const hwmodels::GpuModel& gpu,
                              const strategies::Job& job,
                              std::optional<hwmodels::AttentionKernel> attention);

/// The hardware's name for a strategies collective.
hwmodels::CollectiveOp collective_op(strategies::CollectiveKind kind);

/// The group an in-task collective of dimension `dim` runs over.
strategies::GroupKind group_kind_of(strategies::Dim dim);

}  // namespace podsim::scenarios
