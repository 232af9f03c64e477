#include "scenarios/input/reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/scenarios/input/reader_test_util.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;
using testing::base_scenario;
using testing::has_problem;
using testing::problems_text;
using testing::read;
using testing::read_ok;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::vector<Problem> problems_of(const json& scenario) {
  const Result<ScenarioSpec> spec = read(scenario);
  EXPECT_FALSE(spec.ok()) << scenario.dump();
  return spec.problems();
}

TEST(Reader, BaseScenarioAndDefaults) {
  const ScenarioSpec s = read_ok(base_scenario());
  EXPECT_EQ(s.name, "base");
  EXPECT_EQ(s.model.name, "llama3-8b");
  EXPECT_EQ(s.model.kv_heads, 8);
  EXPECT_EQ(s.model.head_dim, 128);  // = hidden / heads = 4096 / 32
  EXPECT_EQ(s.cluster.nodes, 8);     // overridden
  EXPECT_EQ(s.cluster.name, "dgx-h100-superpod");
  EXPECT_EQ(s.gpus, 64);  // = dp*tp*pp*cp
  EXPECT_EQ(s.training.micro_batch, 1);
  EXPECT_EQ(s.training.precision, sim::NumberFormat::kBf16);
  EXPECT_EQ(s.training.optimizer, strategies::Optimizer::kAdam);
  EXPECT_EQ(s.plan.tp, 1);
  EXPECT_EQ(s.plan.zero, 1);
  EXPECT_EQ(s.plan.shard_group, 0);  // all of dp
  EXPECT_EQ(s.plan.schedule, strategies::PipelineSchedule::kOneFOneB);
  EXPECT_EQ(s.plan.virtual_stages, 1);
  EXPECT_EQ(s.plan.context, strategies::ContextAlgorithm::kRing);
  EXPECT_EQ(s.plan.recompute.mode, strategies::RecomputeMode::kNone);
  const std::array<strategies::Dim, 5> order{strategies::Dim::kTp, strategies::Dim::kCp,
                                             strategies::Dim::kEp, strategies::Dim::kDp,
                                             strategies::Dim::kPp};
  EXPECT_EQ(s.plan.order, order);
  EXPECT_TRUE(s.options.overlap_dp);
  EXPECT_FALSE(s.options.overlap_tp);
  EXPECT_TRUE(s.options.overlap_pp);
  EXPECT_TRUE(s.options.overlap_cp);
  EXPECT_TRUE(s.options.flash_attention);
  EXPECT_EQ(s.options.dp_bucket_params, 0);
  EXPECT_EQ(s.options.fsdp_unit_layers, 1);
  EXPECT_EQ(s.options.grad_format, sim::NumberFormat::kFp32);
  EXPECT_FALSE(s.options.zero2_reduce_every_micro_batch.has_value());
  EXPECT_EQ(s.mode, SimulationMode::kSymmetric);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(Reader, Int8TrainingUsesTheChipsInt8Rate) {
  json scenario = base_scenario();
  scenario["cluster"]["gpu"] = "tpu-v6e";
  scenario["training"]["precision"] = "int8";
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.training.precision, sim::NumberFormat::kInt8);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak(sim::NumberFormat::kInt8), 1836e12);  // 2x bf16 [N03]
  EXPECT_EQ(sim::to_string(s.training.precision), "int8");
}

TEST(Reader, NestedOverridesMergeKeyByKey) {
  json scenario = base_scenario();
  scenario["cluster"] = {{"base", "dgx-h100-superpod"}, {"scale_out", {{"nics_per_node", 4}}}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.cluster.scale_out.nics_per_node, 4);
  // The rest of scale_out and everything else of the preset stay.
  EXPECT_DOUBLE_EQ(s.cluster.scale_out.nic_bw_bytes_per_s, 50e9);
  EXPECT_TRUE(s.cluster.scale_out.rail_optimized);
  ASSERT_EQ(s.cluster.scale_out.tiers.size(), 2u);
  EXPECT_EQ(s.cluster.scale_out.tiers[0].name, "leaf");
  EXPECT_EQ(s.cluster.nodes, 128);
  EXPECT_DOUBLE_EQ(s.cluster.scale_up.bw_bytes_per_s, 450e9);
}

TEST(Reader, GpuOverrideInsideAClusterPresetKeepsTheGpuPreset) {
  json scenario = base_scenario();
  scenario["cluster"]["gpu"] = {{"hbm", {{"capacity", "96 GiB"}}}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.hbm_capacity_bytes, 96 * kGiB);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.hbm_bw_bytes_per_s, 3.35e12);  // still the H100's
  EXPECT_EQ(s.cluster.gpu.name, "h100-sxm-80g");
  EXPECT_EQ(s.cluster.gpu.sms, 132);
}

TEST(Reader, GpuReplacedByNameOrByANewBase) {
  json scenario = base_scenario();
  scenario["cluster"]["gpu"] = "h200-sxm-141g";
  EXPECT_DOUBLE_EQ(read_ok(scenario).cluster.gpu.hbm_capacity_bytes, 141 * kGiB);
  scenario["cluster"]["gpu"] = {{"base", "b200"}, {"sms", 100}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.cluster.gpu.name, "b200");
  EXPECT_EQ(s.cluster.gpu.sms, 100);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak(sim::NumberFormat::kBf16), 2250e12);
}

