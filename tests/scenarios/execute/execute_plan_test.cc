// The glue of `podsim execute`: the executed ops are the simulator's own op
// lists, their predictions add up to what the step simulation charges, and
// what the executor cannot run is refused with the JSON path to fix.
#include "scenarios/execute/execute_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "calibration/profile.h"
#include "scenarios/step/profile_fit.h"
#include "scenarios/step/step_simulation.h"
#include "strategies/model_counts.h"
#include "strategies/schedule.h"
#include "strategies/workload.h"
#include "tests/hwmodels/test_specs.h"
#include "tests/scenarios/step/synthetic_profile.h"
#include "tests/strategies/model_presets.h"

namespace podsim::scenarios {
namespace {

using calibration::ExecOp;
using calibration::ExecPhase;
using calibration::ExecPlan;
using calibration::OpClass;

strategies::Job llama_job(const char* model, int64_t tp, bool sp, int64_t seq) {
  strategies::Job job;
  job.model = *strategies::testing::model_preset(model);
  job.training.seq_len = seq;
  job.training.micro_batch = 1;
  job.training.global_batch = 16;
  job.plan.tp = tp;
  job.plan.sequence_parallel = sp;
  return job;
}

struct Hardware {
  hwmodels::ClusterSpec cluster = hwmodels::testing::dgx_h100(4);
  hwmodels::GpuModel gpu{cluster.gpu};
  hwmodels::Fabric fabric = hwmodels::Fabric::build(cluster);
  hwmodels::CollectiveParams collectives = hwmodels::CollectiveParams::for_cluster(cluster);
  ExecuteHardware view() const { return {gpu, fabric, collectives}; }
};

ExecPlan plan_of(const strategies::Job& job, int64_t layers, const Hardware& hw) {
  Result<ExecPlan> plan = build_execute_plan(job, layers, hw.view(), "test");
  EXPECT_TRUE(plan.ok()) << (plan.ok() ? "" : plan.problems().front().to_string());
  return plan.ok() ? plan.value() : ExecPlan{};
}

std::vector<std::string> paths(const std::vector<Problem>& problems) {
  std::vector<std::string> out;
  for (const Problem& p : problems) out.push_back(p.path);
  return out;
}

TEST(ExecutePlan, RunsTheSimulatorsLayerOpsInOrder) {
  strategies::Job job = llama_job("llama3-8b", 2, true, 4096);
  job.plan.recompute.mode = strategies::RecomputeMode::kSelective;
  const Hardware hw;
  const ExecPlan plan = plan_of(job, 3, hw);
  std::vector<std::pair<std::string, ExecPhase>> want;
  for (const auto& [pass, phase] : {std::pair{strategies::Pass::kForward, ExecPhase::kForward},
                                    std::pair{strategies::Pass::kRecompute, ExecPhase::kRecompute},
                                    std::pair{strategies::Pass::kBackward, ExecPhase::kBackward}}) {
    for (const strategies::Op& op : strategies::layer_ops(job, pass))
      want.emplace_back(op.name, phase);
  }
  ASSERT_EQ(plan.layer_ops.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(plan.layer_ops[i].name, want[i].first) << i;
    EXPECT_EQ(plan.layer_ops[i].phase, want[i].second) << i;
    EXPECT_EQ(calibration::to_string(plan.layer_ops[i].step), want[i].first);
  }
  // Selective recompute runs the attention core again.
  const auto recomputed =
      std::count_if(plan.layer_ops.begin(), plan.layer_ops.end(),
                    [](const ExecOp& op) { return op.phase == ExecPhase::kRecompute; });
  EXPECT_EQ(recomputed, 1);
  EXPECT_EQ(plan.layers, 3);
  EXPECT_EQ(plan.layer.norm_tokens, 2048);
  EXPECT_EQ(plan.layer.heads, 16);
  EXPECT_EQ(plan.layer.kv_heads, 4);
  EXPECT_EQ(plan.predicted_gpu, hw.cluster.gpu.name);
  EXPECT_EQ(plan.prediction_source, "datasheet");
  for (const ExecOp& op : plan.layer_ops) EXPECT_GT(op.predicted_s, 0) << op.name;
}

TEST(ExecutePlan, PredictionsAddUpToTheStepSimulationsWorkCost) {
  // Llama 3 70B, TP 8 with SP, PP 4: stages 1 and 2 run 20 plain layers.
  strategies::Job job = llama_job("llama3-70b", 8, true, 4096);
  job.plan.pp = 4;
  const Hardware hw;
  strategies::BuildResult built =
      strategies::build_schedule(job, strategies::Scope::kRepresentatives);
  ASSERT_TRUE(built.schedule.has_value());
  const strategies::Schedule& schedule = *built.schedule;
  const ExecPlan plan = plan_of(job, 20, hw);
  const StepHardware step{hw.gpu, hw.fabric, hw.collectives};
  int checked = 0;
  for (size_t w = 0; w < schedule.works.size(); ++w) {
    const std::string& name = schedule.works[w].name;
    const bool forward = name == "forward 20 layers", backward = name == "backward 20 layers";
    if (!forward && !backward) continue;
    const ExecPhase phase = forward ? ExecPhase::kForward : ExecPhase::kBackward;
    // Attention aside: the plan prices podsim's own flash kernel, the step
    // the framework's (megatron-core's cuDNN attention on H100).
    double compute = 0, comm = 0;
    for (const ExecOp& op : plan.layer_ops) {
      if (op.phase != phase || op.op_class == OpClass::kAttention) continue;
      (op.op_class == OpClass::kCollective ? comm : compute) +=
          op.predicted_s * static_cast<double>(op.count * plan.layers);
    }
    // Rank 8 is on stage 1 (tp innermost, dp 1): its TP group is GPUs 8..15,
    // congruent with the plan's 0..7.
    const WorkCost cost = cost_work(schedule, step, static_cast<int32_t>(w), 8);
    // The plan prices each op alone; the step adds what compute paired with a
    // collective loses to the NCCL kernel's SMs (backward only: forward TP
    // collectives are not overlapped).
    EXPECT_NEAR(cost.compute_s - cost.comm_contention_s - cost.attention_s, compute, 1e-9 * compute)
        << name;
    EXPECT_GT(cost.attention_s, 0.0) << name;
    EXPECT_EQ(cost.comm_contention_s > 0, backward) << name;
    if (forward) {
      // overlap_tp is off: every forward TP collective is exposed.
      EXPECT_NEAR(cost.exposed_comm_s[static_cast<size_t>(strategies::Dim::kTp)], comm,
                  1e-9 * comm);
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

TEST(ExecutePlan, ComputeBesideACollectiveLosesTheNcclKernelsSms) {
  // Backward with SP: the input re-gather runs beside the dgrad GEMM and the
  // dX reduce-scatter beside the wgrad GEMM. While both run, the GEMM has 100
  // of 132 SMs: it loses 32/132 of the time they run together (the hidden
  // collective time), and nothing when NCCL holds no SMs. Hiding can only
  // grow: the stretched GEMM covers more of a collective longer than it.
  strategies::Job job = llama_job("llama3-70b", 8, true, 4096);
  const strategies::BuildResult built =
      strategies::build_schedule(job, strategies::Scope::kRepresentatives);
  ASSERT_TRUE(built.schedule.has_value());
  const strategies::Schedule& schedule = *built.schedule;
  Hardware hw;
  int32_t backward = -1;
  for (size_t w = 0; w < schedule.works.size(); ++w) {
    if (schedule.works[w].name.rfind("backward", 0) == 0) backward = static_cast<int32_t>(w);
  }
  ASSERT_GE(backward, 0);
  const WorkCost shared = cost_work(schedule, {hw.gpu, hw.fabric, hw.collectives}, backward, 0);
  ASSERT_GT(shared.hidden_comm_s, 0);
  EXPECT_NEAR(shared.comm_contention_s, 32.0 / 132.0 * shared.hidden_comm_s,
              1e-9 * shared.hidden_comm_s);
  hw.collectives.kernel_sms = 0;
  const WorkCost alone = cost_work(schedule, {hw.gpu, hw.fabric, hw.collectives}, backward, 0);
  EXPECT_EQ(alone.comm_contention_s, 0.0);
  EXPECT_NEAR(shared.compute_s - alone.compute_s, shared.comm_contention_s,
              1e-9 * shared.compute_s);
  EXPECT_GT(shared.hidden_comm_s, alone.hidden_comm_s);
  EXPECT_LT(shared.duration_s - alone.duration_s, shared.comm_contention_s);
}

TEST(ExecutePlan, ComputeOverlappingCommunicationOnOtherStreamsSlowsDown) {
  // Data parallelism over 4 nodes (one GPU per node in each DP group, ZeRO-1
  // reduce-scatters overlapped with the backward pass) and a 2-stage
  // pipeline: the NCCL kernels of those transfers hold SMs of the compute
  // they overlap. With no SMs held every compute task lasts exactly its
  // price; with them some last longer, and none shorter.
  strategies::Job job = llama_job("llama3-8b", 8, true, 4096);
  job.plan.dp = 2;
  job.plan.pp = 2;
  job.plan.zero = 1;
  job.training.global_batch = 16;
  const strategies::BuildResult built =
      strategies::build_schedule(job, strategies::Scope::kRepresentatives);
  ASSERT_TRUE(built.schedule.has_value());
  const strategies::Schedule& schedule = *built.schedule;
  Hardware hw;
  auto stretch = [&](const hwmodels::CollectiveParams& params) {
    const StepTimeline t = simulate_schedule(schedule, {hw.gpu, hw.fabric, params});
    double longest = 0, least = 1;
    for (size_t id = 0; id < schedule.tasks.size(); ++id) {
      if (t.task_cost[id] == StepTimeline::kNoCost) continue;
      const double ran = (t.tasks[id].end - t.tasks[id].start).seconds();
      const double priced =
          sim::Time::from_seconds_ceil(t.costs[t.task_cost[id]].duration_s).seconds();
      longest = std::max(longest, ran / priced);
      least = std::min(least, ran / priced);
    }
    return std::make_pair(least, longest);
  };
  hwmodels::CollectiveParams none = hw.collectives;
  none.kernel_sms = 0;
  none.net_channels_per_nic = 0;
  const auto [least_free, longest_free] = stretch(none);
  EXPECT_DOUBLE_EQ(least_free, 1.0);
  EXPECT_DOUBLE_EQ(longest_free, 1.0);
  const auto [least, longest] = stretch(hw.collectives);
  EXPECT_GE(least, 1.0 - 1e-12);
  EXPECT_GT(longest, 1.0);
  EXPECT_LT(longest, 1.0 / (1.0 - 32.0 / 132.0) + 1e-9);  // at most all 32 SMs, all along
}

TEST(ExecutePlan, CollectivesArePricedOverTheTpGroup) {
  const strategies::Job job = llama_job("llama3-405b", 8, true, 8192);
  const Hardware hw;
  const ExecPlan plan = plan_of(job, 1, hw);
  int collectives = 0;
  for (const ExecOp& op : plan.layer_ops) {
    if (op.op_class != OpClass::kCollective) continue;
    ++collectives;
    EXPECT_EQ(op.group_size, 8);
    EXPECT_NE(op.collective, calibration::ExecCollective::kAllReduce) << op.name;  // SP: AG and RS
    const hwmodels::CollectiveOp kind = op.collective == calibration::ExecCollective::kAllGather
                                            ? hwmodels::CollectiveOp::kAllGather
                                            : hwmodels::CollectiveOp::kReduceScatter;
    EXPECT_DOUBLE_EQ(op.predicted_s, hwmodels::predict_collective(
                                         hw.fabric, kind, hwmodels::gpu_range(0, 8), op.bytes,
                                         hwmodels::Algorithm::kAuto, hw.collectives)
                                         .time_s);
    EXPECT_DOUBLE_EQ(op.bytes, 8192.0 * 16384 * 2);  // the gathered activations, bf16
  }
  // Forward: 2 gathers + 2 reduce-scatters; backward: 2 dout gathers, 2
  // re-gathers, 2 dgrad reduce-scatters.
  EXPECT_EQ(collectives, 10);
}

TEST(ExecutePlan, OptimizerUpdatesTheRanksZeroShard) {
  strategies::Job job = llama_job("llama3-8b", 1, false, 2048);
  job.plan.dp = 8;
  const Hardware hw;
  const double per_layer = strategies::layer_parameters(job).total();
  EXPECT_DOUBLE_EQ(plan_of(job, 2, hw).optimizer_params, 2 * per_layer);
  job.plan.zero = 1;
  const ExecPlan plan = plan_of(job, 2, hw);
  EXPECT_DOUBLE_EQ(plan.optimizer_params, std::floor(2 * per_layer / 8));
  ASSERT_EQ(plan.optimizer_ops.size(), 2u);
  EXPECT_EQ(plan.optimizer_ops[0].name, "grad_norm");
  EXPECT_EQ(plan.optimizer_ops[1].name, "adam_step");
  EXPECT_EQ(plan.optimizer_ops[1].op_class, OpClass::kOptimizer);
  // Megatron-Core's fused Adam (fp32 gradient, parameter and moments read,
  // the last three written: 28 B) and its copy of the fp32 shard into the
  // 16-bit parameters (6 B).
  EXPECT_DOUBLE_EQ(plan.optimizer_ops[1].bytes, plan.optimizer_params * (28 + 6));
}

TEST(ExecutePlan, WhatTheExecutorCannotRunIsAProblemWithAPath) {
  EXPECT_EQ(paths(execute_problems(llama_job("mixtral-8x7b", 1, false, 4096))),
            (std::vector<std::string>{"/model/moe"}));
  EXPECT_EQ(paths(execute_problems(llama_job("gpt3-175b", 8, false, 2048))),
            (std::vector<std::string>{"/model/norm", "/model/mlp"}));
  strategies::Job job = llama_job("llama3-8b", 1, false, 4096);
  job.plan.cp = 2;
  job.training.precision = sim::NumberFormat::kFp8;
  EXPECT_EQ(paths(execute_problems(job)),
            (std::vector<std::string>{"/parallelism/cp", "/training/precision"}));
  job = llama_job("llama3-8b", 1, false, 1000);
  job.model.head_dim = 64;
  job.model.heads = 64;
  EXPECT_EQ(paths(execute_problems(job)),
            (std::vector<std::string>{"/model/head_dim", "/training/seq_len"}));
  EXPECT_TRUE(execute_problems(llama_job("llama3-405b", 8, true, 8192)).empty());
  const Hardware hw;
  const Result<ExecPlan> refused =
      build_execute_plan(llama_job("mixtral-8x7b", 1, false, 4096), 1, hw.view(), "x");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.problems().front().path, "/model/moe");
}

TEST(ExecutePlan, CheckJobKeepsTheOpStructureAtSmallShapes) {
  strategies::Job job = llama_job("llama3-405b", 8, true, 8192);
  job.plan.dp = 16;
  job.plan.zero = 1;
  job.plan.recompute.mode = strategies::RecomputeMode::kFull;
  job.training.global_batch = 64;
  const strategies::Job small = check_job(job);
  EXPECT_TRUE(strategies::validate(small).empty());
  const Hardware hw;
  const ExecPlan big = plan_of(job, 1, hw);
  const ExecPlan check = plan_of(small, kCheckLayers, hw);
  ASSERT_EQ(check.layer_ops.size(), big.layer_ops.size());
  for (size_t i = 0; i < big.layer_ops.size(); ++i) {
    EXPECT_EQ(check.layer_ops[i].name, big.layer_ops[i].name);
    EXPECT_EQ(check.layer_ops[i].phase, big.layer_ops[i].phase);
  }
  EXPECT_EQ(check.layer.tp, 8);
  EXPECT_TRUE(check.layer.sequence_parallel);
  EXPECT_EQ(check.layer.heads, 4);  // 16 per rank over 1 K/V head: a group of 4 kept
  EXPECT_EQ(check.layer.kv_heads, 1);
  EXPECT_EQ(check.layer.tokens, 256);
  EXPECT_EQ(check.layer.norm_tokens, 32);
  EXPECT_TRUE(calibration::executor_limits(check.layer).empty());
  // ZeRO over two data-parallel ranks: the optimizer updates half the stack.
  EXPECT_DOUBLE_EQ(check.optimizer_params,
                   std::floor(kCheckLayers * strategies::layer_parameters(small).total() / 2));
}

TEST(ExecutePlan, GpuShareIsTheLargestStage) {
  strategies::Job job = llama_job("llama3-405b", 8, true, 8192);
  job.plan.pp = 16;
  EXPECT_EQ(gpu_share_layers(job), 8);  // 7, 8 x 14, 7
  job = llama_job("llama3-70b", 4, false, 4096);
  EXPECT_EQ(gpu_share_layers(job), 80);
  job.plan.pp = 4;
  job.plan.virtual_stages = 5;
  job.plan.schedule = strategies::PipelineSchedule::kInterleavedOneFOneB;
  EXPECT_EQ(gpu_share_layers(job), 20);
}

/// Llama 3 8B on one DGX H100 node: tp x pp x dp = 8 GPUs.
ScenarioSpec llama8b_scenario(const char* name, int64_t seq, int64_t tp, int64_t pp, int64_t dp) {
  ScenarioSpec spec;
  spec.name = name;
  spec.model = *strategies::testing::model_preset("llama3-8b");
  spec.cluster = hwmodels::testing::dgx_h100(1);
  spec.training.seq_len = seq;
  spec.training.global_batch = 8;
  spec.plan.tp = tp;
  spec.plan.pp = pp;
  spec.plan.dp = dp;
  spec.gpus = 8;
  return spec;
}

TEST(ExecutePlan, PrepareFromAScenario) {
  ScenarioSpec spec = llama8b_scenario("llama3-8b tp2", 2048, 2, 2, 2);
  spec.training.micro_batch = 2;
  const hwmodels::GpuModel gpu(spec.cluster.gpu);
  Result<ExecuteSetup> setup = prepare_execute(spec, {}, gpu);
  ASSERT_TRUE(setup.ok()) << setup.problems().front().to_string();
  EXPECT_EQ(setup.value().plan.layers, 16);  // 32 layers over 2 stages
  EXPECT_EQ(setup.value().plan.layer.tokens, 4096);
  EXPECT_EQ(setup.value().check.layers, kCheckLayers);
  EXPECT_EQ(setup.value().plan.scenario, "llama3-8b tp2");
  setup = prepare_execute(spec, ExecuteOptions{3}, gpu);
  ASSERT_TRUE(setup.ok());
  EXPECT_EQ(setup.value().plan.layers, 3);
  spec.plan.tp = 16;  // more than the cluster's 8 GPUs, and than the 8 K/V heads
  spec.plan.dp = 1;
  spec.plan.pp = 1;
  EXPECT_FALSE(prepare_execute(spec, {}, gpu).ok());
}

TEST(ExecutePlan, ProfilePredictionsComeFromTheFittedModel) {
  ScenarioSpec spec = llama8b_scenario("llama3-8b", 4096, 1, 1, 8);
  const Result<CalibratedHardware> datasheet = calibrated_hardware(spec, "");
  ASSERT_TRUE(datasheet.ok());
  EXPECT_EQ(datasheet.value().source, "datasheet");
  const std::string path = ::testing::TempDir() + "/podsim_execute_plan_test_profile.json";
  calibration::write_profile(testing::synthetic_profile(), path);
  const Result<CalibratedHardware> profiled = calibrated_hardware(spec, path);
  ASSERT_TRUE(profiled.ok()) << profiled.problems().front().to_string();
  EXPECT_EQ(profiled.value().source, "profile " + path);
  EXPECT_EQ(profiled.value().gpu.source(), hwmodels::ParamSource::kProfile);
  EXPECT_FALSE(profiled.value().notes.empty());
  const Result<ExecuteSetup> a = prepare_execute(spec, ExecuteOptions{1}, datasheet.value().gpu);
  const Result<ExecuteSetup> b = prepare_execute(spec, ExecuteOptions{1}, profiled.value().gpu);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(b.value().plan.prediction_source, "profile");
  const ExecOp& qkv_a = a.value().plan.layer_ops[1];
  const ExecOp& qkv_b = b.value().plan.layer_ops[1];
  ASSERT_EQ(qkv_a.name, "qkv");
  // The profile's GPU runs GEMMs at a 0.74 plateau (the datasheet's H100: 0.81):
  // the fit recovers it and the prediction follows.
  const hwmodels::GpuModel truth(spec.cluster.gpu, testing::truth(spec.cluster.gpu));
  const double want =
      truth.gemm_time(qkv_b.gemm.m, qkv_b.gemm.n, qkv_b.gemm.k, 1, sim::NumberFormat::kBf16).time_s;
  EXPECT_NEAR(qkv_b.predicted_s, want, 0.02 * want);
  EXPECT_GT(qkv_b.predicted_s, 1.05 * qkv_a.predicted_s);
  // A one-GPU profile has no link measurement: the cluster is unchanged.
  EXPECT_EQ(profiled.value().cluster.scale_up.efficiency, spec.cluster.scale_up.efficiency);
  std::filesystem::remove(path);

  const Result<CalibratedHardware> missing = calibrated_hardware(spec, "/nonexistent/profile.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.problems().front().path, "--profile");
  spec.cluster.gpu.profile = "/nonexistent/profile.json";
  const Result<CalibratedHardware> in_cluster = calibrated_hardware(spec, "");
  ASSERT_FALSE(in_cluster.ok());
  EXPECT_EQ(in_cluster.problems().front().path, "/cluster/gpu/profile");
}

}  // namespace
}  // namespace podsim::scenarios
