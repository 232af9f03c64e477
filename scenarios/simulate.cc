#include "scenarios/simulate.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "hwmodels/collectives.h"
#include "hwmodels/fabric.h"
#include "hwmodels/gpu_model.h"
#include "hwmodels/memory_model.h"
#include "scenarios/step_simulation.h"
#include "strategies/memory.h"
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

/// Where the critical rank's compute stream spent the step: busy time by
/// category from the work costs, and each idle gap charged to what the next
/// task waited for (a transfer in flight: exposed communication of its
/// dimension; anything else, such as another stage's compute: bubble).
Breakdown attribute(const Schedule& schedule, const StepTimeline& timeline, size_t rank_index,
                    double step_s) {
  Breakdown b;
  const auto& tasks = schedule.tasks;
  auto seconds = [](sim::Time t) { return t.seconds(); };
  auto charge_wait = [&](double from, double to, const std::vector<strategies::TaskId>& waited) {
    if (to <= from) return;
    // The dependency that finished last held the task back.
    int64_t culprit = -1;
    for (strategies::TaskId d : waited) {
      if (culprit < 0 || timeline.tasks[d].end > timeline.tasks[static_cast<size_t>(culprit)].end) {
        culprit = d;
      }
    }
    double comm = 0;
    if (culprit >= 0 && tasks[static_cast<size_t>(culprit)].kind == TaskKind::kComm) {
      const TaskTime& c = timeline.tasks[static_cast<size_t>(culprit)];
      comm = std::max(0.0, std::min(to, seconds(c.end)) - std::max(from, seconds(c.start)));
      add_exposed(b.exposed_comm, tasks[static_cast<size_t>(culprit)].dim, comm);
    }
    b.bubble += (to - from) - comm;
  };

  double t = 0;
  std::vector<strategies::TaskId> comm_tasks;
  for (uint32_t id = schedule.rank_begin[rank_index]; id < schedule.rank_begin[rank_index + 1];
       ++id) {
    const Task& task = tasks[id];
    if (task.stream != Stream::kCompute) {
      comm_tasks.push_back(id);
      continue;
    }
    const TaskTime& tt = timeline.tasks[id];
    const auto deps = schedule.dependencies(id);
    charge_wait(t, seconds(tt.start), {deps.begin(), deps.end()});
    const uint32_t ci = timeline.task_cost[id];
    if (ci != StepTimeline::kNoCost) {
      const WorkCost& c = timeline.costs[ci];
      if (task.kind == TaskKind::kRecompute) {
        b.recompute += c.compute_s + c.recompute_s;
      } else {
        b.compute += c.compute_s;
        b.recompute += c.recompute_s;
      }
      b.optimizer += c.optimizer_s;
      for (size_t d = 0; d < c.exposed_comm_s.size(); ++d) {
        add_exposed(b.exposed_comm, static_cast<Dim>(d), c.exposed_comm_s[d]);
      }
    }
    t = seconds(tt.end);
  }
  // After its last kernel the rank waits for its own communication to end
  // (gradient synchronisation, the last pipeline sends).
  charge_wait(t, step_s, comm_tasks);
  return b;
}

/// Peak of allocations minus frees over a rank's timeline (frees first when
/// a task ends as the next one starts).
double activation_peak(const Schedule& schedule, const StepTimeline& timeline, size_t rank_index) {
  struct Change {
    sim::Time time;
    double bytes;
  };
  std::vector<Change> changes;
  for (uint32_t id = schedule.rank_begin[rank_index]; id < schedule.rank_begin[rank_index + 1];
       ++id) {
    const Task& task = schedule.tasks[id];
    if (task.alloc_bytes != 0) changes.push_back({timeline.tasks[id].start, task.alloc_bytes});
    if (task.free_bytes != 0) changes.push_back({timeline.tasks[id].end, -task.free_bytes});
  }
  std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    if (a.time != b.time) return a.time < b.time;
    return a.bytes < b.bytes;
  });
  double live = 0, peak = 0;
  for (const Change& c : changes) {
    live += c.bytes;
    peak = std::max(peak, live);
  }
  return peak;
}

std::vector<Problem> to_problems(const std::vector<strategies::PlanProblem>& plan_problems) {
  std::vector<Problem> out;
  for (const auto& p : plan_problems) out.push_back({p.path, p.message, p.hint});
  return out;
}

}  // namespace

