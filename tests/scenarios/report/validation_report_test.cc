// `podsim validate`'s writers: the contract's JSON and the table for people.
#include "scenarios/report/validation_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/scenarios/validate/validation_fakes.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;
using testing::fake_simulate;
using testing::three_cases;

TEST(ValidationSummary, ContractJson) {
  const json j = validation_to_json(run_validation(three_cases(), fake_simulate));
  ASSERT_EQ(j["cases"].size(), 3u);
  const json& first = j["cases"][0];
  EXPECT_EQ(first["id"], "twice");
  for (const char* key : {"step_time_s", "tflops_per_gpu", "mfu", "memory_peak_gib"}) {
    EXPECT_TRUE(first["predicted"].contains(key)) << key;
  }
  EXPECT_EQ(first["measured"], (json{{"step_time_s", 1.0}, {"mfu", 0.5}}));
  EXPECT_EQ(first["error"]["step_time_s"], 1.0);
  EXPECT_FALSE(first["error"].contains("memory_peak_gib"));
  EXPECT_EQ(first["dominant_term"], "compute");
  const json& failed = j["cases"][2];
  EXPECT_TRUE(failed.contains("error_message"));
  EXPECT_FALSE(failed.contains("predicted"));
  EXPECT_EQ(j["mape_step_time"], 0.75);
  EXPECT_EQ(j["mape_memory"], 0.25);
  EXPECT_TRUE(j["mape_tflops_per_gpu"].is_null());
  EXPECT_EQ(j["cases_failed"], 1);
  EXPECT_EQ(j["worst"], (json{"twice", "half"}));
  EXPECT_EQ(first["fits_in_memory"], true);
  EXPECT_EQ(j["cases_not_fitting"], 0);
}

TEST(ValidationSummary, PlansThatDoNotFitAreCountedAndMarked) {
  const auto too_big = [](const ScenarioSpec& spec) {
    Result<Report> r = fake_simulate(spec);
    r.value().memory_fits = spec.name != "half";
    return r;
  };
  const ValidationSummary summary = run_validation(three_cases(), too_big);
  EXPECT_EQ(summary.not_fitting, 1u);
  const json j = validation_to_json(summary);
  EXPECT_EQ(j["cases_not_fitting"], 1);
  EXPECT_EQ(j["cases"][0]["fits_in_memory"], true);
  EXPECT_EQ(j["cases"][1]["fits_in_memory"], false);
  const std::string text = format_validation_text(summary);
  EXPECT_NE(text.find("plans that do not fit in memory"), std::string::npos) << text;
  EXPECT_NE(text.find("1  of 2 simulated"), std::string::npos) << text;
  const size_t half = text.find("\nhalf ");
  ASSERT_NE(half, std::string::npos) << text;
  const std::string row = text.substr(half + 1, text.find('\n', half + 1) - half - 1);
  EXPECT_EQ(row.substr(row.size() - 2), "NO") << row;
}

TEST(ValidationSummary, TextTableAndSummary) {
  const std::string text = format_validation_text(run_validation(three_cases(), fake_simulate));
  for (const char* expected : {"twice", "+100.0%", "-50.0%", "broken", "FAILED", "MAPE step time",
                               "75.0%", "over 2 cases", "Worst cases", "dominant: compute",
                               "tp=6 does not divide heads=32", "3 cases, 2 simulated, 1 failed"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
}

TEST(ValidationSummary, RepeatedScenariosInJsonAndText) {
  std::vector<ValidationCase> cases = three_cases();  // measured 1 s and 4 s, predicted 2 s
  cases[0].scenario_key = "same run";
  cases[1].scenario_key = "same run";
  const ValidationSummary summary = run_validation(cases, fake_simulate);
  const json j = validation_to_json(summary);
  ASSERT_EQ(j["repeated_scenarios"].size(), 1u);
  const json& r = j["repeated_scenarios"][0];
  EXPECT_EQ(r["cases"], (json{"twice", "half"}));
  EXPECT_EQ(r["measured_min_step_time_s"], 1.0);
  EXPECT_EQ(r["measured_max_step_time_s"], 4.0);
  EXPECT_EQ(r["predicted_step_time_s"], 2.0);
  EXPECT_EQ(r["best_possible_error"], 0.6);
  const std::string text = format_validation_text(summary);
  for (const char* expected :
       {"Same scenario measured by several cases: 1 scenarios", "up to 4.00x",
        "the prediction lies within the measured range for 1 of 1", "1.00 s .. 4.00 s", "+-60.0%",
        "twice, half"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
  EXPECT_TRUE(validation_to_json(run_validation(three_cases(), fake_simulate))["repeated_scenarios"]
                  .empty());
}

}  // namespace
}  // namespace podsim::scenarios
