#include "scenarios/run/run_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "scenarios/run/checkpoint_interval.h"
#include "scenarios/step/software.h"
#include "sim/ceil_div.h"
#include "strategies/job.h"
#include "strategies/memory.h"
#include "strategies/model_counts.h"

namespace podsim::scenarios {
namespace {

constexpr double kDay_s = 86400;
// Storage without a bandwidth of its own: Llama 3's Tectonic sustained 2 TB/s
// for the 3,072 nodes of Meta's 24K-GPU cluster (arXiv 2407.21783 sec.
// 3.3.1), in proportion to the nodes.
constexpr double kStorageWritePerNode_bytes_per_s = 2e12 / 3072;

/// The parts of the job failures are counted on.
struct JobParts {
  int64_t gpus = 0, nodes = 0, nics = 0;
};

JobParts job_parts(const ScenarioSpec& spec) {
  JobParts p;
  p.gpus = spec.gpus;
  const int64_t per_node = std::max(1, spec.cluster.gpus_per_node);
  p.nodes = ceil_div(spec.gpus, per_node);
  p.nics = p.nodes * spec.cluster.scale_out.nics_per_node;
  return p;
}

std::vector<FailureClass> failure_classes(const ReliabilitySpec& r, const JobParts& parts) {
  const auto gpus = static_cast<double>(parts.gpus), nodes = static_cast<double>(parts.nodes),
             nics = static_cast<double>(parts.nics);
  const auto of = [](const char* name, const char* part, double count, double per_1000_days) {
    return FailureClass{name, part, count, count * per_1000_days / 1000};
  };
  return {
      of("gpu", "GPU", gpus, r.gpu_per_1000_gpu_days),
      of("hbm", "GPU", gpus, r.hbm_per_1000_gpu_days),
      of("sdc", "GPU", gpus, r.sdc_per_1000_gpu_days),
      of("host", "node", nodes, r.host_per_1000_node_days),
      of("host_maintenance", "node", nodes, r.host_maintenance_per_1000_node_days),
      of("software", "node", nodes, r.software_per_1000_node_days),
      of("nic", "NIC", nics, r.nic_per_1000_nic_days),
      of("network", "NIC", nics, r.network_per_1000_nic_days),
      FailureClass{"planned", "job", 1, r.planned_per_day},
  };
}

double per_day(const std::vector<FailureClass>& classes) {
  double sum = 0;
  for (const FailureClass& f : classes) sum += f.per_day;
  return sum;
}

int64_t steps_to_train(const ScenarioSpec& spec, double tokens) {
  const double tokens_per_step =
      static_cast<double>(spec.training.global_batch) * static_cast<double>(spec.training.seq_len);
  return static_cast<int64_t>(std::ceil(tokens / tokens_per_step));
}

/// The most state one GPU of the plan holds: its weights and optimizer
/// states as the plan shards them (gradients are not saved).
double fullest_gpu_state_bytes(const ScenarioSpec& spec) {
  const strategies::Job job = job_of(spec);
  double bytes = 0;
  for (int64_t stage = 0; stage < spec.plan.pp; ++stage) {
    const strategies::StaticMemory m = strategies::static_memory(job, stage);
    bytes = std::max(bytes, m.weights + m.optimizer);
  }
  return bytes;
}

/// Bytes per parameter a checkpoint holds: the weights as the framework keeps
/// them and the optimizer's states. A framework that keeps only the fp32
/// parameter the optimizer updates (torchtitan's FSDP2) saves that one copy.
double checkpoint_bytes_per_param(const strategies::Job& job) {
  if (job.software.memory.param_storage == strategies::ParamStorage::kMasterOnly) {
    return 4.0 + strategies::optimizer_moment_bytes_per_param(job);
  }
  return strategies::weight_element_bytes(job) + strategies::optimizer_bytes_per_param(job);
}

CheckpointCost checkpoint_cost(const ScenarioSpec& spec, double bytes_per_gpu) {
  CheckpointCost c;
  // Each state written once however the plan replicates it.
  c.bytes = strategies::count_parameters(spec.model, spec.training.seq_len).total *
            checkpoint_bytes_per_param(job_of(spec));
  c.bytes_per_gpu = bytes_per_gpu;
  const StorageSpec& s = spec.storage;
  c.write_bytes_per_s = s.write_bytes_per_s.value_or(kStorageWritePerNode_bytes_per_s *
                                                     static_cast<double>(spec.cluster.nodes));
  c.read_bytes_per_s = s.read_bytes_per_s.value_or(c.write_bytes_per_s);
  const double copy_s = c.bytes_per_gpu / s.host_copy_bytes_per_s;
  const double write_s = c.bytes / c.write_bytes_per_s;
  const bool async = spec.run.save_mode == SaveMode::kAsync;
  c.stall_s = async ? copy_s : copy_s + write_s;
  c.persist_s = async ? write_s : 0.0;
  c.load_s = c.bytes / c.read_bytes_per_s + copy_s;
  return c;
}

/// Seconds between saves; the optimum rules never save a job that never
/// fails.
double interval_of(const RunSpec& run, double stall_s, double mtti_s, double step_time_s) {
  switch (run.interval_rule) {
    case IntervalRule::kDaly:
      return std::isfinite(mtti_s) ? daly_interval_s(stall_s, mtti_s) : mtti_s;
    case IntervalRule::kYoung:
      return std::isfinite(mtti_s) ? young_interval_s(stall_s, mtti_s) : mtti_s;
    case IntervalRule::kSteps:
      return static_cast<double>(run.interval_steps) * step_time_s;
    case IntervalRule::kTime:
      return run.interval_s;
  }
  return mtti_s;
}

std::string interval_rule_text(IntervalRule rule) {
  switch (rule) {
    case IntervalRule::kDaly:
      return "Daly's optimum for the job's MTTI";
    case IntervalRule::kYoung:
      return "Young's optimum for the job's MTTI";
    case IntervalRule::kSteps:
      return "set in steps";
    case IntervalRule::kTime:
      return "set in time";
  }
  return "";
}

}  // namespace

RunModel run_model(const ScenarioSpec& spec, double tokens, double step_time_s,
                   double straggler_step_time_s) {
  RunModel m;
  const RunSpec& run = spec.run;
  m.tokens = tokens;
  m.tokens_per_step =
      static_cast<double>(spec.training.global_batch) * static_cast<double>(spec.training.seq_len);
  const JobParts parts = job_parts(spec);
  m.gpus = parts.gpus;
  m.nodes = parts.nodes;
  m.nics = parts.nics;
  m.failures = failure_classes(spec.reliability, parts);
  m.interruptions_per_day = per_day(m.failures);

  m.checkpoint = checkpoint_cost(spec, fullest_gpu_state_bytes(spec));
  m.save_mode = run.save_mode;
  m.restart_s = run.restart_overhead_s + run.requeue_s + m.checkpoint.load_s;

  RunInputs& in = m.inputs;
  in.steps = steps_to_train(spec, tokens);
  in.step_time_s = step_time_s;
  in.save_stall_s = m.checkpoint.stall_s;
  in.persist_s = m.checkpoint.persist_s;
  in.restart_s = m.restart_s;
  in.interruption_rate_per_s = m.interruptions_per_day / kDay_s;

  CheckpointCost& c = m.checkpoint;
  const double mtti_s = in.interruption_rate_per_s > 0 ? 1 / in.interruption_rate_per_s
                                                       : std::numeric_limits<double>::infinity();
  c.interval_rule = interval_rule_text(run.interval_rule);
  const double interval_s = interval_of(run, c.stall_s, mtti_s, step_time_s);
  // Whole steps, at least one, and no save before the last one's write ends.
  const double steps = static_cast<double>(in.steps);
  double interval_steps = std::min(steps, std::max(1.0, std::round(interval_s / step_time_s)));
  const double persist_steps = std::ceil(c.persist_s / step_time_s);
  if (interval_steps < persist_steps) {
    interval_steps = std::min(steps, persist_steps);
    c.interval_rule += ", lengthened to the write of the previous save";
  }
  in.interval_steps = static_cast<int64_t>(interval_steps);
  c.interval_steps = in.interval_steps;
  c.interval_s = interval_steps * step_time_s;

  in.straggler_step_factor = std::max(1.0, straggler_step_time_s / step_time_s);
  in.straggler_mean_s = run.straggler_mean_duration_s;
  in.straggler_rate_per_s =
      in.straggler_mean_s > 0
          ? static_cast<double>(m.nodes) * run.straggler_node_fraction / in.straggler_mean_s
          : 0.0;
  m.straggler_present = -std::expm1(-static_cast<double>(m.nodes) * run.straggler_node_fraction);
  return m;
}

TrainTimeBound train_time_bound(const ScenarioSpec& spec, double tokens) {
  // Only what every plan of the target shares: the interruption rate, the
  // restart with the checkpoint's read (no GPU's copy), the write.
  const CheckpointCost c = checkpoint_cost(spec, 0);
  const double rate = per_day(failure_classes(spec.reliability, job_parts(spec))) / kDay_s;
  TrainTimeBound b;
  b.restart_factor = std::exp(rate * (spec.run.restart_overhead_s + spec.run.requeue_s + c.load_s));
  b.steps = static_cast<double>(steps_to_train(spec, tokens));
  b.persist_s = c.persist_s;
  return b;
}

}  // namespace podsim::scenarios
