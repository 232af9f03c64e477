// Validation-case files (a bad case keeps its problems, the others load) and
// run_validation's errors and MAPEs.
#include "scenarios/validate/validation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/input/reader.h"
#include "tests/scenarios/input/reader_test_util.h"
#include "tests/scenarios/validate/validation_fakes.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;
using testing::base_scenario;
using testing::fake_simulate;
using testing::has_problem;
using testing::problems_text;
using testing::sample_report;
using testing::three_cases;

/// The cases of one of the repository's validation files, each checked to
/// read into a scenario without problems.
std::vector<ValidationCase> read_every_case(const std::string& file) {
  const Result<std::vector<ValidationCase>> cases =
      read_validation_file(testing::source_path(file));
  EXPECT_TRUE(cases.ok()) << problems_text(cases.problems());
  if (!cases.ok()) return {};
  for (const ValidationCase& c : cases.value()) {
    EXPECT_TRUE(c.problems.empty()) << c.id << "\n" << problems_text(c.problems);
    EXPECT_TRUE(c.scenario.has_value()) << c.id;
  }
  return cases.value();
}

TEST(Validation, PublishedFileLoadsEveryCase) {
  const std::vector<ValidationCase> cases = read_every_case("validation/published.json");
  ASSERT_EQ(cases.size(), 109u);
  const ValidationCase& first = cases.front();
  EXPECT_EQ(first.id, "megatron_sc21_t1_1p7B");
  ASSERT_TRUE(first.measured.step_time_s.has_value());
  EXPECT_DOUBLE_EQ(*first.measured.step_time_s, 3.528);
  EXPECT_FALSE(first.measured.mfu.has_value());
  EXPECT_EQ(first.scenario->name.rfind("Megatron SC21", 0), 0u);
}

TEST(Validation, MegatronBridgeReleasesFileLoadsEveryCase) {
  const std::vector<ValidationCase> cases =
      read_every_case("validation/megatron-bridge-releases.json");
  ASSERT_EQ(cases.size(), 129u);
  for (const ValidationCase& c : cases) {
    EXPECT_TRUE(c.measured.step_time_s.has_value()) << c.id;
    EXPECT_EQ(c.id.rfind("mbridge", 0), 0u) << c.id;
  }
  // The same printed plan in several releases is one scenario measured
  // several times: Qwen3-30B-A3B on 8 GB200 in all six releases.
  size_t largest_group = 0;
  for (const std::vector<size_t>& group : identical_scenarios(cases)) {
    largest_group = std::max(largest_group, group.size());
  }
  EXPECT_EQ(largest_group, 6u);
}

TEST(Validation, ABadCaseKeepsItsProblemsAndTheOthersLoad) {
  json file;
  for (int i = 0; i < 4; ++i) {
    json scenario = base_scenario();
    if (i == 3) scenario["parallelism"]["tp"] = 6;
    file["cases"].push_back({{"id", "case" + std::to_string(i)},
                             {"scenario", scenario},
                             {"measured", {{"step_time_s", 1.5}}}});
  }
  file["cases"][1]["measured"]["mfu"] = 1.5;  // out of range
  file["cases"][2]["id"] = "case0";           // duplicate
  const Result<std::vector<ValidationCase>> cases = read_validation_text(file.dump());
  ASSERT_TRUE(cases.ok()) << problems_text(cases.problems());
  ASSERT_EQ(cases.value().size(), 4u);
  EXPECT_TRUE(cases.value()[0].scenario.has_value());
  EXPECT_TRUE(has_problem(cases.value()[1].problems, "/cases/1/measured/mfu", "out of range"));
  EXPECT_TRUE(has_problem(cases.value()[2].problems, "/cases/2/id", "duplicate id"));
  EXPECT_TRUE(has_problem(cases.value()[3].problems, "/cases/3/scenario/parallelism/tp",
                          "does not divide heads=32"));
  EXPECT_FALSE(cases.value()[3].scenario.has_value());
  EXPECT_EQ(cases.value()[0].scenario->name, "base");
  // A case's scenario without a name is named by its id.
  file["cases"][0]["scenario"].erase("name");
  EXPECT_EQ(read_validation_text(file.dump()).value()[0].scenario->name, "case0");
}

