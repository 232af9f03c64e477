// The acceptance figures of docs/goodput.md, predicted from podsim's default
// failure rates (Kokolis et al., Meta's RSC A100 clusters), none of which
// was measured on the runs compared: the scenarios and sources are in
// validation/goodput/ (published.json).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "scenarios/input/reader.h"
#include "scenarios/run/simulate_run.h"
#include "scenarios/step/simulate.h"

namespace podsim::scenarios {
namespace {

/// The run of a scenario of validation/goodput/. `with_stragglers` false
/// skips the every-rank simulation of the straggler step (tens of seconds
/// at 10,000+ GPUs) for figures that do not depend on it: interruption
/// counts, and ETTR, which counts a straggler's slow steps as training
/// (docs/goodput.md's tables give the same ETTR with and without them).
RunReport run_of(const std::string& name, bool with_stragglers = true) {
  const std::string path = std::string(PODSIM_SOURCE_DIR) + "/validation/goodput/" + name;
  Result<ScenarioSpec> spec = read_scenario_file(path);
  EXPECT_TRUE(spec.ok()) << path;
  if (!with_stragglers) spec.value().run.straggler_node_fraction = 0;
  Result<Report> step = simulate(spec.value());
  EXPECT_TRUE(step.ok()) << path;
  Result<RunReport> run = simulate_run(spec.value(), step.value(), *spec.value().run.tokens);
  EXPECT_TRUE(run.ok()) << path;
  return run.value();
}

double per_day(const RunReport& r, std::initializer_list<const char*> classes) {
  double sum = 0;
  for (const FailureClass& f : r.model.failures) {
    for (const char* name : classes) sum += f.name == name ? f.per_day : 0.0;
  }
  return sum;
}

// Llama 3 (arXiv 2407.21783 sec. 3.3.4): 466 interruptions in a 54-day
// snapshot of 405B pre-training on (up to) 16,384 H100, and "higher than
// 90% effective training time".
TEST(PublishedRuns, Llama3InterruptionsWithin25PercentAndEttrAbove90) {
  const RunReport r = run_of("llama3-405b-8k-stage.json", false);
  EXPECT_EQ(r.model.gpus, 16384);
  const double in_54_days = r.model.interruptions_per_day * 54;
  EXPECT_GT(in_54_days, 466 * 0.75);
  EXPECT_LT(in_54_days, 466 * 1.25);
  EXPECT_GT(r.ettr.median, 0.90);
  EXPECT_GT(r.ettr.low, 0.90);  // the whole 90% range
}

// MegaScale (arXiv 2402.15627 sec. 6.3): "over 100" restarts in several
// weeks and "over 90% effective training time rate" on >10,000 GPUs.
TEST(PublishedRuns, MegaScaleRestartsAndEttr) {
  const RunReport r = run_of("megascale-175b-12288.json", false);
  EXPECT_GT(r.model.interruptions_per_day * 21, 100);
  EXPECT_GT(r.ettr.median, 0.90);
}

// BLOOM on 384 A100 (Bekman, Hugging Face blog 2022): "1-2 GPU failures a
// week", the GPU classes of the model (GPU, HBM, silent corruption).
TEST(PublishedRuns, BloomGpuFailuresPerWeek) {
  const RunReport r = run_of("bloom-176b-384.json");
  const double per_week = 7 * per_day(r, {"gpu", "hbm", "sdc"});
  EXPECT_GE(per_week, 1.0);
  EXPECT_LE(per_week, 2.0);
}

// Every scenario of the folder reads and has a budget, and every one the
// figures file names is there (tools/goodput-report runs them all).
TEST(PublishedRuns, EveryFigureHasItsScenario) {
  const std::filesystem::path folder =
      std::filesystem::path(PODSIM_SOURCE_DIR) / "validation" / "goodput";
  std::set<std::string> scenarios;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".json" || name == "published.json") continue;
    Result<ScenarioSpec> spec = read_scenario_file(entry.path().string());
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.problems().front().to_string();
    EXPECT_TRUE(spec.value().run.tokens.has_value()) << name;
    scenarios.insert(name);
  }
  std::ifstream in(folder / "published.json");
  const nlohmann::json figures = nlohmann::json::parse(in);
  size_t named = 0;
  for (const char* group : {"figures", "gpu_hours"}) {
    for (const nlohmann::json& figure : figures[group]) {
      for (const nlohmann::json& name : figure["scenarios"]) {
        EXPECT_TRUE(scenarios.contains(name.get<std::string>())) << name;
        ++named;
      }
    }
  }
  EXPECT_GE(named, 12u);
}

}  // namespace
}  // namespace podsim::scenarios
