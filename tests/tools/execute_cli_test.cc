// `podsim execute` as a user runs it. This machine (and CI) has no GPU, and
// the asan preset builds without CUDA: both must give exit 3 and one
// sentence; --dry-run and every input error work everywhere.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "calibration/profile.h"
#include "run_binary.h"
#include "tests/scenarios/step/synthetic_profile.h"

namespace podsim::tools_test {
namespace {

std::string case_file(const char* name) {
  std::string path = PODSIM_SOURCE_DIR "/calibration/execute-cases/";
  path += name;
  return path;
}

TEST(ExecuteCli, WithoutAGpuExitsThreeWithOneSentence) {
  const RunResult r =
      run_podsim({"execute", case_file("llama3-8b-tp2-s8192.json"), "--layers", "1"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("no CUDA device: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
  EXPECT_FALSE(looks_like_a_crash(r.err));
  const RunResult check = run_podsim({"execute", case_file("llama3-8b-tp2-s8192.json"), "--check"});
  EXPECT_EQ(check.exit_code, 3) << check.err;
}

TEST(ExecuteCli, DryRunListsEveryOpWithItsPrediction) {
  const RunResult r =
      run_podsim({"execute", case_file("llama3-70b-tp8-s8192.json"), "--layers", "2", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want :
       {"podsim execute: llama3-70b-tp8-s8192", "dry run", "qkv", "attn_core_bwd", "mlp_fc1_wgrad",
        "reduce_scatter", "adam_step", "per layer: predicted", "heads=8 kv_heads=1",
        "tp=8, sequence parallel"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want;
  }
  const RunResult j = run_podsim(
      {"execute", case_file("llama3-70b-tp8-s8192.json"), "--layers", "2", "--dry-run", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json report = nlohmann::json::parse(j.out);
  EXPECT_FALSE(report["measured"].get<bool>());
  EXPECT_EQ(report["layers"], 2);
  // 15 forward + 19 backward ops of a TP+SP layer, grad norm and Adam.
  EXPECT_EQ(report["ops"].size(), 36u);
  const double layer = report["layer_fwd_bwd"]["predicted_s"].get<double>();
  EXPECT_NEAR(report["pass"]["predicted_s"].get<double>(), 2 * layer, 1e-12);
  EXPECT_GT(layer, 1e-3);
  // Same input, same output.
  EXPECT_EQ(j.out, run_podsim({"execute", case_file("llama3-70b-tp8-s8192.json"), "--layers", "2",
                               "--dry-run", "--json"})
                       .out);
}

TEST(ExecuteCli, ReportFileHoldsTheJson) {
  const std::string path = ::testing::TempDir() + "/podsim_execute_cli_report.json";
  std::filesystem::remove(path);
  const RunResult r =
      run_podsim({"execute", case_file("llama3-8b-tp1-s2048.json"), "--dry-run", "--report", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(std::filesystem::exists(path));
  std::ifstream in(path);
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_EQ(report["scenario"], "llama3-8b-tp1-s2048");
  EXPECT_EQ(report["layers"], 32);  // the GPU's share by default: no pipeline, every layer
  const RunResult bad = run_podsim({"execute", case_file("llama3-8b-tp1-s2048.json"), "--dry-run",
                                    "--report", "/nonexistent-podsim-dir/r.json"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("its directory does not exist"), std::string::npos) << bad.err;
}

TEST(ExecuteCli, ScenariosTheExecutorCannotRunAreBadInputWithPaths) {
  const RunResult moe = run_podsim(
      {"execute", std::string(PODSIM_SOURCE_DIR) + "/scenarios/examples/mixtral-8x7b-ep.json",
       "--dry-run"});
  EXPECT_EQ(moe.exit_code, 2);
  EXPECT_NE(moe.err.find("/model/moe: mixture-of-experts layers cannot be executed"),
            std::string::npos)
      << moe.err;
  const RunResult cp =
      run_podsim({"execute", std::string(PODSIM_SOURCE_DIR) +
                                 "/scenarios/examples/llama3-70b-long-context-cp.json"});
  EXPECT_EQ(cp.exit_code, 2);
  EXPECT_NE(cp.err.find("/parallelism/cp"), std::string::npos) << cp.err;
  EXPECT_FALSE(looks_like_a_crash(moe.err + cp.err));
}

TEST(ExecuteCli, UsageErrors) {
  const RunResult none = run_podsim({"execute"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("a scenario file is needed"), std::string::npos) << none.err;
  const RunResult zero =
      run_podsim({"execute", case_file("llama3-8b-tp1-s2048.json"), "--layers", "0"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--layers needs"), std::string::npos) << zero.err;
  const RunResult profile = run_podsim({"execute", case_file("llama3-8b-tp1-s2048.json"),
                                        "--profile", "/nonexistent/profile.json", "--dry-run"});
  EXPECT_EQ(profile.exit_code, 2);
  EXPECT_NE(profile.err.find(": --profile: "), std::string::npos) << profile.err;
  const RunResult unknown =
      run_podsim({"execute", case_file("llama3-8b-tp1-s2048.json"), "--fast"});
  EXPECT_EQ(unknown.exit_code, 2);
  const RunResult missing = run_podsim({"execute", "/nonexistent/scenario.json", "--dry-run"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_FALSE(looks_like_a_crash(none.err + zero.err + profile.err + unknown.err + missing.err));
  const RunResult help = run_podsim({"execute", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* want : {"--layers", "--dry-run", "--check", "3 no CUDA device"}) {
    EXPECT_NE(help.out.find(want), std::string::npos) << want;
  }
}

TEST(ExecuteCli, ProfilePredictionsAreLabelled) {
  const std::string profile = ::testing::TempDir() + "/podsim_execute_cli_profile.json";
  calibration::write_profile(scenarios::testing::synthetic_profile(), profile);
  const std::string scenario = case_file("llama3-8b-tp2-s8192.json");
  const RunResult a = run_podsim({"execute", scenario, "--layers", "1", "--dry-run", "--json"});
  const RunResult b = run_podsim(
      {"execute", scenario, "--layers", "1", "--dry-run", "--json", "--profile", profile});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const nlohmann::json ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja["prediction_source"], "datasheet");
  EXPECT_EQ(jb["prediction_source"], "profile " + profile);
  bool noted = false;
  for (const auto& note : jb["notes"])
    noted = noted || note.get<std::string>().rfind("profile fit: ", 0) == 0;
  EXPECT_TRUE(noted);
  // The profile's GPU is slower than the datasheet's at GEMMs (plateau 0.74).
  EXPECT_GT(jb["classes"]["gemm"]["predicted_all_s"].get<double>(),
            ja["classes"]["gemm"]["predicted_all_s"].get<double>());
  std::filesystem::remove(profile);
}

TEST(ExecuteCli, EveryExecuteCaseIsAValidPlan) {
  int cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(PODSIM_SOURCE_DIR) +
                                                               "/calibration/execute-cases")) {
    if (entry.path().extension() != ".json") continue;
    ++cases;
    const RunResult r =
        run_podsim({"execute", entry.path().string(), "--layers", "2", "--dry-run", "--json"});
    ASSERT_EQ(r.exit_code, 0) << entry.path() << ": " << r.err;
    const nlohmann::json report = nlohmann::json::parse(r.out);
    EXPECT_EQ(report["prediction_source"], "datasheet");
    EXPECT_NE(report["predicted_gpu"].get<std::string>().find("h200"), std::string::npos);
  }
  EXPECT_GE(cases, 10);  // the device run's acceptance needs at least 10 shapes
}

}  // namespace
}  // namespace podsim::tools_test
