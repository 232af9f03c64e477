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
  // validation/published.json (109) and moe-and-accelerators.json (64).
  ASSERT_EQ(cases.size(), 173u);
  size_t tpu = 0;
  for (const ValidationCase& c : cases) {
    EXPECT_TRUE(c.scenario.has_value()) << c.id;
    if (c.scenario && c.scenario->cluster.gpu.name == "tpu-v6e") ++tpu;
  }
  EXPECT_EQ(tpu, 17u);
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
  // A TPU job is measured against the TPU runs of moe-and-accelerators.json.
  ScenarioSpec v6e = h100;
  v6e.cluster.gpu.name = "tpu-v6e";
  const std::optional<FamilyError> t = nearest_family(v6e, cases);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->family.rfind("tpurecipes_trillium", 0) == 0 || t->family == "mlperf_v41", true)
      << t->family;
  EXPECT_NE(t->basis.find("same GPU (tpu-v6e)"), std::string::npos) << t->basis;
  // No published case on H200: the basis says so.
  ScenarioSpec h200 = h100;
  h200.cluster.gpu.name = "h200-sxm-141g";
  const std::optional<FamilyError> b = nearest_family(h200, cases);
  ASSERT_TRUE(b.has_value());
  EXPECT_NE(b->basis.find("no validation case on this GPU (h200-sxm-141g)"), std::string::npos)
      << b->basis;
  EXPECT_FALSE(nearest_family(h100, {}).has_value());
}

TEST(NearestFamily, AnMoeJobIsMeasuredAgainstMoeCasesOnly) {
  const std::vector<ValidationCase> cases = builtin_validation_cases();
  // Mixtral 8x7B on 64 H100: the nearest H100 cases of the same kind are
  // MoE runs; their family also has dense runs, which do not count.
  const ScenarioSpec mixtral = example("mixtral-8x7b-ep.json");
  ASSERT_EQ(model_kind(mixtral), "MoE");
  const std::optional<FamilyError> f = nearest_family(mixtral, cases);
  ASSERT_TRUE(f.has_value());
  bool nearest_is_moe = false;
  for (const ValidationCase& c : cases) {
    if (f->basis.find("nearest case " + c.id + " ") != std::string::npos) {
      nearest_is_moe = model_kind(*c.scenario) == "MoE";
    }
  }
  EXPECT_TRUE(nearest_is_moe) << f->basis;
  // The same plan with a dense model of the family's: its dense cases.
  const ScenarioSpec dense = example("llama3-70b-1024-h100.json");
  const std::optional<FamilyError> d = nearest_family(dense, cases);
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->kind, "MoE");
  if (!f->kind.empty()) {
    EXPECT_EQ(f->kind, "MoE");
    EXPECT_EQ(f->label(), f->family + " MoE");
    EXPECT_NE(f->basis.find("its family's MoE cases"), std::string::npos) << f->basis;
  }
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
  // A kind counts only the family's cases of that kind: fam_a_two's model
  // routes through experts.
  cases[1].scenario->model.moe = strategies::MoeShape{};
  FamilyError dense;
  dense.family = "fam_a";
  dense.kind = "dense";
  ASSERT_TRUE(measure_family_error(dense, cases, simulate));
  EXPECT_EQ(dense.cases, 1u);
  EXPECT_DOUBLE_EQ(dense.mape, 1.0);
  EXPECT_EQ(dense.label(), "fam_a dense");
}

}  // namespace
}  // namespace podsim::scenarios
