#include "scenarios/run/run_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

#include "scenarios/input/reader.h"
#include "scenarios/run/checkpoint_interval.h"
#include "scenarios/run/run_report.h"
#include "scenarios/run/simulate_run.h"
#include "scenarios/step/simulate.h"

namespace podsim::scenarios {
namespace {

ScenarioSpec read_ok(const std::string& json) {
  Result<ScenarioSpec> spec = read_scenario_text(json);
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.problems().front().to_string());
  return spec.value();
}

/// Llama 3 8B on 16 nodes of 8 H100, pure data parallelism (ZeRO-1), with
/// `run` as its /run object and `cluster` merged into the cluster.
ScenarioSpec data_parallel(const std::string& run, const std::string& cluster = "") {
  return read_ok(R"({"model": "llama3-8b",
    "cluster": {"base": "dgx-h100-superpod", "nodes": 16)" +
                 (cluster.empty() ? "" : ", " + cluster) + R"(},
    "training": {"seq_len": 4096, "global_batch": 512},
    "parallelism": {"dp": 128, "zero": 1},
    "run": )" + run +
                 "}");
}

double per_day(const RunModel& m, const std::string& name) {
  for (const FailureClass& f : m.failures) {
    if (f.name == name) return f.per_day;
  }
  ADD_FAILURE() << "no class " << name;
  return 0;
}

// The default rates are Kokolis et al.'s 5 failures per 1,000 node-days split
// over the parts of an 8-GPU, 8-NIC node: a job's rate is 5/1000 per node-day
// whatever its size.
TEST(RunModel, DefaultRatesAddUpToFivePerThousandNodeDays) {
  const RunModel m = run_model(data_parallel(R"({"tokens": 1e12})"), 1e12, 1.0, 1.0);
  EXPECT_EQ(m.gpus, 128);
  EXPECT_EQ(m.nodes, 16);
  EXPECT_EQ(m.nics, 128);
  EXPECT_NEAR(m.interruptions_per_day, 16 * 5e-3, 1e-5);
  EXPECT_NEAR(per_day(m, "gpu"), 128 * 0.2834e-3, 1e-12);
  EXPECT_NEAR(per_day(m, "software"), 16 * 0.7518e-3, 1e-12);
  EXPECT_NEAR(per_day(m, "network"), 128 * 0.05221e-3, 1e-12);
  EXPECT_DOUBLE_EQ(per_day(m, "planned"), 0);
  EXPECT_DOUBLE_EQ(m.inputs.interruption_rate_per_s, m.interruptions_per_day / 86400);
}

TEST(RunModel, RatesScaleWithTheJobsParts) {
  // Twice the nodes: twice the rate. Four GPUs and NICs per node: the GPU and
  // NIC classes halve per node, the node classes stay.
  const std::string rates =
      R"("reliability": {"gpu_per_1000_gpu_days": 1, "host_per_1000_node_days": 2,
                         "nic_per_1000_nic_days": 3, "hbm_per_1000_gpu_days": 0,
                         "sdc_per_1000_gpu_days": 0, "host_maintenance_per_1000_node_days": 0,
                         "software_per_1000_node_days": 0, "network_per_1000_nic_days": 0,
                         "planned_per_day": 0.5})";
  const RunModel m = run_model(data_parallel(R"({"tokens": 1e12})", rates), 1e12, 1.0, 1.0);
  EXPECT_NEAR(m.interruptions_per_day, (128 * 1 + 16 * 2 + 128 * 3) / 1000.0 + 0.5, 1e-12);
}

// Llama 3 8B keeps bf16 weights and fp32 master weights and Adam moments:
// 2 + 12 bytes per parameter, written once. The fullest GPU holds all its
// bf16 weights and 1/128 of the optimizer states (ZeRO-1 over 128 ranks).
TEST(RunModel, CheckpointIsWeightsAndOptimizerStatesAsTheyAreSharded) {
  const ScenarioSpec spec = data_parallel(R"({"tokens": 1e12, "checkpoint": {"mode": "sync"}})",
                                          R"("storage": {"write_bandwidth": "100 GB/s",
                                              "host_copy_bandwidth": "50 GB/s"})");
  const RunModel m = run_model(spec, 1e12, 1.0, 1.0);
  const double params = m.checkpoint.bytes / 14;
  EXPECT_NEAR(params, 8.03e9, 0.01e9);
  EXPECT_NEAR(m.checkpoint.bytes_per_gpu, params * (2 + 12.0 / 128), 1e-3 * params);
  const double copy_s = m.checkpoint.bytes_per_gpu / 50e9, write_s = m.checkpoint.bytes / 100e9;
  EXPECT_DOUBLE_EQ(m.checkpoint.stall_s, copy_s + write_s);
  EXPECT_DOUBLE_EQ(m.checkpoint.persist_s, 0);
  EXPECT_DOUBLE_EQ(m.checkpoint.load_s, write_s + copy_s);  // read bandwidth = write
  // Asynchronous: the copy blocks, the write follows.
  ScenarioSpec async = spec;
  async.run.save_mode = SaveMode::kAsync;
  const RunModel a = run_model(async, 1e12, 1.0, 1.0);
  EXPECT_DOUBLE_EQ(a.checkpoint.stall_s, copy_s);
  EXPECT_DOUBLE_EQ(a.checkpoint.persist_s, write_s);
  // Restart: 10 minutes by default plus the load.
  EXPECT_DOUBLE_EQ(a.restart_s, 600 + a.checkpoint.load_s);
}