TEST(Reader, ArraysReplaceThePresetsArray) {
  json scenario = base_scenario();
  scenario["cluster"]["scale_out"] = {
      {"tiers", json::array({{{"name", "only"}, {"oversubscription", 2}}})}};
  const ScenarioSpec s = read_ok(scenario);
  ASSERT_EQ(s.cluster.scale_out.tiers.size(), 1u);
  EXPECT_EQ(s.cluster.scale_out.tiers[0].name, "only");
  EXPECT_EQ(s.cluster.scale_out.tiers[0].nodes, 0);
  EXPECT_EQ(s.cluster.scale_out.tiers[0].oversubscription, 2.0);
}

TEST(Reader, ModelBaseWithOverrides) {
  json scenario = base_scenario();
  scenario["model"] = {{"base", "llama3-8b"}, {"layers", 16}, {"name", "half llama"}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.model.layers, 16);
  EXPECT_EQ(s.model.hidden, 4096);
  EXPECT_EQ(s.model.name, "half llama");
}

TEST(Reader, FullObjectFormsWithNumbersAndUnitStrings) {
  json scenario = base_scenario();
  scenario["model"] = {{"layers", 4},         {"hidden", 1024},         {"ffn_hidden", 4096},
                       {"heads", 16},         {"vocab", 32000},         {"mlp", "gelu"},
                       {"norm", "layernorm"}, {"tied_embeddings", true}};
  scenario["cluster"] = {
      {"gpu",
       {{"peak_flops", {{"bf16", 1e15}, {"fp32", "50 TFLOP/s"}}},
        {"hbm", {{"capacity", 100e9}, {"bandwidth", "4 TB/s"}}},
        {"l2", {{"capacity", "64 MiB"}, {"bandwidth", 10e12}}},
        {"sms", 100},
        {"clock", "2 GHz"},
        {"launch_overhead", "3 us"}}},
      {"nodes", 2},
      {"gpus_per_node", 4},
      {"scale_up", {{"bandwidth", "200 GB/s"}, {"latency", 1e-6}, {"efficiency", 0.5}}},
      {"scale_out", {{"nic_bandwidth", "100 Gb/s"}}},
      {"price_per_gpu_hour", 2.5}};
  scenario["parallelism"] = {{"dp", 8}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.model.name, "custom");
  EXPECT_EQ(s.model.kv_heads, 16);  // defaults to heads
  EXPECT_EQ(s.model.head_dim, 64);
  EXPECT_EQ(s.model.mlp, strategies::MlpKind::kGelu);
  EXPECT_EQ(s.model.norm, strategies::NormKind::kLayerNorm);
  EXPECT_TRUE(s.model.tied_embeddings);
  EXPECT_EQ(s.cluster.name, "custom");
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak(sim::NumberFormat::kBf16), 1e15);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak(sim::NumberFormat::kFp32), 50e12);
  EXPECT_EQ(s.cluster.gpu.peak(sim::NumberFormat::kFp8), 0);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.hbm_bw_bytes_per_s, 4e12);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.l2_capacity_bytes, 64.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.clock_hz, 2e9);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.launch_overhead_s, 3e-6);
  EXPECT_EQ(s.cluster.scale_up.domain, 4);  // defaults to gpus_per_node
  EXPECT_EQ(s.cluster.scale_up.efficiency, 0.5);
  EXPECT_EQ(s.cluster.scale_out.efficiency, 1.0);   // line rate unless given
  EXPECT_EQ(s.cluster.scale_out.nics_per_node, 4);  // defaults to gpus_per_node
  EXPECT_DOUBLE_EQ(s.cluster.scale_out.nic_bw_bytes_per_s, 12.5e9);
  ASSERT_EQ(s.cluster.scale_out.tiers.size(), 1u);  // one non-blocking tier
  EXPECT_EQ(s.cluster.scale_out.tiers[0].nodes, 0);
  ASSERT_TRUE(s.cluster.price_per_gpu_hour.has_value());
  EXPECT_DOUBLE_EQ(*s.cluster.price_per_gpu_hour, 2.5);
}

