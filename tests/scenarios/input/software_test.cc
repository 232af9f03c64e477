// The `software` section (scenario-format.md v1.1): presets with a source for
// every mechanism, the object form's overrides, the default, bad input, and
// `podsim describe`'s listing; `gpu.power_limit` (v1.1).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "scenarios/input/presets.h"
#include "scenarios/input/schema.h"
#include "tests/scenarios/input/reader_test_util.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;
using testing::base_scenario;
using testing::has_problem;
using testing::problems_text;
using testing::read;
using testing::read_ok;

const Mechanism* find(const SoftwareSpec& s, const std::string& path) {
  for (const Mechanism& m : s.mechanisms) {
    if (m.path == path) return &m;
  }
  return nullptr;
}

/// Every declared mechanism key of the software section (not the groups,
/// their sources, or the name and source lines).
std::set<std::string> declared_mechanisms() {
  std::set<std::string> out;
  for (const KeyDecl& decl : software_keys()) {
    const std::string path(decl.path);
    const size_t depth = static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
    if (depth == 3 && decl.kind != KeyKind::kTextMap) out.insert(path);
  }
  return out;
}

TEST(Software, EveryPresetGivesEveryMechanismAValueAndASource) {
  const std::set<std::string> declared = declared_mechanisms();
  ASSERT_GT(declared.size(), 30u);
  const std::vector<std::string> names = builtin_presets().names("software");
  for (const char* required :
       {"megatron-core", "megatron-lm-2021", "megatron-deepspeed", "deepspeed-zero3", "torchtitan",
        "torchtitan-compile", "composer", "maxtext", "maxtext-tpu", "rocm-megatron"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
  for (const std::string& name : names) {
    json scenario = base_scenario();
    scenario["software"] = name;
    const ScenarioSpec spec = read_ok(scenario);
    EXPECT_EQ(spec.software.name, name);
    EXPECT_FALSE(spec.software.source.empty()) << name;
    std::set<std::string> seen;
    for (const Mechanism& m : spec.software.mechanisms) {
      seen.insert(m.path);
      EXPECT_FALSE(m.value.empty()) << name << " " << m.path;
      EXPECT_GT(m.source.size(), 10u) << name << " " << m.path << ": every value says where it "
                                      << "comes from";
    }
    EXPECT_EQ(seen, declared) << name;
  }
}

TEST(Software, AbsentMeansMegatronCore) {
  const ScenarioSpec spec = read_ok(base_scenario());
  EXPECT_EQ(spec.software.name, "megatron-core");
  EXPECT_EQ(spec.software.attention, hwmodels::AttentionKernel::kTransformerEngine);
  EXPECT_EQ(spec.software.loss, strategies::LossImpl::kVocabParallelFp32);
  EXPECT_FALSE(spec.software.mechanisms.empty());
}

TEST(Software, PresetsDifferWhereTheFrameworksDo) {
  json scenario = base_scenario();
  scenario["software"] = "torchtitan";
  const ScenarioSpec titan = read_ok(scenario);
  EXPECT_EQ(titan.software.attention, hwmodels::AttentionKernel::kSdpa);
  EXPECT_EQ(titan.software.elementwise.norm, strategies::NormImpl::kEagerFp32);
  EXPECT_TRUE(titan.software.elementwise.repeat_kv);
  EXPECT_FALSE(titan.software.elementwise.compiled);
  EXPECT_EQ(titan.software.optimizer.implementation, strategies::OptimizerImpl::kForeach);
  EXPECT_DOUBLE_EQ(titan.software.host.dispatch_forward_s, 9e-6);
  scenario["software"] = "torchtitan-compile";
  EXPECT_TRUE(read_ok(scenario).software.elementwise.compiled);
  scenario["software"] = "megatron-lm-2021";
  const ScenarioSpec old = read_ok(scenario);
  EXPECT_EQ(old.software.attention, hwmodels::AttentionKernel::kUnfused);
  EXPECT_EQ(old.software.p2p, strategies::P2pMode::kBlockingSync);
  EXPECT_EQ(old.software.data_parallel.grad_reduce, strategies::GradReduce::kAfterBackward);
}

TEST(Software, AnOverrideChangesOneMechanismAndSaysSo) {
  json scenario = base_scenario();
  scenario["software"] = {{"base", "torchtitan"}, {"attention", {{"kernel", "fa3"}}}};
  const ScenarioSpec spec = read_ok(scenario);
  EXPECT_EQ(spec.software.name, "torchtitan");
  EXPECT_EQ(spec.software.attention, hwmodels::AttentionKernel::kFlash3);
  const Mechanism* kernel = find(spec.software, "/software/attention/kernel");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->value, "fa3");
  EXPECT_EQ(kernel->source, "set in the scenario");
  // The rest stays the preset's, with the preset's sources.
  EXPECT_EQ(spec.software.elementwise.norm, strategies::NormImpl::kEagerFp32);
  const Mechanism* norm = find(spec.software, "/software/elementwise/norm");
  ASSERT_NE(norm, nullptr);
  EXPECT_NE(norm->source.find("norms.py"), std::string::npos) << norm->source;

  // An override may give its own source.
  scenario["software"]["attention"]["sources"] = {{"kernel", "our fork pins FlashAttention-3"}};
  EXPECT_EQ(find(read_ok(scenario).software, "/software/attention/kernel")->source,
            "our fork pins FlashAttention-3");
}

TEST(Software, BadInputNamesThePathAndAFix) {
  json scenario = base_scenario();
  scenario["software"] = "torchtitn";
  Result<ScenarioSpec> r = read(scenario);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has_problem(r.problems(), "/software", "did you mean 'torchtitan'"))
      << problems_text(r.problems());

  scenario["software"] = {{"base", "composer"}, {"attention", {{"kernal", "fa2"}}}};
  r = read(scenario);
  EXPECT_TRUE(has_problem(r.problems(), "/software/attention/kernal", "did you mean 'kernel'"))
      << problems_text(r.problems());

  scenario["software"] = {{"base", "composer"}, {"attention", {{"kernel", "fa5"}}}};
  r = read(scenario);
  EXPECT_TRUE(has_problem(r.problems(), "/software/attention/kernel", "not one of"))
      << problems_text(r.problems());

  scenario["software"] = {{"base", "composer"}, {"loss", {{"sources", {{"implemntation", "x"}}}}}};
  r = read(scenario);
  EXPECT_TRUE(has_problem(r.problems(), "/software/loss/sources/implemntation",
                          "did you mean 'implementation'"))
      << problems_text(r.problems());

  // Without a base every mechanism must be given.
  scenario["software"] = {{"attention", {{"kernel", "fa2"}}}};
  r = read(scenario);
  EXPECT_TRUE(has_problem(r.problems(), "/software/loss", "missing"))
      << problems_text(r.problems());
  EXPECT_TRUE(has_problem(r.problems(), "/software/attention/fused_softmax_max_keys", "missing"))
      << problems_text(r.problems());
}