// torchtitan's FSDP2 keeps only the sharded fp32 parameter the optimizer
// updates: its checkpoint is 4 + 8 B per parameter, not Megatron's 2 + 4 + 8.
TEST(RunModel, CheckpointHoldsTheStatesTheSoftwareKeeps) {
  const std::string run = R"({"tokens": 1e12, "checkpoint": {"mode": "sync"}})";
  const ScenarioSpec megatron = data_parallel(run);
  ScenarioSpec fsdp2 = read_ok(R"({"model": "llama3-8b",
    "cluster": {"base": "dgx-h100-superpod", "nodes": 16},
    "training": {"seq_len": 4096, "global_batch": 512},
    "parallelism": {"dp": 128, "zero": 3}, "software": "torchtitan", "run": )" +
                               run + "}");
  const RunModel a = run_model(megatron, 1e12, 1.0, 1.0);
  const RunModel b = run_model(fsdp2, 1e12, 1.0, 1.0);
  EXPECT_NEAR(b.checkpoint.bytes / a.checkpoint.bytes, 12.0 / 14.0, 1e-9);
  // Every state sharded 128 ways: 12 B per parameter over 128 GPUs.
  const double params = a.checkpoint.bytes / 14;
  EXPECT_NEAR(b.checkpoint.bytes_per_gpu, params * 12.0 / 128, 1e-3 * params / 128);
}

TEST(RunModel, IntervalIsDalysOptimumInWholeStepsUnlessSet) {
  const ScenarioSpec spec = data_parallel(R"({"tokens": 1e12, "checkpoint": {"mode": "sync"}})");
  const double step = 0.5;
  const RunModel daly = run_model(spec, 1e12, step, step);
  const double mtti_s = 86400 / daly.interruptions_per_day;
  const double tau = daly_interval_s(daly.checkpoint.stall_s, mtti_s);
  EXPECT_EQ(daly.inputs.interval_steps, std::llround(tau / step));

  ScenarioSpec young = spec;
  young.run.interval_rule = IntervalRule::kYoung;
  EXPECT_EQ(run_model(young, 1e12, step, step).inputs.interval_steps,
            std::llround(young_interval_s(daly.checkpoint.stall_s, mtti_s) / step));

  const ScenarioSpec steps = data_parallel(
      R"({"tokens": 1e12, "checkpoint": {"mode": "sync", "interval": {"steps": 500}}})");
  EXPECT_EQ(run_model(steps, 1e12, step, step).inputs.interval_steps, 500);
  const ScenarioSpec time = data_parallel(
      R"({"tokens": 1e12, "checkpoint": {"mode": "sync", "interval": {"time": "30 min"}}})");
  EXPECT_EQ(run_model(time, 1e12, step, step).inputs.interval_steps, 3600);
}

// Acceptance: with no failures, no stragglers, the run is today's time to
// train: tokens / (tokens per second of the step), ETTR 1.
TEST(RunModel, ZeroFailureRateGivesEttrOneAndTodaysTimeToTrain) {
  const std::string none =
      R"("reliability": {"gpu_per_1000_gpu_days": 0, "hbm_per_1000_gpu_days": 0,
        "sdc_per_1000_gpu_days": 0, "host_per_1000_node_days": 0,
        "host_maintenance_per_1000_node_days": 0, "software_per_1000_node_days": 0,
        "nic_per_1000_nic_days": 0, "network_per_1000_nic_days": 0})";
  const double tokens_per_step = 512.0 * 4096;
  const double tokens = 1000 * tokens_per_step, step = 2.5;
  const ScenarioSpec spec =
      data_parallel(R"({"tokens": 1e12, "stragglers": {"node_fraction": 0}, "samples": 20})", none);
  const RunReport r = sample_runs(run_model(spec, tokens, step, step * 1.1), 20, 1);
  const double today_s = tokens / (tokens_per_step / step);
  EXPECT_DOUBLE_EQ(r.wall_s.median, today_s);
  EXPECT_DOUBLE_EQ(r.wall_s.low, today_s);
  EXPECT_DOUBLE_EQ(r.wall_s.high, today_s);
  EXPECT_DOUBLE_EQ(r.expected_wall_s, today_s);
  EXPECT_DOUBLE_EQ(r.ettr.median, 1);
  EXPECT_DOUBLE_EQ(r.ettr.low, 1);
  EXPECT_DOUBLE_EQ(r.interruptions.high, 0);
  EXPECT_DOUBLE_EQ(r.gpu_hours.mean, today_s * 128 / 3600);
}

