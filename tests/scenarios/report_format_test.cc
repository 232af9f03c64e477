#include "scenarios/report/report_format.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "reader_test_util.h"
#include "scenarios/report/validation_report.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

Report sample_report() {
  Report r;
  r.scenario = "sample";
  r.step_time_s = 12.3456;
  r.tokens_per_s = 1.3e6;
  r.tokens_per_s_per_gpu = 81.25;
  r.model_tflops_per_gpu = 412.0;
  r.hardware_tflops_per_gpu = 430.5;
  r.mfu = 0.4164;
  r.hfu = 0.4351;
  r.flops_convention = "6 x parameters x tokens + causal attention";
  r.model_flops_per_step = 8.3e19;
  r.hardware_flops_per_step = 8.7e19;
  r.bubble_fraction = 0.0625;
  r.breakdown.compute = 9.5;
  r.breakdown.recompute = 0.25;
  r.breakdown.exposed_comm = {0.5, 0.125, 0.0625, 1.0, 0.03125};
  r.breakdown.bubble = 0.75;
  r.breakdown.optimizer = 0.1;
  r.memory_capacity_bytes = 80 * kGiB;
  r.memory_peak_bytes = 61.2 * kGiB;
  r.memory_fits = true;
  r.per_stage = {{0, 10 * kGiB, 5 * kGiB, 2 * kGiB, 40 * kGiB, 4.2 * kGiB, 61.2 * kGiB},
                 {1, 10 * kGiB, 5 * kGiB, 2 * kGiB, 30 * kGiB, 4.2 * kGiB, 51.2 * kGiB}};
  r.gpus = 16384;
  r.critical_stage = 0;
  r.simulation_mode = "symmetric";
  r.simulated_ranks = 16;
  r.engine_events = 123456789;
  r.fingerprint = 0x0123456789abcdefULL;
  r.hardware_source = "datasheet";
  r.warnings = {"first", "second"};
  return r;
}