TEST(Software, KeysAddedAfterV11AreOptionalInAFullObject) {
  // A complete v1.1 object (no base) written before cp_merge and
  // fp8.gradient_accumulation existed still reads, with their defaults.
  json full = *builtin_presets().find("software", "megatron-core");
  full["attention"].erase("cp_merge");
  full["attention"]["sources"].erase("cp_merge");
  full["fp8"].erase("gradient_accumulation");
  full["fp8"]["sources"].erase("gradient_accumulation");
  json scenario = base_scenario();
  scenario["software"] = full;
  const ScenarioSpec spec = read_ok(scenario);
  EXPECT_EQ(spec.software.cp_merge, strategies::CpMerge::kFused16Bit);
  EXPECT_EQ(spec.software.fp8.gradient_accumulation, strategies::Fp8Accumulation::kPromoted);

  scenario["software"] = {{"base", "torchtitan"}, {"fp8", {{"gradient_accumulation", "fast"}}}};
  EXPECT_EQ(read_ok(scenario).software.fp8.gradient_accumulation,
            strategies::Fp8Accumulation::kFast);
  scenario["software"]["fp8"]["gradient_accumulation"] = "split";
  const Result<ScenarioSpec> r = read(scenario);
  EXPECT_TRUE(has_problem(r.problems(), "/software/fp8/gradient_accumulation", "not one of"))
      << problems_text(r.problems());
}

TEST(Software, OnlyMegatronCoreClampsOutsideItsFusedActivation) {
  // gpt-oss's clamped SwiGLU (swiglu_limit 7) is in the model presets; where
  // the clamp runs is the software's.
  json scenario = base_scenario();
  scenario["model"] = "gpt-oss-120b";
  EXPECT_TRUE(read_ok(scenario).model.clamped_glu);
  scenario["model"] = "llama3-8b";
  EXPECT_FALSE(read_ok(scenario).model.clamped_glu);
  for (const char* preset : {"megatron-core", "rocm-megatron"}) {
    scenario["software"] = preset;
    EXPECT_EQ(read_ok(scenario).software.elementwise.activation_clamp,
              strategies::ClampImpl::kEager)
        << preset;
  }
  for (const char* preset : {"torchtitan", "torchtitan-compile", "maxtext", "composer"}) {
    scenario["software"] = preset;
    EXPECT_EQ(read_ok(scenario).software.elementwise.activation_clamp,
              strategies::ClampImpl::kWithActivation)
        << preset;
  }
  scenario["software"] = {{"base", "torchtitan"}, {"elementwise", {{"activation_clamp", "eager"}}}};
  EXPECT_EQ(read_ok(scenario).software.elementwise.activation_clamp, strategies::ClampImpl::kEager);
  scenario["software"]["elementwise"]["activation_clamp"] = "fused";
  EXPECT_TRUE(has_problem(read(scenario).problems(), "/software/elementwise/activation_clamp",
                          "not one of"));
}