TEST(Reader, PlanKeys) {
  json scenario = base_scenario();
  scenario["model"] = "llama3-70b";
  scenario["cluster"]["nodes"] = 128;
  scenario["training"] = {{"seq_len", 8192},
                          {"global_batch", 64},
                          {"micro_batch", 2},
                          {"precision", "fp8"},
                          {"optimizer", "sgd"}};
  scenario["parallelism"] = {
      {"dp", 4},
      {"tp", 8},
      {"pp", 4},
      {"cp", 2},
      {"sequence_parallel", true},
      {"zero", 3},
      {"shard_group", 2},
      {"pipeline", {{"schedule", "interleaved_1f1b"}, {"virtual_stages", 5}}},
      {"context", {{"algorithm", "all_gather"}}},
      {"recompute", {{"every", 4}}},
      {"order", "tp-cp-ep-pp-dp"}};
  scenario["options"] = {{"overlap", {{"tp", true}, {"dp", false}}},
                         {"flash_attention", true},
                         {"simulation", "every_rank"},
                         {"dp_bucket_params", 50000000},
                         {"fsdp_unit_layers", 2},
                         {"grad_format", "bf16"},
                         {"zero2_reduce_every_micro_batch", false}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.gpus, 256);
  EXPECT_EQ(s.training.micro_batch, 2);
  EXPECT_EQ(s.training.precision, sim::NumberFormat::kFp8);
  EXPECT_EQ(s.training.optimizer, strategies::Optimizer::kSgd);
  EXPECT_TRUE(s.plan.sequence_parallel);
  EXPECT_EQ(s.plan.zero, 3);
  EXPECT_EQ(s.plan.shard_group, 2);
  EXPECT_EQ(s.plan.schedule, strategies::PipelineSchedule::kInterleavedOneFOneB);
  EXPECT_EQ(s.plan.virtual_stages, 5);
  EXPECT_EQ(s.plan.context, strategies::ContextAlgorithm::kAllGather);
  EXPECT_EQ(s.plan.recompute.mode, strategies::RecomputeMode::kEvery);
  EXPECT_EQ(s.plan.recompute.every_layers, 4);
  EXPECT_EQ(s.plan.order[3], strategies::Dim::kPp);
  EXPECT_EQ(s.plan.order[4], strategies::Dim::kDp);
  EXPECT_TRUE(s.options.overlap_tp);
  EXPECT_FALSE(s.options.overlap_dp);
  EXPECT_TRUE(s.options.overlap_pp);
  EXPECT_TRUE(s.options.flash_attention);
  EXPECT_EQ(s.options.dp_bucket_params, 50000000);
  EXPECT_EQ(s.options.fsdp_unit_layers, 2);
  EXPECT_EQ(s.options.grad_format, sim::NumberFormat::kBf16);
  EXPECT_EQ(s.options.zero2_reduce_every_micro_batch, std::optional<bool>(false));
  EXPECT_EQ(s.mode, SimulationMode::kEveryRank);
  for (const char* mode : {"selective", "full", "none"}) {
    scenario["parallelism"]["recompute"] = mode;
    const strategies::RecomputeMode expected =
        std::string(mode) == "selective" ? strategies::RecomputeMode::kSelective
        : std::string(mode) == "full"    ? strategies::RecomputeMode::kFull
                                         : strategies::RecomputeMode::kNone;
    EXPECT_EQ(read_ok(scenario).plan.recompute.mode, expected) << mode;
  }
}

TEST(Reader, EveryProblemOfAFileAtOnce) {
  json scenario = base_scenario();
  scenario["modle"] = 1;
  scenario["training"]["seq_len"] = "long";
  scenario["training"]["precision"] = "bf61";
  scenario["parallelism"]["zero"] = 7;
  scenario["cluster"]["scale_out"] = {{"nic_bandwidth", "400 GB"}};
  const std::vector<Problem> problems = problems_of(scenario);
  EXPECT_TRUE(has_problem(problems, "/modle", "unknown key"));
  EXPECT_TRUE(has_problem(problems, "/training/seq_len", "expected an integer"));
  EXPECT_TRUE(has_problem(problems, "/training/precision", "did you mean 'bf16'"));
  EXPECT_TRUE(has_problem(problems, "/parallelism/zero", "out of range"));
  EXPECT_TRUE(has_problem(problems, "/cluster/scale_out/nic_bandwidth",
                          "'400 GB' is a size, expected a bandwidth like '400 Gb/s'"));
  EXPECT_EQ(problems.size(), 5u) << problems_text(problems);
}

TEST(Reader, DidYouMean) {
  json scenario = base_scenario();
  scenario["parallelism"]["sequence_paralel"] = true;
  scenario["model"] = "lama3-70b";
  scenario["cluster"]["base"] = "llama3-42k";  // ("llama3-24" is a unique prefix: that preset)
  scenario["parallelism"]["pipeline"] = {{"schedule", "interleaved"}};
  const std::vector<Problem> problems = problems_of(scenario);
  EXPECT_TRUE(
      has_problem(problems, "/parallelism/sequence_paralel", "did you mean 'sequence_parallel'"));
  EXPECT_TRUE(has_problem(problems, "/model", "unknown model preset 'lama3-70b'"));
  EXPECT_TRUE(has_problem(problems, "/model", "did you mean 'llama3-70b'"));
  EXPECT_TRUE(has_problem(problems, "/cluster/base", "did you mean 'llama3-24k'"));
  EXPECT_TRUE(
      has_problem(problems, "/parallelism/pipeline/schedule", "did you mean 'interleaved_1f1b'"));
}

TEST(Reader, BaseIsOnlyAllowedWherePresetsAre) {
  json scenario = base_scenario();
  scenario["training"]["base"] = "llama3-8b";
  EXPECT_TRUE(has_problem(problems_of(scenario), "/training/base", "unknown key"));
}

struct CrossCheck {
  const char* name;
  std::function<void(json&)> mutate;
  const char* path;
  const char* fragment;
};

