// The sweep's lower bounds never exceed what simulate() reports, so pruning
// and skipping never lose a plan: checked against full simulations on
// samples of real plan spaces (dense, MoE, multi-node groups, tight memory).
#include "scenarios/sweep/bounds.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "scenarios/step/profile_fit.h"
#include "scenarios/step/simulate.h"
#include "scenarios/step/software.h"
#include "scenarios/sweep/sweep.h"
#include "tests/scenarios/step/synthetic_profile.h"
#include "tests/scenarios/sweep/sweep_test_util.h"

namespace podsim::scenarios {
namespace {

using sweep_testing::own_target;
using sweep_testing::read_ok;
using sweep_testing::small_scenario;

struct Checked {
  size_t plans = 0;
  size_t quick_pruned = 0, refined_pruned = 0;
  double tightest_refined = 0;  ///< largest refined step bound / simulated step time
};

/// Bounds of every `stride`-th plan (from `offset`) of `spec`'s space against
/// its simulation.
Checked check_bounds(const ScenarioSpec& spec, size_t stride, size_t offset,
                     const SweepSpace& space = {}) {
  Checked out;
  const std::vector<SweepTarget> targets = own_target(spec);
  if (targets.empty()) return out;
  const std::vector<SweepCandidate> plans = enumerate_plans(spec, targets, space);
  ScenarioSpec on_target = spec;
  on_target.cluster = targets.front().cluster;
  Result<CalibratedHardware> hardware = calibrated_hardware(on_target, "");
  EXPECT_TRUE(hardware.ok());
  if (!hardware.ok()) return out;
  PlanBounds bounds(hardware.value(), kernel_implementation(spec));
  for (size_t i = offset; i < plans.size(); i += stride) {
    const SweepCandidate& c = plans[i];
    strategies::Job job = job_of(spec, c.plan);
    job.training.micro_batch = c.micro_batch;
    const PlanBounds::Bounds quick = bounds.quick(job);
    const PlanBounds::Bounds refined = bounds.refined(job);
    Result<Report> r = simulate(candidate_scenario(spec, targets.front(), c));
    if (!r.ok()) {
      ADD_FAILURE() << r.problems().front().to_string();
      continue;
    }
    const Report& report = r.value();
    const std::string what = "plan " + std::to_string(i);
    ++out.plans;
    out.quick_pruned += quick.can_fit ? 0 : 1;
    out.refined_pruned += refined.can_fit ? 0 : 1;
    EXPECT_LE(quick.memory_bytes, report.memory_device_peak_bytes) << what;
    EXPECT_LE(refined.memory_bytes, report.memory_device_peak_bytes) << what;
    if (!quick.can_fit || !refined.can_fit) {
      EXPECT_FALSE(report.memory_fits) << what << ": pruned but fits";
    }
    EXPECT_LE(quick.step_s, report.step_time_s) << what;
    EXPECT_LE(refined.step_s, report.step_time_s) << what;
    if (refined.can_fit) {
      EXPECT_GT(refined.step_s, 0) << what;
      EXPECT_GE(refined.step_s, quick.step_s * (1 - 1e-6)) << what;
      out.tightest_refined = std::max(out.tightest_refined, refined.step_s / report.step_time_s);
    }
    // The quick memory bound holds stage by stage.
    const std::vector<double> per_stage =
        memory_lower_bound_per_stage(job, targets.front().cluster);
    EXPECT_EQ(per_stage.size(), report.per_stage.size());
    for (size_t s = 0; s < per_stage.size() && s < report.per_stage.size(); ++s) {
      EXPECT_LE(per_stage[s], report.per_stage[s].device) << what << " stage " << s;
    }
  }
  return out;
}

TEST(SweepBounds, DenseModelOnTwoNodes) {
  const ScenarioSpec spec =
      read_ok(small_scenario(2, 16, R"({"tp": 2, "pp": 2, "dp": 4, "sequence_parallel": true})"));
  const Checked c = check_bounds(spec, 7, 5);
  EXPECT_GT(c.plans, 200u);
  // Tight where communication hides: some refined bound within 1% of the step.
  EXPECT_GT(c.tightest_refined, 0.99);
}

TEST(SweepBounds, Fp8DelayedScalingAmaxReductionOverAStageAcrossNodes) {
  // Each chunk's amax all-reduce runs over the whole stage, which spans both
  // nodes for most plans: priced on the whole fabric, still a lower bound.
  std::string scenario =
      small_scenario(2, 16, R"({"tp": 2, "pp": 2, "dp": 4, "sequence_parallel": true})");
  const std::string mb = R"("micro_batch": 1})";
  scenario.replace(scenario.find(mb), mb.size(), R"("micro_batch": 1, "precision": "fp8"})");
  const Checked c = check_bounds(read_ok(scenario), 31, 3);
  EXPECT_GT(c.plans, 40u);
}

TEST(SweepBounds, WithACalibrationProfile) {
  // The simulation prices kernels with the profile's fitted curves; so must
  // the bounds.
  ScenarioSpec spec =
      read_ok(small_scenario(2, 16, R"({"tp": 2, "pp": 2, "dp": 4, "sequence_parallel": true})"));
  const std::string path = ::testing::TempDir() + "/podsim_sweep_bounds_profile.json";
  calibration::write_profile(testing::synthetic_profile(), path);
  spec.cluster.gpu.profile = path;
  Result<Report> r = simulate(spec);
  ASSERT_TRUE(r.ok()) << r.problems().front().to_string();
  EXPECT_EQ(r.value().hardware_source, "profile " + path);
  const Checked c = check_bounds(spec, 13, 2);
  EXPECT_GT(c.plans, 100u);
  EXPECT_GT(c.tightest_refined, 0.99);
}

TEST(SweepBounds, TightMemoryPrunesWithoutLosingFittingPlans) {
  // A 12 GiB GPU: many plans cannot fit, and the check above asserts that
  // every pruned one indeed does not.
  const ScenarioSpec spec = read_ok(
      small_scenario(2, 16, R"({"tp": 2, "pp": 2, "dp": 4, "sequence_parallel": true})",
                     R"({"base": "h100-sxm-80g", "hbm": {"capacity": "12 GiB"}})", 64, 4096));
  const Checked c = check_bounds(spec, 9, 3);
  EXPECT_GT(c.quick_pruned, 5u);
  EXPECT_GT(c.refined_pruned, c.quick_pruned);
}

TEST(SweepBounds, MixtureOfExpertsWithExpertParallelism) {
  const ScenarioSpec spec = read_ok(R"({"name": "small moe",
    "model": {"layers": 4, "hidden": 1024, "ffn_hidden": 2048, "heads": 16, "kv_heads": 4,
              "vocab": 32000, "moe": {"experts": 8, "top_k": 2, "ffn_hidden": 2048}},
    "cluster": {"base": "dgx-h100-superpod", "nodes": 2}, "gpus": 16,
    "training": {"seq_len": 2048, "global_batch": 32, "micro_batch": 1},
    "parallelism": {"tp": 2, "dp": 8, "ep": 4, "sequence_parallel": true}})");
  SweepSpace space;
  space.micro_batches = {1, 2};
  space.max_expert_tp = 2;  // folded and unfolded expert splits, kept small for CI
  const Checked c = check_bounds(spec, 29, 7, space);
  EXPECT_GT(c.plans, 60u);
}

TEST(SweepBounds, APlansBoundsDoNotDependOnThePlansBoundedBefore) {
  // One PlanBounds serves every plan of a target and keeps what they share
  // (segment prices, collectives priced on each fabric, the refined bound's
  // collective shapes): bounding a plan after others, in any order, must
  // give what a fresh PlanBounds gives.
  const ScenarioSpec spec = read_ok(R"({"name": "small moe on two nodes",
    "model": {"layers": 4, "hidden": 1024, "ffn_hidden": 2048, "heads": 16, "kv_heads": 4,
              "vocab": 32000, "moe": {"experts": 8, "top_k": 2, "ffn_hidden": 2048}},
    "cluster": {"base": "dgx-h100-superpod", "nodes": 2}, "gpus": 16,
    "training": {"seq_len": 2048, "global_batch": 32, "micro_batch": 1},
    "parallelism": {"tp": 2, "dp": 8, "ep": 4, "sequence_parallel": true}})");
  const std::vector<SweepTarget> targets = own_target(spec);
  ASSERT_FALSE(targets.empty());
  SweepSpace space;
  space.micro_batches = {1, 2};
  const std::vector<SweepCandidate> plans = enumerate_plans(spec, targets, space);
  ScenarioSpec on_target = spec;
  on_target.cluster = targets.front().cluster;
  Result<CalibratedHardware> hardware = calibrated_hardware(on_target, "");
  ASSERT_TRUE(hardware.ok());
  auto job_of_plan = [&](size_t i) {
    strategies::Job job = job_of(spec, plans[i].plan);
    job.training.micro_batch = plans[i].micro_batch;
    return job;
  };
  std::vector<size_t> sample;
  for (size_t i = 3; i < plans.size(); i += 23) sample.push_back(i);
  ASSERT_GT(sample.size(), 20u);
  PlanBounds shared(hardware.value(), kernel_implementation(spec));
  for (auto i = sample.rbegin(); i != sample.rend(); ++i) {  // the other order
    shared.quick(job_of_plan(*i));
    shared.refined(job_of_plan(*i));
  }
  for (size_t i : sample) {
    PlanBounds fresh(hardware.value(), kernel_implementation(spec));
    const strategies::Job job = job_of_plan(i);
    const PlanBounds::Bounds quick = fresh.quick(job), refined = fresh.refined(job);
    const PlanBounds::Bounds quick_after = shared.quick(job), refined_after = shared.refined(job);
    const std::string what = "plan " + std::to_string(i);
    EXPECT_EQ(quick_after.step_s, quick.step_s) << what;
    EXPECT_EQ(quick_after.memory_bytes, quick.memory_bytes) << what;
    EXPECT_EQ(refined_after.step_s, refined.step_s) << what;
    EXPECT_EQ(refined_after.memory_bytes, refined.memory_bytes) << what;
  }
}

TEST(SweepBounds, GroupsAcrossNodesOfARack) {
  // Llama 3's cluster: racks of 2 nodes under pods. TP x CP groups of 16 span
  // the two nodes of a rack and are priced on a cut-down copy of one rack;
  // the simulation prices them on the whole fabric.
  const ScenarioSpec spec = read_ok(R"({"name": "rack groups",
    "model": {"layers": 8, "hidden": 1024, "ffn_hidden": 4096, "heads": 16, "kv_heads": 4,
              "vocab": 32000},
    "cluster": {"base": "llama3-24k", "nodes": 8}, "gpus": 64,
    "training": {"seq_len": 8192, "global_batch": 16, "micro_batch": 1},
    "parallelism": {"tp": 8, "cp": 2, "pp": 2, "dp": 2, "sequence_parallel": true}})");
  SweepSpace space;
  space.micro_batches = {1};
  space.max_tp = 8;
  const Checked c = check_bounds(spec, 9, 1, space);
  EXPECT_GT(c.plans, 60u);
}

}  // namespace
}  // namespace podsim::scenarios
