// Steps too long for the engine's clock or too large to build: exit-2
// problems at the key that made them so, not internal errors.
#include "scenarios/step/step_limits.h"

#include <gtest/gtest.h>

#include <string>

#include "hwmodels/collectives.h"
#include "scenarios/input/reader.h"
#include "scenarios/step/simulate.h"
#include "scenarios/step/software.h"
#include "scenarios/step/step_simulation.h"
#include "tests/scenarios/input/malformed_corpus.h"
#include "tests/scenarios/step/step_test_util.h"

namespace podsim::scenarios {
namespace {

/// Llama 3 8B on 64 H100 (the llama3-8b-dp example) with `cluster` merged
/// into its cluster: a ZeRO-1 data-parallel job with gathers and reductions
/// over NVLink and the NICs.
ScenarioSpec llama8b_on(const std::string& cluster) {
  const Result<ScenarioSpec> spec = read_scenario_text(
      R"({"model": "llama3-8b",
          "cluster": {"base": "dgx-h100-superpod", "nodes": 8)" +
      cluster + R"(},
          "training": {"seq_len": 4096, "global_batch": 512},
          "parallelism": {"dp": 64, "zero": 1, "recompute": "selective"}})");
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.problems().front().to_string());
  return spec.ok() ? spec.value() : ScenarioSpec{};
}

Problem only_problem(const ScenarioSpec& spec) {
  const Result<Report> report = simulate(spec);
  EXPECT_FALSE(report.ok());
  if (report.ok() || report.problems().size() != 1) {
    ADD_FAILURE() << "expected one problem";
    return {};
  }
  return report.problems().front();
}

TEST(StepLimits, ClockLimitIsAbout106Days) {
  EXPECT_EQ(clock_limit_text(), "about 106 days");  // 2^63 ps = 9.22e6 s
}

TEST(StepLimits, SlowLinksPastTheClockNameTheirKey) {
  // NVLink at 450 GB/s x 1e-9 is 450 B/s: the first parameter all-gather
  // (hundreds of MiB over the node's ring) takes years. It used to end in
  // "step simulation deadlocked (a schedule bug)".
  const Problem nvlink = only_problem(llama8b_on(R"(, "scale_up": {"efficiency": 1e-9})"));
  EXPECT_EQ(nvlink.path, "/cluster/scale_up/bandwidth");
  EXPECT_NE(nvlink.message.find("outlasts podsim's clock (about 106 days)"), std::string::npos)
      << nvlink.message;
  EXPECT_NE(nvlink.message.find("NVLink links of 450 B/s"), std::string::npos) << nvlink.message;
  EXPECT_NE(nvlink.message.find("x efficiency 1e-09"), std::string::npos) << nvlink.message;

  const Problem nic = only_problem(llama8b_on(R"(, "scale_out": {"nic_bandwidth": "80 b/s"})"));
  EXPECT_EQ(nic.path, "/cluster/scale_out/nic_bandwidth");
  EXPECT_NE(nic.message.find("NIC links of"), std::string::npos) << nic.message;
}

TEST(StepLimits, SlowGpuRatesPastTheClockNameTheirKey) {
  const Problem flops = only_problem(
      llama8b_on(R"(, "gpu": {"base": "h100-sxm-80g", "peak_flops": {"bf16": "1 FLOP/s"}})"));
  EXPECT_EQ(flops.path, "/cluster/gpu/peak_flops/bf16");
  EXPECT_NE(flops.message.find("compute-bound"), std::string::npos) << flops.message;
  EXPECT_NE(flops.message.find("at a peak of 1 FLOP/s"), std::string::npos) << flops.message;

  const Problem hbm =
      only_problem(llama8b_on(R"(, "gpu": {"base": "h100-sxm-80g", "hbm": {"bandwidth": "1 B/s"},
                              "l2": {"capacity": "1 B"}})"));
  EXPECT_EQ(hbm.path, "/cluster/gpu/hbm/bandwidth");
  EXPECT_NE(hbm.message.find("memory-bound"), std::string::npos) << hbm.message;
}

TEST(StepLimits, MoreFlowsThanTheLimitNameTheCollectivesThatMakeThem) {
  // The data-parallel reductions and gathers of this job have thousands of
  // flows; with a limit of 1,000 the step stops where it passes it.
  const testing::StepParts parts(llama8b_on(""));
  const strategies::BuildResult& built = parts.built;
  ASSERT_TRUE(built.schedule.has_value());
  const StepHardware hardware = parts.hardware();
  const StepTimeline timeline = simulate_schedule(*built.schedule, hardware, 1000);
  ASSERT_TRUE(timeline.too_many_flows_task.has_value());
  EXPECT_GT(timeline.flows, 1000u);
  const Problem p = flows_problem(*built.schedule, *timeline.too_many_flows_task, 1000);
  EXPECT_EQ(p.path, "/options/dp_bucket_params");
  EXPECT_NE(p.message.find("more than 1000 transfers"), std::string::npos) << p.message;
  // Without the limit the same schedule runs.
  EXPECT_TRUE(simulate_schedule(*built.schedule, hardware).run.completed());
}

TEST(StepLimits, ATenMillionNodeClusterRunsAnEightGpuJob) {
  // The fabric is built for the job's GPUs: the whole cluster would be 80
  // million GPUs (out of memory before).
  const Result<ScenarioSpec> spec = read_scenario_text(
      R"({"model": "llama3-8b", "cluster": {"base": "dgx-h100-superpod", "nodes": 10000000},
          "training": {"seq_len": 4096, "global_batch": 8},
          "parallelism": {"dp": 8, "zero": 1}})");
  ASSERT_TRUE(spec.ok()) << spec.problems().front().to_string();
  const Result<Report> report = simulate(spec.value());
  ASSERT_TRUE(report.ok()) << report.problems().front().to_string();
  // The same job on one node of the same cluster: the same step, bit for bit.
  Result<ScenarioSpec> one = read_scenario_text(
      R"({"model": "llama3-8b", "cluster": {"base": "dgx-h100-superpod", "nodes": 1},
          "training": {"seq_len": 4096, "global_batch": 8},
          "parallelism": {"dp": 8, "zero": 1}})");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(report.value().step_time_s, simulate(one.value()).value().step_time_s);
}

TEST(StepLimits, MalformedFilesTheReaderAcceptsFailInSimulationAtTheirPath) {
  size_t simulated = 0;
  for (const testing_corpus::Expectation& e : testing_corpus::malformed_corpus()) {
    if (!e.fails_in_simulation) continue;
    ++simulated;
    const Result<ScenarioSpec> spec = read_scenario_file(testing_corpus::malformed_dir() + e.file);
    ASSERT_TRUE(spec.ok()) << e.file;
    const Result<Report> report = simulate(spec.value());
    ASSERT_FALSE(report.ok()) << e.file;
    ASSERT_EQ(report.problems().size(), 1u) << e.file;
    const Problem& p = report.problems().front();
    EXPECT_EQ(p.path, e.path) << e.file << ": " << p.to_string();
    EXPECT_NE(p.to_string().find(e.fragment), std::string::npos) << e.file << ": " << p.to_string();
  }
  EXPECT_GE(simulated, 5u);
}

}  // namespace
}  // namespace podsim::scenarios