TEST(Validation, FileLevelProblemsFailTheRead) {
  EXPECT_TRUE(
      has_problem(read_validation_text(R"({"cases": []})").problems(), "/cases", "0 elements"));
  EXPECT_TRUE(has_problem(read_validation_text(R"({"case": []})").problems(), "/case",
                          "did you mean 'cases'"));
  EXPECT_TRUE(has_problem(read_validation_text(R"({})").problems(), "/cases", "missing"));
  EXPECT_FALSE(read_validation_text("[]").ok());
  EXPECT_FALSE(read_validation_text("").ok());
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

TEST(ValidationSummary, FamiliesAndSoftwarePresets) {
  EXPECT_EQ(case_family("dgxc_gpt3_175b_128gpu_bf16"), "dgxc_gpt3");
  EXPECT_EQ(case_family("megatron_sc21_t2_zero3_174p6B_384gpu"), "megatron_sc21");
  EXPECT_EQ(case_family("nemo2407_LLAMA2-7B_8gpu_fp8"), "nemo2407");
  EXPECT_EQ(case_family("korthikanti22_22B_selective_sp"), "korthikanti22");
  EXPECT_EQ(case_family("single"), "single");
  std::vector<ValidationCase> cases = three_cases();
  cases[0].id = "fam_a_1";
  cases[1].id = "fam_a_2";
  cases[1].scenario->software.name = "torchtitan";
  // A case that measured only MFU counts in step-time sense: an MFU 20%
  // low is a step 1/0.8 - 1 = 25% long.
  cases.push_back(cases[0]);
  cases.back().id = "fam_b_1";
  cases.back().measured = {};
  cases.back().measured.mfu = 0.5;
  const ValidationSummary s = run_validation(cases, fake_simulate);
  ASSERT_EQ(s.families.size(), 2u);  // the broken case has no error
  EXPECT_EQ(s.families[0].name, "fam_a");
  EXPECT_EQ(s.families[0].cases, 2u);
  EXPECT_DOUBLE_EQ(s.families[0].mape, 0.75);
  EXPECT_DOUBLE_EQ(s.families[0].mean_signed, 0.25);  // (+1.0 - 0.5) / 2
  EXPECT_EQ(s.families[0].within_10pct, 0u);
  EXPECT_NEAR(s.families[1].mean_signed, 0.25, 1e-12);
  ASSERT_EQ(s.software.size(), 2u);
  EXPECT_EQ(s.software[0].name, "megatron-core");  // the default preset
  EXPECT_EQ(s.software[0].cases, 2u);
  EXPECT_EQ(s.software[1].name, "torchtitan");
  EXPECT_DOUBLE_EQ(s.software[1].mean_signed, -0.5);
}

TEST(Validation, IdenticalScenariosGroupByTheirInputsNotTheirNames) {
  json file;
  for (int i = 0; i < 5; ++i) {
    json scenario = base_scenario();
    scenario["name"] = "run " + std::to_string(i);
    if (i == 1) scenario["training"]["micro_batch"] = 2;
    if (i == 3) scenario["notes"] = "the same run, described";
    if (i == 4) scenario["parallelism"]["tp"] = 6;  // unreadable: in no group
    file["cases"].push_back({{"id", "case" + std::to_string(i)},
                             {"scenario", scenario},
                             {"measured", {{"step_time_s", 1.0 + i}}}});
  }
  const Result<std::vector<ValidationCase>> cases = read_validation_text(file.dump());
  ASSERT_TRUE(cases.ok()) << problems_text(cases.problems());
  EXPECT_TRUE(cases.value()[4].scenario_key.empty());
  EXPECT_EQ(identical_scenarios(cases.value()), (std::vector<std::vector<size_t>>{{0, 2, 3}}));
}

TEST(Validation, PublishedFileMeasuresTheSameLlama3RunTwice) {
  // NVIDIA printed the same Llama 3 8B fp8 run on 8 H100 in NeMo 24.07's table
  // and in its DGX Cloud recipe: one scenario, two measurements.
  const std::vector<ValidationCase> cases = read_every_case("validation/published.json");
  std::vector<std::string> ids;
  for (const std::vector<size_t>& group : identical_scenarios(cases)) {
    if (cases[group[0]].id != "nemo2407_LLAMA3-8B_8gpu_fp8") continue;
    for (const size_t i : group) ids.push_back(cases[i].id);
  }
  EXPECT_EQ(ids,
            (std::vector<std::string>{"nemo2407_LLAMA3-8B_8gpu_fp8", "dgxc_llama31_8b_8gpu_fp8"}));
}

TEST(ValidationSummary, RepeatedScenariosBoundTheBestPrediction) {
  const std::vector<ValidationCase> three = three_cases();  // the fake predicts 2 s
  std::vector<ValidationCase> cases;
  for (const double step_s : {1.5, 1.6}) {  // a narrower pair, first in the file
    cases.push_back(three[0]);
    cases.back().id = "narrow " + std::to_string(step_s);
    cases.back().scenario_key = "narrow";
    cases.back().measured.step_time_s = step_s;
  }
  for (ValidationCase c : three) {  // measured 1 s, 4 s, and one that cannot be simulated
    c.scenario_key = "wide";
    cases.push_back(c);
  }
  cases.push_back(three[0]);  // the same run measured only by its MFU: left out
  cases.back().id = "mfu only";
  cases.back().scenario_key = "wide";
  cases.back().measured = {};
  cases.back().measured.mfu = 0.5;
  const ValidationSummary s = run_validation(cases, fake_simulate);
  ASSERT_EQ(s.repeated.size(), 2u);
  const RepeatedScenario& wide = s.repeated[0];  // the widest spread first
  EXPECT_EQ(wide.cases, (std::vector<size_t>{2, 3}));
  EXPECT_DOUBLE_EQ(wide.measured_min_s, 1.0);
  EXPECT_DOUBLE_EQ(wide.measured_max_s, 4.0);
  EXPECT_DOUBLE_EQ(wide.predicted_s, 2.0);
  // 1.6 s, their harmonic mean, is 60% above 1 s and 60% below 4 s; any other
  // single prediction is further from one of them.
  EXPECT_DOUBLE_EQ(wide.best_possible_error(), 0.6);
  EXPECT_EQ(s.repeated[1].cases, (std::vector<size_t>{0, 1}));
}

TEST(Validation, DominantTerm) {
  Report r = sample_report();
  EXPECT_EQ(dominant_term(r).first, "compute");
  r.breakdown.exposed_comm.dp = 20;
  EXPECT_EQ(dominant_term(r).first, "exposed DP comm");
  EXPECT_EQ(dominant_term(r).second, 20);
}

TEST(Reader, DefaultScenarioIsThePublishedLlama3Case) {
  const Result<ScenarioSpec> fallback = read_default_scenario();
  ASSERT_TRUE(fallback.ok()) << problems_text(fallback.problems());
  const ScenarioSpec& d = fallback.value();
  const Result<std::vector<ValidationCase>> cases =
      read_validation_file(testing::source_path("validation/published.json"));
  ASSERT_TRUE(cases.ok()) << problems_text(cases.problems());
  const ValidationCase* published = nullptr;
  for (const ValidationCase& c : cases.value()) {
    if (c.id == "llama3_405b_t4_16384gpu_seq8192") published = &c;
  }
  ASSERT_NE(published, nullptr);
  ASSERT_TRUE(published->scenario.has_value());
  const ScenarioSpec& p = *published->scenario;
  EXPECT_EQ(d.name, p.name);
  // The model: preset llama3-405b with the paper's vocabulary.
  EXPECT_EQ(d.model.name, "llama3-405b");
  EXPECT_EQ(d.model.vocab, 128000);
  for (const auto& [a, b] : {std::pair{d.model.layers, p.model.layers},
                             {d.model.hidden, p.model.hidden},
                             {d.model.ffn_hidden, p.model.ffn_hidden},
                             {d.model.heads, p.model.heads},
                             {d.model.kv_heads, p.model.kv_heads},
                             {d.model.head_dim, p.model.head_dim},
                             {d.model.vocab, p.model.vocab}}) {
    EXPECT_EQ(a, b);
  }
  EXPECT_EQ(d.model.mlp, p.model.mlp);
  EXPECT_EQ(d.model.norm, p.model.norm);
  EXPECT_EQ(d.model.tied_embeddings, p.model.tied_embeddings);
  EXPECT_EQ(d.cluster.name, "llama3-24k");
  EXPECT_EQ(d.cluster.nodes, p.cluster.nodes);
  EXPECT_EQ(d.gpus, 16384);
  EXPECT_EQ(d.training.seq_len, 8192);
  EXPECT_EQ(d.training.global_batch, 2048);
  EXPECT_EQ(d.training.micro_batch, p.training.micro_batch);
  EXPECT_EQ(d.plan.tp, 8);
  EXPECT_EQ(d.plan.cp, 1);
  EXPECT_EQ(d.plan.pp, 16);
  EXPECT_EQ(d.plan.dp, 128);
  EXPECT_EQ(d.plan.virtual_stages, 2);
  EXPECT_EQ(d.plan.schedule, strategies::PipelineSchedule::kInterleavedOneFOneB);
  EXPECT_TRUE(d.plan.sequence_parallel);
  EXPECT_EQ(d.plan.zero, 2);
  EXPECT_EQ(d.plan.recompute.mode, strategies::RecomputeMode::kNone);
  EXPECT_EQ(d.plan.order, p.plan.order);
  EXPECT_EQ(d.plan.order[3], strategies::Dim::kPp);
  EXPECT_EQ(d.options.flash_attention, p.options.flash_attention);
  EXPECT_EQ(d.options.overlap_dp, p.options.overlap_dp);
  // 126 layers on 16 stages x 2 chunks is uneven, as Meta ran it.
  EXPECT_EQ(d.warnings, p.warnings);
  ASSERT_FALSE(d.warnings.empty());
}

}  // namespace
}  // namespace podsim::scenarios