TEST(Reader, CrossFieldChecksNameThePathAndAFix) {
  const CrossCheck checks[] = {
      {"product", [](json& s) { s["gpus"] = 60; }, "/gpus", "set gpus to 64"},
      {"fits",
       [](json& s) {
         s["parallelism"]["dp"] = 72;
         s["training"]["global_batch"] = 576;
       },
       "/parallelism", "at least 9 nodes"},
      {"tp heads",
       [](json& s) {
         s["parallelism"] = {{"dp", 8}, {"tp", 3}};
       },
       "/parallelism/tp", "does not divide heads=32"},
      {"tp kv",
       [](json& s) {
         s["model"] = {{"base", "llama3-8b"}, {"heads", 48}, {"kv_heads", 8}, {"head_dim", 128}};
         s["parallelism"] = {{"dp", 4}, {"tp", 12}};
         s["cluster"]["nodes"] = 6;
         s["training"]["global_batch"] = 512;
       },
       "/parallelism/tp", "neither divides the other"},
      {"tp ffn",
       [](json& s) {
         s["model"] = {{"base", "llama3-8b"}, {"ffn_hidden", 14337}};
         s["parallelism"] = {{"dp", 8}, {"tp", 8}};
       },
       "/parallelism/tp", "does not divide ffn_hidden=14337"},
      {"head dim",
       [](json& s) {
         s["model"] = {{"base", "llama3-8b"}, {"heads", 24}, {"kv_heads", 8}};
       },
       "/model/heads", "give /model/head_dim"},
      {"kv divides",
       [](json& s) {
         s["model"] = {{"base", "llama3-8b"}, {"kv_heads", 12}};
       },
       "/model/kv_heads", "does not divide heads=32"},
      {"pp",
       [](json& s) {
         s["parallelism"] = {{"pp", 64}};
         s["training"]["global_batch"] = 8;
       },
       "/parallelism/pp", "use pp <= 32"},
      {"virtual",
       [](json& s) {
         s["parallelism"] = {
             {"dp", 16},
             {"pp", 4},
             {"pipeline", {{"schedule", "interleaved_1f1b"}, {"virtual_stages", 9}}}};
       },
       "/parallelism/pipeline/virtual_stages", "use virtual_stages <= 8"},
      {"batch", [](json& s) { s["training"]["global_batch"] = 1000; }, "/training/global_batch",
       "use global_batch 960 or 1024"},
      {"micro batch", [](json& s) { s["training"]["micro_batch"] = 3; }, "/training/global_batch",
       "dp*micro_batch = 64*3 = 192"},
      {"ring",
       [](json& s) {
         s["parallelism"] = {{"dp", 16}, {"cp", 4}};
         s["training"]["seq_len"] = 4100;
       },
       "/training/seq_len", "use seq_len 4096 or 4104"},
      {"all_gather",
       [](json& s) {
         s["parallelism"] = {{"dp", 16}, {"cp", 3}, {"context", {{"algorithm", "all_gather"}}}};
         s["training"]["seq_len"] = 4096;
         s["training"]["global_batch"] = 512;
         s["cluster"]["nodes"] = 6;
       },
       "/training/seq_len", "not divisible by 2*cp = 6"},
      {"ulysses seq",
       [](json& s) {
         s["parallelism"] = {{"dp", 16}, {"cp", 4}, {"context", {{"algorithm", "ulysses"}}}};
         s["training"]["seq_len"] = 4098;
       },
       "/training/seq_len", "not divisible by cp=4"},
      {"cp flash",
       [](json& s) {
         s["parallelism"] = {{"dp", 16}, {"cp", 4}};
         s["options"] = {{"flash_attention", false}};
       },
       "/options/flash_attention", "needs flash attention"},
      {"interleaved groups",
       [](json& s) {
         s["parallelism"] = {
             {"dp", 16},
             {"pp", 4},
             {"pipeline", {{"schedule", "interleaved_1f1b"}, {"virtual_stages", 2}}}};
         s["training"]["global_batch"] = 96;
       },
       "/training/global_batch", "groups of pp=4"},
      {"ulysses heads",
       [](json& s) {
         s["parallelism"] = {
             {"dp", 1}, {"tp", 4}, {"cp", 16}, {"context", {{"algorithm", "ulysses"}}}};
       },
       "/parallelism/cp", "heads/tp = 8"},
      {"sequence parallel",
       [](json& s) {
         s["parallelism"] = {{"dp", 8}, {"tp", 8}, {"sequence_parallel", true}};
         s["training"]["seq_len"] = 4100;
       },
       "/training/seq_len", "multiple of cp*tp = 8"},
      {"ep moe", [](json& s) { s["parallelism"]["ep"] = 2; }, "/parallelism/ep",
       "needs a mixture-of-experts model"},
      {"ep experts",
       [](json& s) {
         s["model"] = "mixtral-8x7b";
         s["parallelism"]["ep"] = 16;
       },
       "/parallelism/ep", "does not divide experts=8"},
      {"ep folding",
       [](json& s) {
         s["model"] = {{"base", "mixtral-8x7b"}, {"moe", {{"experts", 64}}}};
         s["parallelism"] = {{"dp", 4}, {"tp", 8}, {"ep", 64}, {"sequence_parallel", true}};
         s["cluster"]["nodes"] = 4;
         s["training"]["global_batch"] = 512;
       },
       "/parallelism/ep", "does not divide tp*cp*dp = 32"},
      {"expert tp",
       [](json& s) {
         s["model"] = {{"base", "mixtral-8x7b"}, {"moe", {{"ffn_hidden", 1100}}}};
         s["parallelism"] = {{"dp", 64}, {"ep", 8}, {"expert_tp", 8}};
       },
       "/parallelism/expert_tp", "does not divide moe.ffn_hidden=1100"},
      {"expert groups",
       [](json& s) {
         s["model"] = {{"base", "mixtral-8x7b"}, {"moe", {{"expert_groups", 3}}}};
       },
       "/model/moe/expert_groups", "does not divide experts=8"},
      {"mla",
       [](json& s) {
         s["model"] = {{"base", "llama3-8b"}, {"attention", {{"kind", "mla"}}}};
       },
       "/model/attention/kv_lora_rank", "MLA needs a positive kv_lora_rank"},
      {"layout syntax",
       [](json& s) {
         s["parallelism"] = {
             {"dp", 16}, {"pp", 4}, {"pipeline", {{"layout", "Et*8|(t*8|)*2tx*8L"}}}};
       },
       "/parallelism/pipeline/layout", "unknown symbol 'x'"},
      {"dualpipe stages",
       [](json& s) {
         s["parallelism"] = {{"dp", 8}, {"pp", 8}, {"pipeline", {{"schedule", "dualpipe"}}}};
         s["model"] = {{"base", "llama3-8b"}, {"layers", 30}};
         s["parallelism"]["pp"] = 2;
         s["parallelism"]["dp"] = 32;
         s["training"]["global_batch"] = 32;
       },
       "/training/global_batch", "at least 2*pp = 4"},
      {"dualpipe odd",
       [](json& s) {
         s["parallelism"] = {{"dp", 16}, {"pp", 3}, {"pipeline", {{"schedule", "dualpipe"}}}};
         s["cluster"]["nodes"] = 6;
         s["training"]["global_batch"] = 256;
       },
       "/parallelism/pp", "even number of stages"},
      {"top k",
       [](json& s) {
         s["model"] = {{"base", "mixtral-8x7b"}, {"moe", {{"top_k", 9}}}};
       },
       "/model/moe/top_k", "exceeds experts=8"},
      {"shard group",
       [](json& s) {
         s["parallelism"]["zero"] = 3;
         s["parallelism"]["shard_group"] = 48;
       },
       "/parallelism/shard_group", "does not divide dp*cp = 64"},
      {"shard group zero",
       [](json& s) {
         s["parallelism"]["zero"] = 0;
         s["parallelism"]["shard_group"] = 8;
       },
       "/parallelism/shard_group", "set /parallelism/zero to 3"},
      {"every",
       [](json& s) {
         s["parallelism"]["recompute"] = {{"every", 33}};
       },
       "/parallelism/recompute/every", "1 <= C <= 32"},
      {"order", [](json& s) { s["parallelism"]["order"] = "tp-cp-ep-dp-dp"; }, "/parallelism/order",
       "dp appears twice"},
      {"order unknown", [](json& s) { s["parallelism"]["order"] = "tp-cp-ep-dq-pp"; },
       "/parallelism/order", "did you mean 'dp'"},
      {"fp8",
       [](json& s) {
         s["cluster"]["gpu"] = "a100-sxm-80g";
         s["training"]["precision"] = "fp8";
       },
       "/cluster/gpu/peak_flops/fp8", "no fp8 rate"},
      {"int8 on a GPU without an int8 rate",
       [](json& s) {
         s["cluster"]["gpu"] = "b300";
         s["training"]["precision"] = "int8";
       },
       "/cluster/gpu/peak_flops/int8", "no int8 rate"},
      {"tier order",
       [](json& s) {
         s["cluster"]["scale_out"] = {
             {"tiers",
              {{{"name", "a"}, {"nodes", 32}}, {{"name", "b"}, {"nodes", 16}}, {{"name", "c"}}}}};
       },
       "/cluster/scale_out/tiers/1/nodes", "not more than the tier below"},
      {"tier multiple",
       [](json& s) {
         s["cluster"]["scale_out"] = {
             {"tiers",
              {{{"name", "a"}, {"nodes", 20}}, {{"name", "b"}, {"nodes", 150}}, {{"name", "c"}}}}};
       },
       "/cluster/scale_out/tiers/1/nodes", "use 140 or 160"},
      {"tier span",
       [](json& s) {
         s["cluster"]["scale_out"] = {{"tiers", {{{"name", "a"}, {"nodes", 4}}}}};
       },
       "/cluster/scale_out/tiers/0/nodes", "the cluster has 8"},
      {"domain",
       [](json& s) {
         s["cluster"]["scale_up"] = {{"domain", 12}};
       },
       "/cluster/scale_up/domain", "neither divides nor is a multiple of gpus_per_node=8"},
      {"scale out",
       [](json& s) {
         s["cluster"] = {{"gpu", "h100-sxm-80g"},
                         {"nodes", 8},
                         {"gpus_per_node", 8},
                         {"scale_up", {{"bandwidth", "450 GB/s"}}}};
       },
       "/cluster/scale_out", "required when the cluster has more than one node"},
  };
  for (const CrossCheck& check : checks) {
    json scenario = base_scenario();
    check.mutate(scenario);
    const Result<ScenarioSpec> spec = read(scenario);
    ASSERT_FALSE(spec.ok()) << check.name;
    EXPECT_TRUE(has_problem(spec.problems(), check.path, check.fragment))
        << check.name << ":\n"
        << problems_text(spec.problems());
  }
}

