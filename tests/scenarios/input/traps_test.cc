// Traps in the input (issue 17): quantities beyond any hardware warn, preset
// names resolve by prefix and common name, frameworks' key names suggest
// the scenario's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reader_test_util.h"
#include "scenarios/input/presets.h"
#include "scenarios/input/suggest.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;
using testing::base_scenario;
using testing::has_problem;
using testing::problems_text;
using testing::read;
using testing::read_ok;

TEST(Traps, ANicBandwidthMeantInBitsWarnsWithTheUnitStringAndChangesNothingElse) {
  json scenario = base_scenario();
  const ScenarioSpec plain = read_ok(scenario);
  EXPECT_TRUE(plain.input_warnings.empty()) << problems_text(plain.input_warnings);
  // 400e9 meant as 400 Gb/s is 400 GB/s = 3.2 Tb/s under the SI rule.
  scenario["cluster"]["scale_out"] = {{"nic_bandwidth", 400e9}};
  const ScenarioSpec slip = read_ok(scenario);
  ASSERT_EQ(slip.input_warnings.size(), 1u) << problems_text(slip.input_warnings);
  const Problem& w = slip.input_warnings.front();
  EXPECT_EQ(w.path, "/cluster/scale_out/nic_bandwidth");
  EXPECT_NE(w.message.find("3200 Gb/s"), std::string::npos) << w.to_string();
  EXPECT_NE(w.hint.find("write \"400 Gb/s\""), std::string::npos) << w.to_string();
  EXPECT_DOUBLE_EQ(slip.cluster.scale_out.nic_bw_bytes_per_s, 400e9);  // read as written
  EXPECT_TRUE(slip.warnings.empty());  // the report's remarks stay as they were

  // The unit string says what was meant: no warning.
  scenario["cluster"]["scale_out"]["nic_bandwidth"] = "400 Gb/s";
  EXPECT_TRUE(read_ok(scenario).input_warnings.empty());
  // 1.6 Tb/s is the bound: reached, not crossed.
  scenario["cluster"]["scale_out"]["nic_bandwidth"] = "1.6 Tb/s";
  EXPECT_TRUE(read_ok(scenario).input_warnings.empty());
}

TEST(Traps, HbmAndPeakFlopsBeyondAnyGpuWarnAtTheirPathsInsideOverriddenPresets) {
  json scenario = base_scenario();
  scenario["cluster"]["gpu"] = {{"base", "h100-sxm-80g"},
                                {"hbm", {{"bandwidth", 3.35e14}}},
                                {"peak_flops", {{"bf16", 989e15}}}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_TRUE(has_problem(s.input_warnings, "/cluster/gpu/hbm/bandwidth", "20 TB/s"))
      << problems_text(s.input_warnings);
  EXPECT_TRUE(has_problem(s.input_warnings, "/cluster/gpu/peak_flops/bf16", "10 PFLOP/s dense"))
      << problems_text(s.input_warnings);
  EXPECT_TRUE(has_problem(s.input_warnings, "/cluster/gpu/peak_flops/bf16", "TFLOP/s\""));
  EXPECT_EQ(s.input_warnings.size(), 2u) << problems_text(s.input_warnings);
}

TEST(Traps, NoPresetTripsThePlausibilityBounds) {
  const PresetLibrary& presets = builtin_presets();
  size_t presets_read = 0;
  for (const std::string& cluster : presets.names("clusters")) {
    json scenario = base_scenario();
    scenario["cluster"] = cluster;
    scenario["parallelism"] = {{"dp", 1}};
    scenario["training"]["global_batch"] = 8;
    const Result<ScenarioSpec> spec = read(scenario);
    if (!spec.ok()) continue;  // a plan this small may not suit every cluster
    ++presets_read;
    EXPECT_TRUE(spec.value().input_warnings.empty()) << cluster << "\n"
                                                     << problems_text(spec.value().input_warnings);
  }
  for (const std::string& gpu : presets.names("gpus")) {
    json scenario = base_scenario();
    scenario["cluster"]["gpu"] = gpu;
    const Result<ScenarioSpec> spec = read(scenario);
    if (!spec.ok()) continue;  // a TPU has no bf16 for this plan, ...
    ++presets_read;
    EXPECT_TRUE(spec.value().input_warnings.empty()) << gpu << "\n"
                                                     << problems_text(spec.value().input_warnings);
  }
  EXPECT_GE(presets_read, 20u);  // most presets were read
}

TEST(Traps, PresetNamesResolveByUniquePrefixAndCommonName) {
  const std::vector<std::string> gpus = builtin_presets().names("gpus");
  const std::pair<const char*, const char*> meant[] = {{"h100", "h100-sxm-80g"},
                                                       {"H100 SXM", "h100-sxm-80g"},
                                                       {"H100-SXM", "h100-sxm-80g"},
                                                       {"h100 80GB", "h100-sxm-80g"},
                                                       {"NVIDIA H100", "h100-sxm-80g"},
                                                       {"B200", "b200"},
                                                       {"b200", "b200"},
                                                       {"h200", "h200-sxm-141g"},
                                                       {"TPU v5p", "tpu-v5p"},
                                                       {"mi300", "mi300x"},
                                                       {"GB200", "gb200"}};
  for (const auto& [given, name] : meant) {
    EXPECT_EQ(match_name(given, gpus).name, name) << given;
  }
  // A prefix of several is no answer, but says which.
  const NameMatch mi3 = match_name("mi3", gpus);
  EXPECT_TRUE(mi3.name.empty());
  EXPECT_EQ(mi3.ambiguous, (std::vector<std::string>{"mi300x", "mi325x", "mi350x", "mi355x"}));
  EXPECT_TRUE(match_name("h100 pcie", gpus).name.empty());

  // In a scenario the preset's full name is what is reported, and stderr
  // hears which preset a short name was read as.
  json scenario = base_scenario();
  scenario["model"] = "Llama3 8B";
  scenario["cluster"]["gpu"] = "h100";
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.model.name, "llama3-8b");
  EXPECT_EQ(s.cluster.gpu.name, "h100-sxm-80g");
  EXPECT_TRUE(has_problem(s.input_warnings, "/model", "read as preset 'llama3-8b'"))
      << problems_text(s.input_warnings);
  EXPECT_TRUE(has_problem(s.input_warnings, "/cluster/gpu", "read as preset 'h100-sxm-80g'"));
  scenario["model"] = "llama3";
  EXPECT_TRUE(
      has_problem(read(scenario).problems(), "/model",
                  "'llama3' could be llama3-8b, llama3-70b, llama3-405b: give more of the name"))
      << problems_text(read(scenario).problems());
}