TEST(ReportFormat, JsonHasEveryContractKey) {
  const json j = report_to_json(sample_report());
  for (const char* key :
       {"scenario", "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu",
        "mfu", "hfu", "flops_convention", "bubble_fraction", "breakdown_s", "memory", "warnings"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key : {"compute", "recompute", "exposed_comm", "bubble", "optimizer"}) {
    EXPECT_TRUE(j["breakdown_s"].contains(key)) << key;
  }
  for (const char* key : {"tp", "cp", "pp", "dp", "ep"}) {
    EXPECT_TRUE(j["breakdown_s"]["exposed_comm"].contains(key)) << key;
  }
  for (const char* key : {"capacity_bytes", "peak_bytes", "fits", "per_stage"}) {
    EXPECT_TRUE(j["memory"].contains(key)) << key;
  }
  for (const char* key : {"stage", "weights", "grads", "optimizer", "activations", "peak"}) {
    EXPECT_TRUE(j["memory"]["per_stage"][0].contains(key)) << key;
  }
  EXPECT_EQ(j["step_time_s"], 12.3456);
  EXPECT_EQ(j["breakdown_s"]["exposed_comm"]["dp"], 1.0);
  EXPECT_EQ(j["memory"]["fits"], true);
  EXPECT_EQ(j["fingerprint"], "0123456789abcdef");
  EXPECT_EQ(j["engine_events"], 123456789);
}

TEST(ReportFormat, JsonRoundTripsExactly) {
  const Report original = sample_report();
  const std::string text = report_json_text(original);
  const Result<Report> back = report_from_json(json::parse(text));
  ASSERT_TRUE(back.ok()) << testing::problems_text(back.problems());
  // Same report, same bytes: the round trip loses nothing.
  EXPECT_EQ(report_json_text(back.value()), text);
  EXPECT_EQ(back.value().fingerprint, original.fingerprint);
  EXPECT_EQ(back.value().per_stage.size(), 2u);
  EXPECT_EQ(back.value().warnings, original.warnings);
}

TEST(ReportFormat, ReadingBackNamesMissingAndMistypedKeys) {
  json j = report_to_json(sample_report());
  j.erase("mfu");
  j["breakdown_s"]["exposed_comm"]["tp"] = "fast";
  j["fingerprint"] = "xyz";
  const Result<Report> back = report_from_json(j);
  ASSERT_FALSE(back.ok());
  EXPECT_TRUE(testing::has_problem(back.problems(), "/mfu", "missing"));
  EXPECT_TRUE(testing::has_problem(back.problems(), "/breakdown_s/exposed_comm/tp", "number"));
  EXPECT_TRUE(testing::has_problem(back.problems(), "/fingerprint", "hex"));
}

TEST(ReportFormat, TextHasUnitsAndEveryTerm) {
  const std::string text = format_report_text(sample_report());
  for (const char* expected :
       {"12.35 s", "412 TFLOP/s", "MFU 41.6%", "HFU 43.5%", "61.2 GiB of 80.0 GiB (fits)",
        "exposed DP comm", "1.00 s", "8.1%", "pipeline bubble", "750.00 ms", "6.1%",
        "16384 (symmetric simulation, 16 ranks simulated", "- second", "datasheet"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
  Report tight = sample_report();
  tight.memory_fits = false;
  EXPECT_NE(format_report_text(tight).find("DOES NOT FIT"), std::string::npos);
}

TEST(ReportFormat, DominantTerm) {
  Report r = sample_report();
  EXPECT_EQ(dominant_term(r).first, "compute");
  r.breakdown.exposed_comm.dp = 20;
  EXPECT_EQ(dominant_term(r).first, "exposed DP comm");
  EXPECT_EQ(dominant_term(r).second, 20);
}

/// Three cases against a fake simulator that returns a chosen step time.
std::vector<ValidationCase> three_cases() {
  std::vector<ValidationCase> cases(3);
  cases[0].id = "twice";
  cases[0].measured.step_time_s = 1.0;
  cases[0].measured.mfu = 0.5;
  cases[0].scenario = ScenarioSpec{};
  cases[0].scenario->name = "twice";
  cases[1].id = "half";
  cases[1].measured.step_time_s = 4.0;
  cases[1].measured.memory_peak_gib = 60;
  cases[1].scenario = ScenarioSpec{};
  cases[1].scenario->name = "half";
  cases[2].id = "broken";
  cases[2].measured.step_time_s = 1.0;
  cases[2].problems = {{"/cases/2/scenario/parallelism/tp", "tp=6 does not divide heads=32", ""}};
  return cases;
}

Result<Report> fake_simulate(const ScenarioSpec& spec) {
  Report r = sample_report();
  r.scenario = spec.name;
  r.step_time_s = 2.0;  // +100% against "twice" (1 s), -50% against "half" (4 s)
  r.mfu = 0.4;
  r.memory_peak_bytes = 45 * kGiB;
  return r;
}

TEST(ValidationSummary, SignedErrorsAndMapes) {
  const ValidationSummary s = run_validation(three_cases(), fake_simulate);
  ASSERT_EQ(s.cases.size(), 3u);
  EXPECT_DOUBLE_EQ(*s.cases[0].error.step_time_s, 1.0);   // 2/1 - 1
  EXPECT_DOUBLE_EQ(*s.cases[1].error.step_time_s, -0.5);  // 2/4 - 1
  EXPECT_NEAR(*s.cases[0].error.mfu, -0.2, 1e-12);        // 0.4/0.5 - 1
  EXPECT_FALSE(s.cases[0].error.memory_peak_gib.has_value());
  EXPECT_DOUBLE_EQ(*s.cases[1].error.memory_peak_gib, -0.25);  // 45/60 - 1
  EXPECT_FALSE(s.cases[1].error.mfu.has_value());
  EXPECT_DOUBLE_EQ(*s.mape_step_time, 0.75);  // (1.0 + 0.5) / 2, the failed case excluded
  EXPECT_DOUBLE_EQ(*s.median_abs_error_step_time, 0.75);
  EXPECT_NEAR(*s.mape_mfu, 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(*s.mape_memory, 0.25);
  EXPECT_FALSE(s.mape_tflops_per_gpu.has_value());
  EXPECT_EQ(s.failed, 1u);
  EXPECT_NE(s.cases[2].error_message.find("/cases/2/scenario/parallelism/tp"), std::string::npos);
  EXPECT_EQ(worst_cases(s, 5), (std::vector<size_t>{0, 1}));
}

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
}

TEST(ValidationSummary, TextTableAndSummary) {
  const std::string text = format_validation_text(run_validation(three_cases(), fake_simulate));
  for (const char* expected : {"twice", "+100.0%", "-50.0%", "broken", "FAILED", "MAPE step time",
                               "75.0%", "over 2 cases", "Worst cases", "dominant: compute",
                               "tp=6 does not divide heads=32", "3 cases, 2 simulated, 1 failed"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
}

}  // namespace
}  // namespace podsim::scenarios