TEST(Reader, MixtureOfExpertsKeysOfVersion1Point2) {
  json scenario = base_scenario();
  scenario["model"] = "deepseek-v3";
  scenario["cluster"]["nodes"] = 128;
  scenario["parallelism"] = {{"dp", 32},
                             {"tp", 2},
                             {"pp", 16},
                             {"ep", 64},
                             {"sequence_parallel", true},
                             {"recompute_modules", {"mla_up_proj", "mlp"}},
                             {"recompute_layers", 1},
                             {"pipeline", {{"layout", "Et*4|(t*4|)*14tmL"}}}};
  const ScenarioSpec s = read_ok(scenario);
  ASSERT_TRUE(s.model.moe);
  EXPECT_EQ(s.model.moe->dense_layers, 3);
  EXPECT_EQ(s.model.moe->load_balance, strategies::LoadBalance::kLearned);
  EXPECT_EQ(s.model.moe->balancing, strategies::RouterBalancing::kLossFree);
  EXPECT_FALSE(s.model.moe->capacity_factor);
  EXPECT_EQ(s.model.attention.kind, strategies::AttentionKind::kMla);
  EXPECT_EQ(s.model.attention.mla.kv_lora_rank, 512);
  EXPECT_EQ(s.model.mtp_layers, 1);
  EXPECT_EQ(s.plan.expert_tp, 1);
  ASSERT_EQ(s.plan.layout.size(), 16u);
  EXPECT_EQ(s.plan.layout.back().mtp, 1);
  EXPECT_EQ(s.plan.recompute.full_layers, 1);
  EXPECT_EQ(s.plan.recompute.modules,
            strategies::module_bit(strategies::RecomputeModule::kMlaUpProj) |
                strategies::module_bit(strategies::RecomputeModule::kMlp));
  // capacity_factor null is dropless; a number caps; an array of counts is a layout.
  scenario["model"] = {{"base", "mixtral-8x7b"},
                       {"moe", {{"capacity_factor", nullptr}, {"load_balance", "forced"}}}};
  scenario["parallelism"] = {{"dp", 64}, {"ep", 8}};
  EXPECT_FALSE(read_ok(scenario).model.moe->capacity_factor);
  EXPECT_EQ(read_ok(scenario).model.moe->load_balance, strategies::LoadBalance::kForced);
  scenario["model"]["moe"]["capacity_factor"] = 1.25;
  EXPECT_DOUBLE_EQ(*read_ok(scenario).model.moe->capacity_factor, 1.25);
  scenario["parallelism"] = {{"dp", 32}, {"pp", 2}, {"pipeline", {{"layout", {15, 17}}}}};
  scenario["training"]["global_batch"] = 256;
  const ScenarioSpec laid = read_ok(scenario);
  ASSERT_EQ(laid.plan.layout.size(), 2u);
  EXPECT_EQ(laid.plan.layout[0], (strategies::ChunkLayout{15, true, 0, false}));
  // The framework's MoE mechanisms: Megatron's all-to-all unless told.
  EXPECT_EQ(laid.options.moe.dispatcher, strategies::MoeDispatcher::kAllToAll);
  EXPECT_FALSE(laid.options.moe.shared_expert_overlap);
  scenario["options"] = {{"moe",
                          {{"dispatcher", "fused"},
                           {"shared_expert_overlap", true},
                           {"dispatch_format", "fp8"},
                           {"dispatch_sms", 20}}}};
  const ScenarioSpec fused = read_ok(scenario);
  EXPECT_EQ(fused.options.moe.dispatcher, strategies::MoeDispatcher::kFusedAllToAll);
  EXPECT_TRUE(fused.options.moe.shared_expert_overlap);
  EXPECT_EQ(fused.options.moe.dispatch_format, sim::NumberFormat::kFp8);
  EXPECT_EQ(fused.options.moe.dispatch_sms, 20);
}