TEST(Software, CompiledNormBandwidthsAreFractionsThatDefaultToOne) {
  json scenario = base_scenario();
  scenario["software"] = "torchtitan-compile";
  const strategies::ElementwisePolicy preset = read_ok(scenario).software.elementwise;
  EXPECT_DOUBLE_EQ(preset.compiled_norm_forward_bandwidth, 0.85);
  EXPECT_DOUBLE_EQ(preset.compiled_norm_backward_bandwidth, 0.45);
  // A complete object written before the keys existed reads with 1.
  json full = *builtin_presets().find("software", "torchtitan-compile");
  for (const char* key : {"compiled_norm_forward_bandwidth", "compiled_norm_backward_bandwidth"}) {
    full["elementwise"].erase(key);
    full["elementwise"]["sources"].erase(key);
  }
  scenario["software"] = full;
  const strategies::ElementwisePolicy older = read_ok(scenario).software.elementwise;
  EXPECT_DOUBLE_EQ(older.compiled_norm_forward_bandwidth, 1.0);
  EXPECT_DOUBLE_EQ(older.compiled_norm_backward_bandwidth, 1.0);
  for (const double bad : {0.0, 1.5}) {
    scenario["software"] = {{"base", "torchtitan-compile"},
                            {"elementwise", {{"compiled_norm_backward_bandwidth", bad}}}};
    const Result<ScenarioSpec> r = read(scenario);
    EXPECT_TRUE(
        has_problem(r.problems(), "/software/elementwise/compiled_norm_backward_bandwidth", ""))
        << bad << ": " << problems_text(r.problems());
  }
}

TEST(Software, GradientsTravelInTheFormatTheFrameworkReducesThemIn) {
  json scenario = base_scenario();
  EXPECT_EQ(read_ok(scenario).options.grad_format, sim::NumberFormat::kFp32);  // megatron-core
  scenario["software"] = "deepspeed-zero3";  // 2021 ZeRO-3 reduce-scatters fp16 gradients
  EXPECT_EQ(read_ok(scenario).options.grad_format, sim::NumberFormat::kBf16);
  scenario["options"]["grad_format"] = "fp32";  // the scenario's word wins
  EXPECT_EQ(read_ok(scenario).options.grad_format, sim::NumberFormat::kFp32);
}

TEST(Software, AFrameworkThatAlwaysShardsTpActivationsRunsThePlanWithSequenceParallelism) {
  json scenario = base_scenario();
  scenario["parallelism"] = {{"dp", 8}, {"tp", 8}, {"zero", 1}, {"sequence_parallel", false}};
  auto warned = [](const ScenarioSpec& spec) {
    return std::any_of(spec.warnings.begin(), spec.warnings.end(), [](const std::string& w) {
      return w.find("software.tensor_parallel.shard_activations") != std::string::npos;
    });
  };
  // Megatron-Core leaves it to the plan.
  ScenarioSpec megatron = read_ok(scenario);
  EXPECT_FALSE(megatron.plan.sequence_parallel);
  EXPECT_FALSE(warned(megatron));
  // MaxText maps the activations' embed axis to the tensor mesh axis.
  scenario["software"] = "maxtext";
  ScenarioSpec maxtext = read_ok(scenario);
  EXPECT_TRUE(maxtext.plan.sequence_parallel);
  EXPECT_TRUE(warned(maxtext));
  // Tokens that do not split across the TP group keep the plan as written.
  scenario["training"]["seq_len"] = 4100;
  ScenarioSpec odd = read_ok(scenario);
  EXPECT_FALSE(odd.plan.sequence_parallel);
  EXPECT_TRUE(warned(odd));
  // The object form can turn the mechanism off.
  scenario["training"]["seq_len"] = 4096;
  scenario["software"] = {{"base", "maxtext"}, {"tensor_parallel", {{"shard_activations", false}}}};
  EXPECT_FALSE(read_ok(scenario).plan.sequence_parallel);
  // Without tensor parallelism nothing changes.
  scenario["software"] = "maxtext";
  scenario["parallelism"] = {{"dp", 64}, {"zero", 1}};
  EXPECT_FALSE(read_ok(scenario).plan.sequence_parallel);
}

