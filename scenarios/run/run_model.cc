#include "scenarios/run/run_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "scenarios/run/checkpoint_interval.h"
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

std::vector<FailureClass> failure_classes(const ReliabilitySpec& r, double gpus, double nodes,
                                          double nics) {
  const auto of = [](const char* name, const char* part, double parts, double per_1000_days) {
    return FailureClass{name, part, parts, parts * per_1000_days / 1000};
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

CheckpointCost checkpoint_cost(const ScenarioSpec& spec) {
  const double cluster_nodes = spec.cluster.nodes;
  const strategies::Job job{spec.model, spec.training, spec.plan, spec.options};
  CheckpointCost c;
  // Gradients are not saved; the bf16 (or fp32) weights and the optimizer's
  // states are, each once however the plan replicates them.
  c.bytes = strategies::count_parameters(spec.model, spec.training.seq_len).total *
            (strategies::weight_element_bytes(job) + strategies::optimizer_bytes_per_param(job));
  for (int64_t stage = 0; stage < spec.plan.pp; ++stage) {
    const strategies::StaticMemory m = strategies::static_memory(job, stage);
    c.bytes_per_gpu = std::max(c.bytes_per_gpu, m.weights + m.optimizer);
  }
  const StorageSpec& s = spec.storage;
  c.write_bytes_per_s =
      s.write_bytes_per_s.value_or(kStorageWritePerNode_bytes_per_s * cluster_nodes);
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
  m.gpus = spec.gpus;
  const int64_t per_node = std::max(1, spec.cluster.gpus_per_node);
  m.nodes = (spec.gpus + per_node - 1) / per_node;
  m.nics = m.nodes * spec.cluster.scale_out.nics_per_node;
  m.failures = failure_classes(spec.reliability, static_cast<double>(m.gpus),
                               static_cast<double>(m.nodes), static_cast<double>(m.nics));
  for (const FailureClass& f : m.failures) m.interruptions_per_day += f.per_day;

  m.checkpoint = checkpoint_cost(spec);
  m.save_mode = run.save_mode;
  m.restart_s = run.restart_overhead_s + run.requeue_s + m.checkpoint.load_s;

  RunInputs& in = m.inputs;
  in.steps = static_cast<int64_t>(std::ceil(tokens / m.tokens_per_step));
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

}  // namespace podsim::scenarios

namespace podsim::scenarios {

double expected_wall_lower_bound_s(const ScenarioSpec& spec, double tokens, double step_time_s) {
  // The model of any plan with this step time: what it shares with every
  // other plan of the target is exactly what the bound keeps.
  const RunModel m = run_model(spec, tokens, step_time_s, step_time_s);
  const CheckpointCost& c = m.checkpoint;
  const double restart_s =
      spec.run.restart_overhead_s + spec.run.requeue_s + c.bytes / c.read_bytes_per_s;
  const double rate = m.inputs.interruption_rate_per_s;
  return std::exp(rate * restart_s) * (m.inputs.work_s() - c.persist_s);
}

}  // namespace podsim::scenarios