TEST(Reader, AcceptedEdgeCasesOfTheChecks) {
  // kv_heads divides tp: each KV head is replicated on tp/kv_heads ranks (Megatron GQA).
  json scenario = base_scenario();
  scenario["parallelism"] = {{"dp", 4}, {"tp", 16}};
  EXPECT_EQ(read_ok(scenario).plan.tp, 16);
  // head_dim given: hidden need not be divisible by heads.
  scenario = base_scenario();
  scenario["model"] = {{"base", "llama3-8b"}, {"heads", 24}, {"kv_heads", 8}, {"head_dim", 128}};
  EXPECT_EQ(read_ok(scenario).model.head_dim, 128);
  // Ulysses with fewer KV heads per TP rank than cp replicates them.
  scenario = base_scenario();
  scenario["parallelism"] = {
      {"dp", 2}, {"tp", 4}, {"cp", 8}, {"context", {{"algorithm", "ulysses"}}}};
  EXPECT_EQ(read_ok(scenario).plan.context, strategies::ContextAlgorithm::kUlysses);
  // A multi-node scale-up domain (NVL72-like) is a whole number of nodes.
  scenario = base_scenario();
  scenario["cluster"]["scale_up"] = {{"domain", 16}};
  EXPECT_EQ(read_ok(scenario).cluster.scale_up.domain, 16);
}