Result<StepDetail> simulate_detailed(const ScenarioSpec& spec, const SimulateOptions& options) {
  const strategies::Job job{spec.model, spec.training, spec.plan, spec.options};
  if (auto problems = strategies::validate(job); !problems.empty()) return to_problems(problems);
  if (spec.gpus > spec.cluster.total_gpus()) {
    return std::vector<Problem>{{"/gpus",
                                 "the job needs " + std::to_string(spec.gpus) +
                                     " GPUs but the cluster has " +
                                     std::to_string(spec.cluster.total_gpus()),
                                 "add nodes to the cluster or shrink the plan"}};
  }
  if (!options.profile_path.empty() || !spec.cluster.gpu.profile.empty()) {
    return std::vector<Problem>{{"/cluster/gpu/profile",
                                 "calibration profiles are not supported by this build yet",
                                 "remove the profile to use datasheet efficiency curves"}};
  }
  const SimulationMode mode = options.mode.value_or(spec.mode);
  strategies::BuildResult built = strategies::build_schedule(
      job, mode == SimulationMode::kEveryRank ? strategies::Scope::kEveryRank
                                              : strategies::Scope::kRepresentatives);
  if (!built.schedule) return to_problems(built.problems);
  StepDetail detail{std::move(*built.schedule), {}, {}};
  const Schedule& schedule = detail.schedule;

  std::vector<Problem> problems;
  for (const auto& p : hwmodels::Fabric::validate(spec.cluster)) {
    problems.push_back({"/cluster/" + p.path, p.message, p.hint});
  }
  if (!problems.empty()) return problems;
  const hwmodels::GpuModel gpu(spec.cluster.gpu);
  const hwmodels::Fabric fabric = hwmodels::Fabric::build(spec.cluster);
  const hwmodels::CollectiveParams collectives =
      hwmodels::CollectiveParams::for_gpu(spec.cluster.gpu);
  detail.timeline = simulate_schedule(schedule, {gpu, fabric, collectives});
  const StepTimeline& timeline = detail.timeline;

  Report& report = detail.report;
  report.scenario = spec.name;
  report.gpus = spec.gpus;
  report.simulation_mode = mode == SimulationMode::kEveryRank ? "every_rank" : "symmetric";
  report.simulated_ranks = static_cast<int64_t>(schedule.ranks.size());
  report.engine_events = timeline.run.events;
  report.fingerprint = timeline.run.fingerprint;
  report.hardware_source = std::string(hwmodels::to_string(gpu.source()));

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

  const double tokens = static_cast<double>(spec.training.global_batch) *
                        static_cast<double>(spec.training.seq_len);
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

  // Memory: static state per stage, activations from the timeline (the
  // largest over a stage's simulated ranks), and what the runtime reserves.
  const hwmodels::MemoryModel memory = hwmodels::memory_model(spec.cluster.gpu);
  const int64_t stages = spec.plan.pp;
  std::vector<double> act_peak(static_cast<size_t>(stages), 0.0);
  for (size_t r = 0; r < schedule.ranks.size(); ++r) {
    const auto stage = static_cast<size_t>(schedule.layout.stage(schedule.ranks[r]));
    act_peak[stage] = std::max(act_peak[stage], activation_peak(schedule, timeline, r));
  }
  report.memory_capacity_bytes = memory.capacity_bytes;
  for (int64_t s = 0; s < stages; ++s) {
    const strategies::StaticMemory st = strategies::static_memory(job, s);
    StageMemory m;
    m.stage = s;
    m.weights = st.weights;
    m.grads = st.grads;
    m.optimizer = st.optimizer;
    m.activations = act_peak[static_cast<size_t>(s)];
    m.other = memory.reserved_bytes();
    m.peak = m.weights + m.grads + m.optimizer + m.activations + m.other;
    report.memory_peak_bytes = std::max(report.memory_peak_bytes, m.peak);
    report.per_stage.push_back(m);
  }
  report.memory_fits = report.memory_peak_bytes <= report.memory_capacity_bytes;
  if (!report.memory_fits) {
    report.warnings.push_back("does not fit: peak memory per GPU exceeds the GPU's capacity");
  }
  return detail;
}

Result<Report> simulate(const ScenarioSpec& spec, const SimulateOptions& options) {
  Result<StepDetail> detail = simulate_detailed(spec, options);
  if (!detail.ok()) return detail.problems();
  return std::move(detail.value().report);
}

}  // namespace podsim::scenarios