TEST(Traps, SuggestionsRankPrefixesBeforeEditDistance) {
  const std::vector<std::string> gpus = builtin_presets().names("gpus");
  // "h100" is two edits from "b200" and eight from "h100-sxm-80g".
  EXPECT_EQ(closest_match("h100", gpus), "h100-sxm-80g");
  EXPECT_EQ(closest_match("h1000", gpus), "h100-sxm-80g");
  EXPECT_EQ(closest_match("h100-sxm-80gb", gpus), "h100-sxm-80g");
  EXPECT_EQ(closest_match("seq_length", {"seq_len", "global_batch", "micro_batch"}), "seq_len");
  // Typos still find their word.
  EXPECT_EQ(closest_match("bf61", {"bf16", "fp16", "fp8", "fp32"}), "bf16");
  EXPECT_EQ(closest_match("lama3-70b", builtin_presets().names("models")), "llama3-70b");
}

TEST(Traps, FrameworkKeyNamesSuggestTheScenarioKeys) {
  json scenario = base_scenario();
  scenario["parallelism"]["pipeline_parallel"] = 2;
  scenario["parallelism"]["tensor-model-parallel-size"] = 2;
  scenario["parallelism"]["context_parallel_degree"] = 2;
  scenario["training"]["micro_batch_size"] = 1;
  scenario["training"]["global_batch_size"] = 512;
  scenario["training"]["tensor_model_parallel_size"] = 2;
  const std::vector<Problem> problems = read(scenario).problems();
  EXPECT_TRUE(has_problem(problems, "/parallelism/pipeline_parallel", "did you mean 'pp'?"))
      << problems_text(problems);
  EXPECT_TRUE(
      has_problem(problems, "/parallelism/tensor-model-parallel-size", "did you mean 'tp'?"));
  EXPECT_TRUE(has_problem(problems, "/parallelism/context_parallel_degree", "did you mean 'cp'?"));
  EXPECT_TRUE(has_problem(problems, "/training/micro_batch_size", "did you mean 'micro_batch'?"));
  EXPECT_TRUE(has_problem(problems, "/training/global_batch_size", "did you mean 'global_batch'?"));
  // A framework's name in the wrong object points to where the key lives.
  EXPECT_TRUE(has_problem(problems, "/training/tensor_model_parallel_size", "/parallelism/tp"))
      << problems_text(problems);
  // Typos of the scenario's own keys keep their edit-distance suggestion.
  scenario = base_scenario();
  scenario["parallelism"]["sequence_paralel"] = true;
  EXPECT_TRUE(has_problem(read(scenario).problems(), "/parallelism/sequence_paralel",
                          "did you mean 'sequence_parallel'"));
}

}  // namespace
}  // namespace podsim::scenarios