TEST(Reader, WarningsForUnusualButValidPlans) {
  json scenario = base_scenario();
  scenario["parallelism"] = {
      {"dp", 2},
      {"tp", 16},
      {"pp", 2},
      {"sequence_parallel", true},
      {"pipeline", {{"schedule", "interleaved_1f1b"}, {"virtual_stages", 3}}}};
  const ScenarioSpec s = read_ok(scenario);
  std::string all;
  for (const std::string& w : s.warnings) all += w + "\n";
  EXPECT_NE(all.find("spans more than one scale-up domain"), std::string::npos) << all;
  EXPECT_NE(all.find("stages are uneven"), std::string::npos) << all;  // 32 layers, 6 chunks
}

TEST(Reader, EveryExampleReads) {
  size_t examples = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(testing::source_path("scenarios/examples"))) {
    if (entry.path().extension() != ".json") continue;
    ++examples;
    const Result<ScenarioSpec> spec = read_scenario_file(entry.path().string());
    EXPECT_TRUE(spec.ok()) << entry.path() << "\n" << problems_text(spec.problems());
  }
  EXPECT_GE(examples, 6u);
}

TEST(Reader, FileNameIsTheDefaultName) {
  const std::string path = testing::source_path("scenarios/examples/llama3-8b-dp.json");
  json scenario = json::parse(testing::read_file(path));
  ASSERT_TRUE(scenario.contains("name"));
  scenario.erase("name");
  const std::string copy = ::testing::TempDir() + "/my-scenario.json";
  {
    std::ofstream out(copy);
    out << scenario.dump();
  }
  const Result<ScenarioSpec> spec = read_scenario_file(copy);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec.value().name, "my-scenario");
}

TEST(Reader, HostileInputsFailCleanly) {
  const std::string deep =
      "{\"model\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const Result<ScenarioSpec> nested = read_scenario_text(deep);
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.problems().front().message.find("nesting deeper"), std::string::npos);

  json scenario = base_scenario();
  scenario["name"] = std::string(10'000'000, 'x');
  const Result<ScenarioSpec> huge = read(scenario);
  ASSERT_FALSE(huge.ok());
  EXPECT_TRUE(has_problem(huge.problems(), "/name", "too long"));
  // The message does not echo the 10 MB string.
  EXPECT_LT(huge.problems().front().to_string().size(), 200u);

  scenario = base_scenario();
  scenario[std::string(100000, 'k')] = 1;
  const Result<ScenarioSpec> long_key = read(scenario);
  ASSERT_FALSE(long_key.ok());
  EXPECT_LT(long_key.problems().front().message.size(), 200u);

  for (const double absurd : {1e18, 1e300, -1.0, 0.0, 0.5}) {
    scenario = base_scenario();
    scenario["model"] = {{"base", "llama3-8b"}, {"layers", absurd}};
    EXPECT_TRUE(has_problem(problems_of(scenario), "/model/layers", "")) << absurd;
  }
}

TEST(Reader, TorusAndMeshKeys) {
  nlohmann::json scenario = base_scenario();
  scenario["cluster"] = {{"base", "tpu-v6e-pod"}, {"nodes", 16}, {"slices", 2}};
  scenario["parallelism"] = {{"dp", 64}, {"zero", 3}};
  const ScenarioSpec spec = read_ok(scenario);
  EXPECT_EQ(spec.cluster.slices, 2);
  EXPECT_EQ(spec.cluster.scale_up.domain, 0);  // a torus domain is its slice
  EXPECT_EQ(spec.cluster.scale_up_domain(), 32);
  EXPECT_EQ(spec.cluster.scale_up.torus.max_shape, (std::vector<int>{16, 16}));
  EXPECT_EQ(spec.cluster.scale_up.torus.wrap_length, 16);
  EXPECT_FALSE(spec.cluster.scale_up.torus.wrap_needs_all_axes);

  scenario["cluster"]["scale_up"] = {{"torus", {{"shape", "8x4"}}}};
  EXPECT_EQ(read_ok(scenario).cluster.scale_up.torus.shape, (std::vector<int>{8, 4}));
  for (const char* bad : {"8x", "8x4x2x1", "0x32", "ax4", "8 x 4"}) {
    scenario["cluster"]["scale_up"] = {{"torus", {{"shape", bad}}}};
    const Result<ScenarioSpec> r = read(scenario);
    EXPECT_TRUE(has_problem(r.problems(), "/cluster/scale_up/torus/shape", "16x16x24")) << bad;
  }
  scenario["cluster"] = {{"base", "mi300x-8x"}, {"nodes", 8}, {"scale_up", {{"topology", "ring"}}}};
  EXPECT_TRUE(has_problem(read(scenario).problems(), "/cluster/scale_up/topology", "mesh"));
  scenario["cluster"]["scale_up"] = {{"topology", "mesh"}};
  EXPECT_EQ(read_ok(scenario).cluster.scale_up.topology, hwmodels::ScaleUpTopology::kMesh);
}

