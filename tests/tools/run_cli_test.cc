// `podsim run` with a token budget: the whole run above the step.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_binary.h"

namespace podsim::tools_test {
namespace {

using nlohmann::json;

std::string scenario_with_run(const std::string& name, const json& run) {
  std::ifstream in(std::string(PODSIM_SOURCE_DIR) + "/scenarios/examples/llama3-8b-dp.json");
  json scenario = json::parse(in);
  scenario["run"] = run;
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << scenario.dump();
  return path;
}

TEST(RunCli, ATokenBudgetAddsTheRunAndRepeatsByteForByte) {
  const std::string file =
      scenario_with_run("run_budget.json", {{"tokens", 2e12}, {"samples", 200}});
  const RunResult first = run_podsim({"run", file, "--json"}, 120);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(run_podsim({"run", file, "--json"}, 120).out, first.out);
  const json report = json::parse(first.out);
  EXPECT_GT(report["step_time_s"].get<double>(), 0);  // the step's report is all there
  const json& run = report["run"];
  for (const char* key : {"tokens", "steps", "wall_s", "gpu_hours", "ettr", "goodput_tokens_per_s",
                          "interruptions", "failures", "breakdown_s", "checkpoint", "stragglers"}) {
    EXPECT_TRUE(run.contains(key)) << key;
  }
  const double wall = run["wall_s"]["median"];
  EXPECT_GT(wall, run["failure_free_s"].get<double>());
  EXPECT_LE(run["wall_s"]["p5"].get<double>(), wall);
  EXPECT_GE(run["wall_s"]["p95"].get<double>(), wall);
  EXPECT_LT(run["ettr"]["median"].get<double>(), 1);
  EXPECT_NEAR(run["gpu_hours"]["median"].get<double>(), wall * 64 / 3600, 1e-6 * wall);
  double parts = 0;
  for (const auto& [name, seconds] : run["breakdown_s"].items()) parts += seconds.get<double>();
  EXPECT_NEAR(parts, run["wall_s"]["mean"].get<double>(), 1e-6 * wall);

  const RunResult text = run_podsim({"run", file}, 120);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Where the step went"), std::string::npos);
  EXPECT_NE(text.out.find("Run to train 2e+12 tokens (200 sampled runs, seed 1)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("Where the run's time went"), std::string::npos);
  EXPECT_EQ(run_podsim({"run", file}, 120).out, text.out);
}

TEST(RunCli, WithoutABudgetTheReportIsTheStepAlone) {
  const RunResult r = run_podsim(
      {"run", std::string(PODSIM_SOURCE_DIR) + "/scenarios/examples/llama3-8b-dp.json", "--json"},
      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(json::parse(r.out).contains("run"));
}

TEST(RunCli, BadRunKeysExitTwoNamingThePath) {
  const std::string file = scenario_with_run(
      "run_bad.json", {{"tokens", -5}, {"checkpoint", {{"interval", {{"every", 3}}}}}});
  const RunResult r = run_podsim({"run", file}, 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/run/tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/run/checkpoint/interval/every"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(RunCli, RequireFitExitsFiveWhenThePlanDoesNotFitAndPrintsTheSameReport) {
  // Plain replicated Adam holds 16 bytes per parameter: 128 GB for 8B
  // parameters, more than an H100's 80 GB (the example's notes).
  std::ifstream in(std::string(PODSIM_SOURCE_DIR) + "/scenarios/examples/llama3-8b-dp.json");
  json scenario = json::parse(in);
  scenario["parallelism"]["zero"] = 0;
  const std::string too_big = ::testing::TempDir() + "/run_zero0.json";
  std::ofstream(too_big, std::ios::binary) << scenario.dump();
  const RunResult plain = run_podsim({"run", too_big, "--json"}, 120);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_FALSE(json::parse(plain.out)["memory"]["fits"].get<bool>());
  const RunResult required = run_podsim({"run", too_big, "--json", "--require-fit"}, 120);
  EXPECT_EQ(required.exit_code, 5) << required.err;
  EXPECT_EQ(required.out, plain.out);
  EXPECT_NE(required.err.find("the plan does not fit"), std::string::npos) << required.err;

  const std::string fits = std::string(PODSIM_SOURCE_DIR) + "/scenarios/examples/llama3-8b-dp.json";
  const RunResult ok = run_podsim({"run", fits, "--require-fit"}, 120);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(ok.err.empty()) << ok.err;
}

}  // namespace
}  // namespace podsim::tools_test
