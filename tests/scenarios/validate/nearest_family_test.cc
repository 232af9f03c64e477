// The measured error a sweep states for its ties: which published family is
// nearest to a planned job, and that family's step-time MAPE.
#include "scenarios/validate/nearest_family.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "scenarios/input/reader.h"
#include "tests/scenarios/input/reader_test_util.h"
#include "tests/scenarios/step/sample_report.h"

namespace podsim::scenarios {
namespace {

ScenarioSpec example(const std::string& file) {
  Result<ScenarioSpec> r = read_scenario_file(testing::source_path("scenarios/examples/" + file));
  EXPECT_TRUE(r.ok());
  return r.ok() ? r.value() : ScenarioSpec{};
}

TEST(NearestFamily, TheBinaryCarriesThePublishedCases) {
  const std::vector<ValidationCase> cases = builtin_validation_cases();
  ASSERT_GT(cases.size(), 100u);
  for (const ValidationCase& c : cases) EXPECT_TRUE(c.scenario.has_value()) << c.id;
}

TEST(NearestFamily, SameGpuAndSoftwareThenTheClosestScale) {
  const std::vector<ValidationCase> cases = builtin_validation_cases();
  // Llama 3 70B on 1,024 H100 of the SuperPOD: NVIDIA's DGX Cloud Llama 3.1
  // recipes include 70B on 1,024 H100.
  const ScenarioSpec h100 = example("llama3-70b-1024-h100.json");
  const std::optional<FamilyError> f = nearest_family(h100, cases);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->family, "dgxc_llama31");
  EXPECT_NE(f->basis.find("same GPU"), std::string::npos) << f->basis;
  // GPT-3 175B on Selene's A100s: a Megatron SC21 / Korthikanti family.
  const ScenarioSpec a100 = example("gpt3-175b-selene.json");
  const std::optional<FamilyError> g = nearest_family(a100, cases);
  ASSERT_TRUE(g.has_value());
  EXPECT_NE(g->basis.find("same GPU (" + a100.cluster.gpu.name + ")"), std::string::npos)
      << g->basis;
  // No published case on B200: the basis says so.
  ScenarioSpec b200 = h100;
  b200.cluster.gpu.name = "b200";
  const std::optional<FamilyError> b = nearest_family(b200, cases);
  ASSERT_TRUE(b.has_value());
  EXPECT_NE(b->basis.find("no validation case on this GPU (b200)"), std::string::npos) << b->basis;
  EXPECT_FALSE(nearest_family(h100, {}).has_value());
}

TEST(NearestFamily, TheMapeIsOverTheFamilysCasesOnly) {
  std::vector<ValidationCase> cases(3);
  const double measured[] = {1.0, 4.0, 100.0};
  const char* ids[] = {"fam_a_one", "fam_a_two", "other_b_one"};
  for (size_t i = 0; i < 3; ++i) {
    cases[i].id = ids[i];
    cases[i].measured.step_time_s = measured[i];
    cases[i].scenario = ScenarioSpec{};
  }
  // Every case predicted at 2 s: +100% and -50% in fam_a; other_b far off.
  auto simulate = [](const ScenarioSpec&) -> Result<Report> {
    Report r = testing::sample_report();
    r.step_time_s = 2.0;
    return r;
  };
  FamilyError f;
  f.family = "fam_a";
  ASSERT_TRUE(measure_family_error(f, cases, simulate));
  EXPECT_EQ(f.cases, 2u);
  EXPECT_DOUBLE_EQ(f.mape, 0.75);
  FamilyError none;
  none.family = "missing";
  EXPECT_FALSE(measure_family_error(none, cases, simulate));
}

}  // namespace
}  // namespace podsim::scenarios