TEST(RunModel, SameSeedSameDistributionOtherSeedAnother) {
  const ScenarioSpec spec = data_parallel(R"({"tokens": 1e12})");
  const RunModel m = run_model(spec, 1e12, 1.5, 1.6);
  const RunReport a = sample_runs(m, 200, 5), b = sample_runs(m, 200, 5);
  EXPECT_EQ(a.wall_s.median, b.wall_s.median);
  EXPECT_EQ(a.wall_s.low, b.wall_s.low);
  EXPECT_EQ(a.mean.lost_s, b.mean.lost_s);
  EXPECT_EQ(a.interruptions.mean, b.interruptions.mean);
  EXPECT_NE(sample_runs(m, 200, 6).wall_s.median, a.wall_s.median);
}

TEST(RunModel, StragglersArrivePerNodeAndSlowTheirStep) {
  const ScenarioSpec spec = data_parallel(
      R"({"tokens": 1e12, "stragglers": {"node_fraction": 0.01, "mean_duration": "2 h"}})");
  const RunModel m = run_model(spec, 1e12, 2.0, 2.5);
  EXPECT_DOUBLE_EQ(m.inputs.straggler_step_factor, 1.25);
  EXPECT_DOUBLE_EQ(m.inputs.straggler_mean_s, 7200);
  EXPECT_DOUBLE_EQ(m.inputs.straggler_rate_per_s, 16 * 0.01 / 7200);
  EXPECT_DOUBLE_EQ(m.straggler_present, -std::expm1(-0.16));
}

// The run's straggler step comes from the step simulated with one slow GPU
// (scenarios/step/, /degraded), not from a factor applied to the step.

/// Pure data parallelism on 4 H100, the all-reduce after the backward pass,
/// `extra` keys added.
ScenarioSpec small_data_parallel(const std::string& extra) {
  return read_ok(R"({"model": {"layers": 4, "hidden": 2048, "ffn_hidden": 8192, "heads": 16,
                               "vocab": 32000},
                     "cluster": {"base": "dgx-h100-superpod", "nodes": 1},
                     "training": {"seq_len": 2048, "global_batch": 8},
                     "parallelism": {"dp": 4}, "options": {"overlap": {"dp": false}},
                     "software": {"base": "megatron-core",
                                  "optimizer": {"clip_host_sync": false}})" +
                 extra + "}");
}

/// The step of `spec` and its run of 1e9 tokens.
std::pair<Report, Result<RunReport>> step_and_run(const ScenarioSpec& spec) {
  const Result<Report> step = simulate(spec);
  EXPECT_TRUE(step.ok());
  return {step.value(), simulate_run(spec, step.value(), 1e9)};
}

// One GPU at 1.5x: the synchronous step takes 1.5 x (compute + optimizer) +
// all-reduce (tests/scenarios/step/degraded_step_test.cc), so the step
// factor is that over the healthy step, less than 1.5 because the
// all-reduce does not slow down.
TEST(StragglerStep, TheRunsStragglerStepIsTheSimulatedDegradedStep) {
  const auto [step, run] = step_and_run(small_data_parallel(
      R"(, "run": {"tokens": 1e9, "samples": 3, "stragglers": {"gpu_slowdown": 1.5}})"));
  ASSERT_TRUE(run.ok());
  const Breakdown& b = step.breakdown;
  const double slow_step = 1.5 * (b.compute + b.optimizer) + b.exposed_comm.dp;
  EXPECT_NEAR(run.value().model.inputs.straggler_step_factor, slow_step / step.step_time_s, 1e-6);
  EXPECT_LT(run.value().model.inputs.straggler_step_factor, 1.5);
}

TEST(StragglerStep, NoStragglersGiveFactorOne) {
  const auto [step, run] = step_and_run(small_data_parallel(
      R"(, "run": {"tokens": 1e9, "samples": 3, "stragglers": {"node_fraction": 0}})"));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run.value().model.inputs.straggler_step_factor, 1.0);
}

TEST(StragglerStep, ARunOfAScenarioWithASlowGpuAndEpisodesIsAnError) {
  const auto [step, run] = step_and_run(small_data_parallel(
      R"(, "degraded": {"gpu": {"rank": 1, "slowdown": 2}}, "run": {"tokens": 1e9})"));
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.problems().front().path, "/degraded/gpu");
}

}  // namespace
}  // namespace podsim::scenarios
