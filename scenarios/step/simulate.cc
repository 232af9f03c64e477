#include "scenarios/step/simulate.h"

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hwmodels/collectives.h"
#include "hwmodels/fabric.h"
#include "hwmodels/gpu_model.h"
#include "hwmodels/memory_model.h"
#include "scenarios/step/memory_replay.h"
#include "scenarios/step/profile_fit.h"
#include "scenarios/step/software.h"
#include "scenarios/step/step_limits.h"
#include "scenarios/step/step_simulation.h"
#include "strategies/layout.h"
#include "strategies/memory.h"
#include "strategies/model_counts.h"
#include "strategies/schedule.h"
#include "strategies/workload.h"

namespace podsim::scenarios {
namespace {

using strategies::Dim;
using strategies::Schedule;
using strategies::Stream;
using strategies::Task;
using strategies::TaskKind;

constexpr const char* kFlopsConvention =
    "model FLOPs: every matrix product (GEMMs and attention scores/values) of the forward and "
    "backward passes counted exactly, once, without recomputation; causal attention counts the "
    "half of the score matrix it needs; embedding lookups, norms, softmax, loss and optimizer "
    "excluded. HFU also counts recomputed forward passes and flash attention's recompute of the "
    "scores in its backward pass.";

void add_exposed(ExposedComm& e, Dim dim, double seconds) {
  switch (dim) {
    case Dim::kTp:
      e.tp += seconds;
      break;
    case Dim::kCp:
      e.cp += seconds;
      break;
    case Dim::kEp:
      e.ep += seconds;
      break;
    case Dim::kDp:
      e.dp += seconds;
      break;
    case Dim::kPp:
      e.pp += seconds;
      break;
  }
}

void add_moe(MoeBreakdown& m, const WorkCost& c) {
  using strategies::MoePart;
  const auto part = [&c](MoePart p) { return c.moe_s[static_cast<size_t>(p)]; };
  m.router += part(MoePart::kRouter);
  m.permute += part(MoePart::kPermute);
  m.dispatch_combine += part(MoePart::kDispatch);
  m.grouped_gemm += part(MoePart::kExperts);
  m.shared_experts += part(MoePart::kShared);
  m.imbalance += c.moe_imbalance_s;
}

/// Each task's predecessor on its rank's stream (-1 for the first): what a
/// task waits for besides its dependencies. Worked out for a rank when one
/// of its tasks is first asked about: the breakdown walks the critical rank
/// and the few ranks its waits lead to, not every rank of an every-rank step.
class StreamPredecessors {
 public:
  explicit StreamPredecessors(const Schedule& schedule)
      : schedule_(schedule), by_rank_(schedule.ranks.size()) {}

  int64_t operator()(int64_t task) {
    const auto id = static_cast<uint32_t>(task);
    const auto& begin = schedule_.rank_begin;
    const auto r =
        static_cast<size_t>(std::upper_bound(begin.begin(), begin.end(), id) - begin.begin() - 1);
    std::vector<int64_t>& prev = by_rank_[r];
    if (prev.empty()) {
      std::array<int64_t, strategies::kStreams> last{};
      last.fill(-1);
      int64_t i = begin[r];
      for (const strategies::Task& t : schedule_.rank_tasks(r)) {
        int64_t& l = last[static_cast<size_t>(t.stream)];
        prev.push_back(l);
        l = i++;
      }
    }
    return prev[id - begin[r]];
  }

