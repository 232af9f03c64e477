#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "hwmodels/collectives.h"
#include "hwmodels/fabric.h"
#include "hwmodels/gpu_model.h"
#include "hwmodels/kernel_implementation.h"
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

/// What one work costs on one rank's compute stream, seconds.
struct WorkCost {
  double duration_s = 0;   ///< the task's time on the compute stream
  double compute_s = 0;    ///< forward / backward kernels
  double recompute_s = 0;  ///< kernels of recompute ops
  double optimizer_s = 0;  ///< optimizer kernels
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
};

struct TaskTime {
  sim::Time start;
  sim::Time end;
};

/// The simulated step: when every task ran.
struct StepTimeline {
  std::vector<TaskTime> tasks;  ///< by schedule task id
  /// Compute tasks: index into `costs`; communication tasks: kNoCost.
  std::vector<uint32_t> task_cost;
  std::vector<WorkCost> costs;
  sim::RunResult run;
  size_t activities = 0;
  size_t flows = 0;
  static constexpr uint32_t kNoCost = UINT32_MAX;
};

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

/// The hardware a schedule runs on.
struct StepHardware {
  const hwmodels::GpuModel& gpu;
  const hwmodels::Fabric& fabric;
  const hwmodels::CollectiveParams& collectives;
  /// The training framework's kernels and host costs.
  hwmodels::KernelImplementation kernels = {};
  const Degradation* degradation = nullptr;  ///< null: every part at its model's speed
};

/// Prices and runs `schedule` on a fresh engine. Throws std::logic_error if
/// the engine deadlocks (a schedule bug, reported with the stuck tasks) or
/// if a degradation is given for a schedule of representatives.
StepTimeline simulate_schedule(const strategies::Schedule& schedule, const StepHardware& hardware);

/// What `work` costs when run by `rank` (its TP/CP/EP groups price the
/// in-task collectives).
WorkCost cost_work(const strategies::Schedule& schedule, const StepHardware& hardware, int32_t work,
                   int64_t rank);

/// What one instance of compute op `op` (a GEMM, an attention call or a
/// memory-bound kernel) of `job` costs on `gpu`: the price every compute op of
/// a simulated step gets. Throws std::logic_error for a collective.
hwmodels::KernelCost price_op(const strategies::Op& op, const hwmodels::GpuModel& gpu,
                              const strategies::Job& job);

/// The hardware's name for a strategies collective.
hwmodels::CollectiveOp collective_op(strategies::CollectiveKind kind);

}  // namespace podsim::scenarios