TEST(Software, DescribeListsEveryPresetWithItsSources) {
  const std::string text = describe_text();
  for (const std::string& name : builtin_presets().names("software")) {
    EXPECT_NE(text.find("\n" + name + ": "), std::string::npos) << name;
  }
  EXPECT_NE(text.find("attention.kernel = sdpa: F.scaled_dot_product_attention"),
            std::string::npos);
  EXPECT_NE(text.find("/software/data_parallel/backward_prefetch"), std::string::npos);
  const json described = json::parse(describe_json_text());
  ASSERT_TRUE(described["software_presets"].contains("composer"));
  EXPECT_FALSE(described["software_presets"]["composer"]["mechanisms"].empty());
}

TEST(PowerLimit, DefaultsToTheBoardPowerAndIsChecked) {
  json scenario = base_scenario();
  EXPECT_DOUBLE_EQ(read_ok(scenario).cluster.gpu.power_limit_w, 700.0);
  EXPECT_DOUBLE_EQ(read_ok(scenario).cluster.gpu.board_power_w, 700.0);
  scenario["cluster"]["gpu"] = {{"base", "h100-sxm-80g"}, {"power_limit", "500 W"}};
  EXPECT_DOUBLE_EQ(read_ok(scenario).cluster.gpu.power_limit_w, 500.0);
  scenario["cluster"]["gpu"]["power_limit"] = "0.8 kW";
  Result<ScenarioSpec> r = read(scenario);
  EXPECT_TRUE(has_problem(r.problems(), "/cluster/gpu/power_limit", "above the board power"))
      << problems_text(r.problems());
  scenario["cluster"]["gpu"]["power_limit"] = "500 GB/s";
  r = read(scenario);
  EXPECT_TRUE(has_problem(r.problems(), "/cluster/gpu/power_limit", "expected a power"))
      << problems_text(r.problems());
  // At or below the model's static draw the tensor cores would get nothing
  // (a factor of 0, which would price matrix products at no time): refused.
  for (const char* starved : {"100 W", "50 W"}) {
    scenario["cluster"]["gpu"]["power_limit"] = starved;
    r = read(scenario);
    EXPECT_TRUE(has_problem(r.problems(), "/cluster/gpu/power_limit", "leaves the tensor cores"))
        << starved << ": " << problems_text(r.problems());
  }
  scenario["cluster"]["gpu"]["power_limit"] = "101 W";
  EXPECT_DOUBLE_EQ(read_ok(scenario).cluster.gpu.power_limit_w, 101.0);
}

TEST(Fp8Attention, WhatIsNotPricedIsSaid) {
  // fp8 attention kernels' speed is not modelled: both ways of asking for
  // them say so, and an fp8 run without them stays quiet.
  auto warned = [](const ScenarioSpec& s) {
    return std::any_of(s.warnings.begin(), s.warnings.end(), [](const std::string& w) {
      return w.find("attention is priced at its bf16 rate") != std::string::npos;
    });
  };
  json scenario = base_scenario();
  scenario["training"]["precision"] = "fp8";
  EXPECT_FALSE(warned(read_ok(scenario)));
  scenario["software"] = {{"base", "megatron-core"}, {"fp8", {{"attention", true}}}};
  EXPECT_TRUE(warned(read_ok(scenario)));
  scenario["software"] = "megatron-core";
  scenario["training"]["precision_recipe"] = "fp8_full";
  EXPECT_TRUE(warned(read_ok(scenario)));
}

TEST(HostLink, PresetsCarryTheirLinkAndAGivenOneIsChecked) {
  json scenario = base_scenario();
  // H100: PCIe Gen5 x16, 64 GB/s each way.
  EXPECT_DOUBLE_EQ(read_ok(scenario).cluster.gpu.host_link_bytes_per_s, 64e9);
  scenario["cluster"]["gpu"] = "b200";  // no published link in the preset: not priced
  EXPECT_DOUBLE_EQ(read_ok(scenario).cluster.gpu.host_link_bytes_per_s, 0.0);
  scenario["cluster"]["gpu"] = {{"base", "h100-sxm-80g"}, {"host_link", "16 GB/s"}};
  EXPECT_DOUBLE_EQ(read_ok(scenario).cluster.gpu.host_link_bytes_per_s, 16e9);
  scenario["cluster"]["gpu"]["host_link"] = "16 GB";
  const Result<ScenarioSpec> r = read(scenario);
  EXPECT_TRUE(has_problem(r.problems(), "/cluster/gpu/host_link", "expected a bandwidth"))
      << problems_text(r.problems());
}

}  // namespace
}  // namespace podsim::scenarios