 private:
  const Schedule& schedule_;
  std::vector<std::vector<int64_t>> by_rank_;
};

/// Where the critical rank's compute stream spent the step: busy time by
/// category from the work costs, and each idle gap explained by walking the
/// chain of what held the next task back, latest first: time a transfer or
/// collective was in flight is exposed communication of its dimension
/// (including time it queued behind earlier transfers on its stream); time
/// spent waiting for another stage's compute is pipeline bubble.
Breakdown attribute(const Schedule& schedule, const StepTimeline& timeline, size_t rank_index,
                    double step_s) {
  Breakdown b;
  const auto& tasks = schedule.tasks;
  StreamPredecessors stream_prev(schedule);
  auto seconds = [](sim::Time t) { return t.seconds(); };
  auto end_of = [&](int64_t id) { return seconds(timeline.tasks[static_cast<size_t>(id)].end); };
  auto latest = [&](std::span<const strategies::TaskId> deps, int64_t also) {
    int64_t culprit = also;
    for (strategies::TaskId d : deps) {
      if (culprit < 0 || end_of(d) > end_of(culprit)) culprit = d;
    }
    return culprit;
  };
  auto explain_wait = [&](double from, double to, int64_t culprit) {
    while (to > from) {
      if (culprit < 0 || end_of(culprit) <= from) break;
      const auto c = static_cast<size_t>(culprit);
      const strategies::Task task = tasks[static_cast<strategies::TaskId>(c)];
      if (task.kind != TaskKind::kComm) break;  // another stage's compute: bubble
      const double begin = std::max(from, seconds(timeline.tasks[c].start));
      const double finish = std::min(to, end_of(culprit));
      b.bubble += to - finish;
      add_exposed(b.exposed_comm, task.dim, finish - begin);
      to = begin;
      culprit = latest(schedule.dependencies(task), stream_prev(static_cast<int64_t>(c)));
    }
    if (to > from) b.bubble += to - from;
  };

  double t = 0;
  int64_t last_comm = -1;
  for (uint32_t id = schedule.rank_begin[rank_index]; id < schedule.rank_begin[rank_index + 1];
       ++id) {
    const Task& task = tasks[id];
    if (task.stream != Stream::kCompute) {
      if (last_comm < 0 || end_of(id) > end_of(last_comm)) last_comm = id;
      continue;
    }
    const TaskTime& tt = timeline.tasks[id];
    explain_wait(t, seconds(tt.start), latest(schedule.dependencies(id), -1));
    const uint32_t ci = timeline.task_cost[id];
    if (ci != StepTimeline::kNoCost) {
      const WorkCost& c = timeline.costs[ci];
      // What NCCL kernels of other streams took from the task's SMs while it
      // ran stretched it beyond its price: compute time too.
      const double stretched = std::max(0.0, seconds(tt.end) - seconds(tt.start) - c.duration_s);
      // Time the GPU waits for the host counts with the task's own kind.
      // So does time it waits for its offload copies.
      const double waits_s = c.host_idle_s + c.host_copy_wait_s;
      if (task.kind == TaskKind::kRecompute) {
        b.recompute += c.compute_s + c.recompute_s + stretched + waits_s;
      } else if (task.kind == TaskKind::kOptimizer) {
        b.compute += c.compute_s + stretched;
        b.optimizer += waits_s;
      } else {
        b.compute += c.compute_s + stretched + waits_s;
        b.recompute += c.recompute_s;
      }
      b.optimizer += c.optimizer_s;
      ComputeSplit& split = b.compute_split;
      const double kernels_s = c.gemm_s + c.attention_s + c.memory_bound_s;
      split.gemm += c.gemm_s;
      split.attention += c.attention_s;
      split.memory_bound += c.memory_bound_s;
      split.host_idle += c.host_idle_s;
      split.host_copy_wait += c.host_copy_wait_s;
      split.optimizer += c.optimizer_s;
      split.comm_contention += c.compute_s + c.recompute_s - kernels_s + stretched;
      for (size_t d = 0; d < c.exposed_comm_s.size(); ++d) {
        add_exposed(b.exposed_comm, static_cast<Dim>(d), c.exposed_comm_s[d]);
      }
      add_moe(b.moe, c);
    }
    t = seconds(tt.end);
  }
  // After its last kernel the rank waits for its own communication to end
  // (gradient synchronisation, the last pipeline sends).
  explain_wait(t, step_s, last_comm);
  return b;
}

/// The NCCL communicators of a rank: one per kind of group the plan gives
/// it, with NCCL's channel counts (rings within one NVLink domain, per NIC
/// across them), and a send/recv pair with each neighbouring stage.
std::vector<hwmodels::NcclCommunicator> nccl_communicators(
    const strategies::Job& job, const strategies::Layout& layout, int64_t rank,
    const hwmodels::ClusterSpec& cluster, const hwmodels::CollectiveParams& collectives) {
  using strategies::GroupKind;
  const strategies::ParallelPlan& plan = job.plan;
  const int64_t domain =
      cluster.scale_up.domain > 0 ? cluster.scale_up.domain : cluster.gpus_per_node;
  std::vector<GroupKind> kinds;
  if (plan.tp > 1) kinds.push_back(GroupKind::kTp);
  if (plan.cp > 1) kinds.push_back(GroupKind::kCp);
  if (plan.ep > 1) kinds.push_back(GroupKind::kEp);
  if (strategies::shard_group_size(job) > 1) kinds.push_back(GroupKind::kShard);
  if (strategies::grad_group_size(job) > strategies::shard_group_size(job)) {
    kinds.push_back(GroupKind::kReplica);
  }
  if (job.model.moe && strategies::expert_dp_size(job) > 1) kinds.push_back(GroupKind::kExpertDp);
  if (job.model.tied_embeddings && plan.pp > 1) kinds.push_back(GroupKind::kEmbedding);
  std::vector<hwmodels::NcclCommunicator> out;
  for (GroupKind kind : kinds) {
    const std::vector<int64_t> members = layout.group(rank, kind);
    const bool one_domain = std::all_of(members.begin(), members.end(),
                                        [&](int64_t r) { return r / domain == rank / domain; });
    out.push_back({one_domain ? collectives.kernel_sms
                              : collectives.net_channels_per_nic * cluster.scale_out.nics_per_node,
                   1});
  }
  if (plan.pp > 1) out.push_back({collectives.net_channels_per_nic, 2});
  return out;
}

/// Each stage's buffer rank replayed through the caching allocator model.
/// The replays are independent: an every-rank step (too large to be one
/// plan of a sweep, whose workers already use every core) runs half of them
/// on a second thread.
std::vector<MemoryReplay> replay_stages(const Schedule& schedule, const StepTimeline& timeline,
                                        const std::vector<hwmodels::MemoryModel>& devices) {
  std::vector<MemoryReplay> out(devices.size());
  auto replay_stage = [&](size_t s) {
    ReplayOptions replay;
    replay.allocator.limit_bytes = static_cast<uint64_t>(devices[s].allocator_limit_bytes());
    for (const hwmodels::MemoryReservation& w : devices[s].workspaces) {
      replay.workspaces.push_back(w.bytes);
    }
    out[s] = replay_memory(schedule, timeline, schedule.buffer_ranks[s], replay);
  };
  const bool second_thread = schedule.scope == strategies::Scope::kEveryRank &&
                             devices.size() > 1 && std::thread::hardware_concurrency() > 1;
  if (!second_thread) {
    for (size_t s = 0; s < devices.size(); ++s) replay_stage(s);
    return out;
  }
  std::thread odd([&] {
    for (size_t s = 1; s < devices.size(); s += 2) replay_stage(s);
  });
  for (size_t s = 0; s < devices.size(); s += 2) replay_stage(s);
  odd.join();
  return out;
}

/// GPUs of each switched NVLink domain a job of `gpus` uses: a job that spans
/// several domains and does not fill them whole is placed in equal segments
/// of whole nodes, one per domain -- the largest that divides the job -- as
/// Slurm's block topology (--segment) places jobs on GB200 NVL72 racks and
/// NVIDIA's MLPerf v5.1 configs do (SEGMENT 16 trays: 64 of a rack's 72
/// GPUs; docs/research/hardware.md 3.1). Power-of-two parallel groups then
/// stay inside a rack instead of straddling two.
int64_t job_segment_gpus(const hwmodels::ClusterSpec& cluster, int64_t gpus) {
  const int64_t domain = cluster.scale_up_domain();
  const int64_t node = cluster.gpus_per_node;
  if (cluster.scale_up.topology != hwmodels::ScaleUpTopology::kSwitch || node <= 0 ||
      domain <= node || domain % node != 0 || gpus <= domain || gpus % domain == 0) {
    return domain;
  }
  for (int64_t s = domain - node; s >= node; s -= node) {
    if (gpus % s == 0) return s;
  }
  return domain;
}

/// The rank whose pipeline replica (one rank per stage with its tp, cp and
/// dp) stands for the whole job when every degraded part is on it: each
/// other replica runs the healthy schedule and reaches the data-parallel
/// collectives it shares with this one no later than this one does, so the
/// step is this replica's (docs/goodput.md, "Stragglers in the step").
/// Nullopt when every rank must be simulated: the parts are on two replicas,
/// or a group whose collectives run inside the slow GPU's compute (TP, CP,
/// EP, expert TP) reaches another replica, whose ranks then compute at its
/// pace (expert parallelism over data-parallel ranks).
std::optional<int64_t> degraded_replica_rank(const DegradedParts& degraded,
                                             const strategies::Layout& layout) {
  const int64_t gpu = degraded.slow_gpu_rank, nic = degraded.slow_nic_rank;
  const int64_t rank = gpu >= 0 ? gpu : nic;
  if (rank < 0) return std::nullopt;
  if (gpu >= 0 && nic >= 0 && layout.on_stage(gpu, 0) != layout.on_stage(nic, 0)) {
    return std::nullopt;
  }
  if (gpu >= 0) {
    const int64_t replica = layout.coords(gpu).dp;
    for (const strategies::GroupKind kind :
         {strategies::GroupKind::kTp, strategies::GroupKind::kCp, strategies::GroupKind::kEp,
          strategies::GroupKind::kExpertTp}) {
      for (const int64_t member : layout.group(gpu, kind)) {
        if (layout.coords(member).dp != replica) return std::nullopt;
      }
    }
  }
  return rank;
}

std::vector<Problem> to_problems(const std::vector<strategies::PlanProblem>& plan_problems) {
  std::vector<Problem> out;
  for (const auto& p : plan_problems) out.push_back({p.path, p.message, p.hint});
  return out;
}

}  // namespace

Result<StepDetail> simulate_detailed(const ScenarioSpec& spec, const SimulateOptions& options) {
  const strategies::Job job = job_of(spec);
  if (auto problems = strategies::validate(job); !problems.empty()) return to_problems(problems);
  if (std::vector<Problem> problems = software_problems(spec); !problems.empty()) return problems;
  if (spec.gpus > spec.cluster.total_gpus()) {
    return std::vector<Problem>{{"/gpus",
                                 "the job needs " + std::to_string(spec.gpus) +
                                     " GPUs but the cluster has " +
                                     std::to_string(spec.cluster.total_gpus()),
                                 "add nodes to the cluster or shrink the plan"}};
  }
  // A calibration profile (--profile wins over the cluster's gpu.profile)
  // replaces the datasheet efficiency curves.
  Result<CalibratedHardware> hardware = calibrated_hardware(spec, options.profile_path);
  if (!hardware.ok()) return hardware.problems();
  const hwmodels::GpuModel& gpu = hardware.value().gpu;
  hwmodels::ClusterSpec cluster = hardware.value().cluster;
  const int64_t segment = job_segment_gpus(cluster, spec.gpus);
  if (segment != cluster.scale_up_domain()) cluster.scale_up.domain = static_cast<int>(segment);
  // Only the job's GPUs (0..gpus-1) and what connects them are built.
  hwmodels::FabricOptions fabric_options;
  fabric_options.gpus = spec.gpus;
  std::vector<Problem> problems;
  for (const auto& p : hwmodels::Fabric::validate(cluster, fabric_options)) {
    problems.push_back({p.path.empty() ? "/cluster" : "/cluster/" + p.path, p.message, p.hint});
  }
  if (!problems.empty()) return problems;
  // The reader checked the ranks against the scenario's job; a plan made
  // from it (a sweep's) may have fewer GPUs.
  for (const auto& [path, rank] : {std::pair{"/degraded/gpu/rank", spec.degraded.slow_gpu_rank},
                                   std::pair{"/degraded/nic/rank", spec.degraded.slow_nic_rank}}) {
    if (rank >= spec.gpus) {
      return std::vector<Problem>{{path,
                                   "rank " + std::to_string(rank) + " is not in the job (" +
                                       std::to_string(spec.gpus) + " GPUs)",
                                   "give a rank from 0 to " + std::to_string(spec.gpus - 1)}};
    }
  }
  // A degraded part breaks the ranks' symmetry: the degraded rank's pipeline
  // replica is simulated when it stands for the job, else every rank.
  const SimulationMode requested = options.mode.value_or(spec.mode);
  const std::optional<int64_t> replica =
      spec.degraded.any() && requested != SimulationMode::kEveryRank
          ? degraded_replica_rank(spec.degraded, strategies::Layout(job.plan))
          : std::nullopt;
  const bool every_rank =
      requested == SimulationMode::kEveryRank || (spec.degraded.any() && !replica);
  strategies::BuildResult built = strategies::build_schedule(
      job, every_rank ? strategies::Scope::kEveryRank : strategies::Scope::kRepresentatives,
      strategies::kMaxScheduleTasks, replica.value_or(0));
  if (!built.schedule) return to_problems(built.problems);
  StepDetail detail{std::move(*built.schedule), {}, {}};
  const Schedule& schedule = detail.schedule;

  const hwmodels::Fabric fabric = hwmodels::Fabric::build(cluster, fabric_options);
  const hwmodels::CollectiveParams collectives = hwmodels::CollectiveParams::for_cluster(cluster);
  Degradation degradation;
  if (spec.degraded.slow_gpu_rank >= 0) {
    degradation.gpu_slowdown[spec.degraded.slow_gpu_rank] = spec.degraded.gpu_slowdown;
  }
  if (spec.degraded.slow_nic_rank >= 0) {
    if (fabric.nic_of(spec.degraded.slow_nic_rank) < 0) {
      return std::vector<Problem>{{"/degraded/nic", "the cluster has no scale-out NICs",
                                   "remove /degraded/nic or give the cluster a scale_out"}};
    }
    degradation.nic_rate_fraction[spec.degraded.slow_nic_rank] = spec.degraded.nic_rate_fraction;
  }
  const StepHardware step_hardware{gpu, fabric, collectives, kernel_implementation(spec),
                                   &degradation};
  detail.timeline = simulate_schedule(schedule, step_hardware);
  const StepTimeline& timeline = detail.timeline;
  if (timeline.too_many_flows_task) {
    return std::vector<Problem>{flows_problem(schedule, *timeline.too_many_flows_task)};
  }
  if (timeline.beyond_clock_task) {
    return std::vector<Problem>{
        clock_problem(schedule, step_hardware, timeline, *timeline.beyond_clock_task)};
  }

  Report& report = detail.report;
  report.warnings = spec.warnings;  // the reader's remarks come first
  if (const hwmodels::ClusterSpec& given = spec.cluster;
      cluster.scale_up_domain() != given.scale_up_domain()) {
    report.warnings.push_back(
        "the job uses " + std::to_string(cluster.scale_up_domain()) + " GPUs of each " +
        std::to_string(given.scale_up_domain()) +
        "-GPU NVLink domain (equal segments of whole nodes, as Slurm's block topology places a "
        "job that does not fill its domains); set cluster.scale_up.domain to choose otherwise");
  }
  report.scenario = spec.name;
  report.gpus = spec.gpus;
  report.simulation_mode = every_rank ? "every_rank" : replica ? "degraded_replica" : "symmetric";
  report.simulated_ranks = static_cast<int64_t>(schedule.ranks.size());
  report.engine_events = timeline.run.events;
  report.fingerprint = timeline.run.fingerprint;
  report.hardware_source = hardware.value().source;
  report.calibration_notes = hardware.value().notes;

  // The step ends with the last task of any rank; that rank's stage is the
  // critical one (lowest rank on ties).
  const double step_s = timeline.run.end.seconds();
  size_t critical = 0;
  sim::Time latest = sim::Time::zero();
  for (size_t r = 0; r < schedule.ranks.size(); ++r) {
    for (uint32_t id = schedule.rank_begin[r]; id < schedule.rank_begin[r + 1]; ++id) {
      if (timeline.tasks[id].end > latest) {
        latest = timeline.tasks[id].end;
        critical = r;
      }
    }
  }
  report.critical_stage = schedule.layout.stage(schedule.ranks[critical]);
  report.step_time_s = step_s;
  report.breakdown = attribute(schedule, timeline, critical, step_s);
  report.bubble_fraction = step_s > 0 ? report.breakdown.bubble / step_s : 0.0;

  const double tokens =
      static_cast<double>(spec.training.global_batch) * static_cast<double>(spec.training.seq_len);
  const double gpus = static_cast<double>(spec.gpus);
  const double peak = spec.cluster.gpu.peak(spec.training.precision);
  report.model_flops_per_step = strategies::model_flops_per_step(job);
  report.hardware_flops_per_step = strategies::hardware_flops_per_step(job);
  report.flops_convention = kFlopsConvention;
  if (step_s > 0) {
    report.tokens_per_s = tokens / step_s;
    report.tokens_per_s_per_gpu = report.tokens_per_s / gpus;
    report.model_tflops_per_gpu = report.model_flops_per_step / step_s / gpus / 1e12;
    report.hardware_tflops_per_gpu = report.hardware_flops_per_step / step_s / gpus / 1e12;
    if (peak > 0) {
      report.mfu = report.model_tflops_per_gpu * 1e12 / peak;
      report.hfu = report.hardware_tflops_per_gpu * 1e12 / peak;
    }
  }

  // Memory: the rank of each stage whose buffers the schedule keeps
  // (Schedule::buffer_ranks) replayed through the caching allocator model,
  // plus what lives outside the allocator.
  const int64_t stages = spec.plan.pp;
  report.memory_capacity_bytes = spec.cluster.gpu.hbm_capacity_bytes;
  report.memory_counter =
      spec.software.memory_counter == MemoryCounter::kAllocated ? "allocated" : "reserved";
  std::vector<hwmodels::MemoryModel> devices;
  for (int64_t s = 0; s < stages; ++s) {
    const size_t r = schedule.buffer_ranks[static_cast<size_t>(s)];
    hwmodels::MemoryReservationParams reservations;
    reservations.cuda_runtime = hwmodels::runs_cuda(cluster);
    if (reservations.cuda_runtime) {
      reservations.nccl_communicators =
          nccl_communicators(job, schedule.layout, schedule.ranks[r], cluster, collectives);
    }
    devices.push_back(hwmodels::memory_model(spec.cluster.gpu, reservations));
  }
  const std::vector<MemoryReplay> replays = replay_stages(schedule, timeline, devices);
  for (int64_t s = 0; s < stages; ++s) {
    const hwmodels::MemoryModel& device = devices[static_cast<size_t>(s)];
    const MemoryReplay& held = replays[static_cast<size_t>(s)];
    using strategies::MemoryKind;
    auto at_peak = [&](MemoryKind k) { return held.at_peak[static_cast<size_t>(k)]; };
    StageMemory m;
    m.stage = s;
    m.weights = at_peak(MemoryKind::kWeights);
    m.grads = at_peak(MemoryKind::kGrads);
    m.optimizer = at_peak(MemoryKind::kOptimizer);
    m.activations = at_peak(MemoryKind::kActivations);
    m.temporaries = at_peak(MemoryKind::kTemporaries);
    m.allocated = held.allocated_peak;
    // XLA assigns the step's buffers when it compiles it: no freed blocks
    // are kept beyond the live peak.
    m.reserved =
        spec.software.allocator == DeviceAllocator::kXla ? held.allocated_peak : held.reserved_peak;
    m.outside_allocator = device.outside_bytes();
    m.peak = report.memory_counter == "allocated" ? m.allocated : m.reserved;
    m.device = m.reserved + m.outside_allocator;
    report.memory_peak_bytes = std::max(report.memory_peak_bytes, m.peak);
    report.memory_device_peak_bytes = std::max(report.memory_device_peak_bytes, m.device);
    report.per_stage.push_back(m);
  }
  report.memory_fits = report.memory_device_peak_bytes <= report.memory_capacity_bytes;
  if (!report.memory_fits) {
    report.warnings.push_back(
        "does not fit: the allocator's reserved memory plus what lives outside it exceed the "
        "GPU's capacity");
  }
  return detail;
}

Result<Report> simulate(const ScenarioSpec& spec, const SimulateOptions& options) {
  Result<StepDetail> detail = simulate_detailed(spec, options);
  if (!detail.ok()) return detail.problems();
  return std::move(detail.value().report);
}

}  // namespace podsim::scenarios
