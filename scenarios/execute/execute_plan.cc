#include "scenarios/execute/execute_plan.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "scenarios/step/software.h"
#include "scenarios/step/step_simulation.h"
#include "sim/to_double.h"
#include "strategies/model_counts.h"
#include "strategies/workload.h"

namespace podsim::scenarios {
namespace {

using calibration::ExecCollective;
using calibration::ExecOp;
using calibration::ExecPhase;
using calibration::ExecPlan;
using calibration::OpClass;
using strategies::Job;
using strategies::Op;
using strategies::OpKind;

std::string json_path(const std::string& field) {
  if (field == "head_dim") return "/model/head_dim";
  if (field == "seq_len") return "/training/seq_len";
  if (field == "heads") return "/model/kv_heads";
  if (field == "hidden") return "/model/hidden";
  if (field == "ffn") return "/model/ffn_hidden";
  if (field == "micro_batch") return "/training/micro_batch";
  return "/parallelism/tp";
}

std::optional<ExecCollective> exec_collective(strategies::CollectiveKind kind) {
  switch (kind) {
    case strategies::CollectiveKind::kAllReduce:
      return ExecCollective::kAllReduce;
    case strategies::CollectiveKind::kAllGather:
      return ExecCollective::kAllGather;
    case strategies::CollectiveKind::kReduceScatter:
      return ExecCollective::kReduceScatter;
    default:
      return std::nullopt;
  }
}

/// Parameters the optimizer of the executed stack updates: the rank's ZeRO
/// shard of `layers` layers (as strategies::optimizer_parameters shards a
/// stage), whole parameters.
double optimizer_params(const Job& job, int64_t layers) {
  const double stack = d(layers) * strategies::layer_parameters(job).total();
  const double shard = job.plan.zero >= 1 ? d(strategies::shard_group_size(job)) : 1.0;
  return std::max(1.0, std::floor(stack / shard));
}

/// Converts one strategies op; problems go to `problems`.
std::optional<ExecOp> convert(const Op& op, ExecPhase phase, const Job& job,
                              const calibration::ExecLayerShape& shape, const ExecuteHardware& hw,
                              std::vector<Problem>& problems) {
  const std::optional<calibration::ExecStep> step = calibration::exec_step_from_name(op.name);
  if (!step) {
    problems.push_back({"/model",
                        "the layer has an op '" + op.name + "' that the executor does not run",
                        "podsim execute runs dense Llama-style layers"});
    return std::nullopt;
  }
  ExecOp e;
  e.name = op.name;
  e.step = *step;
  e.phase = phase;
  e.count = op.count;
  e.flops = op.is_compute() ? op.flops : 0.0;
  switch (op.kind) {
    case OpKind::kGemm:
      e.op_class = OpClass::kGemm;
      e.gemm = {op.gemm.m, op.gemm.n, op.gemm.k, op.gemm.batch};
      if (const auto want = calibration::expected_gemm(*step, shape); !want || !(*want == e.gemm)) {
        problems.push_back({"/model",
                            "op '" + op.name + "' has a shape the executor's layer does not run",
                            "a podsim bug: strategies/workload.cc and the executor disagree"});
      }
      break;
    case OpKind::kAttention:
      e.op_class = OpClass::kAttention;
      e.attention = {op.attention.batch, op.attention.heads,  op.attention.kv_heads,
                     op.attention.q_len, op.attention.kv_len, op.attention.head_dim,
                     op.attention.causal};
      if (const auto want = calibration::expected_attention(*step, shape);
          !want || !(*want == e.attention) || !op.attention.flash) {
        problems.push_back({"/model", "op '" + op.name + "' is not the executor's attention call",
                            "a podsim bug: strategies/workload.cc and the executor disagree"});
      }
      break;
    case OpKind::kMemoryBound:
      e.op_class =
          op.role == strategies::OpRole::kOptimizer ? OpClass::kOptimizer : OpClass::kMemoryBound;
      e.bytes = op.memory.bytes;
      break;
    case OpKind::kCollective: {
      e.op_class = OpClass::kCollective;
      e.bytes = op.collective.bytes;
      const std::optional<ExecCollective> kind = exec_collective(op.collective.kind);
      if (op.collective.dim != strategies::Dim::kTp || !kind) {
        problems.push_back({"/parallelism",
                            "op '" + op.name + "' is a collective the executor does not run",
                            "podsim execute runs tensor-parallel collectives only"});
        return std::nullopt;
      }
      e.collective = *kind;
      e.group_size = job.plan.tp;
      const std::vector<int64_t> group = hwmodels::gpu_range(0, job.plan.tp);
      const hwmodels::CollectiveResult r = hwmodels::predict_collective(
          hw.fabric, collective_op(op.collective.kind), group, op.collective.bytes,
          hwmodels::Algorithm::kAuto, hw.collectives);
      e.predicted_s = r.time_s;
      e.predicted_bound = std::string(hwmodels::to_string(r.plan.algorithm)) + "/" +
                          std::string(hwmodels::to_string(r.plan.protocol));
      return e;
    }
  }
  // podsim's own kernels run here: its flash model, not a framework's.
  const hwmodels::KernelCost cost = price_op(op, hw.gpu, job, std::nullopt);
  e.predicted_s = cost.time_s;
  e.predicted_bound = std::string(hwmodels::to_string(cost.bound));
  return e;
}

}  // namespace

std::vector<Problem> execute_problems(const Job& job) {
  std::vector<Problem> out;
  const strategies::ModelShape& m = job.model;
  const char* dense = "podsim execute runs dense Llama-style layers";
  if (m.moe) {
    out.push_back({"/model/moe", "mixture-of-experts layers cannot be executed", dense});
  }
  if (m.norm != strategies::NormKind::kRmsNorm) {
    out.push_back(
        {"/model/norm", "only RMSNorm layers can be executed (this model uses LayerNorm)", dense});
  }
  if (m.mlp != strategies::MlpKind::kSwiglu) {
    out.push_back({"/model/mlp", "only SwiGLU MLPs can be executed (this model uses GeLU)", dense});
  }
  if (job.plan.cp > 1) {
    out.push_back({"/parallelism/cp", "context parallelism cannot be executed",
                   "run the scenario with cp 1 (the executor runs whole sequences)"});
  }
  if (job.training.precision != sim::NumberFormat::kBf16) {
    out.push_back({"/training/precision",
                   "only bf16 training can be executed (this scenario uses " +
                       std::string(sim::to_string(job.training.precision)) + ")",
                   "set precision to bf16"});
  }
  if (job.training.optimizer != strategies::Optimizer::kAdam) {
    out.push_back({"/training/optimizer", "only Adam can be executed", "set optimizer to adam"});
  }
  if (!job.options.flash_attention) {
    out.push_back({"/options/flash_attention", "only flash attention can be executed",
                   "set flash_attention to true"});
  }
  if (job.options.grad_format != sim::NumberFormat::kFp32) {
    out.push_back({"/options", "only fp32 main gradients can be executed", ""});
  }
  if (out.empty()) {
    for (const calibration::ExecLimit& limit :
         calibration::executor_limits(exec_layer_shape(job))) {
      out.push_back({json_path(limit.field), limit.message, ""});
    }
  }
  return out;
}

calibration::ExecLayerShape exec_layer_shape(const Job& job) {
  const strategies::RankShape r = strategies::rank_shape(job);
  calibration::ExecLayerShape s;
  s.batch = r.b;
  s.seq = r.s_local;
  s.tokens = r.tokens;
  s.norm_tokens = r.norm_tokens;
  s.hidden = r.hidden;
  s.heads = r.heads;
  s.kv_heads = r.kv_heads;
  s.head_dim = r.head_dim;
  s.ffn = r.ffn;
  s.tp = r.tp;
  s.sequence_parallel = r.sp;
  return s;
}

int64_t gpu_share_layers(const Job& job) {
  int64_t most = 0;
  for (int64_t stage = 0; stage < job.plan.pp; ++stage) {
    int64_t layers = 0;
    for (const strategies::ChunkInfo& c : strategies::stage_chunks(job, stage))
      layers += c.layers();
    most = std::max(most, layers);
  }
  return most;
}

Result<ExecPlan> build_execute_plan(const Job& job, int64_t layers, const ExecuteHardware& hw,
                                    const std::string& scenario_name) {
  std::vector<Problem> problems = execute_problems(job);
  if (layers < 1) problems.push_back({"/model/layers", "at least one layer must run", ""});
  if (!problems.empty()) return problems;
  ExecPlan plan;
  plan.scenario = scenario_name;
  plan.predicted_gpu = hw.gpu.spec().name;
  plan.prediction_source = std::string(hwmodels::to_string(hw.gpu.source()));
  plan.layer = exec_layer_shape(job);
  plan.layers = layers;
  const std::pair<strategies::Pass, ExecPhase> passes[] = {
      {strategies::Pass::kForward, ExecPhase::kForward},
      {strategies::Pass::kRecompute, ExecPhase::kRecompute},
      {strategies::Pass::kBackward, ExecPhase::kBackward}};
  for (const auto& [pass, phase] : passes) {
    for (const Op& op : strategies::layer_ops(job, pass)) {
      if (auto e = convert(op, phase, job, plan.layer, hw, problems)) {
        plan.layer_ops.push_back(std::move(*e));
      }
    }
  }
  // The executor's parameter layout must hold what the strategies count.
  const double per_layer = strategies::layer_parameters(job).total();
  const double laid_out = d(calibration::layer_param_layout(plan.layer).total);
  if (per_layer != laid_out) {
    problems.push_back({"/model",
                        "the executor lays out " + std::to_string(laid_out) +
                            " parameters per layer, the plan counts " + std::to_string(per_layer),
                        "a podsim bug"});
  }
  plan.optimizer_params = optimizer_params(job, layers);
  const double layer_tensors =
      d(strategies::layer_parameter_tensors(job, strategies::typical_layer_kind(job)).size());
  for (const Op& op :
       strategies::optimizer_ops(job, plan.optimizer_params, d(layers) * layer_tensors)) {
    if (auto e = convert(op, ExecPhase::kOptimizer, job, plan.layer, hw, problems)) {
      plan.optimizer_ops.push_back(std::move(*e));
    }
  }
  if (!problems.empty()) return problems;

  const auto count = [](double v) { return std::to_string(static_cast<int64_t>(v)); };
  plan.notes.push_back(
      "one rank's share: " + std::to_string(layers) +
      " layer(s) of the pipeline stage, no "
      "embedding or output layer; the timed pass runs the compute ops, each tensor-parallel "
      "collective is timed alone (NCCL, bf16, GPUs 0.." +
      std::to_string(job.plan.tp - 1) +
      ") when the machine has the GPUs and priced alone on the scenario's fabric");
  plan.notes.push_back(
      "weight gradients accumulate into fp32 main grads (GEMM output fp32, beta 1: Megatron's "
      "gradient-accumulation fusion); the model prices the weight-gradient GEMMs with bf16 output");
  plan.notes.push_back("the optimizer updates " + count(plan.optimizer_params) + " of " +
                       count(d(layers) * per_layer) + " parameters (" +
                       (job.plan.zero >= 1 ? "the rank's ZeRO shard" : "all") +
                       "): fused AdamW with global-norm clipping, fp32 master weights");
  if (job.plan.recompute.mode != strategies::RecomputeMode::kNone) {
    plan.notes.push_back(
        "recompute ops run before each layer's backward (the executor keeps every activation, "
        "so they only cost their time)");
  }
  if (job.plan.zero == 3) {
    plan.notes.push_back(
        "ZeRO-3 weight all-gathers and gradient reduce-scatters are data-parallel "
        "communication outside the layer's ops: not run");
  }
  return plan;
}

Job check_job(const Job& job) {
  Job c = job;
  const strategies::RankShape r = strategies::rank_shape(job);
  const int64_t tp = job.plan.tp;
  const int64_t kv = std::min<int64_t>(r.kv_heads, 2);
  const int64_t group = std::min<int64_t>(std::max<int64_t>(1, r.heads / r.kv_heads), 4);
  c.model.name = job.model.name + " (check shapes)";
  c.model.layers = kCheckLayers;
  c.model.hidden = 256;
  c.model.heads = kv * group * tp;
  c.model.kv_heads = kv * tp;
  c.model.head_dim = 128;
  c.model.ffn_hidden = 384 * tp;
  c.model.vocab = 64 * tp;
  c.training.seq_len = 128;
  c.training.micro_batch = 2;
  // Keep ZeRO sharding (two data-parallel ranks, so the optimizer updates half).
  c.plan.dp = job.plan.zero >= 1 && job.plan.dp * job.plan.cp >= 2 ? 2 : 1;
  c.plan.cp = 1;
  c.plan.pp = 1;
  c.plan.ep = 1;
  c.plan.shard_group = 0;
  c.plan.virtual_stages = 1;
  c.plan.schedule = strategies::PipelineSchedule::kOneFOneB;
  c.training.global_batch = c.training.micro_batch * c.plan.dp;
  return c;
}

Result<ExecuteSetup> prepare_execute(const ScenarioSpec& spec, const ExecuteOptions& options,
                                     const hwmodels::GpuModel& gpu) {
  // podsim's own kernels run here, whatever framework the scenario names:
  // its op list (the fused one) and its flash kernel.
  Job job = job_of(spec);
  job.software = strategies::SoftwarePolicy{};
  job.options.flash_attention = spec.options.flash_attention;
  std::vector<Problem> problems;
  for (const strategies::PlanProblem& p : strategies::validate(job)) {
    problems.push_back({p.path, p.message, p.hint});
  }
  hwmodels::FabricOptions fabric_options;  // the job's GPUs, not the whole cluster
  fabric_options.gpus = spec.gpus;
  for (const auto& p : hwmodels::Fabric::validate(spec.cluster, fabric_options)) {
    problems.push_back({p.path.empty() ? "/cluster" : "/cluster/" + p.path, p.message, p.hint});
  }
  if (!problems.empty()) return problems;
  if (spec.cluster.total_gpus() < job.plan.tp) {
    return std::vector<Problem>{{"/parallelism/tp", "the cluster has fewer GPUs than one TP group",
                                 "add nodes or lower tp"}};
  }
  const int64_t layers = options.layers.value_or(gpu_share_layers(job));
  const hwmodels::Fabric fabric = hwmodels::Fabric::build(spec.cluster, fabric_options);
  const hwmodels::CollectiveParams collectives =
      hwmodels::CollectiveParams::for_cluster(spec.cluster);
  const ExecuteHardware hw{gpu, fabric, collectives};
  Result<ExecPlan> plan = build_execute_plan(job, layers, hw, spec.name);
  if (!plan.ok()) return plan.problems();
  const Job small = check_job(job);
  for (const strategies::PlanProblem& p : strategies::validate(small)) {
    problems.push_back({p.path, "the check's small job: " + p.message, "a podsim bug"});
  }
  if (!problems.empty()) return problems;
  Result<ExecPlan> check = build_execute_plan(small, kCheckLayers, hw, spec.name + " (check)");
  if (!check.ok()) return check.problems();
  return ExecuteSetup{std::move(plan.value()), std::move(check.value())};
}

}  // namespace podsim::scenarios
