#include "scenarios/report/report_format.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/scenarios/input/reader_test_util.h"
#include "tests/scenarios/step/sample_report.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;

using testing::sample_report;

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
  // A report written before host_copy_wait existed still reads, as 0.
  json old = json::parse(text);
  old["breakdown_s"]["compute_split"].erase("host_copy_wait");
  const Result<Report> older = report_from_json(old);
  ASSERT_TRUE(older.ok()) << testing::problems_text(older.problems());
  EXPECT_EQ(older.value().breakdown.compute_split.host_copy_wait, 0.0);
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
  for (const char* expected : {"12.35 s",
                               "412 TFLOP/s",
                               "MFU 41.6%",
                               "HFU 43.5%",
                               "61.2 GiB reserved",
                               "62.4 GiB of 80.0 GiB (fits)",
                               "temporaries",
                               "cached",
                               "outside",
                               "2.7 GiB",
                               "exposed DP comm",
                               "1.00 s",
                               "8.1%",
                               "pipeline bubble",
                               "750.00 ms",
                               "6.1%",
                               "waiting for host-memory copies",
                               "50.00 ms",
                               "16384 (symmetric simulation, 16 ranks simulated",
                               "- second",
                               "datasheet"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  }
  Report tight = sample_report();
  tight.memory_fits = false;
  EXPECT_NE(format_report_text(tight).find("DOES NOT FIT"), std::string::npos);
}

}  // namespace
}  // namespace podsim::scenarios
