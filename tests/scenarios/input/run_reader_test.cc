// The run-level keys: /cluster/reliability, /cluster/storage, /run.
#include <gtest/gtest.h>

#include "tests/scenarios/input/reader_test_util.h"

namespace podsim::scenarios {
namespace {

using testing::base_scenario;
using testing::has_problem;
using testing::problems_text;
using testing::read;
using testing::read_ok;

TEST(RunReader, DefaultsComeFromTheDeclarations) {
  const ScenarioSpec s = read_ok(base_scenario());
  EXPECT_FALSE(s.run.tokens.has_value());  // no /run: one step
  EXPECT_DOUBLE_EQ(s.reliability.gpu_per_1000_gpu_days, 0.2834);
  EXPECT_DOUBLE_EQ(s.reliability.software_per_1000_node_days, 0.7518);
  EXPECT_DOUBLE_EQ(s.reliability.planned_per_day, 0);
  EXPECT_FALSE(s.storage.write_bytes_per_s.has_value());
  EXPECT_DOUBLE_EQ(s.storage.host_copy_bytes_per_s, 52e9);
  EXPECT_EQ(s.run.samples, 1000);
  EXPECT_EQ(s.run.seed, 1u);
  EXPECT_EQ(s.run.save_mode, SaveMode::kAsync);
  EXPECT_EQ(s.run.interval_rule, IntervalRule::kDaly);
  EXPECT_DOUBLE_EQ(s.run.restart_overhead_s, 600);
  EXPECT_DOUBLE_EQ(s.run.requeue_s, 0);
  EXPECT_DOUBLE_EQ(s.run.straggler_node_fraction, 0.005);
  EXPECT_DOUBLE_EQ(s.run.straggler_gpu_slowdown, 1.1);
}

TEST(RunReader, ReadsEveryKey) {
  nlohmann::json j = base_scenario();
  j["cluster"]["reliability"] = {{"gpu_per_1000_gpu_days", 1.5}, {"planned_per_day", 0.8}};
  j["cluster"]["storage"] = {{"write_bandwidth", "2 TB/s"}, {"read_bandwidth", "3 TB/s"}};
  j["run"] = {{"tokens", 15e12},
              {"samples", 50},
              {"seed", 9},
              {"checkpoint", {{"mode", "sync"}, {"interval", {{"time", "30 min"}}}}},
              {"restart", {{"overhead", "5 min"}, {"requeue", "2 h"}}},
              {"stragglers", {{"node_fraction", 0.01}, {"mean_duration", "1 h"}}}};
  const ScenarioSpec s = read_ok(j);
  EXPECT_DOUBLE_EQ(s.reliability.gpu_per_1000_gpu_days, 1.5);
  EXPECT_DOUBLE_EQ(s.reliability.hbm_per_1000_gpu_days, 0.1074);  // the others keep defaults
  EXPECT_DOUBLE_EQ(s.reliability.planned_per_day, 0.8);
  EXPECT_DOUBLE_EQ(*s.storage.write_bytes_per_s, 2e12);
  EXPECT_DOUBLE_EQ(*s.storage.read_bytes_per_s, 3e12);
  EXPECT_DOUBLE_EQ(*s.run.tokens, 15e12);
  EXPECT_EQ(s.run.samples, 50);
  EXPECT_EQ(s.run.seed, 9u);
  EXPECT_EQ(s.run.save_mode, SaveMode::kSync);
  EXPECT_EQ(s.run.interval_rule, IntervalRule::kTime);
  EXPECT_DOUBLE_EQ(s.run.interval_s, 1800);
  EXPECT_DOUBLE_EQ(s.run.restart_overhead_s, 300);
  EXPECT_DOUBLE_EQ(s.run.requeue_s, 7200);
  EXPECT_DOUBLE_EQ(s.run.straggler_node_fraction, 0.01);
  EXPECT_DOUBLE_EQ(s.run.straggler_mean_duration_s, 3600);

  j["run"]["checkpoint"]["interval"] = {{"steps", 500}};
  EXPECT_EQ(read_ok(j).run.interval_rule, IntervalRule::kSteps);
  EXPECT_EQ(read_ok(j).run.interval_steps, 500);
  j["run"]["checkpoint"]["interval"] = "young";
  EXPECT_EQ(read_ok(j).run.interval_rule, IntervalRule::kYoung);
}

TEST(RunReader, TheLlama3ClusterSavesAtTectonicsSustainedRate) {
  nlohmann::json j = base_scenario();
  j["cluster"] = {{"base", "llama3-24k"}};
  j["parallelism"]["dp"] = 24576;
  j["training"]["global_batch"] = 24576;
  EXPECT_DOUBLE_EQ(*read_ok(j).storage.write_bytes_per_s, 2e12);
}

TEST(RunReader, BadRunKeysNameTheirPath) {
  nlohmann::json j = base_scenario();
  j["run"] = {{"samples", 0}};
  std::vector<Problem> p = read(j).problems();
  EXPECT_TRUE(has_problem(p, "/run/tokens", "required")) << problems_text(p);
  EXPECT_TRUE(has_problem(p, "/run/samples", "")) << problems_text(p);

  j["run"] = {{"tokens", 1e12}, {"checkpoint", {{"interval", nlohmann::json::object()}}}};
  p = read(j).problems();
  EXPECT_TRUE(has_problem(p, "/run/checkpoint/interval", "steps or time")) << problems_text(p);
  j["run"]["checkpoint"]["interval"] = {{"steps", 10}, {"time", "1 h"}};
  p = read(j).problems();
  EXPECT_TRUE(has_problem(p, "/run/checkpoint/interval", "not both")) << problems_text(p);
  j["run"]["checkpoint"]["interval"] = "hourly";
  p = read(j).problems();
  EXPECT_TRUE(has_problem(p, "/run/checkpoint/interval", "daly")) << problems_text(p);

  j = base_scenario();
  j["cluster"]["reliability"] = {{"gpu_per_1000_gpu_days", -1}};
  j["cluster"]["storage"] = {{"write_bandwidth", "2 TB"}};
  j["run"] = {{"tokens", 1e12}, {"stragglers", {{"gpu_slowdown", 0.5}}}};
  p = read(j).problems();
  EXPECT_TRUE(has_problem(p, "/cluster/reliability/gpu_per_1000_gpu_days", "")) << problems_text(p);
  EXPECT_TRUE(has_problem(p, "/cluster/storage/write_bandwidth", "")) << problems_text(p);
  EXPECT_TRUE(has_problem(p, "/run/stragglers/gpu_slowdown", "")) << problems_text(p);
  EXPECT_EQ(p.size(), 3u) << problems_text(p);
}

}  // namespace
}  // namespace podsim::scenarios
