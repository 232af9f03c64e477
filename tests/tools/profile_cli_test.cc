// --profile on run, validate and collective, through the binary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "calibration/profile.h"
#include "run_binary.h"
#include "tests/scenarios/step/synthetic_profile.h"

namespace podsim::tools_test {
namespace {

using nlohmann::json;

/// A profile file of this test's own (ctest runs tests in parallel).
std::string synthetic_profile_file() {
  const std::string path = ::testing::TempDir() + "/synthetic-h100-profile-" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                           ".json";
  calibration::write_profile(scenarios::testing::synthetic_profile(), path);
  return path;
}

TEST(ProfileCli, RunUsesTheProfileAndSaysSo) {
  const std::string profile = synthetic_profile_file();
  const RunResult datasheet = run_podsim({"run", "--json"}, 120);
  const RunResult profiled = run_podsim({"run", "--json", "--profile", profile}, 120);
  ASSERT_EQ(profiled.exit_code, 0) << profiled.err;
  const json a = json::parse(datasheet.out);
  const json b = json::parse(profiled.out);
  EXPECT_EQ(a["hardware_source"], "datasheet");
  EXPECT_EQ(b["hardware_source"], "profile " + profile);
  // The synthetic H100 is slower than the datasheet curves (bf16 GEMMs at a
  // 74% plateau): the same step takes longer.
  EXPECT_GT(b["step_time_s"].get<double>(), a["step_time_s"].get<double>());
}

TEST(ProfileCli, ValidateAndCollectiveTakeAProfile) {
  const std::string profile = synthetic_profile_file();
  const RunResult v =
      run_podsim({"validate", std::string(PODSIM_SOURCE_DIR) + "/validation/published.json",
                  "--json", "--profile", profile},
                 300);
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_GT(json::parse(v.out)["mape_step_time"].get<double>(), 0);
  // A one-GPU profile measured nothing between GPUs: the collective model is
  // unchanged, and the command says so on stderr.
  const RunResult plain =
      run_podsim({"collective", "--cluster", "dgx-h100-superpod", "--json"}, 60);
  const RunResult c = run_podsim(
      {"collective", "--cluster", "dgx-h100-superpod", "--json", "--profile", profile}, 60);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, plain.out);
  EXPECT_NE(c.err.find("unchanged"), std::string::npos) << c.err;
}

TEST(ProfileCli, AnUnreadableProfileIsBadInputNamingTheFlag) {
  const RunResult r = run_podsim({"run", "--profile", "/nonexistent/profile.json"}, 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--profile"), std::string::npos) << r.err;
  const RunResult c = run_podsim(
      {"collective", "--cluster", "dgx-h100-superpod", "--profile", "/nonexistent/p.json"}, 60);
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("--profile"), std::string::npos) << c.err;
}

}  // namespace
}  // namespace podsim::tools_test