TEST(Reader, ClusterAlone) {
  const Result<hwmodels::ClusterSpec> meta = read_cluster_json(json("llama3-24k"));
  ASSERT_TRUE(meta.ok()) << problems_text(meta.problems());
  EXPECT_EQ(meta.value().total_gpus(), 24576);
  EXPECT_EQ(meta.value().name, "llama3-24k");
  const Result<hwmodels::ClusterSpec> merged =
      read_cluster_json({{"base", "dgx-h100-superpod"}, {"nodes", 4}, {"gpu", "b200"}});
  ASSERT_TRUE(merged.ok()) << problems_text(merged.problems());
  EXPECT_EQ(merged.value().nodes, 4);
  EXPECT_EQ(merged.value().gpu.name, "b200");
  // ("llama-24k" begins the words of llama3-24k: it is that preset.)
  const Result<hwmodels::ClusterSpec> bad = read_cluster_json(json("lama3-24k"));
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(has_problem(bad.problems(), "/cluster", "did you mean 'llama3-24k'"));
}

}  // namespace
}  // namespace podsim::scenarios

namespace podsim::scenarios {
namespace {

using nlohmann::json;
using testing::base_scenario;
using testing::has_problem;
using testing::read;
using testing::read_ok;

TEST(Reader, PrecisionRecipesAndFp4) {
  json scenario = base_scenario();
  scenario["training"]["precision"] = "fp8";
  scenario["training"]["precision_recipe"] = "tensorwise";
  const ScenarioSpec fp8 = read_ok(scenario);
  EXPECT_EQ(fp8.training.recipe, strategies::PrecisionRecipe::kTensorwise);
  EXPECT_TRUE(fp8.warnings.empty());
  // A recipe of another format is refused at the recipe.
  scenario["training"]["precision_recipe"] = "nvfp4";
  EXPECT_TRUE(has_problem(read(scenario).problems(), "/training/precision_recipe", "fp4"));
  // MXFP8 needs block-scaled tensor cores: not an H100.
  scenario["training"]["precision_recipe"] = "mxfp8";
  EXPECT_TRUE(has_problem(read(scenario).problems(), "/training/precision_recipe", "Blackwell"));
  // fp4 on an H100: refused, naming the GPUs that have it.
  scenario["training"]["precision"] = "fp4";
  scenario["training"].erase("precision_recipe");
  EXPECT_TRUE(has_problem(read(scenario).problems(), "/training/precision", "b200"));
  // On a B200 it reads, with NVFP4 as its recipe.
  scenario["cluster"] = {{"base", "dgx-b200"}, {"nodes", 8}};
  const ScenarioSpec fp4 = read_ok(scenario);
  EXPECT_EQ(fp4.training.precision, sim::NumberFormat::kFp4);
  EXPECT_EQ(fp4.training.recipe, strategies::PrecisionRecipe::kNvfp4);
  EXPECT_GT(fp4.cluster.gpu.peak(sim::NumberFormat::kFp4), 0);
}

TEST(Reader, AsymEmbedLossLayoutAndOffload) {
  json scenario = base_scenario();
  scenario["model"] = "llama3-405b";
  scenario["cluster"]["nodes"] = 32;
  scenario["training"]["global_batch"] = 256;
  scenario["parallelism"] = {
      {"dp", 4},
      {"tp", 8},
      {"pp", 8},
      {"pipeline",
       {{"schedule", "interleaved_1f1b"}, {"virtual_stages", 8}, {"layout", "asym-embed-loss"}}}};
  const ScenarioSpec s = read_ok(scenario);
  ASSERT_EQ(s.plan.layout.size(), 64u);
  EXPECT_TRUE(s.plan.layout.front().embedding);
  EXPECT_EQ(s.plan.layout.front().layers, 1);
  EXPECT_EQ(s.plan.layout[5].layers, 2);
  scenario["parallelism"]["pipeline"]["virtual_stages"] = 5;
  EXPECT_TRUE(has_problem(read(scenario).problems(), "/parallelism/pipeline/layout", "128"));
  // An offload list is MaxText's remat policy: selective, no warning.
  json offload = base_scenario();
  offload["parallelism"]["activation_offload"] = {"decoder_layer_input", "mlpwi"};
  const ScenarioSpec o = read_ok(offload);
  EXPECT_EQ(o.plan.recompute.mode, strategies::RecomputeMode::kSelective);
  EXPECT_EQ(o.plan.activation_offload,
            strategies::offload_bit(strategies::OffloadTensor::kDecoderLayerInput) |
                strategies::offload_bit(strategies::OffloadTensor::kMlpWi0) |
                strategies::offload_bit(strategies::OffloadTensor::kMlpWi1));
  EXPECT_TRUE(o.warnings.empty());
}

}  // namespace
}  // namespace podsim::scenarios
